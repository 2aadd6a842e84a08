"""Evaluation runs as a report reads them: `Run` (one run folder loaded), its scores
(`accuracy`, `right`, `verdict`), and paired comparisons of two runs (`paired`, `grouped`), with
the report's fixed families, rankers and ablations. Below `tables` and `report`, which render
them."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

import numpy as np

from sieve.engine.rank.rankers import DENSE_RANKERS
from sieve.errors import InvalidArgumentError, SieveError
from sieve.eval.report.stats import bonferroni, mcnemar_exact, paired_t
from sieve.eval.report.summary import SEARCH_TOOLS, bql_usage

ALPHA = 0.05
# (family, its name in the tables, its conditions): the paper's Table 1 order.
FAMILIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("one-shot", "One-shot", ("one-shot", "rag")),
    ("autoread", "Search–AutoRead", ("autoread",)),
    ("dci", "DCI", ("dci", "bounded-dci")),
    ("search-visit", "Search–Visit", ("search-visit",)),
    ("search-fetch", "Search–Fetch", ("search-fetch",)),
    # the paper's and sieve's extensions
    (
        "sieve",
        "SIEVE",
        ("sieve", "sieve+diagnose", "sieve+manual", "sieve+ranked-fallback", "sieve+all"),
    ),
    ("indri-control", "Indri control", ("indri-control",)),
)
RANKERS = ("bm25", "dense", "hybrid", "indri", "indri+dense")
TWINS = ("structured", "flat")
ALIASES = {"rag": "one-shot"}
TESTED = ("accuracy", "judged", "distinct_tokens", "step_summed_tokens", "llm_calls")
# The per-question costs the paired t-tests compare, read from a trajectory record.
METRICS: dict[str, Callable[[dict[str, Any]], float]] = {
    "distinct_tokens": lambda r: r["tokens"]["distinct"],
    "step_summed_tokens": lambda r: r["tokens"]["step_summed"],
    "llm_calls": lambda r: r["llm_calls"],
}
# How a run departs from its condition as the paper runs it. The ablations (Table 7, Figure 4,
# Table 9) leave Table 1; "+diagnosis" is sieve's extension and stays there as its own row.
ABLATIONS = ("flat twin", "strict Boolean", "no snippets", "no field exposure")
EXTENSIONS = ("+diagnosis",)
BASELINE_CELL = ("search-visit", "bm25", "structured", ())


def _collection_name(text: str) -> str:
    # Runs of one collection made on different machines record different paths: its folder's name
    # (a single-file collection: the file's stem) is what names it.
    p = PurePath(text.rstrip("/\\")) if text else PurePath("")
    return p.stem if p.suffix in (".json", ".jsonl", ".gz") else p.name


@dataclass(frozen=True)
class Run:
    dir: Path
    summary: dict[str, Any]
    records: dict[str, dict[str, Any]]  # question id -> trajectory record (the scored questions)
    # question id -> {em, f1, judged?}
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.summary.get("name") or self.dir.name)

    @property
    def condition(self) -> str:
        c = str(self.summary.get("condition") or "")
        return ALIASES.get(c, c)

    @property
    def family(self) -> str:
        found = next((f for f, _, conds in FAMILIES if self.condition in conds), None)
        return found or str(self.summary.get("family") or "other")

    @property
    def collection(self) -> str:
        return str(
            self.summary.get("collection_name")
            or _collection_name(str(self.summary.get("collection") or ""))
        )

    @property
    def backbone(self) -> str:
        return str(self.summary.get("model") or "")

    @property
    def ranker(self) -> str:
        return str(self.summary.get("ranker") or "")

    @property
    def twin(self) -> str:
        return str(self.summary.get("twin") or "structured")

    @property
    def encoder(self) -> str | None:
        """The dense encoder of a run that ranks with one (None for BM25 alone or when not
        recorded)."""
        # eval run writes {model, dim, fingerprint, unit, search}; older records a name
        e = self.summary.get("encoder")
        if not e or self.ranker not in DENSE_RANKERS:
            return None
        return encoder_label(
            self.summary if isinstance(e, dict) else {"encoder": {"model": str(e)}}
        )

    @property
    def encoder_size(self) -> float | None:
        e = self.summary.get("encoder")
        if isinstance(e, dict):
            for k in ("parameters", "params", "dim", "dimension"):
                if isinstance(e.get(k), (int, float)):
                    return float(e[k])
        return None

    @property
    def marks(self) -> tuple[str, ...]:
        """How this run departs from its condition as the paper runs it (ABLATIONS, EXTENSIONS)."""
        s = self.summary
        out = []
        if self.twin == "flat":
            out.append("flat twin")
        searches_bql = self.family == "sieve"
        if searches_bql and s.get("fallback") is False:
            out.append("strict Boolean")
        if s.get("snippet") == "none":
            out.append("no snippets")
        if searches_bql and any(s.get(k) is False for k in ("fields", "field_exposure")):
            out.append("no field exposure")
        if searches_bql and s.get("diagnose") is True and "diagnos" not in self.condition:
            out.append("+diagnosis")
        return tuple(out)

    @property
    def ablated(self) -> bool:
        return any(m in ABLATIONS for m in self.marks)

    @property
    def label(self) -> str:
        """condition, ranker and marks: what distinguishes the run within a collection and
        backbone."""
        text = self.condition + (f" {self.ranker}" if self.ranker and self.ranker != "none" else "")
        return text + (f" ({', '.join(self.marks)})" if self.marks else "")


def load_run(run_dir: Path) -> Run:
    run_dir = Path(run_dir)
    if not (run_dir / "summary.json").is_file() or not (run_dir / "trajectories.jsonl").is_file():
        raise SieveError(
            f"{run_dir} is not a run folder (it needs summary.json "
            "and trajectories.jsonl from `sieve eval run`)"
        )
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        records: dict[str, dict[str, Any]] = {}
        for line in (run_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                records[rec["question_id"]] = (
                    rec  # a resumed run's later record wins, as in the summary
                )
    except (ValueError, KeyError, TypeError) as e:
        raise SieveError(f"{run_dir}: unreadable run record ({e})") from None
    scores = summary.get("per_question") or {q: {} for q in records}
    return Run(
        run_dir,
        summary,
        {q: records[q] for q in scores if q in records},
        {q: v for q, v in scores.items() if q in records},
    )


def encoder_label(summary: dict[str, Any]) -> str | None:
    """Which encoder produced a run's dense rankings, as a table names it (the bundled default
    marked); None for a run that ranked without embeddings or recorded no encoder."""
    from sieve.dense.encoder import DEFAULT_MODEL, model_label

    encoder = summary.get("encoder")
    if not isinstance(encoder, dict) or not encoder.get("model"):
        return None
    model = str(encoder["model"])
    return (
        model_label(model)
        + (" (default)" if model == DEFAULT_MODEL else "")
        + (", approximate" if encoder.get("search") == "approximate" else "")
    )


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def verdict(score: dict[str, Any]) -> bool | None:
    """A question's judged verdict; None when the judge left it unjudged (never counted as
    wrong)."""
    v = score.get("judged")
    if v is None or v == "unjudged" or score.get("unjudged") is True:
        return None
    return bool(v)


def _judged(run: Run) -> list[str] | None:
    """The questions of a judged run (every scored question went to the judge), else None."""
    qs = list(run.scores)
    return (
        qs
        if qs and all("judged" in run.scores[q] or run.scores[q].get("unjudged") for q in qs)
        else None
    )


def right(run: Run, by: str) -> dict[str, bool | None]:
    """Per question: right or wrong by `by` ("judged" or "em"); None for an unjudged question."""
    if by == "judged":
        return {q: verdict(v) for q, v in run.scores.items()}
    return {q: bool(v.get("em")) for q, v in run.scores.items()}


def score_by(run: Run) -> str:
    """What a run's accuracy is: the judge's where it judged every question (as the paper's BCP-S),
    else EM."""
    return "judged" if _judged(run) else "em"


def accuracy(run: Run, by: str | None = None) -> tuple[float, int]:
    """(accuracy, unjudged questions) by `by`; judged accuracy counts the judged questions only."""
    got = right(run, by or score_by(run))
    known = [v for v in got.values() if v is not None]
    return (round(sum(known) / len(known), 4) if known else 0.0), len(got) - len(known)


def numbers(run: Run) -> dict[str, Any]:
    """One run's row: Table 1's columns plus what names it, its failure composition and BQL
    usage."""
    recs = [run.records[q] for q in run.scores]
    n = len(recs)
    em = [float(run.scores[q].get("em", 0.0)) for q in run.scores]
    judged = _judged(run) is not None
    searches = [t for r in recs for t in r.get("tool_calls", []) if t["name"] in SEARCH_TOOLS]
    recovered = sum(1 for r in recs if r.get("outcome") == "recovered")
    fails = {
        k: int((run.summary.get("failures") or {}).get(k, 0))
        for k in ("retrieval", "selection", "synthesis")
    }
    correct = int(sum(em))
    usage, search_calls = bql_usage(recs)
    judged_acc, unjudged = accuracy(run, "judged") if judged else (None, 0)
    return {
        "run": run.name,
        "dir": str(run.dir),
        "family": run.family,
        "condition": run.condition or None,
        "ranker": run.summary.get("ranker"),
        "twin": run.summary.get("twin"),
        "model": run.summary.get("model"),
        "collection": run.collection,
        "encoder": run.encoder,
        "marks": list(run.marks),
        "label": run.label,
        "questions": n,
        "accuracy": round(_mean(em), 4),
        "judged": judged_acc,
        "unjudged": unjudged,
        "score_by": score_by(run),
        "gold_recall": run.summary.get("gold_recall"),
        "distinct_tokens": round(_mean([r["tokens"]["distinct"] for r in recs]), 1),
        "step_summed_tokens": round(_mean([r["tokens"]["step_summed"] for r in recs]), 1),
        "llm_calls": round(_mean([r["llm_calls"] for r in recs]), 3),
        "recovered": recovered,
        "recovered_share": round(recovered / n, 4) if n else 0.0,
        "fallback_rate": round(sum(1 for t in searches if t.get("fallback")) / len(searches), 4)
        if searches
        else None,
        "failures": {
            "correct": correct,
            **fails,
            "unattributed": n - correct - sum(fails.values()),
        },
        "search_calls": search_calls,
        "bql_usage": usage,
    }


def shared_questions(run: Run, base: Run) -> list[str]:
    """The questions two runs both scored, paired by (collection, question id): runs of different
    collections are refused, naming both (their question ids may coincide and mean nothing)."""
    if run.collection != base.collection:
        raise InvalidArgumentError(
            f"cannot pair run {run.name} ({run.dir}, collection {run.collection or '?'}) with run "
            f"{base.name} ({base.dir}, collection "
            f"{base.collection or '?'}): paired tests compare the same questions, so both runs "
            "must be of one collection"
        )
    return sorted(set(run.scores) & set(base.scores))


def _sig(p: float) -> float:
    return float(f"{p:.6g}")  # stable digits for records and snapshots


def paired(run: Run, base: Run, comparisons: int) -> dict[str, Any]:
    """`run` against `base` on their shared questions: verdicts (gained/lost), mean changes and the
    paired tests (`tests`: statistic, n, raw and Bonferroni-corrected p over `comparisons`).
    Accuracy is judged where both runs are judged (on the questions judged in both), else EM."""
    shared = shared_questions(run, base)
    if not shared:
        return {"shared": 0, "tests": {}}
    by = "judged" if _judged(run) and _judged(base) else "em"
    a, b = right(run, by), right(base, by)
    both = [q for q in shared if a[q] is not None and b[q] is not None]
    got = {
        "accuracy": mcnemar_exact(
            [bool(run.scores[q].get("em")) for q in shared],
            [bool(base.scores[q].get("em")) for q in shared],
        )
    }
    if by == "judged" and both:
        got["judged"] = mcnemar_exact([bool(a[q]) for q in both], [bool(b[q]) for q in both])
    for metric, value in METRICS.items():
        got[metric] = paired_t(
            [value(run.records[q]) for q in shared], [value(base.records[q]) for q in shared]
        )
    tests = {
        m: {
            "statistic": round(t.statistic, 4),
            "n": t.n,
            "p_raw": t.p,
            "p": bonferroni(t.p, comparisons),
        }
        for m, t in got.items()
    }
    pairs = [(bool(a[q]), bool(b[q])) for q in both]
    delta = {
        m: [value(run.records[q]) - value(base.records[q]) for q in shared]
        for m, value in METRICS.items()
    }
    return {
        "shared": len(shared),
        "gained": pairs.count((True, False)),
        "lost": pairs.count((False, True)),
        "both_right": pairs.count((True, True)),
        "both_wrong": pairs.count((False, False)),
        "verdicts_by": by,
        "accuracy_change": round(accuracy(run, by)[0] - accuracy(base, by)[0], 4),
        **{f"{m}_change": round(_mean(d), 3) for m, d in delta.items()},
        "fewer_tokens": round(sum(1 for d in delta["distinct_tokens"] if d < 0) / len(shared), 4),
        "tests": tests,
    }


def _place(r: dict[str, Any]) -> tuple[int, int, int]:
    fam = [f for f, _, _ in FAMILIES]
    return (
        fam.index(r["family"]) if r["family"] in fam else len(fam),
        RANKERS.index(r["ranker"]) if r["ranker"] in RANKERS else len(RANKERS),
        TWINS.index(r["twin"]) if r["twin"] in TWINS else len(TWINS),
    )


def grouped(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in Table 1's order: family (one-shot, autoread, DCI, Search–Visit, Search–Fetch, SIEVE,
    then others), ranker (bm25, dense, hybrid), twin (structured, flat), then the order given."""
    return [r for _, r in sorted(enumerate(rows), key=lambda item: (*_place(item[1]), item[0]))]
