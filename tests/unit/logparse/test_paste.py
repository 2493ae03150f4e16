"""Pastes: every excerpt of tests/fixtures/pasted/ reads as its hand-made index says, and the paste
reader's pieces (splitting, prefixes, re-joining, profiler tables) on small cases."""

from __future__ import annotations

import pytest
import yaml

from guarddiag.logparse.events import Event, LimitWarning, RecompileAnnounced
from guarddiag.logparse.parser import LogParser
from guarddiag.logparse.paste import PasteReader, split_messages, strip_prefix
from guarddiag.pipeline import parse_logs, read_log
from guarddiag.render.table import render
from guarddiag.render.words import cause_subject
from guarddiag.report import record_dict, run_report
from tests.conftest import FIXTURES, LOGS

PASTED = FIXTURES / "pasted"
INDEX = yaml.safe_load((PASTED / "index.yaml").read_text(encoding="utf-8"))
KINDS = {
    "framed", "bare", "cut_prefix", "quoted", "indented", "table", "wrapped", "flattened", "mixed_output",
    "html_escaped", "legacy", "profiler", "limit_reason", "error_trace", "single_failure",
}
NO_ROLES = lambda *_: {}  # noqa: E731 - the pastes name files that are not here


def recognised(events: list[Event]) -> dict:
    """What a reader shows of a paste: recompile messages (function, reasons), limit warnings (function, reason shown)."""
    return {
        "recompiles": [(e.name or None, len(e.failures)) for e in events if isinstance(e, RecompileAnnounced)],
        "limit_hits": [(e.name or None, bool(e.last_reason)) for e in events if isinstance(e, LimitWarning)],
    }


def read_events(lines: list[str]) -> list[Event]:
    """The events guarddiag reads from these lines: the log parser's for a log, the paste reader's for a paste."""
    functions, stats = read_log(lines, NO_ROLES)
    if stats.paste_messages is None:
        return list(LogParser().parse(_repaired(lines)))
    reader = PasteReader()
    return [e for line in lines for e in reader.feed(line)] + reader.finish()


def _repaired(lines: list[str]) -> list[str]:
    from guarddiag.logparse.paste import framed_part

    out, seen = [], False
    for line in lines:
        part = framed_part(line) if not seen else None
        seen = seen or part is not None
        out.append(part or line)
    return out


def expected(entry: dict) -> dict:
    return {
        "recompiles": [(r["function"], r["reasons"]) for r in entry["recompiles"]],
        "limit_hits": [(h["function"], h["reason"]) for h in entry["limit_hits"]],
    }


def test_the_index_lists_every_excerpt_with_its_source_and_kinds():
    files = sorted(p.name for p in PASTED.glob("*.txt"))
    assert sorted(e["file"] for e in INDEX) == files
    for entry in INDEX:
        assert entry.get("source") or entry.get("derived_from"), entry["file"]
        if entry.get("derived_from"):
            assert (PASTED / entry["derived_from"]).exists() and "derived" in entry["file"]
        assert set(entry["kinds"]) <= KINDS, entry["file"]
    assert {k for e in INDEX for k in e["kinds"]} == KINDS, "every kind of paste is in the corpus"


def _cases() -> list:
    """Every excerpt; one the reader does not read right yet (``xfail_reason``) as a strict xfail."""
    return [
        pytest.param(e, marks=pytest.mark.xfail(strict=True, reason=e["xfail_reason"])) if e.get("xfail_reason") else e
        for e in INDEX
    ]


@pytest.mark.parametrize("entry", _cases(), ids=[e["file"] for e in INDEX])
def test_every_excerpt_reads_as_its_index_says(entry):
    lines = (PASTED / entry["file"]).read_text(encoding="utf-8").splitlines(keepends=True)
    assert recognised(read_events(lines)) == expected(entry)
    run = parse_logs([str(PASTED / entry["file"])])
    named = {r["function"] for r in entry["recompiles"] + entry["limit_hits"] if r["function"]}
    assert named <= {f.name for f in run.functions}
    assert sum(len(f.limit_hits) for f in run.functions) == len(entry["limit_hits"])


def _paste(text: str) -> list[Event]:
    reader = PasteReader()
    return [e for line in text.splitlines(keepends=True) for e in reader.feed(line)] + reader.finish()


def test_a_bare_paste_reports_what_it_shows_and_says_so(tmp_path):
    paste = tmp_path / "paste.txt"
    paste.write_text(
        "Recompiling function forward in /content/model.py:12\n"
        "    triggered by the following guard failure(s):\n"
        "    - 0/1: L['n'] == 3  # return x * n  # content/model.py:14 in forward\n"
        "    - 0/0: L['n'] == 2  # return x * n  # content/model.py:14 in forward\n",
        encoding="utf-8",
    )
    run = parse_logs([str(paste)])
    assert run.parse.paste_messages == 1
    (f,) = run.functions
    assert (f.name, f.file, f.line, f.recompiles) == ("forward", "/content/model.py", 12, 1)
    assert [str(c.cache_entry) for c in f.recompile_events[0].causes] == ["0/1", "0/0"]
    text = render(run_report(run))
    assert text.splitlines()[0] == (
        "read as a paste: 1 messages recognised (1 recompiles, 0 recompile-limit hits in 1 functions); "
        "counts cover only what was pasted"
    )
    assert record_dict(run_report(run))["parse"]["paste_messages"] == 1


def test_a_framed_log_keeps_its_record_unchanged():
    log = LOGS / "torch-2.13.0" / "module_int_attribute.log"
    run = parse_logs([str(log)])
    assert run.parse.paste_messages is None
    assert "paste_messages" not in record_dict(run_report(run))["parse"]


def test_a_flattened_block_splits_into_its_messages():
    line = (
        "Recompiling function step in /w/train.py:3 triggered by the following guard failure(s): - 0/0: L['n'] == 3 "
        "# return x * n # w/train.py:4 in step Recompiling function step in /w/train.py:3 triggered by the following "
        "guard failure(s): - 0/1: L['n'] == 4 - 0/0: L['n'] == 3"
    )
    assert list(split_messages(line)) == [
        "Recompiling function step in /w/train.py:3",
        "triggered by the following guard failure(s):",
        "- 0/0: L['n'] == 3 # return x * n # w/train.py:4 in step",
        "Recompiling function step in /w/train.py:3",
        "triggered by the following guard failure(s):",
        "- 0/1: L['n'] == 4",
        "- 0/0: L['n'] == 3",
    ]
    events = _paste(line)
    assert recognised(events)["recompiles"] == [("step", 1), ("step", 2)]
    assert events[0].failures[0].text == "L['n'] == 3  # return x * n # w/train.py:4 in step"


def test_a_long_flattened_line_is_read_in_linear_time():
    import time

    block = "Recompiling function f in /x.py:1 triggered by the following guard failure(s): - 0/0: L['n'] == 3 "
    start = time.perf_counter()
    events = _paste(block * 20_000)
    assert len(events) == 20_000 and time.perf_counter() - start < 20


@pytest.mark.parametrize(
    ("piece", "rank", "body"),
    [
        ("W [0/8] torch._dynamo hit config.recompile_limit (8)", None, "torch._dynamo hit config.recompile_limit (8)"),
        ("V0703 10:34:13.273000 torch/_dynamo/guards.py:2590] [0/1] [__recompiles] Recompiling", None, "Recompiling"),
        (".../torch/_dynamo/guards.py:2772] [16/8] [__recompiles_verbose]     - 16/7: x", None, "- 16/7: x"),
        ("[rank1]: torch._dynamo hit config.cache_size_limit (8)", 1, "torch._dynamo hit config.cache_size_limit (8)"),
        ("2024-05-02 10:11:12,345 [0/1] Recompiling function f in x.py:1", None, "Recompiling function f in x.py:1"),
        ("DEBUG:torch._dynamo.guards.__recompiles:Recompiling function f", None, "Recompiling function f"),
        ("- 0/0: n == 1", None, "- 0/0: n == 1"),
    ],
)
def test_what_is_left_of_a_prefix_is_taken_off(piece, rank, body):
    assert strip_prefix(piece) == (rank, body)


def test_a_line_wrapped_at_the_terminal_width_is_joined_again():
    text = (
        "Recompiling function forward in /home/user/project/models/transformer_block.py:12\n"
        "    triggered by the following guard failure(s):\n"
        "    - 0/0: tensor 'x' size mismatch at index 0. expected 3, actual 4\n"
    )
    wrapped = "".join(line[i : i + 41] + "\n" for line in text.splitlines() for i in range(0, len(line), 41))
    assert recognised(_paste(wrapped)) == recognised(_paste(text)) == {"recompiles": [("forward", 1)], "limit_hits": []}


def test_a_profiler_table_counts_each_recompile_with_its_reason():
    table = (
        "Function                   Recompiles  Recompile Reasons\n"
        "-----------------------  ------------  ------------------------------\n"
        "'forward' (model.py:20)             3  GuardFail(reason=\"L['x'] == 1\", orig_code=<code object forward>)\n"
        "                                      GuardFail(reason=\"L['x'] == 2\", orig_code=<code object forward>)\n"
        "'step' (train.py:7)                 1  tensor 'x' size mismatch at index 0. expected 3, actual 4\n"
        "\n"
        "Set torch._dynamo.config.cache_size_limit to 3 to avoid being cache limited.\n"
    )
    events = _paste(table)
    assert recognised(events)["recompiles"] == [("forward", 1), ("forward", 1), ("forward", 0), ("step", 1)]
    assert events[1].failures[0].text == "L['x'] == 2"


def test_text_without_torch_messages_is_still_refused(tmp_path):
    from guarddiag.errors import InputError

    other = tmp_path / "notes.txt"
    other.write_text("- a list item\nRecompiling is slow\nfunction: 'x'\n", encoding="utf-8")
    with pytest.raises(InputError, match="no torch log lines and no torch messages"):
        parse_logs([str(other)])


def test_two_equal_longest_lines_of_one_message_are_no_wrap():
    """Pytorch#114293 quoted: the two longest lines are one message repeated; the program's "1" after
    the first is a line of its own, not the rest of a cut reason."""
    lines = (PASTED / "002-pytorch-114293.txt").read_text(encoding="utf-8").splitlines()
    quoted = [f"> {line}\n" for line in lines]
    reasons = [f.text for e in read_events(quoted) if isinstance(e, RecompileAnnounced) for f in e.failures]
    assert reasons and not any(r.endswith("accumulate1") for r in reasons)


def test_a_framed_paste_cut_at_its_width_keeps_its_function():
    """ComfyUI#9289 cut at 187 columns: two different messages were cut, so the width is known, and the
    Recompiling line is joined again."""
    lines = (PASTED / "024-comfyui-9289.txt").read_text(encoding="utf-8").splitlines()
    wrapped = [line[i : i + 187] + "\n" for line in lines for i in range(0, len(line), 187)]
    assert recognised(read_events(wrapped)) == {"recompiles": [("forward", 2)], "limit_hits": []}


def test_a_function_without_its_line_has_none():
    events = _paste("[0/1] [__recompiles] Recompiling function forward in ...\n[0/1] [__recompiles]     - 0/0: x == 1\n")
    (e,) = events
    assert (e.name, e.file, e.line, len(e.failures)) == ("forward", "...", None, 1)
    (hit,) = _paste("torch._dynamo hit config.recompile_limit (8)\n   function: 'run_cross_attn'  last reason: x == 1\n")
    assert (hit.name, hit.file, hit.line, hit.last_reason) == ("run_cross_attn", "", None, "x == 1")


def test_a_line_of_prefixes_only_is_read_in_linear_time():
    import time

    def took(n: int) -> float:
        start = time.perf_counter()
        _paste("[0/1] [__recompiles] " * n + "\n")
        return time.perf_counter() - start

    # 8x the prefixes: linear is about 8x the time, quadratic 64x. The bound sits between them, far from
    # each, and each size's best of five, so that a loaded machine (other tests on the cores) does not fail it.
    small, large = min(took(4000) for _ in range(5)), min(took(32000) for _ in range(5))
    assert large < 24 * small + 0.05


@pytest.mark.parametrize(
    "prefix",
    [
        "[0/1] [__recompiles]",
        "[!0/3/1] [__recompiles]",  # compiled autograd's compile id, as framing reads it
        "V1130 07:22:30.181 2270 torch/_dynamo/guards.py:5396] [1/1] [__recompiles]",  # a time framing reads, not 6 digits
    ],
)
def test_a_prefix_the_parser_reads_also_starts_a_message_mid_line(prefix):
    """The paste's markers are built from the parser's prefix spellings: whatever prefix LogParser frames
    ends the message before it in a flattened line."""
    line = f"Recompiling function f in /x.py:1 {prefix} triggered by the following guard failure(s): - 0/0: L['x'] == 1"
    assert next(split_messages(line)) == "Recompiling function f in /x.py:1"
    assert recognised(_paste(line))["recompiles"] == [("f", 1)]


def test_the_limit_advice_ends_the_reason_before_it_in_any_case():
    """The reader takes torch's advice line in any case (blocks.LIMIT_ADVICE, ignoring case); so does the split."""
    line = "torch._dynamo hit config.recompile_limit (8) function: 'f' (x.py:1) last reason: 0/0: x == 1 TO LOG ALL RECOMPILATION"
    (hit,) = _paste(line)
    assert hit.last_reason == "0/0: x == 1"


def test_a_tuple_that_is_no_literal_is_no_recompile():
    """A torch 2.1 tuple holding an unhashable key: read as no literal, as LogParser does, not an error."""
    assert _paste("('Recompiling function f in x.py', {[1]: 2})\n") == []


def test_a_pasted_reason_that_goes_on_below_its_colon_names_the_aliased_sources():
    """vLLM's paste: `Guard fail reason: 1/0: Duplicate tensors found:` with the sources on the two lines below."""
    from guarddiag.pipeline import parse_log

    (f,) = parse_log(str(PASTED / "035-vllm-spyre-same-frame.txt")).functions
    (cause,) = f.recompile_events[0].causes
    assert cause.category == "aliasing" and str(cause.cache_entry) == "1/0"
    assert cause_subject(cause) == (
        "`self.input_layernorm.weight.data.to.__self__` and `self.post_attention_layernorm.weight.data.to.__self__`: "
        "one tensor passed more than once"
    )


def test_a_pasted_reason_with_a_colon_and_nothing_below_is_still_one_recompile():
    reader = PasteReader()
    events = [e for line in ("Guard fail reason: 0/0: Duplicate tensors found:", "", "done") for e in reader.feed(line)]
    events += reader.finish()
    (event,) = [e for e in events if isinstance(e, RecompileAnnounced)]
    assert event.failures[0].text == "Duplicate tensors found:"
