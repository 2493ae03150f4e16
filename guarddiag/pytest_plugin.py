"""pytest plugin: fail a test when torch.compile recompiles more than its budget allows.

``@pytest.mark.recompile_budget(max_recompiles=0, functions=None, fail_on_limit_hit=True)``
wraps the test call (not its fixtures' setup) in :func:`guarddiag.watch` and fails the
test with the causes in plain words when the budget is exceeded. The ``recompiles`` fixture
yields an active watch for explicit asserts. ``--guarddiag-reset`` calls
``torch._dynamo.reset()`` before each marked test, so its count does not depend on what
earlier tests compiled.

Loaded through the ``pytest11`` entry point; torch and the parser are imported only when a
marked test or the fixture runs, so other test sessions pay nothing.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from guarddiag.inprocess import Watch

MARKER = "recompile_budget"
_MARKER_HELP = (
    f"{MARKER}(max_recompiles=0, functions=None, fail_on_limit_hit=True): fail the test when torch.compile "
    "recompiles more than max_recompiles times during it (guarddiag)"
)


@dataclass(frozen=True)
class Budget:
    """What a ``recompile_budget`` marker allows."""

    max_recompiles: int = 0
    functions: tuple[str, ...] | None = None
    fail_on_limit_hit: bool = True


def budget_from_marker(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Budget:
    """The marker's arguments as a :class:`Budget`; ValueError with the fix when they do not fit."""
    usage = f"write @pytest.mark.{MARKER}(max_recompiles=N, functions=('forward',), fail_on_limit_hit=True)"
    names = ("max_recompiles", "functions", "fail_on_limit_hit")
    if len(args) > len(names):
        raise ValueError(f"{MARKER} takes at most {len(names)} arguments, got {len(args)}; {usage}")
    values = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in names:
            raise ValueError(f"{MARKER} got unknown argument {key!r}; {usage}")
        if key in values:
            raise ValueError(f"{MARKER} got {key!r} twice (by position and by name); {usage}")
        values[key] = value
    limit = values.get("max_recompiles", 0)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        raise ValueError(f"{MARKER} max_recompiles must be an int >= 0, got {limit!r}; {usage}")
    functions = values.get("functions")
    if isinstance(functions, str):
        functions = (functions,)
    if functions is not None:
        functions = tuple(functions)
        if not functions or not all(isinstance(name, str) for name in functions):
            raise ValueError(f"{MARKER} functions must name compiled functions (e.g. ('forward',)), got {functions!r}; {usage}")
    return Budget(limit, functions, bool(values.get("fail_on_limit_hit", True)))


def budget_failure(w: Watch, budget: Budget) -> str | None:
    """The failure message when the watched call broke the budget, else None (pure: no pytest, no torch)."""
    from guarddiag.render.watch import function_details

    over = w.recompiles > budget.max_recompiles
    hits = w.limit_hits if budget.fail_on_limit_hit else 0
    if not over and not hits:
        return None
    scope = f" of {', '.join(budget.functions)}" if budget.functions else ""
    if over:
        head = (
            f"recompile budget exceeded: {w.recompiles} recompiles{scope} during the test, budget max_recompiles="
            f"{budget.max_recompiles}; remove the causes below or raise max_recompiles in @pytest.mark.{MARKER}"
        )
    else:
        head = (
            f"recompile limit hit {hits} times{scope} during the test: torch gave up compiling and ran the code uncompiled; "
            f"remove the causes below or pass fail_on_limit_hit=False to @pytest.mark.{MARKER}"
        )
    return "\n".join([head, *w.warnings(), *function_details(w.functions)])


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("guarddiag", "guarddiag recompile budgets")
    group.addoption(
        "--guarddiag-reset",
        action="store_true",
        default=False,
        help=f"call torch._dynamo.reset() before each test marked {MARKER}, so earlier tests' compiles do not count",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", _MARKER_HELP)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # Before any fixture runs, so a fixture that warms up a compiled model keeps its compiles.
    if item.get_closest_marker(MARKER) is not None and item.config.getoption("guarddiag_reset"):
        import torch._dynamo

        torch._dynamo.reset()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return (yield)
    try:
        budget = budget_from_marker(marker.args, marker.kwargs)
    except ValueError as exc:
        pytest.fail(str(exc), pytrace=False)
    from guarddiag.inprocess import watch

    # An exception from the test itself propagates through the watch and is the test's failure, not ours.
    with watch(budget.functions) as w:
        result = yield
    message = budget_failure(w, budget)
    if message is not None:
        pytest.fail(message, pytrace=False)
    return result


@pytest.fixture
def recompiles() -> Iterator[Watch]:
    """An active :func:`guarddiag.watch` for the test: ``assert recompiles.recompiles == 0, recompiles.report()``."""
    from guarddiag.inprocess import watch

    with watch() as w:
        yield w
