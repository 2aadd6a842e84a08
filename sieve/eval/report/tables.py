"""The data of every table of `sieve eval report` and `all_data`, which gathers every table and
figure (figures in `figure_data`, Table 7 in `ablations`, the Markdown in `markdown`).

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

from typing import Any

from sieve.eval.report.ablations import ablations, table_7
from sieve.eval.report.context import Ctx, _cost, _sieve_paper, _skip, _versus
from sieve.eval.report.figure_data import (
    figure_1,
    figure_3,
    figure_4,
    figure_5,
    figure_6,
    figure_7,
    figure_8,
)
from sieve.eval.report.runs import RANKERS, Run, _place, grouped
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
