"""A ``--flag`` value is parsed by one function, child/_torchflags.parse_value: in the child when it sets the
flag (with the flag's current value) and in guarddiag before the run (flags.parse_value, from the catalog's
type); both accept and refuse the same values in the same words."""

from __future__ import annotations

import pytest

from guarddiag.child._torchflags import FlagError
from guarddiag.child._torchflags import parse_value as child_parse
from guarddiag.errors import InputError
from guarddiag.flags import Flag, parse_value

CASES = [
    # (catalog type, the child's current value, choices, choices only, raw)
    ("bool", True, (), False, "off"),
    ("bool", True, (), False, "sometimes"),
    ("int", 8, (), False, " 4"),
    ("int", 8, (), False, "lots"),
    ("float", 0.5, (), False, "1e-3"),
    ("float", 0.5, (), False, "half"),
    ("str", "dynamic", ("dynamic", "unbacked"), True, "unbacked"),
    ("str", "dynamic", ("dynamic", "unbacked"), True, "bogus"),
    ("int", 0, (0, 1, 2, 3), True, "7"),
    ("bool", False, ("python_reducer", "ddp_optimizer"), False, "python_reducer"),
    ("NoneType", None, ("dynamic", None), True, "None"),
]


def _outcome(parse, *args: object) -> object:
    try:
        return ("value", parse(*args))
    except (FlagError, InputError) as exc:
        return ("refused", str(exc))


@pytest.mark.parametrize(("kind", "current", "choices", "only", "raw"), CASES)
def test_guarddiag_and_the_child_take_and_refuse_the_same_values(kind, current, choices, only, raw):
    flag = Flag("f", kind, current, current, choices=choices, choices_only=only)
    assert _outcome(parse_value, flag, raw) == _outcome(child_parse, "f", raw, current, choices, only)


def test_a_refusal_names_the_flag_and_the_value_as_given():
    with pytest.raises(FlagError, match=r"^flag 'mk' takes one of 0, 1, 2, 3, not '7'$"):
        child_parse("mk", "7", 0, (0, 1, 2, 3), True)
