"""Table 7's data: the ablations of SIEVE, each against SIEVE as the paper runs it with the
same ranker (BM25+dense first); Figure 4 draws the same groups.
"""

from __future__ import annotations

from typing import Any

from sieve.eval.report.context import Ctx, _cost, _sieve_paper, _skip, _versus
from sieve.eval.report.runs import ABLATIONS, Run

REFERENCE_RANKERS = ("hybrid", "bm25", "dense")  # the paper's ablations run on BM25+dense


def _ablation_name(run: Run, ref: Run) -> str:
    added = [m for m in run.marks if m not in ref.marks]
    removed = [m for m in ref.marks if m not in run.marks]
    words = [("diagnosis on" if m == "+diagnosis" else m) for m in added] + [
        ("diagnosis off" if m == "+diagnosis" else f"not {m}") for m in removed
    ]
    if run.condition != ref.condition:
        words.insert(0, run.condition)
    return ", ".join(words) or run.name


def ablations(ctx: Ctx) -> list[dict[str, Any]]:
    """Per collection and ranker (BM25+dense first): SIEVE as the paper runs it and its
    ablations."""
    groups = []
    for c in ctx.collections:
        for ranker in (
            *REFERENCE_RANKERS,
            *sorted({ctx.runs[i].ranker for i in ctx.of(c)} - set(REFERENCE_RANKERS)),
        ):
            ref = _sieve_paper(ctx, c, ranker)
            if ref is None:
                continue
            variants = [
                i
                for i in ctx.of(c)
                if i != ref
                and ctx.runs[i].family == "sieve"
                and ctx.runs[i].ranker == ranker
                and ctx.runs[i].marks != ctx.runs[ref].marks
            ]
            if not variants:
                continue
            rows = [{**_cost(ctx, ref), "ablation": "as the paper", "reference": True}]
            for i in variants:
                rows.append(
                    {
                        **_cost(ctx, i),
                        "ablation": _ablation_name(ctx.runs[i], ctx.runs[ref]),
                        "reference": False,
                        **_versus(ctx.runs[i], ctx.runs[ref], len(variants)),
                    }
                )
            groups.append(
                {"collection": c, "ranker": ranker, "reference": ctx.runs[ref].name, "rows": rows}
            )
    return groups


def table_7(ctx: Ctx, groups: list[dict[str, Any]]) -> dict[str, Any]:
    title = "Ablations of SIEVE"
    if not groups:
        return _skip(
            "table-7",
            title,
            f"SIEVE as the paper runs it and an ablation of it ({', '.join(ABLATIONS)}, "
            "diagnosis) with the same ranker, collection and backbone (eval grid --ablations)",
        )
    return {"id": "table-7", "title": title, "backbone": ctx.primary, "groups": groups}
