"""The command line: parse options, call the library, map errors to exit codes. Nothing else."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from guarddiag import __version__
from guarddiag.errors import INTERNAL, INTERRUPTED, OK, GuarddiagError, Interrupted
from guarddiag.render.formats import FORMATS

# Each command's module (guarddiag.commands.NAME) is imported when it runs: `guarddiag parse`
# should not pay for yaml, subprocess plumbing or the explain model at start-up (see bench/results.md).

# typer >= 0.2x vendors click; its usage errors derive from click's ClickException either way.
_USAGE_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Diagnose torch.compile recompiles: what recompiled, why, and which flag fixes it.",
    epilog="Any command takes --debug (or GUARDDIAG_DEBUG=1): an internal error then shows its traceback.",
    context_settings={"help_option_names": ["-h", "--help"]},
    # Plain help: rich's boxed tables cut long option names (--fail-on-limit-…) at 80 columns.
    rich_markup_mode=None,
)

def _print_version(value: bool) -> None:
    """``--version`` / ``-V``: the program's name and version, as ``git --version`` and ``pip --version`` print
    them (``guarddiag version`` prints the bare number, for scripts), then exit 0 before any command."""
    if value:
        typer.echo(f"guarddiag {__version__}")
        raise typer.Exit(OK)


@app.callback()
def _options(
    show_version: Annotated[
        bool,
        typer.Option("--version", "-V", is_eager=True, callback=_print_version, help="Print guarddiag's name and version, and exit."),
    ] = False,
) -> None:
    # typer reads a callback's docstring as the app's help, which Typer(help=...) above already gives.
    pass


FormatOpt = Annotated[str, typer.Option("--format", "-f", help=f"Output format: {', '.join(FORMATS)}.")]
OutOpt = Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the run record (versioned JSON) here.")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Fail (exit 4) on torch log lines guarddiag does not understand.")]
ModuleOpt = Annotated[
    Optional[str],
    typer.Option(
        "--module", "-m", metavar="MODULE", help="Run library module MODULE as `python -m` does; everything after MODULE is its arguments."
    ),
]
# What follows `-m MODULE` on the command line, handed over by module_argv (one option each: click reads no option there).
ModuleArgsOpt = Annotated[Optional[list[str]], typer.Option("--module-arg", hidden=True)]
ScriptArg = Annotated[
    Optional[str], typer.Argument(metavar="[SCRIPT]", help="The Python script to run (or -m MODULE).", show_default=False)
]
# Commands that run a script, and so take -m MODULE instead.
_MODULE_COMMANDS = ("run", "compare", "check", "baseline", "explain")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
def run(
    script: ScriptArg = None,
    args: Annotated[Optional[list[str]], typer.Argument(help="Arguments for the script (after --).")] = None,
    flag: Annotated[
        Optional[list[str]],
        typer.Option(
            "--flag",
            help="Set a torch config flag in the child: NAME=VALUE (torch._dynamo.config; inductor.NAME, compiler.NAME for "
            "torch.compiler.config, fx.NAME for torch.fx.experimental._config).",
        ),
    ] = None,
    python: Annotated[str, typer.Option("--python", help="Interpreter to run the script with (needs torch only).")] = sys.executable,
    guard_filter: Annotated[
        Optional[str],
        typer.Option(
            "--guard-filter",
            help="Give every torch.compile of the script options={'guard_filter_fn': torch.compiler.NAME} "
            "(skip_guard_on_inbuilt_nn_modules_unsafe, ...; docs/guard-cost.md#what-removes-guards).",
        ),
    ] = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Stop the script after this many seconds.")] = None,
    fmt: FormatOpt = "table",
    out: OutOpt = None,
    strict: StrictOpt = False,
    module: ModuleOpt = None,
    module_args: ModuleArgsOpt = None,
    trace: Annotated[
        bool,
        typer.Option(
            "--trace",
            help="Also keep a TORCH_TRACE folder in the run folder (for tlparse, or to attach to a PyTorch issue).",
        ),
    ] = False,
    measure_guards: Annotated[
        bool,
        typer.Option(
            "--measure-guards",
            help="Also measure what each call's cache lookup (guard check) costs, per function, with torch's profiler "
            "(the script's main process only; its ops run slower under it).",
        ),
    ] = False,
) -> None:
    """Run SCRIPT (or -m MODULE) under torch.compile logging and report its compiles and recompiles per function."""
    from guarddiag.commands.options import run_target
    from guarddiag.commands.run import run_command

    run_command(
        run_target(script, args, module, module_args), flag, python, timeout, fmt, out, strict, trace, measure_guards, guard_filter
    )


@app.command()
def parse(
    logfiles: Annotated[list[str], typer.Argument(help="Torch log file(s), or - for standard input; pieces of one log merge in order.")],
    fmt: FormatOpt = "table",
    out: OutOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Build the same report from a torch log captured elsewhere (CI log, torchrun, a paste)."""
    from guarddiag.commands.parse import parse_command

    parse_command(logfiles, fmt, out, strict)


@app.command()
def merge(
    records: Annotated[list[str], typer.Argument(help="Run records ([LABEL=]FILE.json), one per node or job; label: the file's stem.")],
    jobs: Annotated[bool, typer.Option("--jobs", help="The records are different jobs (a CI matrix): keep their ranks apart.")] = False,
    fmt: FormatOpt = "table",
    out: OutOpt = None,
) -> None:
    """Merge the run records of a job's nodes (or of a CI matrix's jobs) into one report by node and rank."""
    from guarddiag.commands.merge import merge_command

    merge_command(records, jobs, fmt, out)


@app.command()
def compare(
    script: Annotated[
        Optional[str],
        typer.Argument(metavar="[SCRIPT]", help="The Python script to run in every configuration (or -m MODULE).", show_default=False),
    ] = None,
    args: Annotated[Optional[list[str]], typer.Argument(help="Arguments for the script (after --).")] = None,
    flag: Annotated[
        Optional[list[str]],
        typer.Option(
            "--flag",
            help="A flag to flip (boolean) or NAME=V1,V2 to try values; repeatable, each against the baseline. "
            "Without it: the flips that could remove each cause of the baseline's recompiles.",
        ),
    ] = None,
    combined: Annotated[bool, typer.Option("--combined", help="Also run all flips together.")] = False,
    guard_filter: Annotated[
        Optional[list[str]],
        typer.Option(
            "--guard-filter",
            help="A guard_filter_fn helper to measure as a flip against the baseline (repeatable; the same as --flag "
            "compile.guard_filter_fn=NAME): torch.compiler.NAME, e.g. skip_guard_on_inbuilt_nn_modules_unsafe.",
        ),
    ] = None,
    python: Annotated[
        Optional[list[str]], typer.Option("--python", help="Interpreter; give it twice to compare two environments.")
    ] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", min=1, help="Runs at a time (default: number of cores).")] = None,
    repeat: Annotated[int, typer.Option("--repeat", min=1, help="Run each configuration N times; flag counts that vary.")] = 1,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Stop each run after this many seconds.")] = None,
    max_flips: Annotated[
        int, typer.Option("--max-flips", min=1, help="Without --flag: run at most this many flips (the rest are listed, not run).")
    ] = 6,  # guarddiag.flips.MAX_FLIPS (not imported here: start-up)
    fmt: FormatOpt = "table",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="Write the compare report (JSON) here.")] = None,
    module: ModuleOpt = None,
    module_args: ModuleArgsOpt = None,
    measure_guards: Annotated[
        bool,
        typer.Option(
            "--measure-guards",
            help="Also measure what each call's cache lookup (guard check) costs in every configuration, as run "
            "--measure-guards does: what a guard filter saves per call, not only torch's compile-time figure.",
        ),
    ] = False,
) -> None:
    """Run SCRIPT (or -m MODULE) with and without config flips and show which recompiles each flip removed, added or left;
    without --flag, find the flips that could remove each cause and measure them."""
    from guarddiag.commands.compare import compare_command
    from guarddiag.commands.options import run_target
    from guarddiag.guardfilters import filter_spec

    target = run_target(script, args, module, module_args)
    specs = [*(flag or []), *map(filter_spec, guard_filter or [])]
    compare_command(target, specs, python or [sys.executable], combined, jobs, repeat, timeout, fmt, out, max_flips, measure_guards)


@app.command("diff")
def diff_cmd(
    a: Annotated[Path, typer.Argument(help="Run record A (guarddiag run --out).")],
    b: Annotated[Path, typer.Argument(help="Run record B.")],
    fmt: FormatOpt = "table",
) -> None:
    """Show which recompiles differ between two saved run records."""
    from guarddiag.commands.diff import diff_command

    diff_command(a, b, fmt)


@app.command()
def flags(
    pattern: Annotated[Optional[str], typer.Argument(help="Show only flags whose name contains this.")] = None,
    python: Annotated[str, typer.Option("--python", help="Interpreter whose torch to describe.")] = sys.executable,
    show_all: Annotated[bool, typer.Option("--all", help="Include inductor.* flags and internal names.")] = False,
    guard_removers: Annotated[
        bool,
        typer.Option("--guard-removers", help="List what removes guards instead (guard filters, flags, the stance): since which torch, "
                     "what each drops and gives up, how to measure it."),
    ] = False,
    fmt: FormatOpt = "table",
) -> None:
    """List torch.compile config flags of the target torch: type, value, env var, aliases, deprecation."""
    from guarddiag.commands.flags import flags_command, removers_command

    if guard_removers:
        removers_command(python, fmt)
        return
    flags_command(python, pattern, show_all, fmt)


ItemsArg = Annotated[
    Optional[list[str]], typer.Argument(help="Scripts to run or run records (*.json); default: `scripts` from the config.")
]
FlagsOpt = Annotated[Optional[list[str]], typer.Option("--flag", help="NAME=VALUE config flag for every script given here.")]


@app.command()
def baseline(
    items: ItemsArg = None,
    out: Annotated[
        Optional[Path], typer.Option("--out", "-o", help="Baseline file (default: from config, else guarddiag-baseline.yaml).")
    ] = None,
    flag: FlagsOpt = None,
    python: Annotated[Optional[str], typer.Option("--python", help="Interpreter to run the scripts with.")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", min=1, help="Scripts at a time.")] = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Stop each script after this many seconds.")] = None,
    module: ModuleOpt = None,
    module_args: ModuleArgsOpt = None,
) -> None:
    """Record recompiles per script and function into a YAML baseline to commit."""
    from guarddiag.commands.baseline import baseline_command
    from guarddiag.commands.options import module_items

    baseline_command(module_items(items, module, module_args), out, flag, python, jobs, timeout)


@app.command()
def check(
    items: ItemsArg = None,
    baseline_file: Annotated[Optional[Path], typer.Option("--baseline", "-b", help="Baseline to compare with.")] = None,
    max_recompiles: Annotated[Optional[int], typer.Option("--max-recompiles", min=0, help="Fail any function above this.")] = None,
    max_refused_calls: Annotated[
        Optional[int],
        typer.Option(
            "--max-refused-calls", min=0,
            help="Calls a compiler stance may refuse to recompile per function (default: the baseline's, else 0).",
        ),
    ] = None,
    max_guards: Annotated[
        Optional[int], typer.Option("--max-guards", min=0, help="Fail any function whose largest cache entry has more guards.")
    ] = None,
    max_guard_latency_us: Annotated[
        Optional[float],
        typer.Option(
            "--max-guard-latency-us", min=0,
            help="Fail any function whose cheapest cache entry's guard check (torch's compile-time figure) takes longer.",
        ),
    ] = None,
    guard_latency_factor: Annotated[
        Optional[float],
        typer.Option("--guard-latency-factor", min=1, help="Guard latency may grow to this many times the baseline's (default 4)."),
    ] = None,
    guard_latency_floor_us: Annotated[
        Optional[float],
        typer.Option("--guard-latency-floor-us", min=0, help="... or by this many microseconds, whichever is more (default 150)."),
    ] = None,
    fail_on_limit_hit: Annotated[
        Optional[bool],
        typer.Option("--fail-on-limit-hit/--no-fail-on-limit-hit", help="Fail when a function hits the recompile limit."),
    ] = None,
    fail_on_new_cause: Annotated[
        Optional[bool],
        typer.Option("--fail-on-new-cause/--no-fail-on-new-cause", help="Fail on a cause category the baseline lacks."),
    ] = None,
    fail_on_rank_divergence: Annotated[
        Optional[bool],
        typer.Option(
            "--fail-on-rank-divergence/--no-fail-on-rank-divergence",
            help="Fail when the ranks of a distributed job compiled a function differently.",
        ),
    ] = None,
    update: Annotated[bool, typer.Option("--update", help="Write the current numbers into the baseline instead of gating.")] = False,
    junit: Annotated[Optional[Path], typer.Option("--junit", help="Write JUnit XML here.")] = None,
    fmt: FormatOpt = "table",
    flag: FlagsOpt = None,
    python: Annotated[Optional[str], typer.Option("--python", help="Interpreter to run the scripts with.")] = None,
    jobs: Annotated[Optional[int], typer.Option("--jobs", "-j", min=1, help="Scripts at a time.")] = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Stop each script after this many seconds.")] = None,
    module: ModuleOpt = None,
    module_args: ModuleArgsOpt = None,
) -> None:
    """Fail (exit 5) when recompiles regress against the baseline or thresholds; exit 3 when a script failed."""
    from guarddiag.commands.check import check_command
    from guarddiag.commands.options import module_items

    overrides = {
        "baseline": str(baseline_file) if baseline_file else None,
        "max_recompiles": max_recompiles,
        "max_refused_calls": max_refused_calls,
        "max_guards": max_guards,
        "max_guard_latency_us": max_guard_latency_us,
        "guard_latency_factor": guard_latency_factor,
        "guard_latency_floor_us": guard_latency_floor_us,
        "fail_on_limit_hit": fail_on_limit_hit,
        "fail_on_new_cause": fail_on_new_cause,
        "fail_on_rank_divergence": fail_on_rank_divergence,
        "python": python,
        "jobs": jobs,
        "timeout": timeout,
    }
    checked = module_items(items, module, module_args)
    code = check_command(checked, overrides, baseline_file is not None, update, junit, flag, fmt, os.environ)
    raise typer.Exit(code)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
def explain(
    target: Annotated[
        Optional[str],
        typer.Argument(
            metavar="[TARGET]", help="A script (.py, run first), a torch log, or a run record (.json); or -m MODULE.", show_default=False
        ),
    ] = None,
    args: Annotated[Optional[list[str]], typer.Argument(help="Arguments for the script (after --).")] = None,
    fmt: FormatOpt = "table",
    full: Annotated[bool, typer.Option("--full", help="Expand collapsed families and show every cache entry whole.")] = False,
    python: Annotated[str, typer.Option("--python", help="Interpreter to run a script with (needs torch only).")] = sys.executable,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="Stop a script after this many seconds.")] = None,
    module: ModuleOpt = None,
    module_args: ModuleArgsOpt = None,
) -> None:
    """What each compiled function's guards check, per cache entry: what change would recompile, and fixes."""
    from guarddiag.commands.explain import explain_main
    from guarddiag.commands.options import explain_input

    explain_main(explain_input(target, args, module, module_args), fmt, full, python, timeout)


@app.command()
def clean(
    keep: Annotated[int, typer.Option("--keep", min=0, help="Run folders to keep, the newest (default 0: none); live ones stay.")] = 0,
    cache: Annotated[bool, typer.Option("--cache", help="Also remove the flag catalogs cached per torch install.")] = False,
) -> None:
    """Remove run folders under .guarddiag/runs that no running guarddiag holds (each command keeps the newest 20: GUARDDIAG_KEEP_RUNS)."""
    from guarddiag.commands.clean import clean_command

    clean_command(keep, cache)


@app.command()
def version() -> None:
    """Print guarddiag's version."""
    typer.echo(__version__)


def _kept() -> str:
    """What an interrupted command leaves on disk: run folders, when it started runs."""
    folders = sys.modules.get("guarddiag.child.folders")
    return "; run folders and partial records are kept under .guarddiag/runs/" if folders is not None and folders.RUN_FOLDERS else ""


def _error(text: str) -> None:
    """The one line on stderr of a failed command, escaped (imported here: `guarddiag version` never needs it)."""
    from guarddiag.commands.output import message

    message(text)


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def module_argv(argv: list[str]) -> list[str]:
    """``-m MODULE ARGS...`` read as ``python -m`` and ``coverage run -m`` read it: guarddiag's options
    come before ``-m``, everything after MODULE is the module's (``--nproc-per-node 2`` too), and is
    handed to the command as hidden ``--module-arg=`` options. Only before a ``--``, of the commands
    that run a script."""
    command = next((i for i, token in enumerate(argv[1:], 1) if not token.startswith("-")), len(argv))
    if command >= len(argv) or argv[command] not in _MODULE_COMMANDS:
        return argv
    for i, token in enumerate(argv[command + 1 :], command + 1):
        if token == "--":
            return argv
        if token in ("-m", "--module"):
            if i + 1 == len(argv):
                return argv  # click says that -m needs a value
            module, rest = argv[i + 1], argv[i + 2 :]
        elif token.startswith("--module="):
            module, rest = token.partition("=")[2], argv[i + 1 :]
        elif token.startswith("-m") and not token.startswith("--"):
            module, rest = token[2:], argv[i + 1 :]
        else:
            continue
        return [*argv[:i], f"--module={module}", *(f"--module-arg={a}" for a in rest)]
    return argv


def main() -> None:
    """Entry point: run the app; every failure becomes one line on stderr and a documented exit code.

    ``GUARDDIAG_DEBUG=1`` (or ``--debug`` anywhere on the line) shows the traceback of a bug instead.
    """
    # --debug is guarddiag's only where it stands before `--` or `-m MODULE`; after them, it is the script's.
    sys.argv = module_argv(sys.argv)
    ours = sys.argv[: sys.argv.index("--")] if "--" in sys.argv else sys.argv
    debug = "--debug" in ours or os.environ.get("GUARDDIAG_DEBUG") == "1"
    if "--debug" in ours:
        sys.argv.remove("--debug")
    # A CI runner cancels a job with SIGTERM, a closed terminal or ssh session sends SIGHUP: stop the
    # script and keep the partial record, as for Ctrl-C.
    signal.signal(signal.SIGTERM, _terminated)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _terminated)
    try:
        code = app(standalone_mode=False)
    except GuarddiagError as exc:
        _error(f"guarddiag: {exc}")
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt, Interrupted) as exc:
        _error(f"guarddiag: {exc or 'interrupted'}{_kept()}")
        sys.exit(INTERRUPTED)
    except _USAGE_ERROR as exc:
        # click's three-line usage message, as one line that says where to look.
        command = f" {exc.ctx.info_name}" if getattr(exc, "ctx", None) is not None and exc.ctx.parent is not None else ""
        _error(f"guarddiag: {exc.format_message().rstrip('.')}; see `guarddiag{command} --help`")
        sys.exit(exc.exit_code)
    except Exception as exc:
        if debug:
            raise
        _error(
            f"guarddiag: internal error: {type(exc).__name__}: {exc}; this is a bug in guarddiag, "
            "please report it with the output of the same command with --debug"
        )
        sys.exit(INTERNAL)
    if code == INTERRUPTED:
        # click turns a Ctrl-C (or SIGTERM, see _terminated) it sees into a silent 130.
        _error(f"guarddiag: interrupted{_kept()}")
    sys.exit(code if isinstance(code, int) else OK)
