"""The data of the report's figures (1, 3 to 8); `figures` draws them. Which figure is which:
see `sieve.eval.report.tables`.
"""

from __future__ import annotations

from typing import Any

from sieve.eval.report.context import Ctx, _panel, _pct, _skip
from sieve.eval.report.runs import FAMILIES, RANKERS, _place, accuracy, score_by


def figure_1(ctx: Ctx) -> dict[str, Any]:
    panels = []
    for c in ctx.collections:
        members = sorted(ctx.of(c, ablated=False), key=lambda i: (*_place(ctx.rows[i]), i))
        if not members:
            continue
        points = [
            {
                "run": ctx.runs[i].name,
                "label": ctx.runs[i].label,
                "family": ctx.runs[i].family,
                "ranker": ctx.runs[i].ranker,
                "marks": list(ctx.runs[i].marks),
                "encoder": ctx.runs[i].encoder,
                "tokens": ctx.rows[i]["distinct_tokens"],
                "accuracy": _pct(accuracy(ctx.runs[i])[0]),
            }
            for i in members
        ]
        base = next(
            (ctx.rows[i]["baseline_run"] for i in members if ctx.rows[i]["baseline_run"]), None
        )
        arrows = [
            {"from": base, "to": ctx.runs[i].name}
            for i in members
            if ctx.runs[i].family == "sieve" and base and ctx.runs[i].name != base
        ]
        panels.append(
            {
                "collection": c,
                "by": sorted({score_by(ctx.runs[i]) for i in members}),
                "points": points,
                "arrows": arrows,
            }
        )
    return {
        "id": "figure-1",
        "title": f"Accuracy against distinct tokens per question, backbone {ctx.primary or '?'}",
        "backbone": ctx.primary,
        "families": [f for f, _, _ in FAMILIES] + ["other"],
        "rankers": list(RANKERS) + ["none"],
        "panels": panels,
    }


def figure_3(ctx: Ctx) -> dict[str, Any]:
    title = "Per-question change in distinct tokens against the baseline; answers gained and lost"
    panels, verdicts = [], []
    for c in ctx.collections:
        members = [i for i in ctx.of(c) if ctx.rows[i].get("versus_baseline")]
        by_family: dict[str, list[dict[str, Any]]] = {}
        for i in sorted(members, key=lambda i: (*_place(ctx.rows[i]), i)):
            run, row = ctx.runs[i], ctx.rows[i]
            base = next(
                r
                for r in ctx.runs
                if r.name == row["baseline_run"]
                and r.collection == c
                and r.backbone == run.backbone
            )
            shared = sorted(set(run.scores) & set(base.scores))
            deltas = sorted(
                run.records[q]["tokens"]["distinct"] - base.records[q]["tokens"]["distinct"]
                for q in shared
            )
            by_family.setdefault(_panel(run), []).append(
                {"run": run.name, "label": run.label, "deltas": deltas}
            )
            v = row["versus_baseline"]
            verdicts.append(
                {
                    "collection": c,
                    "run": run.name,
                    "label": run.label,
                    "gained": v["gained"],
                    "lost": v["lost"],
                    "by": v["verdicts_by"],
                }
            )
        for fam, lines in by_family.items():
            panels.append(
                {
                    "collection": c,
                    "family": fam,
                    "baseline": ctx.rows[members[0]]["baseline_run"],
                    "lines": lines,
                }
            )
    if not panels:
        return _skip(
            "figure-3", title, "a baseline and another run of the same collection and backbone"
        )
    return {
        "id": "figure-3",
        "title": title,
        "backbone": ctx.primary,
        "panels": panels,
        "verdicts": verdicts,
    }


def figure_4(ctx: Ctx, groups: list[dict[str, Any]]) -> dict[str, Any]:
    title = "Ablations: change in accuracy and distinct tokens against SIEVE as the paper runs it"
    if not groups:
        return _skip("figure-4", title, "what Table 7 needs")
    panels = [
        {
            "collection": g["collection"],
            "ranker": g["ranker"],
            "bars": [
                {
                    "ablation": r["ablation"],
                    "delta_accuracy": r["delta_accuracy"],
                    "delta_tokens": r["delta_tokens"],
                    "p_accuracy": r["p_accuracy"],
                }
                for r in g["rows"]
                if not r["reference"]
            ],
        }
        for g in groups
    ]
    return {"id": "figure-4", "title": title, "backbone": ctx.primary, "panels": panels}


def figure_5(ctx: Ctx) -> dict[str, Any]:
    title = "Accuracy by dense encoder"
    series: dict[tuple[str, str, str, tuple[str, ...]], list[int]] = {}
    for i in ctx.of(ablated=False):
        r = ctx.runs[i]
        if r.encoder:
            series.setdefault((r.collection, r.condition, r.ranker, r.marks), []).append(i)
    out = []
    for (c, cond, ranker, marks), members in series.items():
        if len({ctx.runs[i].encoder for i in members}) < 2:
            continue
        members.sort(
            key=lambda i: (
                ctx.runs[i].encoder_size is None,
                ctx.runs[i].encoder_size or 0,
                ctx.runs[i].encoder,
            )
        )
        out.append(
            {
                "collection": c,
                "condition": cond,
                "ranker": ranker,
                "marks": list(marks),
                "points": [
                    {
                        "encoder": ctx.runs[i].encoder,
                        "size": ctx.runs[i].encoder_size,
                        "run": ctx.runs[i].name,
                        "accuracy": _pct(accuracy(ctx.runs[i])[0]),
                        "by": score_by(ctx.runs[i]),
                    }
                    for i in members
                ],
            }
        )
    if not out:
        return _skip(
            "figure-5",
            title,
            "runs of one condition, ranker, collection and backbone with two or more dense "
            "encoders (summary.json `encoder`)",
        )
    return {"id": "figure-5", "title": title, "backbone": ctx.primary, "series": out}


def figure_6(ctx: Ctx) -> dict[str, Any]:
    title = "Accuracy by backbone"
    backbones = list(dict.fromkeys([ctx.primary] + [r.backbone for r in ctx.runs]))
    panels = []
    for c in ctx.collections:
        cells: dict[tuple[str, str, tuple[str, ...]], dict[str, int]] = {}
        for i in sorted(ctx.of(c, None, ablated=False), key=lambda i: (*_place(ctx.rows[i]), i)):
            r = ctx.runs[i]
            cells.setdefault((r.condition, r.ranker, r.marks), {}).setdefault(r.backbone, i)
        groups = [
            {
                "label": ctx.runs[next(iter(b.values()))].label,
                "values": {k: _pct(accuracy(ctx.runs[i])[0]) for k, i in b.items()},
            }
            for b in cells.values()
            if len(b) >= 2
        ]
        if groups:
            panels.append(
                {
                    "collection": c,
                    "backbones": [b for b in backbones if any(b in g["values"] for g in groups)],
                    "groups": groups,
                }
            )
    if not panels:
        return _skip(
            "figure-6",
            title,
            "runs of one condition and ranker on one collection with two or more backbones",
        )
    return {"id": "figure-6", "title": title, "panels": panels}


def figure_7(ctx: Ctx) -> dict[str, Any]:
    panels = []
    for c in ctx.collections:
        bars = []
        for i in sorted(ctx.of(c), key=lambda i: (*_place(ctx.rows[i]), i)):
            f = ctx.rows[i]["failures"]
            wrong = ctx.rows[i]["questions"] - f["correct"]
            bars.append(
                {
                    "run": ctx.runs[i].name,
                    "label": ctx.runs[i].label,
                    "wrong": wrong,
                    **{
                        k: round(f[k] / wrong, 4) if wrong else 0.0
                        for k in ("retrieval", "selection", "synthesis", "unattributed")
                    },
                }
            )
        if bars:
            panels.append({"collection": c, "bars": bars})
    return {
        "id": "figure-7",
        "title": "Why wrong answers were wrong (exact "
        "match), as shares of each run's incorrect answers",
        "backbone": ctx.primary,
        "panels": panels,
    }


def figure_8(ctx: Ctx) -> dict[str, Any]:
    panels = []
    for c in ctx.collections:
        by_family: dict[str, list[dict[str, Any]]] = {}
        for i in sorted(ctx.of(c), key=lambda i: (*_place(ctx.rows[i]), i)):
            calls = [int(rec["llm_calls"]) for rec in ctx.runs[i].records.values()]
            counts = {k: calls.count(k) for k in sorted(set(calls))}
            by_family.setdefault(_panel(ctx.runs[i]), []).append(
                {
                    "run": ctx.runs[i].name,
                    "label": ctx.runs[i].label,
                    "calls": [[k, v] for k, v in counts.items()],
                }
            )
        panels += [
            {"collection": c, "family": fam, "lines": lines} for fam, lines in by_family.items()
        ]
    return {
        "id": "figure-8",
        "title": "LLM calls per question (share of questions answered within N calls)",
        "backbone": ctx.primary,
        "panels": panels,
    }
