"""`sieve eval grid`: which cells a grid has, grid files and their errors, and the whole grid end to
end through the CLI against the scripted loopback server (every run made, resumed, reported)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackServer
from test_conditions_run import GOLD, collection, records, researcher  # noqa: F401  (a fixture)

from sieve.cli.main import main
from sieve.errors import InvalidArgumentError
from sieve.eval.grid import Cell, load_grid, plan


def test_the_default_grid_is_the_papers() -> None:
    names = [c.name for c in plan()]
    assert names == [
        "one-shot-bm25", "one-shot-dense", "autoread-bm25", "autoread-dense", "dci-none", "bounded-dci-bm25",
        "search-visit-bm25", "search-visit-dense", "search-visit-hybrid", "search-fetch-bm25", "search-fetch-dense", "search-fetch-hybrid",
        "sieve-bm25", "sieve-dense", "sieve-hybrid",
    ]
    assert [c.name for c in plan(rankers=["bm25"])] == ["one-shot-bm25", "autoread-bm25", "dci-none", "bounded-dci-bm25", "search-visit-bm25",
                                                       "search-fetch-bm25", "sieve-bm25"]
    both = [c.name for c in plan(["search-visit", "dci"], ["bm25"], ["structured", "flat"])]
    assert both == ["search-visit-bm25", "search-visit-bm25-flat", "dci-none"]  # a twin matters only where an index is searched
    # Without hybrid among the rankers, the ablations run on the one asked for.
    extra = [c.name for c in plan(rankers=["bm25"], ablations=True)][7:]
    assert extra == ["sieve-bm25-strict", "sieve-bm25-snippet-none", "sieve-bm25-no-fields", "sieve-bm25-flat", "sieve+diagnose-bm25",
                     "search-visit-bm25-flat"]
    assert [c.name for c in plan(["rag"], ["bm25"])] == ["one-shot-bm25"]  # the alias resolves


def test_ablations_run_on_bm25_dense_as_the_papers() -> None:
    """Table 7, Figure 4 and Table 9: each ablation one switch away from SIEVE on BM25+dense (the
    paper's, diagnosis off), the diagnosis as sieve's addition, Search-Visit on the flat twin."""
    cells = plan(ablations=True)
    assert [c.name for c in cells][15:] == ["sieve-hybrid-strict", "sieve-hybrid-snippet-none", "sieve-hybrid-no-fields", "sieve-hybrid-flat",
                                           "sieve+diagnose-hybrid", "search-visit-bm25-flat"]
    assert cells[15:19] == [Cell("sieve", "hybrid", fallback=False), Cell("sieve", "hybrid", snippet="none"), Cell("sieve", "hybrid", fields=False),
                            Cell("sieve", "hybrid", "flat")]
    assert all(c.diagnose is None for c in cells)  # each condition's own: the paper's sieve has none
    assert Cell("sieve", "hybrid", diagnose=False).check() == Cell("sieve", "hybrid")  # the same cell, the same name
    assert Cell("sieve", "hybrid", diagnose=True).check().name == "sieve-hybrid-diagnosis"
    assert Cell("sieve+diagnose", "hybrid", diagnose=False).check().name == "sieve+diagnose-hybrid-no-diagnosis"


def test_extensions_are_extra_rows() -> None:
    assert "sieve+diagnose" not in {c.condition for c in plan()}  # the default grid is the paper's
    names = [c.name for c in plan(["sieve"], ["bm25", "hybrid"], extensions=True)]
    assert names == ["sieve-bm25", "sieve-hybrid", "sieve+diagnose-bm25", "sieve+diagnose-hybrid", "sieve+manual-bm25", "sieve+manual-hybrid",
                     "sieve+ranked-fallback-hybrid", "sieve+all-bm25", "sieve+all-hybrid"]
    assert [c.name for c in plan(["sieve+all"], ["dense"])] == ["sieve+all-dense"]


def test_grid_files_and_their_errors(tmp_path: Path) -> None:
    f = tmp_path / "g.json"
    f.write_text(json.dumps({"cells": [{"condition": "sieve", "ranker": "bm25", "fallback": False}, {"condition": "dci", "ranker": "none"}]}))
    assert load_grid(f) == [Cell("sieve", "bm25", fallback=False), Cell("dci", "none")]
    f.write_text(json.dumps({"conditions": ["sieve"], "rankers": ["bm25", "dense"]}))
    assert [c.name for c in load_grid(f)] == ["sieve-bm25", "sieve-dense"]
    for bad, msg in [
        ({"cells": [{"condition": "dci", "ranker": "bm25"}]}, "dci runs with ranker 'none' only"),
        ({"cells": [{"condition": "sieve", "ranker": "tfidf"}]}, "ranker must be one of bm25, dense, hybrid"),
        ({"cells": [{"condition": "sieve", "ranker": "bm25", "colour": "red"}]}, "cell 0: .*colour"),
        ({"cells": [{"condition": "nope", "ranker": "bm25"}]}, "unknown condition 'nope'"),
        ({"rankers": ["bm26"]}, r"unknown rankers \['bm26'\]"),
        ({"conditons": ["sieve"]}, r"unknown keys \['conditons'\]"),
    ]:
        f.write_text(json.dumps(bad))
        with pytest.raises(InvalidArgumentError, match=msg):
            load_grid(f)
    f.write_text("{not json")
    with pytest.raises(InvalidArgumentError, match="cannot read the grid file"):
        load_grid(f)


def test_the_whole_grid_through_the_cli(collection: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    out = tmp_path / "grid"
    argv = ["eval", "grid", "--collection", str(collection), "--out", str(out), "--index-dir", str(tmp_path / "ix"), "--rankers", "bm25",
            "--ablations"]
    with LoopbackServer(researcher) as srv:
        assert main(argv + ["--llm-url", srv.url, "--model", "scripted"]) == 0
        calls = len(srv.requests)
        assert main(argv + ["--llm-url", srv.url, "--model", "scripted"]) == 0  # resumed: nothing left to run
        assert len(srv.requests) == calls
    cells = json.loads((out / "grid.json").read_text())["cells"]
    assert len(cells) == 13
    for cell in cells:
        run = out / cell["run"]
        summary = json.loads((run / "summary.json").read_text())
        assert (summary["condition"], summary["twin"], summary["fallback"]) == (cell["condition"], cell["twin"], cell["fallback"])
        assert {r["question_id"] for r in records(run)} == set(GOLD)
    # The paper's SIEVE: no diagnosis, a BM25 fallback, the paper's manual (BrowseComp-Plus's: the collection has a date and an author).
    paper, extended, bare = (json.loads((out / r / "summary.json").read_text()) for r in ("sieve-bm25", "sieve+diagnose-bm25", "sieve-bm25-no-fields"))
    assert (paper["diagnose"], paper["fallback_ranker"], paper["manual"], paper["fields"], paper["cap_scope"]) == (False, "bm25", "paper-browsecomp",
                                                                                                            True, "document")
    assert (extended["diagnose"], extended["manual"], bare["fields"]) == (True, "paper-browsecomp", False)
    report = (out / "report" / "report.md").read_text()
    assert all(cell["run"] in report for cell in cells)
    assert "search-visit-bm25" in capsys.readouterr().out


def test_controls_add_table_6() -> None:
    names = [c.name for c in plan(["sieve"], ["bm25"], controls=True)]
    assert names == ["sieve-bm25", "indri-control-indri", "indri-control-indri+dense"]  # Indri's own language (issue 48)
    assert Cell("sieve", "indri").check().ranker == "indri"
    with pytest.raises(InvalidArgumentError, match="ranker must be one of bm25, dense, hybrid, indri, indri\\+dense"):
        Cell("sieve", "lucene").check()


def test_an_episode_that_crashes_fails_the_command_and_is_redone(collection: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception inside sieve is recorded (the run goes on), counted, makes `eval run` exit 1,
    and a second run redoes exactly those episodes."""
    from sieve.tools import toolset

    real = toolset.Toolset._search
    calls = {"n": 0}

    def broken_once(self: Any, args: dict[str, Any], facts: dict[str, Any]) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("a bug in sieve")
        return real(self, args, facts)

    monkeypatch.setattr(toolset.Toolset, "_search", broken_once)
    argv = ["eval", "run", "--collection", str(collection), "--out", str(tmp_path / "run"), "--index-dir", str(tmp_path / "ix"),
            "--condition", "sieve", "--tool-style", "native"]
    with LoopbackServer(researcher) as srv:
        assert main(argv + ["--llm-url", srv.url, "--model", "scripted"]) == 1
        err = capsys.readouterr().err
        assert "episodes ended by an error inside sieve (run: 1)" in err
        (crashed,) = [r for r in records(tmp_path / "run") if r.get("crashed")]
        assert crashed["reason"].startswith("RuntimeError: a bug in sieve (at test_grid.py:")
        assert main(argv + ["--llm-url", srv.url, "--model", "scripted"]) == 0  # the crashed episode is redone
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["crashed"] == 0 and summary["accuracy"] == 1.0
