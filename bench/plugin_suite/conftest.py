"""Times the tests (pytest's own phase durations, and CPU time) and registers the marker when guarddiag is off."""
import json
import os
import time

import pytest

_phases = {"setup": 0.0, "call": 0.0, "teardown": 0.0}
_cpu = [0.0]
_per_test = {}
_outcomes = {}
_started = [0.0]


_parts = {}


def pytest_configure(config):
    if not config.pluginmanager.hasplugin("guarddiag"):
        config.addinivalue_line(
            "markers",
            "recompile_budget(max_recompiles=0): registered by the benchmark's conftest, the guarddiag plugin is off",
        )
    elif os.environ.get("BENCH_PARTS") == "1":
        _time_parts()


def _time_parts():
    """Main-thread CPU time of guarddiag's parts (only in the session that --parts runs, never in a measured one)."""
    from guarddiag import inprocess, pytest_plugin

    def timed(owner, name, label):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            started = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                part = _parts.setdefault(label, {"calls": 0, "total_s": 0.0, "first_s": spent})
                part["calls"] += 1
                part["total_s"] += spent

        setattr(owner, name, wrapper)

    for owner, name in (
        (inprocess.Watch, "__enter__"), (inprocess._Capture, "__init__"), (inprocess._Capture, "_install"),
        (inprocess.Watch, "__exit__"), (inprocess._Capture, "restore"), (inprocess.Watch, "_build"),
        (inprocess._Capture, "take"), (inprocess.Watch, "_feed"), (pytest_plugin, "budget_failure"),
    ):
        timed(owner, name, f"{getattr(owner, '__name__', owner)}.{name}".replace("guarddiag.", ""))


def pytest_sessionstart(session):
    _started[0] = time.perf_counter()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    started, wall = time.thread_time(), time.perf_counter()
    try:
        return (yield)
    finally:
        cpu = time.thread_time() - started
        _cpu[0] += cpu
        _per_test[item.nodeid] = (time.perf_counter() - wall, cpu)


def pytest_runtest_logreport(report):
    _phases[report.when] += report.duration
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.nodeid] = report.outcome


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("BENCH_TIMINGS")
    if path:
        record = {
            "plugin": session.config.pluginmanager.hasplugin("guarddiag"),
            "phases": _phases,
            "tests_cpu_s": _cpu[0],
            "per_test": _per_test,
            "parts": _parts,
            "session_s": time.perf_counter() - _started[0],
            "outcomes": _outcomes,
            "exitstatus": int(exitstatus),
        }
        with open(path, "w", encoding="utf-8") as f:
            json.dump(record, f)
