"""The LLM judge against the real loopback OpenAI-protocol server: parsing realistic grader replies,
caching, the empty and unparsed cases, and `judge_run` end to end on a run made by `run_collection`
on the fixture collection."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackServer, Say
from test_eval_run import FIX, scripted

from sieve.agent.llm import ChatClient
from sieve.cli.main import main
from sieve.eval.judge import Grade, Judge, judge_run, parse_grade
from sieve.eval.run import run_collection


def field(body: dict[str, Any], name: str) -> str:
    m = re.search(rf"^{name}: (.*)$", body["messages"][-1]["content"], re.MULTILINE)
    assert m, body
    return m.group(1)


def grade(correct: bool, extracted: str = "x", confidence: str = "90%") -> str:
    return f"extracted_final_answer: {extracted}\nreasoning: compared with the reference.\ncorrect: {'yes' if correct else 'no'}\nconfidence: {confidence}"


def fair(body: dict[str, Any]) -> Say:
    """yes when the response appears in the reference line of the prompt."""
    pred, gold = field(body, "Response"), field(body, "Reference answer")
    return Say(grade(pred.lower() in gold.lower(), pred))


def client(srv: LoopbackServer, model: str = "scripted") -> ChatClient:
    return ChatClient(srv.url, model, max_retries=0)


CLEAN = """extracted_final_answer: Miguel López de Legazpi
reasoning: The response names Legazpi, the reference answer's founder, with his full name.
correct: yes
confidence: 95%"""

BOLD = """**extracted_final_answer:** Quezon City

**reasoning:** The reference is Manila; Quezon City is a different city in Metro Manila.

**correct:** no

**confidence:** 98%"""

BOLD_KEYS = """- **Extracted Final Answer**: 1,024
- **Reasoning**: The reference gives 1024; the numbers are equal.
- **Correct**: **Yes**
- **Confidence**: 90 %"""

THINKING = """<think>The response says Galati. The reference says Galați. Draft:
correct: no
Wait, that is only the diacritic, the same city.</think>
extracted_final_answer: Galati
reasoning: Same city; only the diacritic differs.
correct: yes
confidence: 0.85"""

MULTILINE = """Extracted final answer: None
Reasoning: The response hedges between Paris and Lyon
and never commits to one of them.
Correct: NO"""


@pytest.mark.parametrize("reply,want", [
    (CLEAN, Grade(True, "Miguel López de Legazpi", "The response names Legazpi, the reference answer's founder, with his full name.", 95)),
    (BOLD, Grade(False, "Quezon City", "The reference is Manila; Quezon City is a different city in Metro Manila.", 98)),
    (BOLD_KEYS, Grade(True, "1,024", "The reference gives 1024; the numbers are equal.", 90)),
    (THINKING, Grade(True, "Galati", "Same city; only the diacritic differs.", 85)),
    (MULTILINE, Grade(False, None, "The response hedges between Paris and Lyon and never commits to one of them.", None)),
    ("correct: yes", Grade(True, None, "", None)),
    ("  CORRECT :  no.\nconfidence: 100%", Grade(False, None, "", 100)),
    ("1. extracted_final_answer: 42\n2. reasoning: matches\n3. correct: true\n4. confidence: 70", Grade(True, "42", "matches", 70)),
])
def test_parse_grade(reply: str, want: Grade) -> None:
    assert parse_grade(reply) == want


@pytest.mark.parametrize("reply", [
    "", "CORRECT", "The answer is correct.", "correct: maybe", "Correct answer: Manila", "correctness: yes",
    "reasoning: it is correct: yes", "<think>correct: yes</think>", "extracted_final_answer: Manila\nreasoning: same city",
])
def test_parse_grade_refuses(reply: str) -> None:
    assert parse_grade(reply) is None


def test_verdicts_sent_and_parsed(tmp_path: Path) -> None:
    replies = iter([CLEAN, BOLD])
    with LoopbackServer(lambda body: Say(next(replies))) as srv:
        j = Judge(client(srv), tmp_path / "cache.jsonl")
        assert j.verdict("Who founded Manila?", ["Legazpi"], "Miguel López de Legazpi") is True
        assert j.verdict("Capital?", ["Manila", "City of Manila"], "Quezon City") is False
    body = srv.requests[0]
    assert body["temperature"] == 0 and body["max_tokens"] == 512 and body["model"] == "scripted"
    prompt = srv.requests[1]["messages"][-1]["content"]
    assert field(srv.requests[1], "Question") == "Capital?" and field(srv.requests[1], "Reference answer") == "Manila | City of Manila"
    assert field(srv.requests[1], "Response") == "Quezon City" and "{" not in prompt
    assert all(f"\n{name}:" in prompt for name in ("extracted_final_answer", "reasoning", "correct", "confidence"))
    assert (j.asked, j.cached) == (2, 0)
    first, second = (json.loads(x) for x in (tmp_path / "cache.jsonl").read_text().splitlines())
    assert (first["verdict"], first["extracted"], first["confidence"], first["unparsed"]) == (True, "Miguel López de Legazpi", 95, False)
    assert (second["verdict"], second["extracted"], second["confidence"]) == (False, "Quezon City", 98)
    assert second["reasoning"].startswith("The reference is Manila") and second["replies"] == [BOLD] and second["prompt"] == j.prompt_hash


def test_max_tokens_is_settable(tmp_path: Path) -> None:
    with LoopbackServer(fair) as srv:
        assert Judge(client(srv), tmp_path / "cache.jsonl", max_tokens=2048).verdict("Q", ["Manila"], "Manila") is True
    assert srv.requests[0]["max_tokens"] == 2048


def test_a_new_prompt_asks_again(tmp_path: Path) -> None:
    """The prompt's hash is part of the key: grades cached under another prompt are not reused."""
    cache = tmp_path / "cache.jsonl"
    with LoopbackServer(fair) as srv:
        j = Judge(client(srv), cache)
        j.verdict("Q", ["Manila"], "Manila")
        old = {**json.loads(cache.read_text()), "verdict": False}
        j.prompt_hash = "an older prompt"
        old["key"] = j.key("Q", ["Manila"], "Manila")
        cache.write_text(json.dumps(old) + "\n")
        again = Judge(client(srv), cache)
        assert again.verdict("Q", ["Manila"], "Manila") is True and (again.asked, again.cached) == (1, 0) and len(srv.requests) == 2


def test_cache_hit_sends_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache.jsonl"
    with LoopbackServer(fair) as srv:
        assert Judge(client(srv), cache).verdict("Q", ["Manila"], "Manila") is True
        assert len(srv.requests) == 1
    with LoopbackServer(lambda body: Say(grade(False))) as srv:
        j = Judge(client(srv), cache)  # a fresh instance reads the file
        assert j.verdict("Q", ["Manila"], "Manila") is True
        assert srv.requests == [] and (j.asked, j.cached) == (0, 1)
        # gold order does not matter; a different model or prediction is a different key
        assert j.verdict("Q", ["Manila"], "manila") is False and len(srv.requests) == 1
        assert Judge(client(srv, "other"), cache).verdict("Q", ["Manila"], "Manila") is False and len(srv.requests) == 2
    a, b = Judge(ChatClient("http://x/v1", "m"), cache), Judge(ChatClient("http://x/v1", "m"), cache)
    assert a.key("Q", ["x", "y"], "p") == b.key("Q", ["y", "x"], "p")
    assert len(cache.read_text().splitlines()) == 3


def test_empty_prediction_not_sent(tmp_path: Path) -> None:
    with LoopbackServer(lambda body: Say(grade(True))) as srv:
        j = Judge(client(srv), tmp_path / "cache.jsonl")
        assert j.verdict("Q", ["Manila"], "") is False
        assert j.verdict("Q", ["Manila"], "   ") is False
    assert srv.requests == [] and (j.asked, j.cached) == (0, 0)


def test_unparsed_asked_again_once_then_unjudged(tmp_path: Path) -> None:
    """Two replies without a readable grade: the answer is unjudged (None), never counted wrong,
    and not cached, so the next run asks again."""
    cache = tmp_path / "cache.jsonl"
    with LoopbackServer(lambda body: Say("I cannot say.")) as srv:
        j = Judge(client(srv), cache)
        assert j.verdict("Q", ["Manila"], "Manila") is None
        assert len(srv.requests) == 2
        rec = j.grade("Q", ["Manila"], "Manila")
        assert len(srv.requests) == 4  # asked afresh: an unjudged grade is not remembered
    assert rec["unparsed"] is True and rec["verdict"] is None and rec["replies"] == ["I cannot say.", "I cannot say."]
    assert (rec["extracted"], rec["confidence"]) == (None, None)
    assert not cache.exists()
    # A cache written before unjudged existed holds such a grade as wrong: it is asked again.
    cache.write_text(json.dumps({**rec, "key": j.key("Q", ["Manila"], "Manila"), "verdict": False}) + "\n")
    with LoopbackServer(lambda body: Say(grade(True))) as srv:
        assert Judge(client(srv), cache).verdict("Q", ["Manila"], "Manila") is True and len(srv.requests) == 1
    replies = iter(["CORRECT", "**Correct:** yes"])  # a one-word reply is not a grade; the retry is
    with LoopbackServer(lambda body: Say(next(replies))) as srv:
        assert Judge(client(srv), tmp_path / "c2.jsonl").verdict("Q", ["Manila"], "Manila") is True
        assert len(srv.requests) == 2


def test_judge_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    collection = tmp_path / "beir"
    shutil.copytree(FIX, collection)
    run = tmp_path / "run"
    with LoopbackServer(scripted) as srv:
        s = run_collection(collection, run, "sieve", "bm25", [srv.url], "scripted", native=False, progress=False)
    assert s["accuracy"] == 0.5  # q1 right, q2 "Quezon City" wrong
    with LoopbackServer(fair, model="judge") as srv:
        block = judge_run(run, collection, client(srv, "judge"))
        assert len(srv.requests) == 2
    assert block == {"model": "judge", "prompt": Judge(client(srv, "judge"), tmp_path / "unused").prompt_hash, "questions": 2, "accuracy": 0.5,
                     "unjudged": 0, "unparsed": 0, "cached": 0, "asked": 2}
    on_disk = json.loads((run / "summary.json").read_text())
    assert on_disk["judge"] == block and on_disk["accuracy"] == 0.5
    assert on_disk["per_question"]["q1"] == {"em": 1.0, "f1": 1.0, "judged": True}
    assert on_disk["per_question"]["q2"]["judged"] is False and on_disk["per_question"]["q2"]["em"] == 0.0
    assert (run / "judge-cache.jsonl").exists()
    # The CLI on the same run: every verdict from the cache, nothing sent.
    with LoopbackServer(lambda body: Say(grade(True)), model="judge") as srv:
        assert main(["eval", "judge", str(run), "--collection", str(collection), "--format", "beir", "--llm-url", srv.url, "--model", "judge"]) == 0
        assert srv.requests == []
    assert "judged accuracy 0.500" in capsys.readouterr().out
    assert json.loads((run / "summary.json").read_text())["judge"] == {**block, "cached": 2, "asked": 0}


@pytest.mark.parametrize("fmt, path, answers", [
    ("hotpotqa", "hotpot.json", {"5a8b57f25542995d1e6f1371": "yes", "5a8c7595554299585d9e36b6": "Ambassador"}),
    ("musique", "musique.jsonl", {"2hop__1": "Miquette", "2hop__2": "blue"}),
])
def test_judge_run_reads_other_formats(tmp_path: Path, fmt: str, path: str, answers: dict[str, str]) -> None:
    """`--format` picks the loader; the references sent are the collection's aliases."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "trajectories.jsonl").write_text("".join(json.dumps({"question_id": q, "answer": a}) + "\n" for q, a in answers.items()))
    with LoopbackServer(fair, model="judge") as srv:
        assert main(["eval", "judge", str(run), "--collection", str(FIX.parent / path), "--format", fmt, "--llm-url", srv.url, "--model", "judge"]) == 0
    refs = sorted(field(b, "Reference answer") for b in srv.requests)
    assert refs == (["Chief of Protocol", "yes"] if fmt == "hotpotqa" else ["Miquette Giraudy | Miquette", "green"])
    summary = json.loads((run / "summary.json").read_text())
    assert summary["judge"]["accuracy"] == 0.5 and sorted(v["judged"] for v in summary["per_question"].values()) == [False, True]


def test_unjudged_answers_leave_no_judged_accuracy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A grader that cannot grade q2: q2 is unjudged in summary.json, the run has no judged
    accuracy (not 0.5 with q2 silently wrong), `eval judge` says so, and `eval report` prints the
    row as unjudged with no Judge%."""
    collection = tmp_path / "beir"
    shutil.copytree(FIX, collection)
    run = tmp_path / "run"
    with LoopbackServer(scripted) as srv:
        run_collection(collection, run, "sieve", "bm25", [srv.url], "scripted", native=False, progress=False)

    def stuck_on_q2(body: dict[str, Any]) -> Say:
        return Say("Let me think about Quezon City...") if "Quezon" in field(body, "Response") else fair(body)

    with LoopbackServer(stuck_on_q2, model="judge") as srv:
        assert main(["eval", "judge", str(run), "--collection", str(collection), "--llm-url", srv.url, "--model", "judge"]) == 0
        assert len(srv.requests) == 3  # q1 once, q2 twice
    out = capsys.readouterr().out
    assert "no judged accuracy by judge (2 asked, 0 cached, 1 unjudged): 1 of 2 answers are unjudged" in out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["judge"]["accuracy"] is None and summary["judge"]["unjudged"] == 1
    assert summary["per_question"]["q1"]["judged"] is True and summary["per_question"]["q2"]["judged"] is None
    assert main(["eval", "report", str(run), "--out", str(tmp_path / "report")]) == 0
    table = capsys.readouterr().out
    # The report's judged accuracy is over the judged answers only, the unjudged counted beside it: never a wrong one.
    head = next(line for line in table.splitlines() if line.startswith("| Run |")).split(" | ")
    row = next(line for line in table.splitlines() if line.startswith("| run ")).split(" | ")
    assert row[head.index("Judge %")] == "100.0" and row[head.index("Unjudged")] == "1" and row[head.index("EM %")] == "50.0"
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert report["rows"][0]["judged"] == 1.0 and report["rows"][0]["unjudged"] == 1  # over the one judged answer


def test_judged_accuracy_refuses_unjudged_verdicts() -> None:
    from sieve.eval.judge import UnjudgedError, judged_accuracy

    assert judged_accuracy({"q1": True, "q2": False, "q3": True, "q4": True}) == 0.75
    with pytest.raises(UnjudgedError, match=r"^run-a: no judged accuracy: 2 of 3 answers are unjudged \(the grader's reply had no readable "
                                            r"verdict twice: q2, q3\); run `sieve eval judge` again to grade them$"):
        judged_accuracy({"q1": True, "q2": None, "q3": None}, "run-a")
    with pytest.raises(UnjudgedError, match="no answer was judged"):
        judged_accuracy({})
