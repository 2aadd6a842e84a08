"""`sieve eval report`: numbers worked by hand from hand-written run folders, paired tests against
scipy and the binomial, Bonferroni, Table 1's grouping, the Markdown and JSON, the figures, and the
whole chain (`eval run` -> `eval judge` -> `eval report`) on the fixture collection against the
scripted loopback model server."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from loopback import LoopbackServer
from test_eval_run import FIX, scripted
from test_judge import fair

from sieve.agent.llm import ChatClient
from sieve.cli.main import main
from sieve.errors import InvalidArgumentError, extra_hint
from sieve.eval.judge import judge_run
from sieve.eval.report.report import FAMILIES, PICTURES, build, compare, grouped, load_run, markdown, plots, resolve_baseline, table
from sieve.eval.run import run_collection

HAVE_MPL = importlib.util.find_spec("matplotlib") is not None

PNG = b"\x89PNG\r\n\x1a\n"


def write_run(folder: Path, condition: str, ranker: str = "bm25", twin: str = "structured", *, em: list[int], distinct: list[int] | None = None,
              step: list[int] | None = None, calls: list[int] | None = None, outcomes: list[str] | None = None,
              tools: list[list[dict[str, Any]]] | None = None, judged: list[int] | None = None, failures: dict[str, int] | None = None,
              gold_recall: float | None = 0.5) -> Path:
    """A run folder as `eval run` (and `eval judge`) leave it, from per-question lists."""
    n = len(em)
    distinct, step, calls = distinct or [100] * n, step or [300] * n, calls or [3] * n
    outcomes, tools = outcomes or ["answered"] * n, tools or [[] for _ in range(n)]
    folder.mkdir(parents=True)
    qids = [f"q{i + 1:02d}" for i in range(n)]
    with (folder / "trajectories.jsonl").open("w") as f:
        for i, q in enumerate(qids):
            f.write(json.dumps({
                "question_id": q, "answer": "right" if em[i] else "wrong", "outcome": outcomes[i], "tokens": {"distinct": distinct[i], "step_summed": step[i]},
                "llm_calls": calls[i], "tool_calls": tools[i], "surfaced": [], "opened": [], "config": {"condition": condition, "ranker": ranker},
            }) + "\n")
    per_q: dict[str, dict[str, Any]] = {q: {"em": float(em[i]), "f1": float(em[i])} for i, q in enumerate(qids)}
    summary: dict[str, Any] = {"name": folder.name, "condition": condition, "ranker": ranker, "twin": twin, "model": "m", "questions": n,
                               "accuracy": sum(em) / n, "gold_recall": gold_recall, "failures": failures or {"retrieval": 0, "selection": 0, "synthesis": n - sum(em)}}
    if judged is not None:
        for i, q in enumerate(qids):
            per_q[q]["judged"] = bool(judged[i])
        summary["judge"] = {"model": "judge", "accuracy": sum(judged) / n}
    summary["per_question"] = per_q
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def search(query: str, fallback: bool = False, name: str = "search") -> dict[str, Any]:
    return {"name": name, "arguments": {"query": query}, "result_tokens": 10, "result": "...", "fallback": fallback, "admitted": 0 if fallback else 3}


def test_numbers_by_hand(tmp_path: Path) -> None:
    run = write_run(
        tmp_path / "visit", "search-visit", em=[1, 0, 0, 1], distinct=[100, 200, 300, 400], step=[300, 500, 700, 900], calls=[3, 5, 2, 4],
        outcomes=["answered", "recovered", "failed", "recovered"],
        tools=[[search("a", name="ranked_search")], [search("b", True, "ranked_search"), search("c", name="ranked_search")], [], [search("d", True, "ranked_search")]],
        failures={"retrieval": 1, "selection": 0, "synthesis": 0}, gold_recall=0.75,
    )
    (row,) = compare([load_run(run)])
    assert row == {
        "run": "visit", "dir": str(run), "family": "search-visit", "condition": "search-visit", "ranker": "bm25", "twin": "structured", "model": "m",
        "questions": 4, "encoder": None, "accuracy": 0.5, "judged": None, "unjudged": 0, "gold_recall": 0.75, "distinct_tokens": 250.0, "step_summed_tokens": 600.0, "llm_calls": 3.5,
        "recovered": 2, "recovered_share": 0.5, "fallback_rate": 0.5,  # 2 of 4 ranked searches fell back
        "failures": {"correct": 2, "retrieval": 1, "selection": 0, "synthesis": 0, "unattributed": 1}, "search_calls": 0,
        "bql_usage": row["bql_usage"], "baseline": True, "baseline_run": "visit",
        "collection": "", "marks": [], "label": "search-visit bm25", "score_by": "em",
    }
    assert all(v == {"questions": 0.0, "calls": 0.0} for v in row["bql_usage"].values())


def test_bql_usage_table_3_by_hand(tmp_path: Path) -> None:
    run = write_run(tmp_path / "sv", "sieve", em=[1, 0, 0, 1], tools=[
        [search("Fort Santiago[title]"), search('"old walls" OR moat')],  # field; phrase, boolean, or
        [search("manila -province", True), search("bad ( query")],  # not, boolean; unparseable: nothing
        [],
        [search("intram* AND date[1500..1600]"), search("a NEAR/3 b")],  # wildcard, and, boolean, date; near
    ])
    (row,) = compare([load_run(run)])
    assert row["search_calls"] == 6 and row["fallback_rate"] == round(1 / 6, 4)
    q, c = 0.25, round(1 / 6, 4)
    assert row["bql_usage"] == {
        "field": {"questions": q, "calls": c}, "boolean": {"questions": 0.75, "calls": 0.5}, "and": {"questions": q, "calls": c},
        "or": {"questions": q, "calls": c}, "not": {"questions": q, "calls": c}, "phrase": {"questions": q, "calls": c},
        "wildcard": {"questions": q, "calls": c}, "date": {"questions": q, "calls": c}, "near": {"questions": q, "calls": c},
        "plain": {"questions": 0.0, "calls": c},  # the NEAR call used no field, Boolean or date; its question used a date
    }
    md = markdown(build([load_run(run)]))
    assert "## Table 3: BQL usage" in md and "| Construct | sv |" in md
    assert "| Boolean operator (any) | 75.0 / 50.0 |" in md and "| NEAR | 25.0 / 16.7 |" in md and "(sv 6 calls)" in md
    assert "| no field / Boolean / date | 0.0 / 16.7 |" in md  # every question that searched used one; of the calls, the NEAR-only one did not (an unparseable one is no query)


BASE_TOK = [1000, 1200, 900, 1500, 1100, 1300, 1000, 950, 1250, 1400]
BASE_CALLS = [10, 12, 9, 15, 11, 13, 10, 9, 12, 14]


@pytest.fixture()
def three(tmp_path: Path) -> list[Path]:
    """A baseline and two runs on 10 questions: X cheaper and judged better, Y the baseline's twin."""
    x_tok = [b - d for b, d in zip(BASE_TOK, [400, 500, 380, 610, 450, 520, 410, 390, 505, 560])]
    y_tok = [b + d for b, d in zip(BASE_TOK, [10, -5, 3, 0, -8, 6, 2, -1, 4, -3])]
    return [
        write_run(tmp_path / "base", "search-visit", em=[1, 1, 0, 0, 0, 0, 0, 0, 1, 0], distinct=BASE_TOK, step=[3 * t for t in BASE_TOK],
                  calls=BASE_CALLS, judged=[0, 0, 0, 0, 0, 0, 0, 0, 1, 1]),
        write_run(tmp_path / "x", "sieve", "hybrid", em=[1, 1, 1, 1, 1, 1, 1, 0, 0, 0], distinct=x_tok, step=[2 * t for t in x_tok],
                  calls=[c + d for c, d in zip(BASE_CALLS, [1, 0, 2, -1, 1, 3, 0, 1, 2, 0])], judged=[1] * 10),
        write_run(tmp_path / "y", "search-fetch", em=[1, 1, 0, 0, 0, 0, 0, 0, 1, 0], distinct=y_tok, step=[3 * t for t in y_tok], calls=BASE_CALLS),
    ]


def binomial_two_sided(k: int, n: int) -> float:
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)


def test_paired_tests_against_the_binomial_and_scipy(three: list[Path]) -> None:
    runs = [load_run(p) for p in three]
    base, x, y = compare(runs, baseline=0)
    assert base["baseline"] and "tests" not in base
    # EM: X alone right on 5 questions, the baseline alone on 1; Bonferroni over 2 comparisons.
    assert x["tests"]["accuracy"]["p_raw"] == pytest.approx(binomial_two_sided(1, 6)) == pytest.approx(0.21875)
    assert x["p"]["accuracy"] == pytest.approx(2 * 0.21875)
    # Judged: X alone right on 8, the baseline alone on none.
    assert x["tests"]["judged"]["p_raw"] == pytest.approx(2 / 2**8) and x["p"]["judged"] == pytest.approx(4 / 2**8)
    for metric, get in (("distinct_tokens", lambda r: r["tokens"]["distinct"]), ("step_summed_tokens", lambda r: r["tokens"]["step_summed"]),
                        ("llm_calls", lambda r: r["llm_calls"])):
        for row, run in ((x, runs[1]), (y, runs[2])):
            if row is y and metric == "llm_calls":
                assert row["tests"][metric]["p_raw"] == 1.0  # the same calls on every question: no variance, no difference
                continue
            qs = sorted(run.scores)
            ref = stats.ttest_rel([get(run.records[q]) for q in qs], [get(runs[0].records[q]) for q in qs])
            assert row["tests"][metric]["statistic"] == pytest.approx(ref.statistic, abs=1e-4)
            assert row["tests"][metric]["p_raw"] == pytest.approx(ref.pvalue) and row["p"][metric] == pytest.approx(min(1.0, 2 * ref.pvalue))
    assert x["significant"] == ["judged", "distinct_tokens", "step_summed_tokens"]
    assert y["p"]["accuracy"] == 1.0 and "judged" not in y["tests"] and y["significant"] == []  # Y is not judged
    v = x["versus_baseline"]
    assert (v["shared"], v["gained"], v["lost"], v["both_right"], v["both_wrong"], v["verdicts_by"]) == (10, 8, 0, 2, 0, "judged")
    assert v["distinct_tokens_change"] == -472.5 and v["fewer_tokens"] == 1.0 and v["llm_calls_change"] == 0.9
    assert (y["versus_baseline"]["gained"], y["versus_baseline"]["lost"], y["versus_baseline"]["verdicts_by"]) == (0, 0, "em")
    # Against Y as the baseline instead (by name): the others are compared with Y, and X's judged test drops.
    assert resolve_baseline(runs, "y") == 2 and resolve_baseline(runs, "1") == 1
    rows = compare(runs, baseline=2)
    assert rows[2]["baseline"] and "judged" not in rows[1]["tests"] and rows[0]["p"]["accuracy"] == 1.0


def test_baseline_errors(three: list[Path]) -> None:
    runs = [load_run(p) for p in three]
    with pytest.raises(InvalidArgumentError, match=r"--baseline 3 is out of range: give 0..2 or a run name"):
        resolve_baseline(runs, 3)
    with pytest.raises(InvalidArgumentError, match=r"--baseline 'nope' names no run; the runs are: base, x, y"):
        resolve_baseline(runs, "nope")


def test_rows_grouped_as_table_1(tmp_path: Path) -> None:
    given = [("mystery", "bm25", "structured"), ("sieve", "hybrid", "structured"), ("search-visit", "bm25", "flat"), ("sieve", "bm25", "structured"),
             ("bounded-dci", "bm25", "structured"), ("rag", "dense", "structured"), ("search-visit", "dense", "structured"), ("autoread", "bm25", "structured"),
             ("search-fetch", "hybrid", "structured"), ("dci", "bm25", "structured"), ("search-visit", "bm25", "structured"), ("one-shot", "bm25", "structured")]
    runs = [load_run(write_run(tmp_path / f"r{i}", c, rk, tw, em=[1, 0])) for i, (c, rk, tw) in enumerate(given)]
    rows = grouped(compare(runs))
    assert [(r["condition"], r["ranker"], r["twin"]) for r in rows] == [
        ("one-shot", "bm25", "structured"), ("one-shot", "dense", "structured"), ("autoread", "bm25", "structured"),
        ("bounded-dci", "bm25", "structured"), ("dci", "bm25", "structured"),  # same family and ranker: the order given
        ("search-visit", "bm25", "structured"), ("search-visit", "bm25", "flat"), ("search-visit", "dense", "structured"),
        ("search-fetch", "hybrid", "structured"), ("sieve", "bm25", "structured"), ("sieve", "hybrid", "structured"), ("mystery", "bm25", "structured"),
    ]
    assert [r["family"] for r in rows] == ["one-shot"] * 2 + ["autoread"] + ["dci"] * 2 + ["search-visit"] * 3 + ["search-fetch"] + ["sieve"] * 2 + ["other"]
    # The runs' table keeps that order; Table 1 names each family once, opening its group.
    body = [line.split(" | ")[0].lstrip("| ").removesuffix(" (baseline)") for line in table(rows).splitlines()[2:14]]
    assert body == [r["run"] for r in rows]
    t1 = markdown(build(runs)).split("## Table 1:")[1].split("\n\n")[1].splitlines()[2:]
    assert [line.split(" | ")[0].lstrip("| ") for line in t1] == ["One-shot", "", "Search–AutoRead", "DCI", "", "Search–Visit", "", "Search–Fetch", "SIEVE", "", "other"]
    assert [f for f, _, _ in FAMILIES] == ["one-shot", "autoread", "dci", "search-visit", "search-fetch", "sieve", "indri-control"]


def test_markdown_has_the_papers_columns(three: list[Path], tmp_path: Path) -> None:
    runs = [load_run(p) for p in three]
    report = build(runs, "base")
    md = markdown(report)
    header = md.split("## Tables 10-12: Every run, by collection")[1].strip().splitlines()[2]
    assert header == ("| Run | Backbone | Encoder | Condition | Ranker | Twin | n | EM % | Judge % | Unjudged | Gold recall % | Distinct tok. | Step-summed tok. "
                      "| LLM calls | Recovered | Fallback % |")
    lines = md.splitlines()
    assert "| base (baseline) | m | – | search-visit | bm25 | structured | 10 | 30.0 | 20.0 | 0 | 50.0 | 1,160 | 3,480 | 11.5 | 0 (0.0%) | – |" in lines
    assert "| x | m | – | sieve | hybrid | structured | 10 | 70.0 | 100.0* | 0 | 50.0 | 688* | 1,375* | 12.4 | 0 (0.0%) | – |" in lines
    assert "| y | m | – | search-fetch | bm25 | structured | 10 | 30.0 | – | – | 50.0 | 1,161 | 3,482 | 11.5 | 0 (0.0%) | – |" in lines
    assert "Bonferroni-corrected over the runs compared with it" in md and "exact McNemar on accuracy, paired t on tokens and LLM calls" in md
    assert ("| Run | Collection | Backbone | Baseline | Shared | Gained | Lost | p EM | p Judge | Δ distinct tok. | p | Δ step-summed tok. | p | Δ LLM calls "
            "| p | Fewer tokens % |") in lines
    assert "## Table 3" not in md and "Table 3 (BQL usage (share of questions, share of search calls)): skipped; it needs runs that used" in md  # no run used search
    assert "## Failure composition (Figure 7)" in md and "|  | sieve hybrid | x | 3 | 0.0 | 0.0 | 100.0 | 0.0 |" in lines  # shares of the wrong answers
    assert "| Search–Visit | search-visit | bm25 | – | 20.0 (baseline) | 1,160 | 11.5 |" in lines  # Table 1: judged accuracy where judged
    # Without judged runs there is no Judge % column.
    assert "| Judge % |" not in table(compare([runs[2]]))
    # The JSON form is the same report.
    assert json.loads(json.dumps(report)) == report and [r["run"] for r in report["rows"]] == ["base", "y", "x"]


@pytest.mark.skipif(not HAVE_MPL, reason="matplotlib (the eval extra) is not installed")
def test_cli_writes_markdown_json_and_figures(three: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    assert main(["eval", "report", *map(str, three), "--baseline", "base", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert printed.out == (out / "report.md").read_text() and printed.out.startswith("# Evaluation report")
    assert "wrote" in printed.err and "figure-7.png" in printed.err
    data = json.loads((out / "report.json").read_text())
    assert data["baseline"] == "base" and data["figures_drawn"] == ["figure-1.png", "figure-3.png", "figure-7.png", "figure-8.png"]
    for name in data["figures_drawn"]:
        assert (out / name).read_bytes()[:8] == PNG and (out / name).stat().st_size > 5000
    assert main(["eval", "report", *map(str, three), "--baseline", "2", "--json", "--out", str(out)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["baseline"] == "y" and [r["run"] for r in shown["rows"]] == ["base", "y", "x"]
    assert main(["eval", "report", str(three[0]), "--baseline", "7"]) == 1
    assert "out of range" in capsys.readouterr().err
    assert main(["eval", "report", str(tmp_path / "nothing")]) == 1
    assert "is not a run folder" in capsys.readouterr().err


def test_without_matplotlib_the_report_names_the_extra(three: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    runs = [load_run(p) for p in three]
    said = plots(runs, tmp_path / "pics")
    assert said == PICTURES and said.endswith(extra_hint("eval")) and not (tmp_path / "pics").exists()
    assert markdown(build(runs), said).rstrip().endswith(PICTURES)


def test_the_whole_chain_on_the_fixture_collection(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """eval run (two conditions) -> eval judge (both) -> eval report: the report's numbers are the
    summaries' and the trajectories' own."""
    collection = tmp_path / "beir"
    shutil.copytree(FIX, collection)
    with LoopbackServer(scripted) as srv:
        visit = run_collection(collection, tmp_path / "visit", "search-visit", "bm25", [srv.url], "scripted", native=False, progress=False)
        sv = run_collection(collection, tmp_path / "sieve", "sieve", "bm25", [srv.url], "scripted", native=False, progress=False)
    with LoopbackServer(fair, model="judge") as srv:
        for run in ("visit", "sieve"):
            judge_run(tmp_path / run, collection, ChatClient(srv.url, "judge", max_retries=0))
    out = tmp_path / "report"
    assert main(["eval", "report", str(tmp_path / "visit"), str(tmp_path / "sieve"), "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = {r["run"]: r for r in report["rows"]}
    assert [r["run"] for r in report["rows"]] == ["visit", "sieve"] and report["baseline"] == "visit"
    for name, s in (("visit", visit), ("sieve", sv)):
        recs = [json.loads(x) for x in (tmp_path / name / "trajectories.jsonl").read_text().splitlines()]
        r = rows[name]
        assert (r["questions"], r["accuracy"], r["gold_recall"], r["fallback_rate"]) == (s["questions"], s["accuracy"], s["gold_recall"], s["fallback_rate"] if r["fallback_rate"] is not None else None)
        assert r["distinct_tokens"] == pytest.approx(sum(x["tokens"]["distinct"] for x in recs) / len(recs), abs=0.05) == pytest.approx(s["distinct_tokens"], abs=0.05)
        assert r["llm_calls"] == pytest.approx(s["llm_calls"]) and r["recovered"] == s["outcomes"]["recovered"]
        assert r["bql_usage"] == s["bql_usage"] and r["search_calls"] == s["search_calls"]
        assert {k: r["failures"][k] for k in ("retrieval", "selection", "synthesis")} == s["failures"]
        assert r["judged"] == json.loads((tmp_path / name / "summary.json").read_text())["judge"]["accuracy"]
    assert rows["sieve"]["bql_usage"]["field"] == {"questions": 0.5, "calls": 1.0}  # q1's one search is fielded
    assert set(rows["sieve"]["tests"]) == {"accuracy", "judged", "distinct_tokens", "step_summed_tokens", "llm_calls"}
    md = (out / "report.md").read_text()
    assert "Judge %" in md and "## Table 3: BQL usage" in md and "| SIEVE | sieve | bm25 | – |" in md  # eval's sieve is the paper's: no diagnosis line
