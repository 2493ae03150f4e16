"""Regenerate the example outputs of README.md and docs/*.md by running the commands they show.

Each example is a fenced block right after a marker naming its commands:

    <!-- example: guarddiag run scenarios/module_int_attribute.py -->
    <!-- example: guarddiag parse A.log -o a.json > /dev/null && guarddiag diff a.json b.json -->
    <!-- example: guarddiag check model.py | setup regressed_project -->

The commands (``&&`` between them; ``> /dev/null`` drops a command's output) run with the installed
``guarddiag`` in a temporary folder holding a copy of scenarios/ and tests/fixtures/, and the block
becomes ``$ COMMAND`` and what it printed (stdout and stderr, as a terminal shows them), for each
command. A ``setup`` names a function of SETUPS below that prepares the folder first (not shown).
What changes from run to run is normalised: the temporary folder's path, and the time and pid in a
run folder's name (``.guarddiag/runs/<time>-SCRIPT-<pid>``, as the documents write it).

    python tools/readme_examples.py            # rewrite the stale example blocks of README.md and docs/*.md
    python tools/readme_examples.py --check    # exit 1 and show the differences if a block is stale
    python tools/readme_examples.py -k explain # only the examples whose commands contain "explain"
    python tools/readme_examples.py docs/commands.md  # only the examples of these documents
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def documents() -> list[Path]:
    """The documents whose examples are generated: README.md, then docs/*.md by name."""
    return [README, *sorted((ROOT / "docs").glob("*.md"))]

# What the examples may name, copied into each example's folder.
COPIED = ("scenarios", "tests/fixtures")
_MARKER = re.compile(r"^<!-- example: (?P<spec>.+?) -->\n```[a-z]*\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)
_RUN_FOLDER = re.compile(r"(\.guarddiag/runs/)\d{8}-\d{6}-(.+?)-\d+(?:-\d+)?\b")
_DISCARD = "> /dev/null"


class ExampleError(Exception):
    """An example could not be produced: the message names it and what went wrong."""


@dataclass(frozen=True)
class Example:
    """One marked block of a document: its commands, its setup and the text it holds now."""

    spec: str
    commands: tuple[str, ...]
    setup: str | None
    body: str
    start: int  # offsets of the block's body in the document's text
    end: int

    @property
    def runs_torch(self) -> bool:
        """Whether producing it runs a script (seconds of torch), not only reads recorded logs."""
        return self.setup is not None or any(_runs_a_script(shlex.split(c)[1:]) for c in self.commands)


def _runs_a_script(args: list[str]) -> bool:
    if not args:
        return False
    return args[0] in ("run", "compare", "check", "baseline") or (args[0] == "explain" and len(args) > 1 and args[1].endswith(".py"))


def find_examples(text: str) -> list[Example]:
    """The marked example blocks of a document's text, in order."""
    found = []
    for m in _MARKER.finditer(text):
        commands, _, options = m["spec"].partition(" | ")
        setup = None
        if options:
            key, _, value = options.partition(" ")
            if key != "setup" or value not in SETUPS:
                raise ExampleError(
                    f"example `{m['spec']}`: unknown option {options!r}; use `| setup NAME` with NAME one of {', '.join(SETUPS)}"
                )
            setup = value
        steps = tuple(c.strip() for c in commands.split(" && "))
        if not all(s.startswith("guarddiag ") for s in steps):
            raise ExampleError(f"example `{m['spec']}`: every command must start with `guarddiag `")
        found.append(Example(m["spec"], steps, setup, m["body"], m.start("body"), m.end("body")))
    return found


def _guarddiag() -> str:
    exe = Path(sys.executable).with_name("guarddiag")
    if not exe.exists():
        raise ExampleError(f"guarddiag is not installed beside {sys.executable}; run `make venv` and use .venv/bin/python")
    return str(exe)


def _environment() -> dict[str, str]:
    """The caller's environment without settings that would change what guarddiag prints."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUARDDIAG_", "TORCH_", "TORCHDYNAMO_", "TORCHINDUCTOR_"))}
    env.pop("GITHUB_ACTIONS", None)
    # torchrun prints a banner when OMP_NUM_THREADS is unset: a document shows what a user sees, whatever the caller set.
    env.pop("OMP_NUM_THREADS", None)
    env["PYTHONUNBUFFERED"] = "1"  # the script's output and guarddiag's in the order a terminal shows them
    return env


def _regressed_project(folder: Path) -> Path:
    """`proj/` with a baseline of module_int_attribute.py as model.py (5 recompiles), then 8 layers instead of 6 (7)."""
    project = folder / "proj"
    project.mkdir()
    model = project / "model.py"
    shutil.copy(folder / "scenarios" / "module_int_attribute.py", model)
    _run(["baseline", "model.py"], project, "setup regressed_project")
    text = model.read_text(encoding="utf-8")
    if "for i in range(6)" not in text:
        raise ExampleError("setup regressed_project: scenarios/module_int_attribute.py no longer makes its layers `for i in range(6)`")
    model.write_text(text.replace("for i in range(6)", "for i in range(8)"), encoding="utf-8")
    return project


# Setup name -> function preparing the example's folder; it returns the folder the commands run in.
SETUPS: dict[str, Callable[[Path], Path]] = {"regressed_project": _regressed_project}


def _run(args: Sequence[str], cwd: Path, what: str) -> str:
    proc = subprocess.run(
        [_guarddiag(), *args], cwd=cwd, env=_environment(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=600,
    )
    if "Traceback (most recent call last)" in proc.stdout:
        raise ExampleError(f"{what}: `guarddiag {' '.join(args)}` crashed (exit {proc.returncode}):\n{proc.stdout[-3000:]}")
    return proc.stdout


def normalise(output: str, folder: Path) -> str:
    """OUTPUT with what changes from run to run replaced: the example's folder, run folders' time and pid."""
    for path in {str(folder), str(folder.resolve())}:
        output = output.replace(path + os.sep, "").replace(path, ".")
    return _RUN_FOLDER.sub(r"\1<time>-\2-<pid>", output)


# Seconds (a negative one: a flip's compile seconds saved, when it cost more) and shares of them, and the
# microseconds (milliseconds) torch measured a check of a cache entry's guards to take, or guarddiag a call's.
# A range of them (``158-371 us``, ``371 us-1.20 ms``) is one time.
_MICROS = r"\d+(?:\.\d+)?(?: us| ms)?-\d+(?:\.\d+)? (?:us|ms)\b|\d+(?:\.\d+)? (?:us|ms)\b"
_TIMES = re.compile(rf"(?<![\w.])-?\d+\.\d+ s\b|\(\d+%\)|(?<![\w.])(?:{_MICROS})")
# A process's own log in a run folder is named by its pid (torch.child-4546.log); the table column
# under it is as wide as the longest pid.
_CHILD_LOG = re.compile(r"torch\.child-\d+\.log")
_RULE = re.compile(r"-{3,}$", re.M)


def timeless(body: str) -> str:
    """A block with compile times and their shares blanked, and the pids in process logs' names: they
    differ from run to run, so a block is stale only when something else differs (a document shows
    the run that wrote it)."""
    return _RULE.sub("---", _CHILD_LOG.sub("torch.child-<pid>.log", _TIMES.sub("<t>", body)))


def produce(example: Example) -> str:
    """The block's body as the commands print it now."""
    with tempfile.TemporaryDirectory(prefix="guarddiag-readme-") as tmp:
        folder = Path(tmp)
        for name in COPIED:
            shutil.copytree(ROOT / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        cwd = SETUPS[example.setup](folder) if example.setup else folder
        lines = []
        for command in example.commands:
            lines.append(f"$ {command}")
            discard = command.endswith(_DISCARD)
            args = shlex.split(command.removesuffix(_DISCARD))[1:]
            output = normalise(_run(args, cwd, f"example `{example.spec}`"), folder)
            if not discard:
                lines.extend(output.rstrip("\n").splitlines())
        return "".join(line.rstrip() + "\n" for line in lines)


def rewrite(text: str, bodies: dict[int, str]) -> str:
    """A document's text with the bodies of the examples at these offsets replaced."""
    out, last = [], 0
    for example in find_examples(text):
        if example.start in bodies:
            out += [text[last : example.start], bodies[example.start]]
            last = example.end
    return "".join([*out, text[last:]])


def document_name(document: Path) -> str:
    """A document's path as the repository names it: ``docs/commands.md``."""
    return str(document.relative_to(ROOT))


def _document(arg: str) -> Path:
    path = (Path.cwd() / arg).resolve()
    if path not in documents():
        raise argparse.ArgumentTypeError(f"{arg}: not one of {', '.join(document_name(d) for d in documents())}")
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("documents", nargs="*", type=_document, help="only these documents (default: README.md and docs/*.md)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a block differs from what its commands print")
    parser.add_argument("-k", dest="only", default="", help="only the examples whose commands contain this text")
    args = parser.parse_args(argv)
    total = stale_total = 0
    for document in args.documents or documents():
        text = document.read_text(encoding="utf-8")
        try:
            examples = [e for e in find_examples(text) if args.only in e.spec]
            bodies = {e.start: produce(e) for e in examples}
        except ExampleError as exc:
            print(f"readme_examples: {document_name(document)}: {exc}", file=sys.stderr)
            return 2
        stale = [e for e in examples if timeless(bodies[e.start]) != timeless(e.body)]
        for e in stale:
            diff = difflib.unified_diff(e.body.splitlines(), bodies[e.start].splitlines(), document_name(document), "now", lineterm="")
            print(f"{document_name(document)}: example `{e.spec}`:\n" + "\n".join(diff) + "\n")
        if stale and not args.check:
            tmp = document.with_name(document.name + ".tmp")
            tmp.write_text(rewrite(text, {e.start: bodies[e.start] for e in stale}), encoding="utf-8")
            os.replace(tmp, document)
        total, stale_total = total + len(examples), stale_total + len(stale)
    if args.check:
        print(f"{stale_total} of {total} examples stale" + ("; run python tools/readme_examples.py" if stale_total else ""))
        return 1 if stale_total else 0
    print(f"{stale_total} of {total} examples rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
