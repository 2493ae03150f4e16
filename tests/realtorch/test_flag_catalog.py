"""The config catalog of the target torch, read by starting its interpreter (guarddiag/flags.py), and the flags an
exception names, matched by the environment variables torch's config modules read (child/_torchflags.py)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.torch  # load_catalog starts this interpreter three times to read torch's config: ~10 s
@pytest.mark.slow
def test_catalog_cache_is_keyed_by_torch_install_and_environment(tmp_path, monkeypatch):
    import sys

    from guarddiag.flags import load_catalog

    first = load_catalog(sys.executable, cache_dir=tmp_path)
    (entry,) = list(tmp_path.iterdir())
    assert load_catalog(sys.executable, cache_dir=tmp_path) == first
    marked = json.loads(entry.read_text())
    marked["torch_version"] = "from-the-cache"
    entry.write_text(json.dumps(marked))
    assert load_catalog(sys.executable, cache_dir=tmp_path).torch_version == "from-the-cache"
    monkeypatch.setenv("TORCH_DYNAMO_AUTOMATIC_DYNAMIC_SHAPES", "0")
    flipped = load_catalog(sys.executable, cache_dir=tmp_path)
    assert len(list(tmp_path.iterdir())) == 2 and entry.exists()
    assert flipped.resolve("automatic_dynamic_shapes").value is False
    assert first.resolve("automatic_dynamic_shapes").value is True


def test_an_exception_names_a_flag_by_name_env_var_or_value():
    from guarddiag.child._torchflags import flags_named_in

    flags = [
        {"name": "debug_backend_override", "value": "0:nosuch"},
        {"name": "automatic_dynamic_shapes_mark_as", "value": "bogus"},
        {"name": "recompile_limit", "value": "100"},
        {"name": "specialize_float", "value": "true"},
    ]
    named = flags_named_in
    assert named("ValueError: TORCH_COMPILE_OVERRIDE_BACKENDS: 'nosuch' is not a valid backend", flags) == [
        "debug_backend_override=0:nosuch"
    ]
    assert named("ValueError: invalid automatic_dynamic_shapes_mark_as = x", flags) == ["automatic_dynamic_shapes_mark_as=bogus"]
    assert named("KeyError: 'bogus'", flags) == ["automatic_dynamic_shapes_mark_as=bogus"]
    assert named("AssertionError: torch._dynamo.config.recompile_limit must be positive", flags) == ["recompile_limit=100"]
    # Numbers and booleans are too common to count as a mention; parts of longer words are not one.
    assert named("RuntimeError: expected 100 elements, got true", flags) == []
    assert named("ValueError: bogusness", flags) == []
    assert named("ValueError: my_recompile_limit_x", flags) == []
    # A value is named only in quotes, a config name only when it is not a plain word.
    assert named("ValueError: expected a bogus batch size", flags) == []
    assert named("KeyError: 'verbose'", [{"name": "verbose", "value": "true"}]) == []
    assert named("RuntimeError: debug build required", [{"name": "inductor.debug", "value": "1"}]) == []
