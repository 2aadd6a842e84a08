"""`sieve eval report`: the paper's comparison tables and figures, from run folders alone.

Every number is computed from a run's `trajectories.jsonl` (tokens, calls, outcomes, tool calls) and
its `summary.json` (per-question exact match, the judge's verdicts, gold-document recall and the
failure composition, which need the gold documents), so anyone with the two files can recompute it.

- Table 1 (and 10-12): one row per run, grouped by family as the paper orders them; accuracy (EM,
  and Judge% for judged runs), gold-document recall, distinct and step-summed tokens, LLM calls,
  recovered answers, fallback rate.
- Paired tests against one baseline run on the questions both answered: exact McNemar on accuracy
  (EM; judged when both runs are judged), two-sided paired t on distinct tokens, step-summed tokens
  and LLM calls; each p is Bonferroni-corrected over the runs compared with the baseline.
- Table 3: BQL usage (share of questions and of `search` calls) of the runs that used `search`.
- Figure 1 (accuracy against distinct tokens, arrows from the baseline to the SIEVE runs), Figure 3
  (per-question token change and the gained/lost verdicts), Figure 7 (failure composition), drawn
  with matplotlib when the `eval` extra is installed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from sieve.errors import InvalidArgumentError, SieveError
from sieve.eval.stats import bonferroni, mcnemar_exact, paired_t
from sieve.eval.summary import OPERATORS, SEARCH_TOOLS, bql_usage

ALPHA = 0.05
# (family, its name in the tables, its conditions): the paper's Table 1 order.
FAMILIES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("one-shot", "One-shot", ("one-shot", "rag")),
    ("autoread", "Search–AutoRead", ("autoread",)),
    ("dci", "DCI", ("dci", "bounded-dci")),
    ("search-visit", "Search–Visit", ("search-visit",)),
    ("search-fetch", "Search–Fetch", ("search-fetch",)),
    ("sieve", "SIEVE", ("sieve",)),
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
PICTURES = "pictures need the eval extra (matplotlib): pip install 'sieve-search[eval]'"


@dataclass(frozen=True)
class Run:
    dir: Path
    summary: dict[str, Any]
    records: dict[str, dict[str, Any]]  # question id -> trajectory record (the scored questions)
    scores: dict[str, dict[str, Any]] = field(default_factory=dict)  # question id -> {em, f1, judged?}

    @property
    def name(self) -> str:
        return str(self.summary.get("name") or self.dir.name)

    @property
    def condition(self) -> str:
        c = str(self.summary.get("condition") or "")
        return ALIASES.get(c, c)

    @property
    def family(self) -> str:
        return next((f for f, _, conds in FAMILIES if self.condition in conds), "other")


def load_run(run_dir: Path) -> Run:
    run_dir = Path(run_dir)
    if not (run_dir / "summary.json").is_file() or not (run_dir / "trajectories.jsonl").is_file():
        raise SieveError(f"{run_dir} is not a run folder (it needs summary.json and trajectories.jsonl from `sieve eval run`)")
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    records: dict[str, dict[str, Any]] = {}
    for line in (run_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            records[rec["question_id"]] = rec  # a resumed run's later record wins, as in the summary
    scores = summary.get("per_question") or {q: {} for q in records}
    return Run(run_dir, summary, {q: records[q] for q in scores if q in records}, {q: v for q, v in scores.items() if q in records})


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def _judged(run: Run) -> list[str] | None:
    """The questions of a judged run (every scored question has a verdict), else None."""
    qs = list(run.scores)
    return qs if qs and all("judged" in run.scores[q] for q in qs) else None


def numbers(run: Run) -> dict[str, Any]:
    """One run's row of Table 1 plus its failure composition and BQL usage."""
    recs = [run.records[q] for q in run.scores]
    n = len(recs)
    em = [float(run.scores[q].get("em", 0.0)) for q in run.scores]
    judged = _judged(run)
    searches = [t for r in recs for t in r.get("tool_calls", []) if t["name"] in SEARCH_TOOLS]
    recovered = sum(1 for r in recs if r.get("outcome") == "recovered")
    fails = {k: int((run.summary.get("failures") or {}).get(k, 0)) for k in ("retrieval", "selection", "synthesis")}
    correct = int(sum(em))
    usage, search_calls = bql_usage(recs)
    return {
        "run": run.name, "dir": str(run.dir), "family": run.family, "condition": run.condition or None,
        "ranker": run.summary.get("ranker"), "twin": run.summary.get("twin"), "model": run.summary.get("model"), "questions": n,
        "accuracy": round(_mean(em), 4),
        "judged": round(_mean([float(run.scores[q]["judged"]) for q in judged]), 4) if judged else None,
        "gold_recall": run.summary.get("gold_recall"),
        "distinct_tokens": round(_mean([r["tokens"]["distinct"] for r in recs]), 1),
        "step_summed_tokens": round(_mean([r["tokens"]["step_summed"] for r in recs]), 1),
        "llm_calls": round(_mean([r["llm_calls"] for r in recs]), 3),
        "recovered": recovered,
        "recovered_share": round(recovered / n, 4) if n else 0.0,
        "fallback_rate": round(sum(1 for t in searches if t.get("fallback")) / len(searches), 4) if searches else None,
        "failures": {"correct": correct, **fails, "unattributed": n - correct - sum(fails.values())},
        "search_calls": search_calls,
        "bql_usage": usage,
    }


def _verdicts(run: Run, base: Run, shared: list[str], key: str) -> dict[str, int]:
    a = [bool(run.scores[q].get(key)) for q in shared]
    b = [bool(base.scores[q].get(key)) for q in shared]
    pairs = list(zip(a, b))
    return {"gained": pairs.count((True, False)), "lost": pairs.count((False, True)), "both_right": pairs.count((True, True)), "both_wrong": pairs.count((False, False))}


def compare(runs: list[Run], baseline: int = 0) -> list[dict[str, Any]]:
    """One row per run in the given order, the baseline's marked; every other row carries its paired
    tests against the baseline on the questions both runs scored (`tests`: statistic, n, raw and
    corrected p; `p`: the corrected p per metric; `significant`: the metrics below ALPHA)."""
    base = runs[baseline]
    comparisons = len(runs) - 1
    rows = []
    for i, run in enumerate(runs):
        row = numbers(run)
        row["baseline"] = i == baseline
        if i != baseline:
            shared = sorted(set(run.scores) & set(base.scores))
            tests: dict[str, Any] = {}
            if shared:
                got = {"accuracy": mcnemar_exact([bool(run.scores[q].get("em")) for q in shared], [bool(base.scores[q].get("em")) for q in shared])}
                both_judged = _judged(run) is not None and _judged(base) is not None
                if both_judged:
                    got["judged"] = mcnemar_exact([bool(run.scores[q]["judged"]) for q in shared], [bool(base.scores[q]["judged"]) for q in shared])
                for metric, value in METRICS.items():
                    got[metric] = paired_t([value(run.records[q]) for q in shared], [value(base.records[q]) for q in shared])
                tests = {m: {"statistic": round(t.statistic, 4), "n": t.n, "p_raw": t.p, "p": bonferroni(t.p, comparisons)} for m, t in got.items()}
                delta = {m: [value(run.records[q]) - value(base.records[q]) for q in shared] for m, value in METRICS.items()}
                row["versus_baseline"] = {
                    "shared": len(shared), **_verdicts(run, base, shared, "judged" if both_judged else "em"), "verdicts_by": "judged" if both_judged else "em",
                    **{f"{m}_change": round(_mean(d), 3) for m, d in delta.items()},
                    "fewer_tokens": round(sum(1 for d in delta["distinct_tokens"] if d < 0) / len(shared), 4),
                }
            row["tests"] = tests
            row["p"] = {m: t["p"] for m, t in tests.items()}
            row["significant"] = [m for m, t in tests.items() if t["p"] < ALPHA]
        rows.append(row)
    return rows


def grouped(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows in Table 1's order: family (one-shot, autoread, DCI, Search–Visit, Search–Fetch, SIEVE,
    then others), ranker (bm25, dense, hybrid), twin (structured, flat), then the order given."""
    fam = [f for f, _, _ in FAMILIES]

    def place(item: tuple[int, dict[str, Any]]) -> tuple[int, int, int, int]:
        i, r = item
        return (fam.index(r["family"]) if r["family"] in fam else len(fam), RANKERS.index(r["ranker"]) if r["ranker"] in RANKERS else len(RANKERS),
                TWINS.index(r["twin"]) if r["twin"] in TWINS else len(TWINS), i)

    return [r for _, r in sorted(enumerate(rows), key=place)]


def resolve_baseline(runs: list[Run], which: int | str) -> int:
    """The baseline's position: an index into `runs` (as given on the command line) or a run's name."""
    if isinstance(which, int) or str(which).lstrip("-").isdigit():
        i = int(which)
        if not 0 <= i < len(runs):
            raise InvalidArgumentError(f"--baseline {i} is out of range: give 0..{len(runs) - 1} or a run name")
        return i
    found = [i for i, r in enumerate(runs) if which in (r.name, r.dir.name, str(r.dir))]
    if len(found) != 1:
        names = ", ".join(r.name for r in runs)
        raise InvalidArgumentError(f"--baseline {which!r} names {'no run' if not found else 'several runs'}; the runs are: {names}")
    return found[0]


def build(runs: list[Run], baseline: int | str = 0) -> dict[str, Any]:
    """The whole report as one JSON-friendly value (what `--json` prints and report.json holds)."""
    b = resolve_baseline(runs, baseline)
    rows = compare(runs, b)
    return {
        "baseline": runs[b].name,
        "alpha": ALPHA,
        "correction": "bonferroni",
        "comparisons": len(runs) - 1,
        "tests": {"accuracy": "exact McNemar (EM)", "judged": "exact McNemar (judge)", "distinct_tokens": "paired t", "step_summed_tokens": "paired t",
                  "llm_calls": "paired t"},
        "rows": grouped(rows),
    }


# --- Markdown -----------------------------------------------------------------------------------

def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


def _mark(row: dict[str, Any], metric: str) -> str:
    return "*" if metric in row.get("significant", []) else ""


def _family_name(family: str) -> str:
    return next((name for f, name, _ in FAMILIES if f == family), family)


def table(rows: list[dict[str, Any]]) -> str:
    """Table 1 in Markdown (rows grouped by family), with a legend for the marks."""
    rows = grouped(rows)
    judged = any(r["judged"] is not None for r in rows)
    head = ["Family", "Run", "Condition", "Ranker", "Twin", "n", "EM %"] + (["Judge %"] if judged else []) + [
        "Gold recall %", "Distinct tok.", "Step-summed tok.", "LLM calls", "Recovered", "Fallback %"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i < 5 else "---:" for i in range(len(head))) + "|"]
    last = None
    for r in rows:
        cells = [
            _family_name(r["family"]) if r["family"] != last else "", r["run"] + (" (baseline)" if r.get("baseline") else ""), str(r["condition"]),
            str(r["ranker"]), str(r["twin"]), str(r["questions"]), _pct(r["accuracy"]) + _mark(r, "accuracy"),
        ]
        if judged:
            cells.append(_pct(r["judged"]) + _mark(r, "judged"))
        cells += [
            _pct(r["gold_recall"]), f"{r['distinct_tokens']:,.0f}" + _mark(r, "distinct_tokens"),
            f"{r['step_summed_tokens']:,.0f}" + _mark(r, "step_summed_tokens"), f"{r['llm_calls']:.1f}" + _mark(r, "llm_calls"),
            f"{r['recovered']} ({_pct(r['recovered_share'])}%)", _pct(r["fallback_rate"]),
        ]
        last = r["family"]
        lines.append("| " + " | ".join(cells) + " |")
    base = next((r["run"] for r in rows if r.get("baseline")), rows[0]["run"] if rows else "")
    m = len(rows) - 1
    marks = (f"\\* differs from the baseline {base} at alpha {ALPHA} (two-sided, Bonferroni-corrected over {m} comparison{'s' if m != 1 else ''}): "
             "exact McNemar on accuracy, paired t on tokens and LLM calls. ") if m else ""
    lines += ["", marks + "Tokens and calls are means per question; distinct tokens count each "
              "piece of context once, step-summed tokens recount the prompt at every call. Recovered: answers obtained by the recovery step. "
              "Fallback: share of search calls whose Boolean filter admitted nothing. – : not judged, or no search calls."]
    return "\n".join(lines)


def _p(row: dict[str, Any], metric: str) -> str:
    t = row.get("tests", {}).get(metric)
    return "–" if t is None else f"{t['p']:.3g}" + ("*" if t["p"] < ALPHA else "")


def paired_table(rows: list[dict[str, Any]]) -> str:
    """The paired comparisons with the baseline: verdicts gained and lost, mean changes, corrected p."""
    judged = any("judged" in r.get("tests", {}) for r in rows)
    head = ["Run", "Shared", "Gained", "Lost", "p EM"] + (["p Judge"] if judged else []) + [
        "Δ distinct tok.", "p", "Δ step-summed tok.", "p", "Δ LLM calls", "p", "Fewer tokens %"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "|".join("---:" for _ in head[1:]) + "|"]
    for r in grouped(rows):
        v = r.get("versus_baseline")
        if r.get("baseline") or not v:
            continue
        cells = [r["run"], str(v["shared"]), str(v["gained"]), str(v["lost"]), _p(r, "accuracy")] + ([_p(r, "judged")] if judged else []) + [
            f"{v['distinct_tokens_change']:+,.0f}", _p(r, "distinct_tokens"), f"{v['step_summed_tokens_change']:+,.0f}", _p(r, "step_summed_tokens"),
            f"{v['llm_calls_change']:+.1f}", _p(r, "llm_calls"), _pct(v["fewer_tokens"])]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Gained: questions this run got right and the baseline wrong (lost: the reverse), by the judge when both runs are judged, "
              "else by exact match. Δ: this run minus the baseline, mean over the shared questions. Fewer tokens: share of shared questions where this run used fewer distinct tokens. "
              "p: Bonferroni-corrected; * below alpha."]
    return "\n".join(lines)


def failure_table(rows: list[dict[str, Any]]) -> str:
    """Figure 7's numbers: what became of each question, in percent of the run's questions."""
    lines = ["| Run | Correct % | Retrieval % | Selection % | Synthesis % | Unattributed % |", "|---|---:|---:|---:|---:|---:|"]
    for r in grouped(rows):
        n, f = max(1, r["questions"]), r["failures"]
        lines.append(f"| {r['run']} | " + " | ".join(_pct(f[k] / n) for k in ("correct", "retrieval", "selection", "synthesis", "unattributed")) + " |")
    lines += ["", "Wrong answers by cause (exact match): retrieval, no gold document ever surfaced; selection, surfaced but never opened; "
              "synthesis, opened and still wrong; unattributed, the question has no gold documents."]
    return "\n".join(lines)


def bql_table(rows: list[dict[str, Any]]) -> str | None:
    """Table 3: BQL usage of the runs that used `search`; None when none did."""
    used = [r for r in grouped(rows) if r["search_calls"]]
    if not used:
        return None
    head = ["Construct"] + [f"{r['run']} {k}" for r in used for k in ("questions %", "calls %")]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "|".join("---:" for _ in head[1:]) + "|"]
    names = {"field": "field restriction", "boolean": "Boolean operator (any)", "and": "AND", "or": "OR", "not": "NOT / -", "phrase": "quoted phrase",
             "wildcard": "wildcard", "date": "date filter", "near": "NEAR", "plain": "no field / Boolean / date"}
    for op in OPERATORS:
        lines.append(f"| {names[op]} | " + " | ".join(_pct(r["bql_usage"][op][k]) for r in used for k in ("questions", "calls")) + " |")
    calls = ", ".join(f"{r['run']} {r['search_calls']}" for r in used)
    lines += ["", f"Share of questions whose `search` calls used the construct at least once, and share of `search` calls using it ({calls} calls). "
              "Boolean operators count only when written (AND, OR, NOT, -x); words side by side are not counted."]
    return "\n".join(lines)


def markdown(report: dict[str, Any], pictures: list[Path] | str | None = None) -> str:
    rows = report["rows"]
    parts = ["# Evaluation report", "", f"Baseline: {report['baseline']}. {len(rows)} run{'s' if len(rows) != 1 else ''}.", "", "## Accuracy and cost (Table 1)", "", table(rows)]
    if len(rows) > 1:
        parts += ["", f"## Against {report['baseline']} (Figure 3)", "", paired_table(rows)]
    parts += ["", "## Failure composition (Figure 7)", "", failure_table(rows)]
    bql = bql_table(rows)
    if bql:
        parts += ["", "## BQL usage (Table 3)", "", bql]
    if pictures is not None:
        parts += ["", "## Figures", ""] + ([f"- {p.name}" for p in pictures] if isinstance(pictures, list) else [pictures])
    return "\n".join(parts) + "\n"


def write(report: dict[str, Any], out: Path, pictures: list[Path] | str | None = None) -> tuple[Path, Path]:
    """report.json and report.md in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    data = {**report, "figures": [p.name for p in pictures] if isinstance(pictures, list) else pictures}
    (out / "report.json").write_text(json.dumps(data, indent=1, ensure_ascii=False))
    (out / "report.md").write_text(markdown(report, pictures), encoding="utf-8")
    return out / "report.json", out / "report.md"


# --- Figures ------------------------------------------------------------------------------------

def _right(run: Run, judged: bool) -> dict[str, bool]:
    return {q: bool(v["judged"] if judged else v.get("em")) for q, v in run.scores.items()}


def plots(runs: list[Run], out: Path, baseline: int = 0) -> list[Path] | str:
    """Figures 1, 3 and 7 as PNG files in `out`; without matplotlib, a message naming the extra.
    Accuracy is judged accuracy when every run is judged, else exact match."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return PICTURES
    out.mkdir(parents=True, exist_ok=True)
    base = runs[baseline]
    judged = all(_judged(r) for r in runs)
    kind = "judged" if judged else "EM"
    right = [_right(r, judged) for r in runs]
    rows = compare(runs, baseline)
    fams = [f for f, _, _ in FAMILIES] + ["other"]
    colour = {f: plt.get_cmap("tab10")(i) for i, f in enumerate(fams)}

    # Figure 1: accuracy against distinct tokens per question; arrows from the baseline to SIEVE.
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    points = [(row["distinct_tokens"], 100 * _mean([float(v) for v in got.values()])) for row, got in zip(rows, right)]
    for r, (x, y) in zip(runs, points):
        ax.scatter(x, y, color=colour[r.family], label=_family_name(r.family), zorder=3)
        ax.annotate(r.name, (x, y), fontsize=7, xytext=(4, 4), textcoords="offset points")
    for i, r in enumerate(runs):
        if r.condition == "sieve" and i != baseline:
            ax.annotate("", xy=points[i], xytext=points[baseline], arrowprops={"arrowstyle": "->", "color": "black", "lw": 1.2}, zorder=2)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), fontsize=7)
    ax.set_xlabel("distinct tokens per question")
    ax.set_ylabel(f"accuracy ({kind}, %)")
    ax.set_title(f"Accuracy against tokens (arrows: {base.name} to SIEVE)", fontsize=9)
    fig.tight_layout()
    first = out / "accuracy_vs_tokens.png"
    fig.savefig(first, dpi=120)
    plt.close(fig)

    # Figure 3: per-question token change against the baseline, and the gained/lost verdicts.
    others = [i for i in range(len(runs)) if i != baseline]
    fig, (left, panel) = plt.subplots(1, 2, figsize=(10, 4), gridspec_kw={"width_ratios": [2, 1]})
    gained, lost = [], []
    for i in others:
        r = runs[i]
        shared = sorted(set(r.scores) & set(base.scores))
        delta = sorted(r.records[q]["tokens"]["distinct"] - base.records[q]["tokens"]["distinct"] for q in shared)
        left.plot(range(len(delta)), delta, label=r.name)
        gained.append(sum(1 for q in shared if right[i][q] and not right[baseline][q]))
        lost.append(sum(1 for q in shared if right[baseline][q] and not right[i][q]))
    left.axhline(0, color="grey", lw=0.8)
    left.set_xlabel("questions, sorted by change")
    left.set_ylabel(f"distinct tokens minus {base.name}")
    if others:
        left.legend(fontsize=7)
    y = np.arange(len(others))
    panel.barh(y, gained, color="tab:green", label="gained")
    panel.barh(y, [-v for v in lost], color="tab:red", label="lost")
    panel.set_yticks(y, [runs[i].name for i in others], fontsize=7)
    panel.axvline(0, color="grey", lw=0.8)
    panel.set_xlabel(f"right only here (+), only in {base.name} (-); {kind}", fontsize=8)
    panel.legend(fontsize=7)
    fig.tight_layout()
    second = out / "token_change.png"
    fig.savefig(second, dpi=120)
    plt.close(fig)

    # Figure 7: failure composition, stacked per run (share of questions).
    ordered = grouped(rows)
    fig, ax = plt.subplots(figsize=(max(5.0, 1 + 0.8 * len(ordered)), 4))
    bottom = np.zeros(len(ordered))
    for k, c in (("correct", "tab:green"), ("retrieval", "tab:red"), ("selection", "tab:orange"), ("synthesis", "tab:purple"), ("unattributed", "tab:gray")):
        share = np.array([100 * r["failures"][k] / max(1, r["questions"]) for r in ordered])
        if k != "unattributed" or share.any():
            ax.bar(range(len(ordered)), share, bottom=bottom, color=c, label=k)
        bottom += share
    ax.set_xticks(range(len(ordered)), [r["run"] for r in ordered], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("questions (%)")
    ax.set_title("Failure composition (exact match)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    third = out / "failures.png"
    fig.savefig(third, dpi=120)
    plt.close(fig)
    return [first, second, third]
