"""report.md: the Markdown of every table, the paired tests and Figure 7's numbers (`render`),
and the run list (`md_runs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sieve.eval.report.runs import ALPHA, FAMILIES


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
