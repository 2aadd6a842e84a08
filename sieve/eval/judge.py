"""`sieve eval judge`: an LLM grader of answer correctness, through any OpenAI-compatible server.

Exact match undercounts right answers phrased differently. The grader follows the shape of the
BrowseComp grading template (the paper judges BCP-S this way), in our own words
(`sieve/eval/prompts/judge.md`): given the question, the reference answer(s) and the response, the
model writes four lines,

    extracted_final_answer: ...
    reasoning: ...
    correct: yes|no
    confidence: NN%

`parse_grade` reads them, forgiving case, spacing, markdown emphasis, bullets, thinking blocks and a
missing confidence. Grades are cached in a JSON Lines file keyed by (model, prompt hash, question,
sorted golds, response), so a rerun never asks again and a changed prompt asks afresh. An empty
response is incorrect without asking; a reply without a readable `correct:` line is asked again
once, then the answer is *unjudged* (verdict None, never counted wrong; not cached, so a later run
asks again, perhaps with more `max_tokens`). `judged_accuracy` refuses to compute an accuracy over
verdicts of which any is unjudged.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sieve.agent.llm import ChatClient
from sieve.agent.prompts import digest
from sieve.agent.protocol import without_thinking
from sieve.common.templates import load, render
from sieve.errors import InvalidArgumentError, SieveError
from sieve.eval.collections import load_collection

PROMPT = "judge.md"
MAX_TOKENS = 512


@dataclass(frozen=True)
class Grade:
    """One parsed grader reply. `confidence` is the grader's, in percent (None when it gave
    none)."""

    correct: bool
    extracted: str | None
    reasoning: str
    confidence: int | None


# A field line: optional bullet, numbering, heading marks or emphasis, the field name, a colon.
_FIELD = re.compile(
    r"^[\s>#*_`-]*(?:\d+[.)]\s*)?[*_`]*\s*(extracted[\s_-]*final[\s_-]*answer|reasoning|correct|confidence)\s*[*_`]*\s*[:：]\s*(.*)$",  # noqa: RUF001  # models write the full-width colon too
    re.IGNORECASE,
)
_VERDICT = re.compile(r"(yes|no|true|false|correct|incorrect)\b")
_PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*(%?)")
_NONE = {"", "none", "n/a", "na", "null", "no answer"}


def _clean(value: str) -> str:
    return value.strip().strip("*_`").strip()


def parse_grade(text: str) -> Grade | None:
    """The grade in a grader's reply, or None when it has no `correct: yes|no` line.

    Thinking is dropped first; where a field appears more than once the last one counts (a model
    that drafts its grade and then commits to it); a value may continue on the following lines."""
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in without_thinking(text or "").splitlines():
        m = _FIELD.match(line)
        if m:
            name = re.sub(r"[\s_-]+", "_", m.group(1).lower())
            current = fields[name] = [_clean(m.group(2))]
        elif current is not None and line.strip():
            current.append(_clean(line))
    if "correct" not in fields:
        return None
    verdict = _VERDICT.match(" ".join(fields["correct"]).strip("*_`'\"[](). ").lower())
    if verdict is None:
        return None
    extracted = " ".join(fields.get("extracted_final_answer", [])).strip()
    confidence = None
    pm = _PERCENT.search(" ".join(fields.get("confidence", [])))
    if pm:
        value = float(pm.group(1))
        if not pm.group(2) and "." in pm.group(1) and value <= 1:
            value *= 100  # "confidence: 0.9"
        confidence = round(min(100.0, value))
    return Grade(
        correct=verdict.group(1) in ("yes", "true", "correct"),
        extracted=None if extracted.lower().strip(".\"'") in _NONE else extracted,
        reasoning=" ".join(fields.get("reasoning", [])).strip(),
        confidence=confidence,
    )


# in a collection's folder: {"accuracy": "judge"} where the paper judges it (BCP-S)
COLLECTION_NOTE = "sieve-collection.json"


def collection_note(collection: Path) -> Path:
    """Where a collection says how its accuracy is measured: `sieve-collection.json` inside its
    folder, `NAME.sieve-collection.json` beside a single file."""
    collection = Path(collection)
    return (
        collection / COLLECTION_NOTE
        if collection.is_dir()
        else collection.parent / f"{collection.stem}.{COLLECTION_NOTE}"
    )


def needs_judge(collection: Path) -> bool:
    """Whether the collection's accuracy is an LLM judge's rather than exact match (as the paper
    grades BCP-S): its note (`collection_note`) says `"accuracy": "judge"`."""
    path = collection_note(collection)
    if not path.is_file():
        return False
    try:
        note = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InvalidArgumentError(
            f"{path}: cannot read the collection's note ({type(e).__name__}: {e})"
        ) from None
    accuracy = note.get("accuracy", "exact-match") if isinstance(note, dict) else None
    if accuracy not in ("judge", "exact-match"):
        raise InvalidArgumentError(
            f'{path}: "accuracy" is "judge" or "exact-match", not {accuracy!r}'
        )
    return accuracy == "judge"


class UnjudgedError(SieveError):
    """A judged accuracy was asked of verdicts of which some are unjudged."""


def unjudged(verdicts: Mapping[str, bool | None]) -> list[str]:
    """The questions whose answer the grader left unjudged (verdict None), in order."""
    return [q for q, v in verdicts.items() if v is None]


def judged_accuracy(verdicts: Mapping[str, bool | None], where: str = "") -> float:
    """The share of answers the grader judged correct, over question id -> verdict (True, False,
    or None for unjudged). Refuses (UnjudgedError, naming how many and which) when any verdict is
    unjudged, so no accuracy is ever computed over answers nobody graded; and when there is none."""
    missing = unjudged(verdicts)
    if missing:
        shown = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
        raise UnjudgedError(
            f"{where + ': ' if where else ''}no judged accuracy: {len(missing)} of "
            f"{len(verdicts)} answers are unjudged (the grader's reply had no readable "
            f"verdict twice: {shown}); run `sieve eval judge` again to grade them"
        )
    if not verdicts:
        raise UnjudgedError(
            f"{where + ': ' if where else ''}no judged accuracy: no answer was judged"
        )
    return round(sum(1 for v in verdicts.values() if v) / len(verdicts), 4)


class Judge:
    def __init__(self, client: ChatClient, cache_path: Path, max_tokens: int = MAX_TOKENS) -> None:
        self.client = client
        self.cache_path = Path(cache_path)
        self.max_tokens = max_tokens
        self.prompt = load("sieve.eval", "prompts", PROMPT)
        self.prompt_hash = digest(self.prompt)
        self.asked = 0  # grades obtained from the model by this instance
        self.cached = 0  # grades read from the cache by this instance
        self._cache: dict[str, dict[str, Any]] = {}
        if self.cache_path.exists():
            for line in self.cache_path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                    # earlier versions cached an unparsed grade as wrong: ask it again
                    if not rec.get("unparsed"):
                        self._cache[str(rec["key"])] = rec
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line from an interrupted run: ask again

    def key(self, question: str, golds: list[str], prediction: str) -> str:
        payload = json.dumps(
            [self.client.model, self.prompt_hash, question, sorted(golds), prediction],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def lookup(self, question: str, golds: list[str], prediction: str) -> dict[str, Any] | None:
        return self._cache.get(self.key(question, golds, prediction))

    def grade(self, question: str, golds: list[str], prediction: str) -> dict[str, Any]:
        """The cache record of this grade (asking the model if it is not cached): verdict (True,
        False, or None when two replies had no readable grade: unjudged), unparsed, extracted,
        reasoning, confidence, replies. An empty prediction is not asked; an unjudged grade is not
        cached."""
        if not prediction.strip():
            return {
                "verdict": False,
                "unparsed": False,
                "extracted": None,
                "reasoning": "empty response",
                "confidence": None,
                "replies": [],
            }
        k = self.key(question, golds, prediction)
        hit = self._cache.get(k)
        if hit is not None:
            self.cached += 1
            return hit
        text = render(self.prompt, question=question, gold=" | ".join(golds), response=prediction)
        messages = [{"role": "user", "content": text}]
        replies: list[str] = []
        parsed: Grade | None = None
        for _ in range(2):  # one retry on a reply without a readable grade
            reply = self.client.complete(
                messages, max_tokens=self.max_tokens, temperature=0
            ).content
            replies.append(reply)
            parsed = parse_grade(reply)
            if parsed is not None:
                break
        self.asked += 1
        rec = {
            "key": k,
            "model": self.client.model,
            "prompt": self.prompt_hash,
            "verdict": parsed.correct if parsed else None,
            "unparsed": parsed is None,
            "extracted": parsed.extracted if parsed else None,
            "reasoning": parsed.reasoning if parsed else "",
            "confidence": parsed.confidence if parsed else None,
            "replies": replies,
        }
        if parsed is None:
            return rec  # unjudged: asked afresh next time, never remembered as a verdict
        self._cache[k] = rec
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self.cache_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return rec

    def verdict(self, question: str, golds: list[str], prediction: str) -> bool | None:
        """True or False, or None when the answer is unjudged."""
        v = self.grade(question, golds, prediction)["verdict"]
        return None if v is None else bool(v)


def judge_run(
    run_dir: Path,
    collection_dir: Path,
    client: ChatClient,
    cache_path: Path | None = None,
    collection_format: str = "beir",
    max_tokens: int = MAX_TOKENS,
) -> dict[str, Any]:
    """Grade every episode of a run against the questions of its collection (`collection_format`:
    one of `sieve.eval.collections.FORMATS`); write "judged" per question (True, False, or None:
    unjudged) and a "judge" block into summary.json, whose accuracy is None while any answer is
    unjudged (`unjudged` counts them)."""
    run_dir = Path(run_dir)
    questions = {q.id: q for q in load_collection(collection_dir, collection_format).questions}
    records: dict[str, dict[str, Any]] = {}
    for line in (run_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            if rec.get("question_id") in questions:
                records[rec["question_id"]] = rec
    judge = Judge(client, cache_path or run_dir / "judge-cache.jsonl", max_tokens=max_tokens)
    judged: dict[str, bool | None] = {}
    for qid, rec in records.items():
        q = questions[qid]
        g = judge.grade(q.question, list(q.answers), str(rec.get("answer") or ""))
        judged[qid] = None if g["verdict"] is None else bool(g["verdict"])
    missing = unjudged(judged)
    block = {
        "model": client.model,
        "prompt": judge.prompt_hash,
        "questions": len(judged),
        "accuracy": judged_accuracy(judged) if judged and not missing else None,
        "unjudged": len(missing),
        "unparsed": len(missing),  # the earlier name of the same count
        "cached": judge.cached,
        "asked": judge.asked,
    }
    path = run_dir / "summary.json"
    summary: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    per_q = summary.setdefault("per_question", {})
    for qid, v in judged.items():
        per_q.setdefault(qid, {})["judged"] = v
    summary["judge"] = block
    path.write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    return block
