"""docs/benchmarks.md and the README's speed table are what the committed results give."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def report(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(ROOT))
    import benchmarks.report as module

    return module


def test_the_pages_are_what_the_results_give() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.report", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_changed_result_makes_the_check_fail(
    report,
    tmp_path: Path,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check compares figures, not files' presence: one changed median is caught."""
    results = tmp_path / "results"
    shutil.copytree(ROOT / "benchmarks" / "results", results)
    engine = json.loads((results / "engine-man-sections.json").read_text())
    engine["match"]["term"]["sieve"]["p50"] = 123.456
    (results / "engine-man-sections.json").write_text(json.dumps(engine))
    page, readme = tmp_path / "benchmarks.md", tmp_path / "README.md"
    page.write_text((ROOT / "docs" / "benchmarks.md").read_text())
    readme.write_text((ROOT / "README.md").read_text())
    monkeypatch.setattr(report, "RESULTS", results)
    monkeypatch.setattr(report, "PAGE", page)
    monkeypatch.setattr(report, "README", readme)
    monkeypatch.setattr(report, "ROOT", tmp_path)
    monkeypatch.setattr(sys, "argv", ["report", "--check"])
    assert report.main() == 1
    monkeypatch.setattr(sys, "argv", ["report"])
    assert report.main() == 0
    assert "| term | 3130 | 123.456 / 0.071 |" in page.read_text()
    assert "| match: term | 123.456 / 0.071 |" in readme.read_text()
    monkeypatch.setattr(sys, "argv", ["report", "--check"])
    assert report.main() == 0
