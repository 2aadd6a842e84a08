"""What the run viewer shows of an `eval run` folder: the run's numbers, its questions, and one
question's steps as the model saw them, with the gold documents marked where they surfaced."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieve.agent.episode import distinct_tokens
from sieve.errors import InvalidArgumentError, SieveError
from sieve.eval.report.report import Run, load_run

SUMMARY_KEYS = (
    "condition",
    "ranker",
    "model",
    "questions",
    "accuracy",
    "f1",
    "judged_accuracy",
    "distinct_tokens",
    "step_summed_tokens",
    "llm_calls",
    "gold_recall",
    "fallback_rate",
)


@dataclass
class Step:
    number: int
    output: str  # the model's reply
    prompt_tokens: int
    completion_tokens: int
    step_summed: int  # tokens of every call so far
    # each piece of context once, so far: the largest prompt
    # yet plus every completion yet (sieve.agent.loop)
    distinct: int
    # (tool call, its result in pieces: gold flagged)
    results: list[tuple[str, list[tuple[str, bool]]]] = field(default_factory=list)


@dataclass
class Episode:
    question_id: str
    question: str
    answer: str | None
    outcome: str
    scores: dict[str, Any]
    gold_answers: list[str]
    gold_docs: list[str]
    surfaced: list[tuple[str, bool]]
    opened: list[tuple[str, bool]]
    steps: list[Step]
    tokens: dict[str, int]


@dataclass
class LoadedRun:
    name: str
    run: Run
    gold_answers: dict[str, list[str]]
    gold_docs: dict[str, list[str]]
    report_text: str | None
    figures: list[str]

    @property
    def report_html(self) -> str | None:
        """The report rendered from its Markdown, raw HTML in it shown as text (markdown-it with
        HTML off escapes it, and refuses `javascript:` links)."""
        if self.report_text is None:
            return None
        from markdown_it import MarkdownIt

        return str(
            MarkdownIt("commonmark", {"html": False}).enable("table").render(self.report_text)
        )

    def about(self) -> list[tuple[str, Any]]:
        return [
            (k, self.run.summary[k]) for k in SUMMARY_KEYS if self.run.summary.get(k) is not None
        ]

    def questions(self) -> list[dict[str, Any]]:
        out = []
        for q, rec in self.run.records.items():
            s = self.run.scores.get(q, {})
            out.append(
                {
                    "id": q,
                    "question": rec.get("question", ""),
                    "answer": rec.get("answer"),
                    "em": s.get("em"),
                    "judged": "unjudged"
                    if "judged" in s and s["judged"] is None
                    else s.get("judged"),
                    "outcome": rec.get("outcome"),
                    "tokens": rec.get("tokens", {}).get("distinct"),
                    "llm_calls": rec.get("llm_calls"),
                }
            )
        return out

    def figure(self, name: str) -> Path | None:
        """A figure of the run's report by its listed name, never another file."""
        return self.run.dir / "report" / name if name in self.figures else None

    def episode(self, question_id: str) -> Episode | None:
        rec = self.run.records.get(question_id)
        if rec is None:
            return None
        gold = self.gold_docs.get(question_id, [])
        return Episode(
            question_id,
            rec.get("question", ""),
            rec.get("answer"),
            str(rec.get("outcome", "")),
            self.run.scores.get(question_id, {}),
            self.gold_answers.get(question_id, []),
            gold,
            [(d, d in gold) for d in rec.get("surfaced", [])],
            [(d, d in gold) for d in rec.get("opened", [])],
            steps(rec, gold),
            dict(rec.get("tokens", {})),
        )


def _asked(path: Path) -> Run:
    """The record `sieve ask --json` printed, as a run of one question."""
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise SieveError(f"{path} is not an episode record from `sieve ask --json` ({e})") from None
    if not isinstance(rec, dict) or "messages" not in rec or "calls" not in rec:
        raise SieveError(
            f"{path} is not an episode record from `sieve "
            "ask --json` (it has no messages and calls)"
        )
    qid = str(rec.get("question_id") or "asked")
    rec["question_id"] = qid
    return Run(
        path.parent,
        {"name": path.stem, "condition": (rec.get("config") or {}).get("condition")},
        {qid: rec},
        {},
    )


def load(run_dir: Path) -> LoadedRun:
    """A run folder (or one `sieve ask --json` record), with its collection's gold answers and
    documents when the collection is still where the run found it, and the report `sieve eval
    report` wrote into it (if any)."""
    if run_dir.is_file():
        asked = _asked(run_dir)
        return LoadedRun(asked.name, asked, {}, {}, None, [])
    run = load_run(run_dir)
    answers: dict[str, list[str]] = {}
    docs: dict[str, list[str]] = {}
    where = run.summary.get("collection")
    if where:
        try:
            from sieve.eval.collections import load_collection

            c = load_collection(where, run.summary.get("format") or "beir")
            answers = {q.id: list(q.answers) for q in c.questions}
            docs = {q.id: list(q.gold_docs) for q in c.questions}
        except (SieveError, OSError, ValueError):
            pass  # moved or gone: the run still shows, without gold marks
    report = run.dir / "report"
    text = (
        (report / "report.md").read_text(encoding="utf-8")
        if (report / "report.md").is_file()
        else None
    )
    figures = sorted(p.name for p in report.glob("*.png")) if report.is_dir() else []
    return LoadedRun(run.name, run, answers, docs, text, figures)


def load_all(run_dirs: list[str]) -> dict[str, LoadedRun]:
    runs: dict[str, LoadedRun] = {}
    for d in run_dirs:
        loaded = load(Path(d))
        if loaded.name in runs:
            raise InvalidArgumentError(
                f"two runs are called {loaded.name!r} "
                f"({runs[loaded.name].run.dir} and {d}): rename one folder"
            )
        runs[loaded.name] = loaded
    return runs


def _pieces(text: str, gold: list[str]) -> list[tuple[str, bool]]:
    """`text` cut where a gold document id occurs, those pieces flagged."""
    if not gold:
        return [(text, False)]
    pattern = re.compile("|".join(re.escape(g) for g in sorted(gold, key=len, reverse=True) if g))
    out: list[tuple[str, bool]] = []
    at = 0
    for m in pattern.finditer(text):
        if m.start() > at:
            out.append((text[at : m.start()], False))
        out.append((m.group(), True))
        at = m.end()
    if at < len(text):
        out.append((text[at:], False))
    return out


def _is_result(message: dict[str, Any]) -> bool:
    content = str(message.get("content") or "")
    return message.get("role") == "tool" or (
        message.get("role") == "user" and content.startswith("<tool_response>")
    )


def steps(rec: dict[str, Any], gold: list[str]) -> list[Step]:
    """The record's LLM calls in order, each with its reply and the tool results that followed
    it."""
    calls = rec.get("calls", [])
    tool_calls = iter(rec.get("tool_calls", []))
    out: list[Step] = []
    summed = 0
    for m in rec.get("messages", [])[2:]:  # after the system prompt and the question
        if m.get("role") == "assistant":
            c = calls[len(out)] if len(out) < len(calls) else {}
            p, k = int(c.get("prompt_tokens", 0)), int(c.get("completion_tokens", 0))
            summed += p + k
            so_far = [
                {
                    "prompt_tokens": int(x.get("prompt_tokens", 0)),
                    "completion_tokens": int(x.get("completion_tokens", 0)),
                }
                for x in calls[: len(out) + 1]
            ]
            out.append(
                Step(
                    len(out) + 1, str(m.get("content") or ""), p, k, summed, distinct_tokens(so_far)
                )
            )
        elif out and _is_result(m):
            call = next(tool_calls, None)
            label = (
                f"{call['name']}"
                f"({', '.join(f'{a}={v!r}' for a, v in call.get('arguments', {}).items())})"
                if call
                else "tool"
            )
            out[-1].results.append((label, _pieces(str(m.get("content") or ""), gold)))
        elif out:
            out[-1].results.append(("note", [(str(m.get("content") or ""), False)]))
    return out
