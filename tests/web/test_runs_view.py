"""The run viewer of `sieve web --runs`: two real `eval run` folders (the scripted loopback model on
a small real collection, as tests/eval does) and their report, read back through HTTP."""

from __future__ import annotations

import html
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="sieve web needs the web extra (starlette, uvicorn, jinja2)")

from loopback import LoopbackServer  # noqa: E402

from sieve.cli.main import main  # noqa: E402
from sieve.errors import SieveError  # noqa: E402
from sieve.eval.run import run_collection  # noqa: E402
from sieve.web import create_app  # noqa: E402
from sieve.web.runs import load_all, steps  # noqa: E402
from test_web import Server  # noqa: E402

from scripted_runs import FIX, scripted  # noqa: E402  (the eval tests' scripted model and collection)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    shutil.copytree(FIX, root / "beir")
    with LoopbackServer(scripted) as srv:
        run_collection(root / "beir", root / "runA", "sieve", "bm25", [srv.url], "scripted", native=False, progress=False)
        run_collection(root / "beir", root / "runB", "search-fetch", "bm25", [srv.url], "scripted", native=False, progress=False)
    assert main(["eval", "report", str(root / "runA"), str(root / "runB")]) == 0  # report.md and figures in runA/report
    return root


@pytest.fixture(scope="module")
def site(runs: Path) -> Iterator[Server]:
    with Server(create_app({}, runs=load_all([str(runs / "runA"), str(runs / "runB")]))) as s:
        yield s


def test_runs_and_a_run_page(site: Server, runs: Path) -> None:
    status, page, _ = site.get("/")
    assert status == 200 and 'href="/run?name=runA"' in page and 'href="/run?name=runB"' in page
    status, page, _ = site.get("/run", name="runA")
    assert status == 200
    cells = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())  # table cells apart
    assert "q1 : Who built Fort Santiago? Miguel López de Legazpi 1.0" in cells and "q2 : Which city has Intramuros? Quezon City 0.0" in cells
    assert 'id="report"' in page and "runB" in page[page.index('id="report"'):] and "<table>" in page[page.index('id="report"'):]
    figures = re.findall(r'<img src="(/figure\?run=runA&amp;name=[^"]+)"', page)
    assert len(figures) == 4  # Figures 1, 3, 7 and 8; two runs have no ablations, twins or encoders
    status, png, headers = site.get("/figure", run="runA", name="figure-1.png")
    assert status == 200 and headers["content-type"] == "image/png" and png[1:4] == "PNG"
    for name in ("../summary.json", "report.md", "/etc/passwd"):
        assert site.get("/figure", run="runA", name=name)[0] == 404  # only the listed figures, never a path


def test_a_question_step_by_step_with_its_gold_document(site: Server, runs: Path) -> None:
    status, page, _ = site.get("/episode", run="runA", q="q1")
    assert status == 200
    rec = next(json.loads(x) for x in (runs / "runA" / "trajectories.jsonl").read_text().splitlines() if json.loads(x)["question_id"] == "q1")
    shown = steps(rec, ["d1"])
    assert len(shown) == rec["llm_calls"] == len(re.findall(r'<div class="step" id="step-', page))
    assert shown[-1].step_summed == rec["tokens"]["step_summed"] and shown[-1].distinct == rec["tokens"]["distinct"]
    assert f"step-summed so far {shown[-1].step_summed}" in page
    assert "search(query=&#39;Fort Santiago[title]&#39;)" in page and "fetch(sections=" in page  # each call beside what it returned
    assert '<mark class="gold">d1</mark>' in page  # the gold document where it surfaced and was opened
    assert 'id="em-1">EM 1.0' in page and "Miguel López de Legazpi" in page
    status, page, _ = site.get("/episode", run="runA", q="q1", vs="runB")
    assert status == 200 and 'id="episode-1"' in page and 'id="episode-2"' in page and "runB" in page
    assert site.get("/episode", run="runA", q="nope")[0] == 404 and site.get("/episode", run="runZ", q="q1")[0] == 404
    assert site.get("/run", name="../runA")[0] == 404


def test_an_ask_record_is_a_run_of_one_question(runs: Path, tmp_path: Path) -> None:
    rec = next(json.loads(x) for x in (runs / "runA" / "trajectories.jsonl").read_text().splitlines())
    (tmp_path / "asked.json").write_text(json.dumps(rec))
    (tmp_path / "broken.json").write_text("{")
    loaded = load_all([str(tmp_path / "asked.json")])["asked"]
    assert [q["id"] for q in loaded.questions()] == [rec["question_id"]] and len(loaded.episode(rec["question_id"]).steps) == rec["llm_calls"]
    with pytest.raises(SieveError, match="not an episode record"):
        load_all([str(tmp_path / "broken.json")])
    with pytest.raises(SieveError, match="not a run folder"):
        load_all([str(tmp_path)])
    with pytest.raises(SieveError, match="two runs are called 'runA'"):
        load_all([str(runs / "runA"), str(runs / "runA")])


def test_the_steps_follow_the_record_even_without_gold() -> None:
    rec = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                        {"role": "assistant", "content": "call"}, {"role": "user", "content": "<tool_response>\n[1] d9 — T\n</tool_response>"},
                        {"role": "user", "content": "a note"}, {"role": "assistant", "content": "<answer>x</answer>"}],
           "calls": [{"prompt_tokens": 10, "completion_tokens": 2}, {"prompt_tokens": 20, "completion_tokens": 3}],
           "tool_calls": [{"name": "search", "arguments": {"query": "t"}}]}
    got = steps(rec, [])
    assert [(s.number, s.step_summed, s.distinct) for s in got] == [(1, 12, 12), (2, 35, 25)]  # the largest prompt yet, every completion yet
    assert [r[0] for r in got[0].results] == ["search(query='t')", "note"] and got[1].results == []


def evil_record() -> dict[str, Any]:
    """An episode whose question, model outputs, tool results and answer all hold markup."""
    from test_web import EVIL

    return {"question_id": "x", "question": "Q " + EVIL, "answer": EVIL, "outcome": "answered",
            "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                         {"role": "assistant", "content": "thinking " + EVIL},
                         {"role": "user", "content": "<tool_response>\n[1] d9 — " + EVIL + "\n</tool_response>"},
                         {"role": "assistant", "content": "<answer>" + EVIL + "</answer>"}],
            "calls": [{"prompt_tokens": 5, "completion_tokens": 1}, {"prompt_tokens": 9, "completion_tokens": 1}],
            "tool_calls": [{"name": "search", "arguments": {"query": EVIL}}], "tokens": {"distinct": 10, "step_summed": 16}, "llm_calls": 2}


def test_a_report_is_rendered_without_its_markup(runs: Path, tmp_path: Path) -> None:
    from test_web import EVIL

    shutil.copytree(runs / "runA", tmp_path / "runC")
    (tmp_path / "runC" / "summary.json").write_text(json.dumps({**json.loads((runs / "runA" / "summary.json").read_text()), "name": "runC"}))
    (tmp_path / "runC" / "report" / "report.md").write_text(f"# Report\n\n| a | b |\n|---|---|\n| {EVIL} | [x](javascript:alert(1)) |\n")
    with Server(create_app({}, runs=load_all([str(tmp_path / "runC")]))) as s:
        status, page, _ = s.get("/run", name="runC")
    report = page[page.index('id="report"'):]
    assert status == 200 and "<table>" in report and "&lt;script&gt;" in report
    assert "<script" not in page.lower() and "<img src=x" not in page and 'href="javascript' not in page


def test_model_outputs_are_escaped(tmp_path: Path) -> None:
    (tmp_path / "evil.json").write_text(json.dumps(evil_record()))
    with Server(create_app({}, runs=load_all([str(tmp_path / "evil.json")]))) as s:
        for path, params in (("/episode", {"run": "evil", "q": "x"}), ("/run", {"name": "evil"}), ("/runs", {})):
            status, page, _ = s.get(path, **params)
            assert status == 200 and "<script" not in page.lower() and "<img" not in page.lower(), path
            assert "&lt;script&gt;" in page or path == "/runs"


def test_an_unjudged_answer_is_shown_unjudged_not_wrong(runs: Path, tmp_path: Path) -> None:
    shutil.copytree(runs / "runA", tmp_path / "runJ")
    path = tmp_path / "runJ" / "summary.json"
    summary = json.loads(path.read_text())
    summary["per_question"]["q1"]["judged"] = None  # the grader's reply had no readable verdict twice
    summary["name"] = "runJ"
    path.write_text(json.dumps(summary))
    with Server(create_app({}, runs=load_all([str(tmp_path / "runJ")]))) as s:
        status, page, _ = s.get("/episode", run="runJ", q="q1")
        assert status == 200 and "· unjudged" in page and "judged wrong" not in page
        status, page, _ = s.get("/run", name="runJ")
        cells = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())
        assert status == 200 and "unjudged" in cells


def test_run_numbers_show_the_precision_a_person_reads(runs: Path, tmp_path: Path) -> None:
    shutil.copytree(runs / "runA", tmp_path / "runT")
    path = tmp_path / "runT" / "summary.json"
    summary = {**json.loads(path.read_text()), "name": "runT", "accuracy": 2 / 3, "f1": 0.123456,
               "distinct_tokens": 123456}
    path.write_text(json.dumps(summary))
    with Server(create_app({}, runs=load_all([str(tmp_path / "runT")]))) as s:
        _, run, _ = s.get("/run", name="runT")
        _, listed, _ = s.get("/runs")
    table = run[run.index('id="about"'):run.index("Questions")]
    about = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", table)).split())
    assert "accuracy 0.667" in about and "f1 0.123" in about and "distinct_tokens 123,456" in about
    assert "0.6666" not in run
    assert "<td>0.667</td>" in listed and "<td>123,456</td>" in listed
