"""The pytest plugin, loaded through its pytest11 entry point, on generated test files with real torch.

Each generated session runs in a child interpreter, as a user's would: in-process pytester runs drop the
torch modules a compile imported lazily from ``sys.modules`` after each run, and torch crashes on re-import.
"""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.torch

COMPILED = """
import pytest
import torch


@torch.compile(backend="eager")
def scale(x, n):
    return x * n


@torch.compile(backend="eager")
def steady(x):
    return x + 1
"""


def test_plugin_is_registered_as_an_entry_point() -> None:
    found = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert found.get("guarddiag") == "guarddiag.pytest_plugin"


@pytest.mark.slow
def test_budget_passes_and_fails_with_causes_in_plain_words(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(COMPILED + """

@pytest.mark.recompile_budget(max_recompiles=0)
def test_within_budget():
    steady(torch.ones(3))
    steady(torch.zeros(3))


@pytest.mark.recompile_budget(max_recompiles=0)
def test_over_budget():
    for n in range(4):
        scale(torch.ones(3), n)


@pytest.mark.recompile_budget(max_recompiles=5)
def test_generous_budget():
    for n in range(10, 14):
        scale(torch.ones(3), n)
""")
    # Capture off (-s): whatever torch printed while the watch ran would land in this output.
    result = pytester.runpytest_subprocess("--strict-markers", "-s")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str() + result.stderr.str()
    assert "test_over_budget" in out
    result.stdout.fnmatch_lines([
        "*recompile budget exceeded: 1 recompiles during the test, budget max_recompiles=0;*",
        "*scale (*.py:5): 1 recompiles",
        "*1x value: value of argument `n`",
    ])
    # The causes are the message; torch's log lines and a Python traceback of the plugin are not.
    assert "GUARDS:" not in out and "torchdynamo start tracing" not in out and "pytest_plugin.py" not in out


@pytest.mark.slow
def test_functions_restricts_the_budget(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(COMPILED + """

@pytest.mark.recompile_budget(max_recompiles=0, functions=("steady",))
def test_only_steady_counts():
    for n in range(4):
        scale(torch.ones(3), n)
    steady(torch.ones(3))


@torch.compile(backend="eager")
def grow(x, n):
    return x + n


@pytest.mark.recompile_budget(0, "grow")
def test_grow_counts():
    for n in range(4):
        grow(torch.ones(3), n)
""")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*recompile budget exceeded: 1 recompiles of grow during the test*"])


@pytest.mark.slow
def test_reset_option_gives_each_marked_test_a_clean_cache(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(COMPILED + """

def test_warms_up_scale():
    scale(torch.ones(3), 0)


@pytest.mark.recompile_budget(max_recompiles=0)
def test_compiles_scale_afresh():
    scale(torch.ones(3), 1)
""")
    # Without a reset the first test's compile is still cached, so the marked test recompiles scale.
    pytester.runpytest_subprocess().assert_outcomes(passed=1, failed=1)
    pytester.runpytest_subprocess("--guarddiag-reset").assert_outcomes(passed=2)


@pytest.mark.slow
def test_recompile_limit_hit_fails_unless_allowed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(COMPILED + """

def _hit_limit():
    with torch._dynamo.config.patch(recompile_limit=2, automatic_dynamic_shapes=False):
        for n in range(30, 34):
            scale(torch.ones(3), n)


@pytest.mark.recompile_budget(max_recompiles=8)
def test_limit_fails():
    _hit_limit()


@pytest.mark.recompile_budget(max_recompiles=8, fail_on_limit_hit=False)
def test_limit_allowed():
    torch._dynamo.reset()
    _hit_limit()
""")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*recompile limit hit 1 times during the test: torch gave up compiling*fail_on_limit_hit=False*",
        "*hit recompile_limit (2)*",
    ])


@pytest.mark.slow
def test_fixture_form(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(COMPILED + """

def test_steady_has_no_recompiles(recompiles):
    steady(torch.ones(3))
    steady(torch.ones(3))
    assert recompiles.recompiles == 0, recompiles.report()


def test_scale_recompiles(recompiles):
    for n in range(40, 44):
        scale(torch.ones(3), n)
    assert recompiles.recompiles == 0, recompiles.report()
""")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: guarddiag watch: 1 compiled functions, 2 compiles, 1 recompiles*"])


@pytest.mark.slow
def test_the_tests_own_failure_wins_and_bad_marker_arguments_are_named(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(COMPILED + """

@pytest.mark.recompile_budget(max_recompiles=0)
def test_raises():
    for n in range(50, 54):
        scale(torch.ones(3), n)
    raise KeyError("the test's own error")


@pytest.mark.recompile_budget(max=0)
def test_bad_argument():
    pass
""")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "KeyError: \"the test's own error\"" in out and "recompile budget exceeded" not in out
    result.stdout.fnmatch_lines(["*recompile_budget got unknown argument 'max'; write @pytest.mark.recompile_budget(max_recompiles=N*"])


@pytest.mark.slow
def test_a_budget_holds_when_the_test_changes_torch_logging(pytester: pytest.Pytester) -> None:
    """torch._logging.set_logs inside the test turns off the records the watch reads: torch's own count still
    sees the three recompiles, and the failure says the causes are missing and why."""
    pytester.makepyfile(COMPILED + """

@pytest.mark.recompile_budget(max_recompiles=0)
def test_quiets_torch_then_recompiles():
    torch._logging.set_logs(dynamo=40)
    for n in range(4):
        scale(torch.ones(3), n + 100)


def test_watch_counts_under_set_logs():
    import guarddiag

    torch._dynamo.config.automatic_dynamic_shapes = False
    with guarddiag.watch("scale") as w:
        torch._logging.set_logs(dynamo=40, recompiles=False)
        for n in range(3):
            scale(torch.ones(5), n + 200)
    assert (w.compiles, w.recompiles, w.torch_compiles, w.lost_log) == (3, 3, 3, True), w.report()
    assert "changed torch's logging under the watch" in w.report()
""")
    result = pytester.runpytest_subprocess("--strict-markers", "-s", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "recompile budget exceeded" in out and "changed torch's logging under the watch" in out


def test_a_budget_failure_naming_a_hostile_function_starts_no_workflow_command(pytester: pytest.Pytester) -> None:
    """A code object's name can hold anything (exec'd code, ``__code__.replace``): the budget failure goes
    to the CI log as pytest prints it, so ``##[`` in it is written ``##\\[`` as in every other output."""
    pytester.makepyfile('''
import pytest
import torch


def step(x, n):
    return x * n


step.__code__ = step.__code__.replace(co_name="step\\x1b]0;T\\x07##[error]boom")


@pytest.mark.recompile_budget(max_recompiles=0)
def test_over_budget():
    f = torch.compile(step, backend="eager")
    for n in range(3):
        f(torch.ones(2), n)
''')
    result = pytester.runpytest_subprocess("-s")
    result.assert_outcomes(failed=1)
    out = result.stdout.str() + result.stderr.str()
    assert "recompile budget exceeded" in out and "step\\x1b]0;T\\x07##\\[error]boom" in out, out
    assert "##[" not in out and "\x1b" not in out
