"""What every table and figure of the report is computed from: the runs and their rows
(`Ctx`), and the small helpers they share (a run's cost cell, a paired comparison, a skip).
"""

from __future__ import annotations

from typing import Any

from sieve.eval.report.runs import Run, _sig, accuracy, paired, score_by


class Ctx:
    """The runs, their rows (same order) and the primary backbone."""

    def __init__(self, runs: list[Run], rows: list[dict[str, Any]], primary: str) -> None:
        self.runs, self.rows, self.primary = runs, rows, primary
        self.collections = list(dict.fromkeys(r.collection for r in runs))

    def of(
        self, collection: str | None = None, backbone: str | None = "", ablated: bool | None = None
    ) -> list[int]:
        """Run positions of a collection (None: all) and backbone ("": the primary; None: all)."""
        want = self.primary if backbone == "" else backbone
        return [
            i
            for i, r in enumerate(self.runs)
            if (collection is None or r.collection == collection)
            and (want is None or r.backbone == want)
            and (ablated is None or r.ablated == ablated)
        ]


def _pct(x: float) -> float:
    return round(100 * x, 2)


def _cost(ctx: Ctx, i: int) -> dict[str, Any]:
    run, row = ctx.runs[i], ctx.rows[i]
    acc, unjudged = accuracy(run)
    return {
        "run": run.name,
        "n": row["questions"],
        "accuracy": _pct(acc),
        "by": score_by(run),
        "unjudged": unjudged,
        "distinct_tokens": row["distinct_tokens"],
        "llm_calls": row["llm_calls"],
    }


def _panel(run: Run) -> str:
    # A family's ablations get a panel of their own, so that no panel holds a dozen lines.
    return run.family + (" ablations" if run.ablated else "")


def _skip(id_: str, title: str, needs: str) -> dict[str, Any]:
    return {"id": id_, "title": title, "skipped": needs}


def _versus(run: Run, ref: Run, comparisons: int) -> dict[str, Any]:
    v = paired(run, ref, comparisons)
    t = v.get("tests", {})
    key = "judged" if "judged" in t else "accuracy"
    return {
        "shared": v["shared"],
        "delta_accuracy": _pct(v.get("accuracy_change", 0.0)),
        "delta_tokens": v.get("distinct_tokens_change", 0.0),
        "delta_calls": v.get("llm_calls_change", 0.0),
        "p_accuracy": _sig(t[key]["p"]) if key in t else None,
        "p_tokens": _sig(t["distinct_tokens"]["p"]) if t else None,
    }


def _sieve_paper(ctx: Ctx, collection: str, ranker: str) -> int | None:
    """SIEVE as the paper runs it with `ranker` (else with only sieve's extensions on)."""
    found = [
        i
        for i in ctx.of(collection)
        if ctx.runs[i].family == "sieve"
        and ctx.runs[i].ranker == ranker
        and not ctx.runs[i].ablated
    ]
    return (
        min(found, key=lambda i: (len(ctx.runs[i].marks), ctx.runs[i].condition != "sieve", i))
        if found
        else None
    )
