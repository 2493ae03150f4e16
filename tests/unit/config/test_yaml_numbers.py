"""The YAML files users commit are read by one rule: plain decimal numbers, true/false, else text.

PyYAML reads YAML 1.1, where a budget of ``010`` was 8, ``0x10`` 16 and ``1:30`` 90 (sexagesimal), and
``yes``/``off`` booleans; each is refused with its line, key and what to write (issue #24, section 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from guarddiag import baseline as baseline_io
from guarddiag.config import load_settings
from guarddiag.errors import InputError
from guarddiag.yamlfile import Dumper, read_yaml

_BASELINE = """schema: guarddiag.baseline/1
torch_version: 2.13.0+cpu
scripts:
- path: model.py
  functions:
  - name: forward
    file: model.py
    line: 30
    compiles: 6
    recompiles: 5
    limit_hits: 0
    causes: {{value: 5}}
    budget: {budget}
"""


@pytest.mark.parametrize(
    ("written", "read"),
    [("010", "(YAML 1.1 reads it as 8, YAML 1.2 reads it as 10)"), ("0x10", "read it as 16"), ("1:30", "reads it as 90"),
     ("0o10", "YAML 1.2 reads it as 8"), ("1_000", "reads it as 1000"), ("+5", "read it as 5"), (".inf", "read it as inf"),
     ("1e3", "reads it as 1000.0"), (".5", "read it as 0.5")],
)
def test_a_budget_that_is_not_plain_decimal_is_refused_naming_line_key_and_value(tmp_path: Path, written: str, read: str):
    path = tmp_path / "guarddiag-baseline.yaml"
    path.write_text(_BASELINE.format(budget=written))
    with pytest.raises(InputError) as exc:
        baseline_io.load(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: line 13, budget: {written} is not a plain decimal number (")
    assert read in message and "write the number meant in decimal digits" in message and "\n" not in message


@pytest.mark.parametrize(("written", "value"), [("10", 10), ("0", 0), ("-3", -3), ("1.5", 1.5), ("true", True), ("false", False),
                                                  ("null", None), ("~", None), ("2.13.0", "2.13.0"), ("'010'", "010")])
def test_plain_decimal_booleans_and_text_read_as_written(tmp_path: Path, written: str, value: object):
    path = tmp_path / "x.yaml"
    path.write_text(f"value: {written}\n")
    assert read_yaml(path, "settings file", "fix it") == {"value": value}


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "Yes", "OFF"])
def test_yaml11_boolean_words_are_refused_in_settings(tmp_path: Path, word: str):
    (tmp_path / "guarddiag.yaml").write_text(f"fail_on_limit_hit: {word}\n")
    match = rf"guarddiag.yaml: line 1, fail_on_limit_hit: {word} is a boolean in YAML 1.1 .*write true or false"
    with pytest.raises(InputError, match=match):
        load_settings(tmp_path, {}, {})


def test_a_settings_timeout_in_sexagesimal_is_refused(tmp_path: Path):
    (tmp_path / "guarddiag.yaml").write_text("timeout: 1:30\n")
    with pytest.raises(InputError, match="line 1, timeout: 1:30 is not a plain decimal number"):
        load_settings(tmp_path, {}, {})


def test_the_writer_quotes_what_either_yaml_reads_as_a_number(tmp_path: Path):
    """A name guarddiag writes reads back as the same text (PyYAML's 1.1 writer left 0o10 and 1e3 plain)."""
    names = ["0o10", "1e3", "yes", "010", "1:30", ".5", "2.13.0", "x"]
    path = tmp_path / "x.yaml"
    path.write_text(yaml.dump({"names": names}, Dumper=Dumper))
    assert read_yaml(path, "baseline", "fix it") == {"names": names}


@pytest.mark.parametrize(("name", "text"), [("guarddiag.yaml", "fail_on_new_cause: 'yes'\n"),
                                            ("pyproject.toml", "[tool.guarddiag]\nfail_on_new_cause = 'on'\n")])
def test_a_boolean_setting_in_a_file_is_true_or_false(tmp_path: Path, name: str, text: str):
    """Only the environment reads 1/0, yes/no, on/off: a file's boolean is the format's own."""
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match="'fail_on_new_cause' must be true or false, not '(yes|on)'"):
        load_settings(tmp_path, {}, {})
    elsewhere = tmp_path / "repo"
    (elsewhere / ".git").mkdir(parents=True)  # the search stops here, below the bad file
    assert load_settings(elsewhere, {"GUARDDIAG_FAIL_ON_NEW_CAUSE": "yes"}, {}).fail_on_new_cause is True


@pytest.mark.parametrize(
    ("written", "read"),
    [("!!int 010", "reads it as 8"), ("!!int 0x10", "read it as 16"), ("!!int 1:30", "reads it as 90"), ("!!int 1_000", "as 1000"),
     ('!!int "010"', "reads it as 8"), ("!!float 1e2", "reads it as 100.0"), ("!!float .inf", "read it as inf"),
     ("!!int 0b11", "(YAML 1.1 reads it as 3)"), ("!!bool yes", "is a boolean in YAML 1.1")],
)
def test_an_explicitly_tagged_number_is_held_to_the_plain_decimal_rule(tmp_path: Path, written: str, read: str):
    # The tag bypasses the resolvers: PyYAML's !!int constructor read `!!int 010` as 8, silently.
    path = tmp_path / "guarddiag-baseline.yaml"
    path.write_text(_BASELINE.format(budget=written))
    with pytest.raises(InputError) as exc:
        baseline_io.load(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: line 13, budget: ") and read in message and "\n" not in message, message


@pytest.mark.parametrize(("written", "value"), [("!!int 10", 10), ("!!int -3", -3), ("!!float 1.5", 1.5), ("!!float 2", 2.0),
                                                  ("!!bool true", True), ("!!str 010", "010")])
def test_an_explicitly_tagged_plain_decimal_reads_as_written(tmp_path: Path, written: str, value: object):
    path = tmp_path / "x.yaml"
    path.write_text(f"value: {written}\n")
    assert read_yaml(path, "settings file", "fix it") == {"value": value}
