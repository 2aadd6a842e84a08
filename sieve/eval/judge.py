"""`sieve eval judge`: an optional LLM judge of answer correctness, through any OpenAI-compatible server.

Exact match undercounts right answers phrased differently; the judge asks a model whether a
prediction names the same thing as the gold answer. The prompt is `sieve/eval/prompts/judge.md`.
Verdicts are cached in a JSON Lines file keyed by (model, prompt hash, question, sorted golds,
prediction), so a rerun never asks again. An empty prediction is incorrect without asking; a reply
with neither CORRECT nor INCORRECT is retried once, then counted incorrect and recorded "unparsed".
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from sieve.agent.llm import ChatClient
from sieve.agent.prompts import digest
from sieve.templates import load, render
from sieve.eval.collections import load_beir

PROMPT = "judge.md"
_VERDICT = re.compile(r"\b(correct|incorrect)\b", re.IGNORECASE)


def parse_verdict(text: str) -> bool | None:
    """True/False from the reply's first CORRECT or INCORRECT (any case); None when it has neither."""
    m = _VERDICT.search(text or "")
    return None if m is None else m.group(1).lower() == "correct"


class Judge:
    def __init__(self, client: ChatClient, cache_path: Path) -> None:
        self.client = client
        self.cache_path = Path(cache_path)
        self.prompt = load("sieve.eval", "prompts", PROMPT)
        self.prompt_hash = digest(self.prompt)
        self.asked = 0  # verdicts obtained from the model by this instance
        self.cached = 0  # verdicts read from the cache by this instance
        self._cache: dict[str, dict[str, Any]] = {}
        if self.cache_path.exists():
            for line in self.cache_path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                    self._cache[str(rec["key"])] = rec
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line from an interrupted run: ask again

    def key(self, question: str, golds: list[str], prediction: str) -> str:
        payload = json.dumps([self.client.model, self.prompt_hash, question, sorted(golds), prediction], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def lookup(self, question: str, golds: list[str], prediction: str) -> dict[str, Any] | None:
        return self._cache.get(self.key(question, golds, prediction))

    def verdict(self, question: str, golds: list[str], prediction: str) -> bool:
        if not prediction.strip():
            return False
        k = self.key(question, golds, prediction)
        hit = self._cache.get(k)
        if hit is not None:
            self.cached += 1
            return bool(hit["verdict"])
        text = render(self.prompt, question=question, gold=" | ".join(golds), prediction=prediction)
        messages = [{"role": "user", "content": text}]
        replies: list[str] = []
        parsed: bool | None = None
        for _ in range(2):  # one retry on a reply with neither word
            reply = self.client.complete(messages, max_tokens=16, temperature=0).content
            replies.append(reply)
            parsed = parse_verdict(reply)
            if parsed is not None:
                break
        self.asked += 1
        rec = {"key": k, "model": self.client.model, "prompt": self.prompt_hash, "verdict": bool(parsed), "unparsed": parsed is None, "replies": replies}
        self._cache[k] = rec
        self.cache_path.parent.mkdir(parents=True, exist_ok=True)
        with self.cache_path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return bool(parsed)


def judge_run(run_dir: Path, collection_dir: Path, client: ChatClient, cache_path: Path | None = None) -> dict[str, Any]:
    """Judge every episode of a run; write "judged" per question and a "judge" block into summary.json."""
    run_dir = Path(run_dir)
    questions = {q.id: q for q in load_beir(collection_dir).questions}
    records: dict[str, dict[str, Any]] = {}
    for line in (run_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            if rec.get("question_id") in questions:
                records[rec["question_id"]] = rec
    judge = Judge(client, cache_path or run_dir / "judge-cache.jsonl")
    judged: dict[str, bool] = {}
    unparsed = 0
    for qid, rec in records.items():
        q = questions[qid]
        pred = str(rec.get("answer") or "")
        judged[qid] = judge.verdict(q.question, list(q.answers), pred)
        hit = judge.lookup(q.question, list(q.answers), pred) if pred.strip() else None
        unparsed += int(bool(hit and hit.get("unparsed")))
    block = {
        "model": client.model,
        "accuracy": round(sum(judged.values()) / len(judged), 4) if judged else 0.0,
        "unparsed": unparsed,
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
