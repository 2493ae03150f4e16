"""The config catalog of the target torch, read by starting its interpreter (guarddiag/flags.py)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.torch  # load_catalog starts this interpreter three times to read torch's config: ~10 s
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
