"""`sieve eval report`: the comparison table (the paper's Table 1 shape) and the two pictures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sieve.eval.stats import bonferroni, mcnemar_exact, paired_t

ALPHA = 0.05


def load_run(run_dir: Path) -> dict[str, Any]:
    summary = json.loads((run_dir / "summary.json").read_text())
    per_q = {}
    for line in (run_dir / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        per_q[rec["question_id"]] = rec
    return {"dir": run_dir, "summary": summary, "per_question": per_q, "scores": summary.get("per_question", {})}


def compare(runs: list[dict[str, Any]], baseline: int = 0) -> list[dict[str, Any]]:
    """One row per run, with paired tests against the baseline run on shared questions."""
    base = runs[baseline]
    others = len(runs) - 1
    rows = []
    for i, run in enumerate(runs):
        s = run["summary"]
        row = {"run": s.get("name", run["dir"].name), "condition": s.get("condition"), "ranker": s.get("ranker"), "questions": s["questions"],
               "accuracy": s["accuracy"], "distinct_tokens": s["distinct_tokens"], "llm_calls": s["llm_calls"], "marks": ""}
        if i != baseline:
            shared = sorted(set(run["scores"]) & set(base["scores"]))
            if shared:
                acc = mcnemar_exact([bool(run["scores"][q]["em"]) for q in shared], [bool(base["scores"][q]["em"]) for q in shared])
                tok = paired_t([run["per_question"][q]["tokens"]["distinct"] for q in shared], [base["per_question"][q]["tokens"]["distinct"] for q in shared])
                calls = paired_t([run["per_question"][q]["llm_calls"] for q in shared], [base["per_question"][q]["llm_calls"] for q in shared])
                row["p"] = {"accuracy": bonferroni(acc.p, others), "tokens": bonferroni(tok.p, others), "calls": bonferroni(calls.p, others)}
                row["marks"] = "".join(m for m, k in (("*", "accuracy"), ("†", "tokens"), ("‡", "calls")) if row["p"][k] < ALPHA)
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = f"{'run':28} {'condition':13} {'ranker':7} {'n':>5} {'acc':>6} {'tokens':>9} {'calls':>6}  sig"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['run'][:28]:28} {str(r['condition']):13} {str(r['ranker']):7} {r['questions']:>5} {100 * r['accuracy']:>6.1f} {r['distinct_tokens']:>9.0f} {r['llm_calls']:>6.1f}  {r['marks']}")
    lines.append("sig: against the first run, Bonferroni-corrected, alpha 0.05: * accuracy (exact McNemar), † tokens, ‡ calls (paired t)")
    return "\n".join(lines)


def plots(runs: list[dict[str, Any]], out: Path) -> list[Path] | str:
    """Accuracy against distinct tokens per question (one point per run), and the per-question
    token change of each run against the first. Needs matplotlib (the `eval` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "pictures need the eval extra: pip install 'sieve-search[eval]'"
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for run in runs:
        s = run["summary"]
        ax.scatter(s["distinct_tokens"], 100 * s["accuracy"])
        ax.annotate(s.get("name", run["dir"].name), (s["distinct_tokens"], 100 * s["accuracy"]), fontsize=8)
    ax.set_xlabel("distinct tokens per question")
    ax.set_ylabel("accuracy (%)")
    fig.tight_layout()
    first = out / "accuracy_vs_tokens.png"
    fig.savefig(first, dpi=120)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    base = runs[0]
    for run in runs[1:]:
        shared = sorted(set(run["per_question"]) & set(base["per_question"]))
        delta = sorted(run["per_question"][q]["tokens"]["distinct"] - base["per_question"][q]["tokens"]["distinct"] for q in shared)
        ax.plot(range(len(delta)), delta, label=run["summary"].get("name", run["dir"].name))
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("questions, sorted by change")
    ax.set_ylabel(f"distinct tokens minus {base['summary'].get('name', base['dir'].name)}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    second = out / "token_change.png"
    fig.savefig(second, dpi=120)
    plt.close(fig)
    return [first, second]
