"""The decisive cause of a recompile (#13 item 1), on recorded torch 2.13 logs: the cause against the cache
entry that would otherwise have matched, and what else changed against it."""

from __future__ import annotations

from guarddiag.guardexpr import size_guard_holds
from guarddiag.logparse.events import RecompileAnnounced
from guarddiag.logparse.parser import LogParser
from guarddiag.pipeline import parse_log
from guarddiag.render.summary import function_detail_lines
from guarddiag.render.words import cause_subject
from guarddiag.report import record_dict, run_report
from guarddiag.store import run_from_dict
from tests.conftest import LOGS

DECISIVE = LOGS / "torch-2.13.0" / "decisive_entry.log"
EVAL = LOGS / "torch-2.13.0" / "eval_no_grad.log"


def test_torch_prints_the_newest_entry_first():
    """The premise: torch's first reason for the second recompile is the copy's grad mode."""
    events = [e for e in LogParser().parse(DECISIVE.open()) if isinstance(e, RecompileAnnounced)]
    assert [str(f.cache_entry) for f in events[1].failures] == ["0/1", "0/0"]
    assert "grad_mode" in events[1].failures[0].text


def test_the_cause_is_the_one_against_the_entry_that_would_have_matched():
    (f,) = parse_log(str(DECISIVE)).functions
    first, second = f.recompile_events
    assert [(str(c.cache_entry), c.category) for c in first.causes] == [("0/0", "global_state")]
    # Against 0/0 only `temperature` changed; against 0/1 grad mode and `temperature` did.
    assert [(str(c.cache_entry), c.category) for c in second.causes] == [("0/0", "value"), ("0/1", "global_state")]
    assert "self.temperature" in cause_subject(second.causes[0]) and second.also == ()
    lines = function_detail_lines(f)
    assert any("1x value: value of `self.temperature`" in line for line in lines), lines
    # The user's line behind the guard, as torch printed it after `#`.
    assert (second.causes[0].location, second.causes[0].code) == (
        "tests/fixtures/causes/decisive_entry.py:21 in forward",
        "return self.proj(x) / self.temperature",
    )
    assert "      at tests/fixtures/causes/decisive_entry.py:21 in forward: return self.proj(x) / self.temperature" in lines


def test_what_else_changed_against_that_entry_is_said():
    (f,) = parse_log(str(EVAL)).functions
    (event,) = f.recompile_events
    assert cause_subject(event.causes[0]) == "grad mode"
    assert sorted(c.source for c in event.also) == [
        "L['self']._modules['body']._modules['1'].training",
        "L['self']._modules['body']._modules['3'].training",
    ]
    assert any(line.strip().startswith("also changed since that cache entry: value: value of `self.body.1.training`")
               for line in function_detail_lines(f))
    again = run_from_dict(record_dict(run_report(parse_log(str(EVAL)))))
    assert again.functions[0].recompile_events[0].also == event.also


def test_each_dim_is_its_own_cause_and_the_dynamic_dims_are_listed():
    from guarddiag.model import DynamicDims
    from guarddiag.render.summary import dynamic_dims_sentence

    run = parse_log(str(LOGS / "torch-2.13.0" / "tensor_shape.log"))
    (f,) = run.functions
    assert cause_subject(f.recompile_events[0].causes[0]) == "size of tensor local `x` at dim 0"
    assert f.dynamic_dims == (DynamicDims("L['x']", (0,)), DynamicDims("L['y']", (0,)))
    assert dynamic_dims_sentence(f).startswith("dynamic after the run: `x` dim 0, `y` dim 0 (")
    assert run_from_dict(record_dict(run_report(run))).functions[0].dynamic_dims == f.dynamic_dims
    # A function that never recompiled keeps no listing to read dims from: none are claimed.
    assert all(g.dynamic_dims == () for g in parse_log(str(LOGS / "torch-2.13.0" / "no_recompile.log")).functions)


def test_what_changed_in_a_tensor_is_named_not_metadata():
    """tensor_fields.py (a denoising loop): the sample fed back requires grad from the second step on,
    and model.double() changes the parameters' dtype; torch names one cause, the rest is read from the
    listings, an input tensor's field by field."""
    from guarddiag.pipeline import build_from_lines
    from tests.conftest import in_checkout

    text = in_checkout((LOGS / "torch-2.13.0" / "tensor_fields.log").read_text(encoding="utf-8"))
    (f,) = build_from_lines(text.splitlines())[0]
    first, _, third = f.recompile_events
    assert cause_subject(first.causes[0]) == "value of argument `t`"
    assert [cause_subject(c) for c in first.also] == ["requires_grad of tensor argument `x`"]
    assert cause_subject(third.causes[0]) == "dtype of tensor argument `x`"
    # Parameters are a model's thousands of checks: their expressions are not kept, their change is named
    # without its field.
    assert sorted(cause_subject(c) for c in third.also) == [
        "metadata of tensor `self.net.bias` on argument `self`",
        "metadata of tensor `self.net.weight` on argument `self`",
    ]


def test_tensor_fields_name_each_change():
    from guarddiag.guardexpr import tensor_change, tensor_fields

    def check(size: str, dtype: str = "torch.float32", grad: str = "False") -> str:
        return (
            f"check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, AutogradCPU), {dtype}, "
            f"device=None, requires_grad={grad}, size=[{size}], stride=[8, 1])"
        )

    assert tensor_change(tensor_fields(check("4, 8")), tensor_fields(check("5, 8"))) == "size at dim 0"
    assert tensor_change(tensor_fields(check("4, 8")), tensor_fields(check("5, 9"))) == "size at dims 0, 1"
    assert tensor_change(tensor_fields(check("4, 8")), tensor_fields(check("4, 8, 1"))) == "number of dims"
    assert tensor_change(tensor_fields(check("4, 8")), tensor_fields(check("4, 8", "torch.float64", "True"))) == "dtype, requires_grad"
    assert tensor_change(tensor_fields(check("4, 8")), tensor_fields("L['x'] == 3")) == ""


def test_a_number_made_dynamic_is_listed_one_specialized_is_not():
    """float_hyperparameter: the learning rate changes each step; torch 2.13 pins it once, then checks
    only its type (a symbolic float). module_int_attribute: an int attribute of a module stays pinned,
    every new value recompiles, nothing is dynamic."""
    from guarddiag.model import DynamicDims
    from guarddiag.render.summary import dynamic_dims_sentence

    (f,) = parse_log(str(LOGS / "torch-2.13.0" / "float_hyperparameter.log")).functions
    assert f.dynamic_dims == (DynamicDims("L['lr']", ()),)
    assert dynamic_dims_sentence(f).startswith(
        "dynamic after the run: `lr` (its value) (a compile in the cache is dynamic there: other values"
    )
    (g,) = parse_log(str(LOGS / "torch-2.13.0" / "module_int_attribute.log")).functions
    assert g.recompiles == 5 and g.dynamic_dims == ()


def test_a_number_the_shape_environment_specializes_again_is_not_dynamic():
    """recompile_limit: `horizon` drives range(); after automatic dynamic torch checks its type and
    pins its value through the shape environment (LAMBDA_GUARD: L['horizon'] == 3): every new horizon
    still recompiles, so it is not listed as dynamic."""
    (f,) = parse_log(str(LOGS / "torch-2.13.0" / "recompile_limit.log")).functions
    assert f.recompiles == 7 and f.dynamic_dims == ()


def test_a_size_change_is_not_also_called_a_stride_change():
    from guarddiag.guardexpr import tensor_change, tensor_fields

    def check(size: str, stride: str) -> str:
        keys = "DispatchKeySet(CPU), torch.float32, device=None, requires_grad=False"
        return f"check_tensor(L['k'], Tensor, {keys}, size=[{size}], stride=[{stride}])"

    grown = tensor_change(tensor_fields(check("1, 2, 5, 8", "80, 40, 8, 1")), tensor_fields(check("1, 2, 6, 8", "96, 48, 8, 1")))
    assert grown == "size at dim 2"
    assert tensor_change(tensor_fields(check("4, 8", "8, 1")), tensor_fields(check("4, 8", "1, 4"))) == "stride"


def test_among_dynamic_entries_the_one_whose_size_guards_the_call_broke_least_decides():
    # tests/fixtures/causes/size_branches.py: 80 breaks only the `<= 64` bound of the entry of 48 and both the
    # remainder and the bound of the entry of 40; torch names the newer entry's remainder first.
    (f,) = parse_log(str(LOGS / "torch-2.13.0" / "size_branches.log")).functions
    last = f.recompile_events[-1]
    assert [str(c.cache_entry) for c in last.causes] == ["0/1", "0/2", "0/0"]
    assert last.causes[0].condition == "2 <= x.size(1) <= 64"
    assert last.causes[0].location.endswith("size_branches.py:21 in mix")


def test_a_size_guard_is_evaluated_at_the_calls_sizes_or_not_at_all():
    sizes = {"L['x'].size()[1]": 80}
    assert size_guard_holds("(L['x'].size()[1] % 16) == 0", sizes) is True
    assert size_guard_holds("16 + L['x'].size()[1] + (-1)*(L['x'].size()[1] % 16) <= 64", sizes) is False
    assert size_guard_holds("Ne(Mod(L['x'].size()[1], 16), 0)", sizes) is False
    # A term whose size is not given, a function torch prints, anything but arithmetic: not known.
    assert size_guard_holds("L['x'].stride()[0] == 24*L['x'].size()[1]", sizes) is None
    assert size_guard_holds("Max(2, L['x'].size()[1]) <= 64", sizes) is None
    assert size_guard_holds("__import__('os').getpid() > 0", sizes) is None
    assert size_guard_holds("L['x'].size()[1] // 0 == 1", sizes) is None
