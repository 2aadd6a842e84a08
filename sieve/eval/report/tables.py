"""The data of every table and figure of `sieve eval report`, and its Markdown; no drawing here.

Each item is a JSON-friendly dict with an `id` (`table-1`, `figure-7`, ...), a `title` and its
numbers, or `skipped`: what runs it needs. Single-backbone items use the primary backbone. Which of
the paper's tables and figures each is:

- Table 1: accuracy, distinct tokens and LLM calls per condition and ranker (rows), per collection
  (columns); sieve's extensions (for example `+diagnosis`) are rows of their own, ablations are not.
- Table 3: BQL usage of the runs that used `search`, with the row "no field / Boolean / date".
- Table 6: the Indri-style control: SIEVE with the indri rankers beside SIEVE with BM25 and
  BM25+dense.
- Table 7: the ablations of SIEVE (strict Boolean, no snippets, no field exposure, diagnosis, flat
  twin), each against SIEVE as the paper runs it with the same ranker (BM25+dense first).
- Table 8: what BQL adds: Search–Fetch against SIEVE for each ranker and collection.
- Table 9: the twins: every condition and ranker run on both, structured against flat.
- Tables 10-12: every run of one collection (one table each), all backbones, all columns.
- Figure 1: accuracy against distinct tokens, a panel per collection, colour = family, marker =
  ranker (a legend, no labels on the points), arrows from the baseline to SIEVE.
- Figure 3: per-question token change against the baseline (a panel per family) and the answers
  gained and lost.
- Figure 4: Table 7 drawn: the change in accuracy and tokens of each ablation.
- Figure 5: accuracy by dense encoder (ordered by size where the record gives one).
- Figure 6: accuracy by backbone, per condition and ranker.
- Figure 7: why wrong answers were wrong (retrieval, selection, synthesis), as shares of the
  run's incorrect answers.
- Figure 8: how many LLM calls the questions took (cumulative), a panel per family.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sieve.eval.report.runs import (
    ABLATIONS,
    ALPHA,
    FAMILIES,
    RANKERS,
    Run,
    _place,
    _sig,
    accuracy,
    grouped,
    paired,
    score_by,
)
from sieve.eval.report.summary import OPERATORS

CONSTRUCTS = {
    "field": "field restriction",
    "boolean": "Boolean operator (any)",
    "and": "AND",
    "or": "OR",
    "not": "NOT / -",
    "phrase": "quoted phrase",
    "wildcard": "wildcard",
    "date": "date filter",
    "near": "NEAR",
    "plain": "no field / Boolean / date",
}
REFERENCE_RANKERS = ("hybrid", "bm25", "dense")  # the paper's ablations run on BM25+dense


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


# --- tables
# -----------------------------------------------------------------------------------------


def table_1(ctx: Ctx) -> dict[str, Any]:
    members = ctx.of(ablated=False)
    keyed: dict[tuple[Any, ...], dict[str, int]] = {}
    for i in sorted(members, key=lambda i: (*_place(ctx.rows[i]), i)):
        r = ctx.runs[i]
        key: tuple[Any, ...] = (r.family, r.condition, r.ranker, r.marks, r.encoder)
        while r.collection in keyed.get(key, {}):
            key = (*key, r.name)  # two runs of one cell on one collection: both shown
        keyed.setdefault(key, {})[r.collection] = i
    rows: list[dict[str, Any]] = []
    for cells in keyed.values():
        first = ctx.runs[next(iter(cells.values()))]
        rows.append(
            {
                "family": first.family,
                "condition": first.condition,
                "ranker": first.ranker,
                "marks": list(first.marks),
                "encoder": first.encoder,
                "label": first.label,
                "cells": {
                    c: {
                        **_cost(ctx, i),
                        "significant": ctx.rows[i].get("significant", []),
                        "baseline": ctx.rows[i]["baseline"],
                    }
                    for c, i in cells.items()
                },
            }
        )
    return {
        "id": "table-1",
        "title": f"Accuracy and cost, backbone {ctx.primary or '?'}",
        "backbone": ctx.primary,
        "collections": [c for c in ctx.collections if any(c in r["cells"] for r in rows)],
        "rows": rows,
    }


def tables_10_12(ctx: Ctx) -> dict[str, Any]:
    keep = (
        "run",
        "model",
        "encoder",
        "family",
        "condition",
        "ranker",
        "twin",
        "marks",
        "questions",
        "accuracy",
        "judged",
        "unjudged",
        "gold_recall",
        "distinct_tokens",
        "step_summed_tokens",
        "llm_calls",
        "recovered",
        "recovered_share",
        "fallback_rate",
        "baseline",
        "baseline_run",
        "significant",
    )
    backbones = list(dict.fromkeys([ctx.primary] + [r.backbone for r in ctx.runs]))
    out = {}
    for c in ctx.collections:
        rows = grouped([ctx.rows[i] for i in ctx.of(c, None)])
        rows.sort(key=lambda r: backbones.index(r["model"] or ""))
        out[c] = [{k: r.get(k, [] if k == "significant" else None) for k in keep} for r in rows]
    return {"id": "tables-10-12", "title": "Every run, by collection", "collections": out}


def table_3(ctx: Ctx) -> dict[str, Any]:
    title = "BQL usage (share of questions, share of search calls)"
    used = [
        i
        for i in sorted(
            ctx.of(ablated=False),
            key=lambda i: (ctx.collections.index(ctx.runs[i].collection), *_place(ctx.rows[i]), i),
        )
        if ctx.rows[i]["search_calls"]
    ]
    if not used:
        return _skip(
            "table-3", title, "runs that used the BQL `search` tool (the SIEVE conditions)"
        )
    columns = [
        {
            "collection": ctx.runs[i].collection,
            "run": ctx.runs[i].name,
            "label": ctx.runs[i].label,
            "search_calls": ctx.rows[i]["search_calls"],
        }
        for i in used
    ]
    # "plain" (no field, Boolean or date) is one of
    # OPERATORS: counted once, by sieve.eval.report.summary.
    rows = [
        {
            "construct": op,
            "name": CONSTRUCTS[op],
            "values": [ctx.rows[i]["bql_usage"][op] for i in used],
        }
        for op in OPERATORS
    ]
    return {
        "id": "table-3",
        "title": title,
        "backbone": ctx.primary,
        "columns": columns,
        "rows": rows,
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


def table_6(ctx: Ctx) -> dict[str, Any]:
    title = "The Indri-style control: SIEVE's tools with Indri-style rankers"
    groups = []
    for c in ctx.collections:
        indri = [
            i
            for i in ctx.of(c, ablated=False)
            if ctx.runs[i].family in ("sieve", "indri-control")
            and ctx.runs[i].ranker.startswith("indri")
        ]
        ref = _sieve_paper(ctx, c, "hybrid")
        ref = ref if ref is not None else _sieve_paper(ctx, c, "bm25")
        if not indri or ref is None:
            continue
        others = [
            i
            for i in (_sieve_paper(ctx, c, r) for r in ("bm25", "dense", "hybrid"))
            if i is not None and i != ref
        ]
        rows = [{**_cost(ctx, ref), "ranker": ctx.runs[ref].ranker, "reference": True}]
        for i in sorted(
            others + indri,
            key=lambda i: (
                RANKERS.index(ctx.runs[i].ranker) if ctx.runs[i].ranker in RANKERS else 99
            ),
        ):
            rows.append(
                {
                    **_cost(ctx, i),
                    "ranker": ctx.runs[i].ranker,
                    "reference": False,
                    **_versus(ctx.runs[i], ctx.runs[ref], len(others) + len(indri)),
                }
            )
        groups.append({"collection": c, "reference": ctx.runs[ref].name, "rows": rows})
    if not groups:
        return _skip(
            "table-6",
            title,
            "a SIEVE run with the indri or indri+dense ranker beside SIEVE with BM25 or "
            "BM25+dense, of one collection "
            "and backbone (eval grid --controls)",
        )
    return {"id": "table-6", "title": title, "backbone": ctx.primary, "groups": groups}


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


def table_8(ctx: Ctx) -> dict[str, Any]:
    title = "What BQL adds: Search–Fetch against SIEVE"
    pairs = []
    for c in ctx.collections:
        for ranker in RANKERS:
            fetch_runs = [
                i
                for i in ctx.of(c, ablated=False)
                if ctx.runs[i].condition == "search-fetch" and ctx.runs[i].ranker == ranker
            ]
            sv = _sieve_paper(ctx, c, ranker)
            if fetch_runs and sv is not None:
                pairs.append((c, ranker, fetch_runs[0], sv))
    if not pairs:
        return _skip(
            "table-8",
            title,
            "a Search–Fetch run and a SIEVE run with the same ranker, collection and backbone",
        )
    rows = []
    for c, ranker, sf, sv in pairs:
        v = _versus(ctx.runs[sv], ctx.runs[sf], len(pairs))
        rows.append(
            {
                "collection": c,
                "ranker": ranker,
                "search_fetch": _cost(ctx, sf),
                "sieve": _cost(ctx, sv),
                **v,
                "improved": v["delta_accuracy"] > 0,
            }
        )
    return {
        "id": "table-8",
        "title": title,
        "backbone": ctx.primary,
        "rows": rows,
        "improved": sum(r["improved"] for r in rows),
        "pairs": len(rows),
    }


def table_9(ctx: Ctx) -> dict[str, Any]:
    title = "Structured against flat twin"
    found = []
    for c in ctx.collections:
        members = ctx.of(c)
        for i in members:
            r = ctx.runs[i]
            if r.twin != "flat":
                continue
            rest = tuple(m for m in r.marks if m != "flat twin")
            twin = [
                j
                for j in members
                if ctx.runs[j].twin == "structured"
                and (ctx.runs[j].condition, ctx.runs[j].ranker, ctx.runs[j].marks)
                == (r.condition, r.ranker, rest)
            ]
            if twin:
                found.append((c, twin[0], i))
    if not found:
        return _skip(
            "table-9",
            title,
            "runs of one condition and ranker on both twins, of one collection and backbone (eval "
            "grid --twins structured,flat)",
        )
    rows = [
        {
            "collection": c,
            "condition": ctx.runs[s].condition,
            "ranker": ctx.runs[s].ranker,
            "structured": _cost(ctx, s),
            "flat": _cost(ctx, f),
            **_versus(ctx.runs[f], ctx.runs[s], len(found)),
        }
        for c, s, f in found
    ]
    return {"id": "table-9", "title": title, "backbone": ctx.primary, "rows": rows}


# --- figures
# ----------------------------------------------------------------------------------------


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


def all_data(runs: list[Run], rows: list[dict[str, Any]], primary: str) -> dict[str, Any]:
    """Every table's and figure's data (rows in the order of `runs`)."""
    ctx = Ctx(runs, rows, primary)
    abl = ablations(ctx)
    tables = [
        table_1(ctx),
        table_3(ctx),
        table_6(ctx),
        table_7(ctx, abl),
        table_8(ctx),
        table_9(ctx),
        tables_10_12(ctx),
    ]
    figures = [
        figure_1(ctx),
        figure_3(ctx),
        figure_4(ctx, abl),
        figure_5(ctx),
        figure_6(ctx),
        figure_7(ctx),
        figure_8(ctx),
    ]
    return {"tables": {t["id"]: t for t in tables}, "figures": {f["id"]: f for f in figures}}


# --- Markdown
# ---------------------------------------------------------------------------------------


def _p100(x: float | None) -> str:
    return "–" if x is None else f"{x:.1f}"


def _pc(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _p(x: float | None) -> str:
    return "–" if x is None else f"{x:.3g}" + ("*" if x < ALPHA else "")


def _grid(head: list[str], body: list[list[str]], left: int = 1) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" if i < left else "---:" for i in range(len(head))) + "|",
    ] + ["| " + " | ".join(r) + " |" for r in body]


def _family_name(family: str) -> str:
    return next((name for f, name, _ in FAMILIES if f == family), family)


def _acc(cell: dict[str, Any]) -> str:
    text = f"{cell['accuracy']:.1f}" + (
        "*" if any(m in cell.get("significant", []) for m in ("accuracy", "judged")) else ""
    )
    return text + (f" ({cell['unjudged']} unjudged)" if cell.get("unjudged") else "")


def md_table_1(t: dict[str, Any]) -> list[str]:
    cols = t["collections"]
    head = ["Family", "Condition", "Ranker", "Encoder"] + [
        f"{c} {k}" for c in cols for k in ("acc %", "tok.", "calls")
    ]
    body, last = [], None
    for r in t["rows"]:
        cells = [
            _family_name(r["family"]) if r["family"] != last else "",
            r["condition"] + (f" ({', '.join(r['marks'])})" if r["marks"] else ""),
            r["ranker"] or "–",
            r["encoder"] or "–",
        ]
        for c in cols:
            x = r["cells"].get(c)
            if x is None:
                cells += ["", "", ""]
                continue
            sig = x.get("significant", [])
            cells += [
                _acc(x) + (" (baseline)" if x["baseline"] else ""),
                f"{x['distinct_tokens']:,.0f}" + ("*" if "distinct_tokens" in sig else ""),
                f"{x['llm_calls']:.1f}" + ("*" if "llm_calls" in sig else ""),
            ]
        last = r["family"]
        body.append(cells)
    by = {x["by"] for r in t["rows"] for x in r["cells"].values()}
    note = (
        "Accuracy: "
        + " or ".join(
            {
                "em": "exact match",
                "judged": (
                    "the judge's (over judged questions; unjudged ones are neither right nor wrong)"
                ),
            }[b]
            for b in sorted(by)
        )
        + ". Tok.: distinct tokens per question; calls: LLM calls per question. "
        f"\\* differs from the collection's baseline at alpha {ALPHA} (two-sided, Bonferroni). "
        "Ablations are in Table 7, the flat twin in Table 9."
    )
    return _grid(head, body, 4) + ["", note]


def md_runs(rows: list[dict[str, Any]]) -> list[str]:
    """One line per run with every column (rows as `sieve.eval.report.report.numbers` gives
    them)."""
    judged = any(r["judged"] is not None for r in rows)
    head = (
        ["Run", "Backbone", "Encoder", "Condition", "Ranker", "Twin", "n", "EM %"]
        + (["Judge %", "Unjudged"] if judged else [])
        + [
            "Gold recall %",
            "Distinct tok.",
            "Step-summed tok.",
            "LLM calls",
            "Recovered",
            "Fallback %",
        ]
    )
    body = []
    for r in rows:
        s = r.get("significant") or []

        def mark(m: str, s: list[str] = s) -> str:
            return "*" if m in s else ""

        cells = [
            r["run"] + (" (baseline)" if r.get("baseline") else ""),
            str(r["model"]),
            r.get("encoder") or "–",
            str(r["condition"]) + (f" ({', '.join(r['marks'])})" if r.get("marks") else ""),
            str(r["ranker"]),
            str(r["twin"]),
            str(r["questions"]),
            _pc(r["accuracy"]) + mark("accuracy"),
        ]
        if judged:
            cells += [
                _pc(r["judged"]) + mark("judged"),
                str(r["unjudged"]) if r["judged"] is not None else "–",
            ]
        cells += [
            _pc(r["gold_recall"]),
            f"{r['distinct_tokens']:,.0f}" + mark("distinct_tokens"),
            f"{r['step_summed_tokens']:,.0f}" + mark("step_summed_tokens"),
            f"{r['llm_calls']:.1f}" + mark("llm_calls"),
            f"{r['recovered']} ({_pc(r['recovered_share'])}%)",
            _pc(r["fallback_rate"]),
        ]
        body.append(cells)
    return _grid(head, body, 6)


RUNS_NOTE = (
    f"\\* differs from the run's baseline at alpha {ALPHA} (two-sided, Bonferroni-corrected over "
    "the runs compared with it): exact McNemar on "
    "accuracy, paired t on tokens and LLM calls. Tokens and calls are means per question; distinct "
    "tokens count each piece of context once, "
    "step-summed tokens recount the prompt at every call. Judge %: over the judged questions; "
    "unjudged answers are not counted as wrong. "
    "Recovered: answers obtained by the recovery step. Fallback: share of search calls whose "
    "Boolean filter admitted nothing."
)


def md_tables_10_12(t: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for n, (c, rows) in enumerate(t["collections"].items()):
        title = f"### Table {10 + n}: {c or 'collection ?'}" if n < 3 else f"### {c}"
        out += [title, ""] + md_runs(rows) + [""]
    return out + [RUNS_NOTE]


def md_table_3(t: dict[str, Any]) -> list[str]:
    head = ["Construct"] + [f"{c['collection']} {c['run']}".strip() for c in t["columns"]]
    body = [
        [r["name"]] + [f"{_pc(v['questions'])} / {_pc(v['calls'])}" for v in r["values"]]
        for r in t["rows"]
    ]
    calls = ", ".join(f"{c['run']} {c['search_calls']}" for c in t["columns"])
    return _grid(head, body) + [
        "",
        "Share of questions whose `search` calls used the construct at least once / share of "
        "`search` calls using it, % "
        f"({calls} calls). Boolean operators count only when written (AND, OR, NOT, -x); words "
        "side by side are not counted.",
    ]


def _versus_cells(r: dict[str, Any]) -> list[str]:
    return [
        f"{r['delta_accuracy']:+.1f}",
        _p(r["p_accuracy"]),
        f"{r['delta_tokens']:+,.0f}",
        _p(r["p_tokens"]),
    ]


def md_table_6(t: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for g in t["groups"]:
        body = [
            [
                g["collection"],
                r["ranker"],
                r["run"],
                _acc(r),
                f"{r['distinct_tokens']:,.0f}",
                f"{r['llm_calls']:.1f}",
            ]
            + (["", "", "", ""] if r["reference"] else _versus_cells(r))
            for r in g["rows"]
        ]
        out += _grid(
            ["Collection", "Ranker", "Run", "Acc %", "Tok.", "Calls", "Δ acc", "p", "Δ tok.", "p"],
            body,
            3,
        ) + [""]
    return out + [
        f"Δ against SIEVE with {', '.join(sorted({g['reference'] for g in t['groups']}))} "
        "(Bonferroni within a collection)."
    ]


def md_table_7(t: dict[str, Any]) -> list[str]:
    body = [
        [
            g["collection"],
            g["ranker"],
            r["ablation"],
            r["run"],
            _acc(r),
            f"{r['distinct_tokens']:,.0f}",
            f"{r['llm_calls']:.1f}",
        ]
        + (["", "", "", ""] if r["reference"] else _versus_cells(r))
        for g in t["groups"]
        for r in g["rows"]
    ]
    return _grid(
        [
            "Collection",
            "Ranker",
            "Ablation",
            "Run",
            "Acc %",
            "Tok.",
            "Calls",
            "Δ acc",
            "p",
            "Δ tok.",
            "p",
        ],
        body,
        4,
    ) + [
        "",
        "Each ablation against SIEVE as the paper runs it with the same ranker (Bonferroni within "
        "a collection and ranker).",
    ]


def md_table_8(t: dict[str, Any]) -> list[str]:
    body = [
        [
            r["collection"],
            r["ranker"],
            _acc(r["search_fetch"]),
            _acc(r["sieve"]),
            f"{r['delta_accuracy']:+.1f}",
            _p(r["p_accuracy"]),
            f"{r['search_fetch']['distinct_tokens']:,.0f}",
            f"{r['sieve']['distinct_tokens']:,.0f}",
            _p(r["p_tokens"]),
        ]
        for r in t["rows"]
    ]
    return _grid(
        [
            "Collection",
            "Ranker",
            "Search–Fetch acc %",
            "SIEVE acc %",
            "Δ acc",
            "p",
            "Search–Fetch tok.",
            "SIEVE tok.",
            "p",
        ],
        body,
        2,
    ) + [
        "",
        f"BQL improved accuracy on {t['improved']} of {t['pairs']} ranker-collection pairs "
        "(Bonferroni over the pairs).",
    ]


def md_table_9(t: dict[str, Any]) -> list[str]:
    body = [
        [
            r["collection"],
            r["condition"],
            r["ranker"],
            _acc(r["structured"]),
            _acc(r["flat"]),
            f"{r['delta_accuracy']:+.1f}",
            _p(r["p_accuracy"]),
            f"{r['structured']['distinct_tokens']:,.0f}",
            f"{r['flat']['distinct_tokens']:,.0f}",
            _p(r["p_tokens"]),
        ]
        for r in t["rows"]
    ]
    return _grid(
        [
            "Collection",
            "Condition",
            "Ranker",
            "Structured acc %",
            "Flat acc %",
            "Δ acc",
            "p",
            "Structured tok.",
            "Flat tok.",
            "p",
        ],
        body,
        3,
    ) + ["", "Δ: flat minus structured (Bonferroni over the pairs)."]


def md_paired(rows: list[dict[str, Any]]) -> list[str]:
    judged = any("judged" in r.get("tests", {}) for r in rows)
    head = (
        ["Run", "Collection", "Backbone", "Baseline", "Shared", "Gained", "Lost", "p EM"]
        + (["p Judge"] if judged else [])
        + ["Δ distinct tok.", "p", "Δ step-summed tok.", "p", "Δ LLM calls", "p", "Fewer tokens %"]
    )

    def p(r: dict[str, Any], m: str) -> str:
        t = r.get("tests", {}).get(m)
        return "–" if t is None else _p(t["p"])

    body = []
    for r in rows:
        v = r.get("versus_baseline")
        if r.get("baseline") or not v:
            continue
        body.append(
            [
                r["run"],
                r["collection"] or "–",
                r["model"] or "–",
                r["baseline_run"],
                str(v["shared"]),
                str(v["gained"]),
                str(v["lost"]),
                p(r, "accuracy"),
            ]
            + ([p(r, "judged")] if judged else [])
            + [
                f"{v['distinct_tokens_change']:+,.0f}",
                p(r, "distinct_tokens"),
                f"{v['step_summed_tokens_change']:+,.0f}",
                p(r, "step_summed_tokens"),
                f"{v['llm_calls_change']:+.1f}",
                p(r, "llm_calls"),
                _pc(v["fewer_tokens"]),
            ]
        )
    return _grid(head, body, 4) + [
        "",
        "Gained: questions this run got right and the baseline wrong (lost: the reverse), by the "
        "judge when both runs are "
        "judged (unjudged questions left out), else by exact match. Δ: this run minus the "
        "baseline, mean over the shared questions. "
        "Fewer tokens: share of shared questions where this run used fewer distinct tokens. p: "
        "Bonferroni-corrected; * below alpha.",
    ]


def md_figure_7(f: dict[str, Any]) -> list[str]:
    body = [
        [p["collection"], b["label"], b["run"], str(b["wrong"])]
        + [_pc(b[k]) for k in ("retrieval", "selection", "synthesis", "unattributed")]
        for p in f["panels"]
        for b in p["bars"]
    ]
    return _grid(
        [
            "Collection",
            "Run",
            "Folder",
            "Wrong",
            "Retrieval %",
            "Selection %",
            "Synthesis %",
            "Unattributed %",
        ],
        body,
        3,
    ) + [
        "",
        "Shares of each run's incorrect answers (exact match): retrieval, no gold document ever "
        "surfaced; selection, surfaced but never opened; "
        "synthesis, opened and still wrong; unattributed, the question has no gold documents.",
    ]


TABLES = (
    ("table-1", "Table 1", md_table_1),
    ("table-3", "Table 3", md_table_3),
    ("table-6", "Table 6", md_table_6),
    ("table-7", "Table 7", md_table_7),
    ("table-8", "Table 8", md_table_8),
    ("table-9", "Table 9", md_table_9),
    ("tables-10-12", "Tables 10-12", md_tables_10_12),
)


def render(report: dict[str, Any], pictures: list[Path] | str | None = None) -> str:
    """report.md: every table (or the line saying what it needs), the paired tests, Figure 7's
    numbers, the figures."""
    rows = report["rows"]
    about = (
        f"{len(rows)} run{'s' if len(rows) != 1 else ''}; collections: "
        f"{', '.join(c or '?' for c in report['collections'])}; backbones: "
        f"{', '.join(b or '?' for b in report['backbones'])} (primary: "
        f"{report['primary_backbone'] or '?'})."
    )
    parts = ["# Evaluation report", "", about, f"Baseline: {report['baseline']}."]
    if report.get("unpaired"):
        parts.append(
            f"No baseline among the runs of {', '.join(report['unpaired'])}: "
            "their paired tests are left out."
        )
    skipped: list[str] = []
    for key, name, fn in TABLES:
        t = report["tables"][key]
        if "skipped" in t:
            skipped.append(f"- {name} ({t['title']}): skipped; it needs {t['skipped']}.")
            continue
        parts += ["", f"## {name}: {t['title']}", "", *fn(t)]
    if any(r.get("versus_baseline") for r in rows):
        parts += ["", "## Against the baseline (Figure 3's numbers)", "", *md_paired(rows)]
    parts += [
        "",
        "## Failure composition (Figure 7)",
        "",
        *md_figure_7(report["figures"]["figure-7"]),
    ]
    for key, f in report["figures"].items():
        if "skipped" in f:
            skipped.append(
                f"- {key.replace('figure-', 'Figure ')} "
                f"({f['title']}): skipped; it needs {f['skipped']}."
            )
    if skipped:
        parts += ["", "## Not in this report", "", *skipped]
    if pictures is not None:
        parts += ["", "## Figures", ""] + (
            [f"- {p.name}" for p in pictures] if isinstance(pictures, list) else [pictures]
        )
    return "\n".join(parts) + "\n"
