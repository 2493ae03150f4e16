"""What the user compiled behind torch's `inner` wrapper (guarddiag/wrapped.py), on recorded torch 2.13 logs."""

from __future__ import annotations

from guarddiag.model import CompiledFor, Guard
from guarddiag.pipeline import parse_log
from guarddiag.render.summary import function_detail_lines
from guarddiag.render.words import function_label
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict
from guarddiag.wrapped import library_frame, wrapped_callable
from tests.conftest import LOGS


def test_a_no_grad_function_and_a_sequential_behind_one_inner():
    run = parse_log(str(LOGS / "torch-2.13.0" / "wrapped_callables.log"))
    (f,) = run.functions
    assert (f.name, f.compiles) == ("inner", 4)
    assert f.compiled_for == (
        CompiledFor("ema_update", "tests/fixtures/causes/wrapped_callables.py", "function"),
        CompiledFor("Sequential", "", "module"),
    )
    # What the user compiled, not torch's wrapper (its section says they share it).
    assert function_label(f) == "ema_update (causes/wrapped_callables.py), Sequential (module)"
    assert "they share one cache and one recompile limit" in function_detail_lines(f)[0]
    # The switch from the function to the module is a different object behind `fn`, not an unclassified guard.
    assert [c.category for e in f.recompile_events for c in e.causes[:1]] == ["value", "identity", "tensor"]
    assert run_from_dict(record_dict(run_report(run))).functions[0].compiled_for == f.compiled_for


def test_the_users_own_functions_are_named_as_they_are():
    for name in ("module_int_attribute", "dict_keys", "grad_mode"):
        run = parse_log(str(LOGS / "torch-2.13.0" / f"{name}.log"))
        assert run.functions and all(not f.compiled_for for f in run.functions), name


def test_only_library_frames_are_read_as_wrappers():
    assert library_frame("/usr/lib/python3/site-packages/torch/_dynamo/external_utils.py")
    assert library_frame("/home/user/venv/lib/python3.11/site-packages/transformers/utils/generic.py")
    assert not library_frame("/home/user/project/train.py")


def test_a_method_is_named_by_the_type_of_self():
    guards = [
        Guard("TYPE_MATCH", "L['self']", "___check_type_id(L['self'], 1), type=<class 'transformers.models.gpt2.GPT2LMHeadModel'>"),
        Guard("ID_MATCH", "L['func'].__code__", "___check_obj_id(L['func'].__code__, 2)"),
        Guard("EQUALS_MATCH", "L['self'].config.n_layer", "L['self'].config.n_layer == 2",
              comment="for i in range(n):  # transformers/models/gpt2/modeling_gpt2.py:700 in forward"),
    ]
    expected = CompiledFor("GPT2LMHeadModel.forward", "transformers/models/gpt2/modeling_gpt2.py", "method")
    assert wrapped_callable(guards, "wrapper") == expected
    # The wrapper's own lines name the wrapper itself: nothing is behind it that the user would know better.
    own = [guards[1], Guard("EQUALS_MATCH", "L['x']", "L['x'] == 1", comment="y = f(x)  # utils/generic.py:1030 in wrapper")]
    assert wrapped_callable(own, "wrapper") is None
