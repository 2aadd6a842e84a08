"""`eval build OUT` then `eval run` / `eval grid` without `--index-dir` (the note in the collection),
and the grid's judge: a collection graded by a judge needs one, and the grid grades every cell."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackServer, Say
from scripted_runs import FIX, scripted

from sieve.cli.main import main


@pytest.fixture()
def collection(tmp_path: Path) -> Path:
    shutil.copytree(FIX, tmp_path / "beir")
    return tmp_path / "beir"


def agent_argv(srv: LoopbackServer) -> list[str]:
    return ["--llm-url", srv.url, "--model", "scripted", "--tool-style", "text"]


def test_run_and_grid_use_what_eval_build_built(collection: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    built = tmp_path / "built"
    assert main(["eval", "build", str(collection), str(built)]) == 0
    out = capsys.readouterr().out
    assert f"eval run and eval grid on {collection} will use {built} (noted in {collection / 'sieve-built.json'})" in out
    made = {p: p.stat().st_mtime_ns for p in built.rglob("*") if p.is_file()}
    with LoopbackServer(scripted) as srv:
        assert main(["eval", "run", "--collection", str(collection), "--out", str(tmp_path / "run"), "--condition", "sieve", *agent_argv(srv)]) == 0
        assert main(["eval", "grid", "--collection", str(collection), "--out", str(tmp_path / "grid"), "--conditions", "sieve,search-fetch",
                     "--rankers", "bm25", "--no-report", *agent_argv(srv)]) == 0
    assert not (collection / "sieve-index").exists()  # nothing was built under the default folder
    assert {p: p.stat().st_mtime_ns for p in made} == made  # nor rebuilt where eval build put it
    assert json.loads((tmp_path / "grid" / "sieve-bm25" / "summary.json").read_text())["questions"] == 2
    shutil.move(str(built), str(tmp_path / "moved"))
    with LoopbackServer(scripted) as srv:
        assert main(["eval", "run", "--collection", str(collection), "--out", str(tmp_path / "run2"), *agent_argv(srv)]) == 1
        assert srv.requests == []
    err = capsys.readouterr().err
    assert f"{collection / 'sieve-built.json'} says the twins were built in {built}, which does not exist" in err
    assert not (collection / "sieve-index").exists()


def grader(body: dict[str, Any]) -> Say:
    """Grades yes when the response appears among the reference answers."""
    text = body["messages"][-1]["content"]
    pred = re.search(r"^Response: (.*)$", text, re.M).group(1)  # type: ignore[union-attr]
    gold = re.search(r"^Reference answer: (.*)$", text, re.M).group(1)  # type: ignore[union-attr]
    ok = pred.lower() in gold.lower()
    return Say(f"extracted_final_answer: {pred}\nreasoning: compared.\ncorrect: {'yes' if ok else 'no'}\nconfidence: 90%")


def test_grid_on_a_judged_collection_needs_a_judge_and_grades_every_cell(collection: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (collection / "sieve-collection.json").write_text(json.dumps({"accuracy": "judge"}))
    argv = ["eval", "grid", "--collection", str(collection), "--out", str(tmp_path / "grid"), "--conditions", "sieve,search-fetch",
            "--rankers", "bm25", "--index-dir", str(tmp_path / "ix")]
    with LoopbackServer(scripted) as srv:
        assert main(argv + agent_argv(srv)) == 1
        assert srv.requests == []  # refused before any episode
        err = capsys.readouterr().err
        assert "is graded by an LLM judge" in err and "give --judge-url URL --judge-model MODEL, or --no-judge" in err
        with LoopbackServer(grader, model="judge") as judge:
            assert main(argv + agent_argv(srv) + ["--judge-url", judge.url]) == 1
            assert "--judge-url and --judge-model go together" in capsys.readouterr().err
            assert main(argv + agent_argv(srv) + ["--judge-url", judge.url, "--judge-model", "judge"]) == 0
            asked = len(judge.requests)
    grid = json.loads((tmp_path / "grid" / "grid.json").read_text())
    assert grid["judge"] == "judge"
    answers = 0
    for cell in ("sieve-bm25", "search-fetch-bm25"):
        summary = json.loads((tmp_path / "grid" / cell / "summary.json").read_text())
        recs = {r["question_id"]: r for r in map(json.loads, (tmp_path / "grid" / cell / "trajectories.jsonl").read_text().splitlines())}
        answers += sum(1 for r in recs.values() if (r["answer"] or "").strip())  # an empty answer is wrong without asking
        assert summary["judge"]["unjudged"] == 0 and summary["judge"]["questions"] == 2
        assert {q: v["judged"] for q, v in summary["per_question"].items()} == {q: bool(v["em"]) for q, v in summary["per_question"].items()}
    assert asked == answers > 0
    assert "Judge %" in (tmp_path / "grid" / "report" / "report.md").read_text()
    with LoopbackServer(scripted) as srv:
        assert main(argv + agent_argv(srv) + ["--no-judge", "--no-report"]) == 0
    assert "with --no-judge its runs have exact match only and no judged accuracy" in capsys.readouterr().err
