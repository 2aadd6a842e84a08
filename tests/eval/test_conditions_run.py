"""Every condition of the paper's grid, end to end: `run_collection` on a real collection against
the scripted loopback model server, whose policy reads what it receives (the tools offered, the
results) and acts as a researcher would. Checked for each: the tools offered, the budgets, what
the records say, and the summary recomputed from the trajectory records alone."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from sieve.tools.shell.sandbox import choose

from loopback import LoopbackServer, Say, count_tokens

import sieve
from sieve.agent.loop import CUT_MARK, Budgets
from sieve.corpus.demo import stdlib_documents
from sieve.eval.collections import flat_twin
from sieve.eval.metrics import exact_match
from sieve.eval.run import run_collection
from sieve.tools.conditions import CONTROLS, CONDITIONS, PAPER_CONDITIONS
from sieve.tools.shell.files import file_name
from sieve.tools.fetch.reading import body_text
from sieve.tools.shell.safe import shown
from sieve.tools.toolset import free_text_query

FIX = Path(__file__).parent / "fixtures" / "beir"
GOLD = {"q1": ["Miguel López de Legazpi"], "q2": ["Manila", "City of Manila"]}
ANSWER = re.compile(r"Built in \d+ by ([^.\n]+)|The walled city of (\w+)")


def call(name: str, **arguments: Any) -> Say:
    return Say("", [(name, json.dumps(arguments))])


def researcher(body: dict[str, Any]) -> Say:
    """One researcher for every condition: it acts with whatever tools it is offered."""
    offered = {t["function"]["name"] for t in body.get("tools") or []}
    messages = body["messages"]
    results = [str(m.get("content") or "") for m in messages if m["role"] == "tool"]
    seen = "\n".join(results) if offered else str(messages[0]["content"])  # one-shot: the passages are in the prompt
    found = ANSWER.search(seen)
    if found:
        return Say(f"<think>The text says it.</think>The answer, inside <answer> tags: <answer>{found.group(1) or found.group(2)}</answer>")
    question = str(messages[1]["content"])
    subject = "Fort Santiago" if "Fort" in question else "Intramuros"
    step = len(results)
    if "bash" in offered:
        if step == 0:
            return call("bash", command="cat ../ids.json")  # an escape: there is nothing there
        if step == 1:
            return call("bash", command=f"grep -il '{subject}' *.txt | sort")
        names = [ln for ln in results[1].splitlines() if ln.endswith(".txt")]
        return call("read", path=names[-1] if subject == "Intramuros" else names[0])
    if "search" in offered:
        return call("search", query=f'"{subject}"[title]') if step == 0 else call("fetch", sections=[{"doc": 1, "section": "intro" if subject == "Intramuros" else "History"}])
    if step == 0:
        return call("ranked_search", query=subject, k=50)  # over the eval cap: an error to read
    if step == 1:
        return call("ranked_search", query=subject)
    if "visit" in offered:
        return call("visit", doc=1)
    if "fetch" in offered:
        return call("fetch", sections=[{"doc": 1, "section": "intro" if subject == "Intramuros" else "History"}])
    return Say("<answer>unknown</answer>")


def records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture collection plus 28 real documents and 12 other forts, so that a bound of 10 bounds something."""
    root = tmp_path_factory.mktemp("grid") / "beir"
    shutil.copytree(FIX, root)
    with (root / "corpus.jsonl").open("a", encoding="utf-8") as fh:
        for rec in stdlib_documents(limit=28):
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
        for i in range(12):
            fh.write(json.dumps({"_id": f"fort-{i}", "title": f"Fort number {i}", "text": "A fort on a hill, long abandoned. " * 30}) + "\n")
    return root


def test_the_grid_has_every_condition_of_the_paper() -> None:
    assert sorted(PAPER_CONDITIONS) == sorted(["one-shot", "autoread", "dci", "bounded-dci", "search-visit", "search-fetch", "sieve"])


# The controls' tools take another query language: tests/tools/test_indri_tool.py runs one end to end.
@pytest.mark.parametrize("name", [n for n in CONDITIONS if n not in CONTROLS])
def test_every_condition_end_to_end(collection: Path, tmp_path: Path, name: str) -> None:
    cond = CONDITIONS[name]
    out = tmp_path / name
    with LoopbackServer(researcher) as srv:
        s = run_collection(collection, out, name, "bm25", [srv.url], "scripted", progress=False, index_dir=tmp_path / "ix")
    recs = records(out)
    assert {r["question_id"] for r in recs} == set(GOLD)
    # The tools offered are the condition's, and the answer tool; one-shot offers none.
    offered = [sorted(t["function"]["name"] for t in b.get("tools") or []) for b in srv.requests]
    assert all(o == ([] if cond.one_shot else sorted([*cond.tools, "answer"])) for o in offered)
    # Every answer right, taken from the last <answer> outside thinking.
    assert all(exact_match(r["answer"], GOLD[r["question_id"]]) for r in recs), [(r["answer"], r["reason"]) for r in recs]
    assert s["accuracy"] == 1.0 and s["condition"] == name and s["family"] == cond.family
    # The summary is the records' numbers.
    assert s["llm_calls"] == pytest.approx(sum(r["llm_calls"] for r in recs) / 2, abs=1e-3)
    assert s["distinct_tokens"] == pytest.approx(sum(r["tokens"]["distinct"] for r in recs) / 2, abs=0.05)
    assert s["step_summed_tokens"] == pytest.approx(sum(r["tokens"]["step_summed"] for r in recs) / 2, abs=0.05)
    for r in recs:
        assert r["tokens"]["step_summed"] == sum(c["prompt_tokens"] + c["completion_tokens"] for c in r["calls"])
        assert r["llm_calls"] == len(r["calls"]) == (1 if cond.one_shot else 1 + len([t for t in r["tool_calls"] if t["name"] != "bm25_bound"]))
    assert s["gold_recall"] == 1.0  # every gold document surfaced, whatever the tools
    if cond.corpus == "index" and not cond.one_shot and "ranked_search" in cond.tools:
        first = [r["tool_calls"][0] for r in recs]
        assert all(t["result"].startswith("ranked_search error") and "at most 5" in t["result"] for t in first)  # k is capped at 5


def test_dci_sees_only_its_folder_and_reads_the_flat_twins_text(collection: Path, tmp_path: Path) -> None:
    with LoopbackServer(researcher) as srv:
        s = run_collection(collection, tmp_path / "run", "dci", "bm25", [srv.url], "scripted", progress=False, index_dir=tmp_path / "ix")
    assert s["shell_sandbox"] == choose("auto").record()  # the mechanism is chosen once and recorded
    staged = tmp_path / "ix" / "dci" / "files"
    index = sieve.open_index(tmp_path / "ix" / "structured")
    flat = sieve.build_index(flat_twin(collection / "corpus.jsonl"))
    ids = [flat.reader.doc_id(d) for d in range(len(flat))]
    assert sorted(p.name for p in staged.iterdir()) == sorted(file_name(i) for i in ids)
    for doc_id in ids:  # a file is the title, a blank line, then what a visit of the flat twin shows
        doc = shown(flat.document(doc_id))
        assert (staged / file_name(doc_id)).read_text(encoding="utf-8") == f"{doc.title}\n\n{body_text(doc)}\n"
    for r in records(tmp_path / "run"):
        escape = r["tool_calls"][0]
        # ids.json sits beside the folder: the sandbox does not show it
        assert escape["name"] == "bash" and escape["result"] == "cat: ../ids.json: No such file or directory\n[exit status 1]"
        read = r["tool_calls"][2]
        assert read["name"] == "read" and r["opened"] == [index.reader.doc_id(0) if r["question_id"] == "q1" else "d2"]


def test_bounded_dci_folder_holds_bm25s_top_ten(collection: Path, tmp_path: Path) -> None:
    with LoopbackServer(researcher) as srv:
        run_collection(collection, tmp_path / "run", "bounded-dci", "bm25", [srv.url], "scripted", progress=False, index_dir=tmp_path / "ix")
    index = sieve.open_index(tmp_path / "ix" / "structured")
    assert len(index) == 42
    for r in records(tmp_path / "run"):
        bound = r["tool_calls"][0]
        want = [h.doc_id for h in index.search(free_text_query(r["question"]) or "", k=10, fallback=False).hits]
        assert bound["name"] == "bm25_bound" and bound["result"].split("\n") == want
        admitted = index.search(free_text_query(r["question"]) or "", k=100, fallback=False).count
        assert admitted > 10 and len(want) == 10
        assert r["surfaced"][:10] == want
        ls = [t for t in r["tool_calls"] if t["name"] == "bash" and "grep" in t["arguments"]["command"]]
        assert set(ls[0]["result"].split()) <= {file_name(i) for i in want}


def test_one_shot_fits_the_whole_text_into_the_window(collection: Path, tmp_path: Path) -> None:
    """The fit loop: documents' full text, cut from the lowest-ranked until the tokenised prompt
    fits the window less the answer budget, counted by the server's /tokenize when it has one."""
    budgets = Budgets(max_tokens=200)
    for tokenize in (True, False):
        with LoopbackServer(researcher, max_model_len=800, tokenize=tokenize) as srv:
            run_collection(collection, tmp_path / f"run{tokenize}", "one-shot", "bm25", [srv.url], "scripted", progress=False,
                           index_dir=tmp_path / "ix", budgets=budgets, limit=1)
        (rec,) = records(tmp_path / f"run{tokenize}")
        fit = rec["tool_calls"][0]["fit"]
        sent = srv.requests[-1]["messages"]
        assert fit["limit"] == 800 - 200 and fit["counted_by"] == ("server" if tokenize else "words")
        assert fit["dropped_words"] > 0 and CUT_MARK in sent[0]["content"]
        if tokenize:  # the server's own count of the prompt it was sent
            assert count_tokens(sent) == fit["prompt_tokens"] <= fit["limit"] and srv.tokenized
        assert count_tokens(sent) <= 800 - 200
        assert rec["answer"] == "Miguel López de Legazpi"  # the top document (the gold one) kept its text


def test_ablations_reach_the_tools(collection: Path, tmp_path: Path) -> None:
    """Strict Boolean search and cards without snippets, from run_collection (the CLI's flags)."""
    def policy(body: dict[str, Any]) -> Say:
        results = [str(m.get("content") or "") for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return call("search", query='"Fort Santiago"[title] AND nonexistentword')
        return Say(f"<answer>{'strict' if results[0].startswith('0 documents match') else 'fallback'}</answer>")

    with LoopbackServer(policy) as srv:
        a = run_collection(collection, tmp_path / "strict", "sieve", "bm25", [srv.url], "scripted", progress=False, index_dir=tmp_path / "ix",
                           fallback=False, snippet="none", limit=1)
        b = run_collection(collection, tmp_path / "normal", "sieve", "bm25", [srv.url], "scripted", progress=False, index_dir=tmp_path / "ix", limit=1)
    assert records(tmp_path / "strict")[0]["answer"] == "strict" and records(tmp_path / "normal")[0]["answer"] == "fallback"
    assert (a["fallback"], a["snippet"], b["fallback"], b["snippet"]) == (False, "none", True, "query")
    assert a["fallback_rate"] == 0.0 and b["fallback_rate"] == 1.0


def test_sieve_tools_with_the_indri_control(collection: Path, tmp_path: Path) -> None:
    """Table 6's control: the same tools, cards and budgets; the ranker scores the whole collection softly."""
    with LoopbackServer(researcher) as srv:
        s = run_collection(collection, tmp_path / "indri", "sieve", "indri", [srv.url], "scripted", progress=False, index_dir=tmp_path / "ix")
    recs = records(tmp_path / "indri")
    assert s["ranker"] == "indri" and s["questions"] == 2
    first = recs[0]["tool_calls"][0]["result"]
    assert "of the whole collection by indri (a soft match" in first.splitlines()[0]
    assert len([ln for ln in first.splitlines() if re.match(r"^\[\d+\] ", ln)]) == 5  # k = 5, though the query admits 1


def test_one_shot_recovers_when_the_local_count_falls_short(collection: Path, tmp_path: Path) -> None:
    """Counted by words (no /tokenize), a prompt can be longer in the model's tokens: the server's
    refusal says by how much, the budget shrinks by that, and the call is made again."""
    window, answer_budget = 800, 200

    def twice_the_words(body: dict[str, Any]) -> Any:
        from loopback import Fault

        real = 2 * count_tokens(body["messages"])  # this "model" has two tokens per word
        if real + answer_budget > window:
            return Fault(400, json.dumps({"error": {"message": f"This model's maximum context length is {window} tokens. However, you "
                                                               f"requested {real + answer_budget} tokens ({real} in the messages, "
                                                               f"{answer_budget} in the completion)."}}))
        return researcher(body)

    with LoopbackServer(twice_the_words, max_model_len=window) as srv:
        run_collection(collection, tmp_path / "run", "one-shot", "bm25", [srv.url], "scripted", progress=False,
                       index_dir=tmp_path / "ix", budgets=Budgets(max_tokens=answer_budget), limit=1)
    (rec,) = records(tmp_path / "run")
    fit = rec["tool_calls"][0]["fit"]
    assert rec["outcome"] == "answered" and rec["answer"] == "Miguel López de Legazpi"
    assert fit["retries"] >= 1 and fit["scale"] >= 2.0 and len(rec["calls"]) == 1  # refused calls cost no tokens
    assert 2 * count_tokens(srv.requests[-1]["messages"]) + answer_budget <= window


def test_k_max_lifts_the_cap_an_agent_may_ask_for(collection: Path, tmp_path: Path) -> None:
    with LoopbackServer(researcher) as srv:
        s = run_collection(collection, tmp_path / "run", "search-visit", "bm25", [srv.url], "scripted", progress=False,
                           index_dir=tmp_path / "ix", k_max=50, limit=1)
    first = records(tmp_path / "run")[0]["tool_calls"][0]
    assert (s["k"], s["k_max"]) == (5, 50) and not first["result"].startswith("ranked_search error")


def test_evals_sieve_is_the_papers_and_its_extensions_are_named(collection: Path, tmp_path: Path) -> None:
    """eval's `sieve` reads the paper's manual and gets no diagnosis after zero hits; `sieve+diagnose`
    gets it; `sieve+manual` reads the generated manual. The summary says which."""
    def policy(body: dict[str, Any]) -> Say:
        results = [str(m.get("content") or "") for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return call("search", query='"Fort Santiago"[title] AND nonexistentword')
        return Say(f"<answer>{'diagnosed' if 'One change would admit documents' in results[0] else 'plain'}</answer>")

    got = {}
    for name in ("sieve", "sieve+diagnose", "sieve+manual"):
        with LoopbackServer(policy) as srv:
            s = run_collection(collection, tmp_path / name, name, "bm25", [srv.url], "scripted", progress=False, index_dir=tmp_path / "ix", limit=1)
        system = srv.requests[0]["messages"][0]["content"]
        got[name] = (records(tmp_path / name)[0]["answer"], s["diagnose"], s["manual"], "| `tiab` | | the title or the text |" in system, "NEAR/5" in system)
    assert got == {"sieve": ("plain", False, "paper-browsecomp", True, False), "sieve+diagnose": ("diagnosed", True, "paper-browsecomp", True, False),
                   "sieve+manual": ("plain", False, "generated", False, True)}
