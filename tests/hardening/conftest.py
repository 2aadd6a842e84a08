"""Shared fixtures: one small index built once per module, copied for every test that damages it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import sieve

from .synth import records


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 60-document index built from a JSONL file in a non-ASCII folder (the manifest then holds
    \\u escapes, whose hex digits are a place where a flipped bit could hide)."""
    root = tmp_path_factory.mktemp("hardening")
    src = root / "corpüs" / "docs.jsonl"
    src.parent.mkdir()
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records(60, seed=3)), encoding="utf-8")

    with pytest.MonkeyPatch.context() as m:  # every file with a payload to damage, any-field rows too
        m.setattr("sieve.engine.segment.rows.ANY_MIN_DOCS", 0)
        sieve.build_index(src, root / "idx", jobs=1)
    return root / "idx"


@pytest.fixture()
def damaged_copy(pristine: Path, tmp_path: Path) -> Path:
    """A private copy of the pristine index for a test to damage."""
    out = tmp_path / "idx"
    shutil.copytree(pristine, out)
    return out
