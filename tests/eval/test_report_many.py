"""`sieve eval report` over many runs: 37 synthetic run folders (two collections, two backbones, the
whole grid with ablations, twins, controls and two encoders, a judged collection with unjudged
answers) as `eval run` writes them. Every table's and figure's data is compared with a snapshot
(tests/eval/snapshots/report/<id>.json; SIEVE_UPDATE_SNAPSHOTS=1 rewrites them after a deliberate
change); pairing is by (collection, question id) and never across collections; a table whose runs
are missing says what it needs; the figures stay readable with this many runs."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from synthetic_runs import OTHER, PRIMARY, paper_runs, write_run

from sieve.cli.main import main
from sieve.errors import InvalidArgumentError
from sieve.eval.report.report import accuracy, build, choose_baselines, compare, load_run, markdown, verdict, write

SNAPSHOTS = Path(__file__).parent / "snapshots" / "report"
HAVE_MPL = importlib.util.find_spec("matplotlib") is not None
IDS = ["table-1", "table-3", "table-6", "table-7", "table-8", "table-9", "tables-10-12",
       "figure-1", "figure-3", "figure-4", "figure-5", "figure-6", "figure-7", "figure-8"]


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return paper_runs(tmp_path_factory.mktemp("runs"))


@pytest.fixture(scope="module")
def report(many: list[Path]) -> dict:
    return build([load_run(p) for p in many])


def test_the_fixed_runs_are_many_and_as_eval_run_writes_them(many: list[Path]) -> None:
    runs = [load_run(p) for p in many]
    assert len(runs) == 37 and {r.collection for r in runs} == {"hotpotqa", "bcp-s"} and {r.backbone for r in runs} == {PRIMARY, OTHER}
    assert sum(1 for r in runs if r.collection == "hotpotqa" and r.backbone == PRIMARY) == 24
    summary = json.loads((many[0] / "summary.json").read_text())
    record = json.loads((many[0] / "trajectories.jsonl").read_text().splitlines()[0])
    # The keys `eval run` writes (sieve/eval/run.py, sieve/agent/loop.py), no more, no fewer.
    assert {"name", "condition", "family", "ranker", "twin", "model", "collection", "questions", "accuracy", "distinct_tokens", "failures",
            "per_question", "bql_usage", "outcomes", "gold_recall"} <= set(summary)
    assert set(record) == {"question_id", "question", "config", "messages", "calls", "tool_calls", "answer", "outcome", "reason", "server_fault",
                           "crashed", "seconds", "surfaced", "opened", "format", "tokens", "llm_calls", "tool_calls_by_kind"}


@pytest.mark.parametrize("key", IDS)
def test_snapshot_of_each_table_and_figure(report: dict, tmp_path: Path, key: str) -> None:
    write(report, tmp_path)
    got = json.loads((tmp_path / f"{key}.json").read_text())
    assert "skipped" not in got, got.get("skipped")  # the fixed runs have what every table and figure needs
    assert str(tmp_path) not in json.dumps(got)
    path = SNAPSHOTS / f"{key}.json"
    if os.environ.get("SIEVE_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert got == json.loads(path.read_text(encoding="utf-8")), f"{key} changed; if on purpose, rerun with SIEVE_UPDATE_SNAPSHOTS=1"


def test_table_1_is_the_primary_backbone_by_collection(report: dict) -> None:
    t = report["tables"]["table-1"]
    assert t["backbone"] == PRIMARY and t["collections"] == ["hotpotqa", "bcp-s"]
    labels = [(r["condition"], r["ranker"], tuple(r["marks"]), r["encoder"]) for r in t["rows"]]
    # Ablations leave Table 1; the extension and the second encoder are rows of their own.
    # Encoders as tables name them: the model's short name, the bundled default marked.
    bge, minilm = "bge-base-en-v1.5", "all-MiniLM-L6-v2 (default)"
    assert ("sieve", "hybrid", ("+diagnosis",), bge) in labels and ("sieve", "dense", (), minilm) in labels and ("sieve", "dense", (), bge) in labels
    assert not any(m in ("strict Boolean", "no snippets", "no field exposure", "flat twin") for r in t["rows"] for m in r["marks"])
    sv = next(r for r in t["rows"] if (r["condition"], r["ranker"], r["marks"]) == ("sieve", "bm25", []))
    assert sv["encoder"] is None and set(sv["cells"]) == {"hotpotqa", "bcp-s"}
    bcp = sv["cells"]["bcp-s"]
    assert bcp["by"] == "judged" and bcp["unjudged"] == 1 and bcp["n"] == 12
    md = markdown(report)
    assert "(1 unjudged)" in md and "| SIEVE | sieve | bm25 | – |" in md


def test_questions_pair_within_a_collection(many: list[Path], report: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [load_run(p) for p in many]
    hot = next(r for r in runs if r.collection == "hotpotqa" and r.name == "sieve-hybrid")
    bcp = next(r for r in runs if r.collection == "bcp-s" and r.name == "search-visit-bm25")
    assert set(hot.scores) == set(bcp.scores)  # the same question ids, different questions
    with pytest.raises(InvalidArgumentError, match=r"cannot pair run sieve-hybrid .*collection hotpotqa.* with run search-visit-bm25 .*collection bcp-s"):
        compare([bcp, hot])
    # Each collection and backbone has its own baseline: BM25 Search-Visit of that collection and backbone.
    chosen = choose_baselines(runs)
    assert all(runs[b].collection == runs[i].collection and runs[b].backbone == runs[i].backbone and runs[b].name == "search-visit-bm25"
               for i, b in chosen.items())
    assert {(b["collection"], b["backbone"]) for b in report["baselines"]} == {(c, m) for c in ("hotpotqa", "bcp-s") for m in (PRIMARY, OTHER)}
    # One run given as the baseline (by position) for runs of two collections is refused, naming them.
    pair = [str(p) for p in many if "bcp-s" in str(p)][:1] + [str(p) for p in many if "hotpotqa" in str(p)][:2]
    assert main(["eval", "report", *pair, "--baseline", "0", "--out", str(tmp_path / "r")]) == 1
    err = capsys.readouterr().err
    assert "--baseline 0 is run search-visit-bm25 of collection bcp-s; it cannot be paired with one-shot-bm25" in err and "collection hotpotqa" in err
    # By name, each collection finds its own.
    assert main(["eval", "report", *map(str, many), "--baseline", "sieve-bm25", "--out", str(tmp_path / "r"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert {b["run"] for b in shown["baselines"]} == {"sieve-bm25"} and shown["unpaired"] == [f"bcp-s / {OTHER}", f"hotpotqa / {OTHER}"]
    assert "No baseline among the runs of bcp-s / " in (tmp_path / "r" / "report.md").read_text()


def test_missing_runs_skip_a_table_with_what_it_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = [write_run(tmp_path / c, "musique", c, "bm25") for c in ("search-visit", "sieve")]
    out = tmp_path / "rep"
    assert main(["eval", "report", *map(str, runs), "--out", str(out)]) == 0
    md = capsys.readouterr().out
    for needs in ("Table 6 (The Indri-style control: SIEVE's tools with Indri-style rankers): skipped; it needs a SIEVE run with the indri or indri+dense ranker",
                  "Table 7 (Ablations of SIEVE): skipped; it needs SIEVE as the paper runs it and an ablation of it",
                  "Table 8 (What BQL adds: Search–Fetch against SIEVE): skipped; it needs a Search–Fetch run and a SIEVE run with the same ranker",
                  "Table 9 (Structured against flat twin): skipped; it needs runs of one condition and ranker on both twins",
                  "Figure 4 (", "Figure 5 (Accuracy by dense encoder): skipped; it needs runs of one condition, ranker, collection and backbone with two or more dense encoders",
                  "Figure 6 (Accuracy by backbone): skipped; it needs runs of one condition and ranker on one collection with two or more backbones"):
        assert needs in md
    assert json.loads((out / "table-6.json").read_text())["skipped"].startswith("a SIEVE run with the indri")
    assert "## Table 1:" in md and "## Table 3:" in md


def test_unjudged_answers_are_neither_right_nor_wrong(tmp_path: Path) -> None:
    assert verdict({"judged": None}) is None and verdict({"judged": "unjudged"}) is None and verdict({"judged": False, "unjudged": True}) is None
    assert verdict({"judged": True}) is True and verdict({"judged": False}) is False
    run = load_run(write_run(tmp_path / "sv", "bcp-s", "sieve", "bm25", judged=True, unjudged=3))
    right = [bool(v["judged"]) for q, v in run.scores.items() if v["judged"] is not None]
    assert accuracy(run) == (round(sum(right) / 9, 4), 3)  # over the 9 judged questions, 3 unjudged beside
    (row,) = compare([run])
    assert row["judged"] == round(sum(right) / 9, 4) and row["unjudged"] == 3 and row["score_by"] == "judged"
    md = markdown(build([run]))
    assert "| Judge % | Unjudged |" in md and f"({3} unjudged)" in md


def test_backbone_choice(many: list[Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    runs = [load_run(p) for p in many]
    assert build(runs, backbone=OTHER)["tables"]["table-1"]["backbone"] == OTHER
    with pytest.raises(InvalidArgumentError, match=r"--backbone 'gpt' has no run; the runs' backbones are: Tongyi"):
        build(runs, backbone="gpt")


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib (the eval extra) is not installed")
def test_figures_readable_with_many_runs(report: dict, tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    from sieve.eval.report import figures as rf

    fig = rf.figure_1(report["figures"]["figure-1"])
    fig.canvas.draw()
    for ax in fig.axes:
        assert [t.get_text() for t in ax.texts if t.get_text()] == []  # no label on any point: nothing to overprint
    (legend,) = fig.legends
    names = [t.get_text() for t in legend.get_texts()]
    shown = {(p["family"], p["ranker"], tuple(p["marks"]), p["encoder"]) for panel in report["figures"]["figure-1"]["panels"] for p in panel["points"]}
    assert len(names) == len(set(names)) == len(shown) == 19  # each family, ranker, extension and encoder once
    assert any("all-MiniLM-L6-v2" in n for n in names)
    plt.close(fig)
    # Where runs are lines or bars, no panel holds 20 of them.
    for key, draw in (("figure-3", rf.figure_3), ("figure-8", rf.figure_8)):
        fig = draw(report["figures"][key])
        assert max(len(ax.lines) for ax in fig.axes) < 10 and len(fig.axes) >= 6
        plt.close(fig)
    fig = rf.figure_7(report["figures"]["figure-7"])
    assert "share of incorrect answers" in fig.axes[0].get_xlabel()
    plt.close(fig)
    drawn = rf.draw_all(report["figures"], tmp_path)
    assert [p.name for p in drawn] == [f"{k}.png" for k in IDS if k.startswith("figure")]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in drawn)
