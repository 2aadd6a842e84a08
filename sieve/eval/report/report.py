"""`sieve eval report`: the paper's comparison tables and figures, from run folders alone.

Every number is computed from a run's `trajectories.jsonl` (tokens, calls, outcomes, tool calls) and
its `summary.json` (per-question exact match, the judge's verdicts, gold-document recall and the
failure composition, which need the gold documents), so anyone with the two files can recompute it.

A report reads any number of runs, of several collections and backbones (the `model` of a run).
Questions are paired by (collection, question id): runs of different collections are never paired,
and asking for it (a baseline run of another collection) is refused with the runs named. Each
(collection, backbone) has its own baseline, by default BM25 Search–Visit on the structured twin.

- Per run (`rows`): accuracy (EM, and Judge% for judged runs: over the judged questions only, the
  unjudged counted beside), gold-document recall, distinct and step-summed tokens, LLM calls,
  recovered answers, fallback rate; paired tests against its baseline on the questions both scored:
  exact McNemar on accuracy, two-sided paired t on distinct tokens, step-summed tokens and LLM
  calls, Bonferroni-corrected over the runs compared with that baseline.
- The paper's tables and figures (`sieve.eval.report.tables`, data only; drawn by
  `sieve.eval.report.figures` when the `eval` extra is installed).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sieve.errors import InvalidArgumentError, extra_hint
from sieve.eval.report.runs import (
    ALPHA,
    BASELINE_CELL,
    FAMILIES,
    Run,
    accuracy,
    grouped,
    load_run,
    numbers,
    paired,
    right,
    shared_questions,
    verdict,
)
from sieve.eval.report.summary import OPERATORS

PICTURES = f"pictures need the eval extra (matplotlib): {extra_hint('eval')}"


def _with_tests(row: dict[str, Any], versus: dict[str, Any] | None) -> dict[str, Any]:
    if versus is None:
        return row
    tests = versus.pop("tests")
    if versus["shared"]:
        row["versus_baseline"] = versus
    row["tests"] = tests
    row["p"] = {m: t["p"] for m, t in tests.items()}
    row["significant"] = [m for m, t in tests.items() if t["p"] < ALPHA]
    return row


def compare(runs: list[Run], baseline: int = 0) -> list[dict[str, Any]]:
    """One row per run in the given order, the baseline's marked; every other row carries its paired
    tests against the baseline on the questions both runs scored (`tests`: statistic, n, raw and
    corrected p; `p`: the corrected p per metric; `significant`: the metrics below ALPHA).
    Runs of another collection than the baseline's are refused (`shared_questions`)."""
    return compare_each(runs, dict.fromkeys(range(len(runs)), baseline))


def compare_each(runs: list[Run], baselines: dict[int, int | None]) -> list[dict[str, Any]]:
    """`compare` with a baseline per run (None: no paired tests for that run); each p is corrected
    over the runs compared with the same baseline."""
    for i, b in baselines.items():
        if b is not None:
            shared_questions(runs[i], runs[b])  # refuse before any work
    counts: dict[int, int] = {}
    for i, b in baselines.items():
        if b is not None and b != i:
            counts[b] = counts.get(b, 0) + 1
    rows = []
    for i, run in enumerate(runs):
        row = numbers(run)
        b = baselines.get(i)
        row["baseline"] = b == i
        row["baseline_run"] = runs[b].name if b is not None else None
        rows.append(
            _with_tests(row, paired(run, runs[b], counts[b]) if b is not None and b != i else None)
        )
    return rows


def resolve_baseline(runs: list[Run], which: int | str) -> int:
    """The baseline's position: an index into `runs` (as given on the command line) or a run's
    name."""
    if isinstance(which, int) or str(which).lstrip("-").isdigit():
        i = int(which)
        if not 0 <= i < len(runs):
            raise InvalidArgumentError(
                f"--baseline {i} is out of range: give 0..{len(runs) - 1} or a run name"
            )
        return i
    found = [i for i, r in enumerate(runs) if which in (r.name, r.dir.name, str(r.dir))]
    if len(found) != 1:
        names = ", ".join(r.name for r in runs)
        raise InvalidArgumentError(
            f"--baseline {which!r} names "
            f"{'no run' if not found else 'several runs'}; the runs are: {names}"
        )
    return found[0]


def _cell(run: Run) -> tuple[str, str, str, tuple[str, ...]]:
    return (run.condition, run.ranker, run.twin, run.marks)


def choose_baselines(runs: list[Run], which: int | str | None = None) -> dict[int, int | None]:
    """Each run's baseline. None: per (collection, backbone), BM25 Search–Visit on the structured
    twin, else that group's first run. A run's name (as the grid names its cells): per (collection,
    backbone), the run of that name (a group without one gets no paired tests). A position or a run
    folder: that run for every run, which must then all be of its collection (else refused)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(runs):
        groups.setdefault((r.collection, r.backbone), []).append(i)
    out: dict[int, int | None] = {}
    if which is None:
        for members in groups.values():
            b = next((i for i in members if _cell(runs[i]) == BASELINE_CELL), members[0])
            out.update(dict.fromkeys(members, b))
        return out
    single = (
        isinstance(which, int)
        or str(which).lstrip("-").isdigit()
        or any(str(which) == str(r.dir) for r in runs)
    )
    if single or len(groups) == 1:
        b = resolve_baseline(runs, which)
        others = [r for r in runs if r.collection != runs[b].collection]
        if others:
            names = ", ".join(
                f"{r.name} ({r.dir}, collection {r.collection or '?'})" for r in others
            )
            raise InvalidArgumentError(
                f"--baseline {which} is run {runs[b].name} of collection "
                f"{runs[b].collection or '?'}; it cannot be paired with {names}. "
                "Name the baseline by its run name (for example search-visit-bm25) to give each "
                "collection its own, or report the collections apart"
            )
        return dict.fromkeys(range(len(runs)), b)
    found = False
    for members in groups.values():
        hits = [i for i in members if str(which) in (runs[i].name, runs[i].dir.name)]
        if len(hits) > 1:
            raise InvalidArgumentError(
                f"--baseline {which!r} names several runs of one collection and backbone: "
                f"{', '.join(str(runs[i].dir) for i in hits)}"
            )
        found = found or bool(hits)
        out.update(dict.fromkeys(members, hits[0] if hits else None))
    if not found:
        raise InvalidArgumentError(
            f"--baseline {which!r} names no run; the runs are: {', '.join(r.name for r in runs)}"
        )
    return out


def primary_backbone(runs: list[Run], backbone: str | None = None) -> str:
    """The backbone of Table 1 and the single-backbone tables: as asked, else the one with most runs
    (ties: the first given)."""
    names = [r.backbone for r in runs]
    if backbone is not None:
        if backbone not in names:
            raise InvalidArgumentError(
                f"--backbone {backbone!r} has no run; the runs' backbones are: "
                f"{', '.join(dict.fromkeys(names))}"
            )
        return backbone
    return max(dict.fromkeys(names), key=names.count) if names else ""


def build(
    runs: list[Run], baseline: int | str | None = None, backbone: str | None = None
) -> dict[str, Any]:
    """The whole report as one JSON-friendly value (what `--json` prints and report.json holds):
    per-run rows with their paired tests, and every table's and figure's data (`tables`, `figures`;
    one whose runs are missing holds `skipped`, saying what it needs)."""
    from sieve.eval.report.tables import all_data

    chosen = choose_baselines(runs, baseline)
    rows = compare_each(runs, chosen)
    primary = primary_backbone(runs, backbone)
    bases = sorted({runs[b].name for b in chosen.values() if b is not None})
    unpaired = sorted(
        {
            f"{runs[i].collection or '?'} / {runs[i].backbone or '?'}"
            for i, b in chosen.items()
            if b is None
        }
    )
    return {
        "baseline": ", ".join(bases),
        "baselines": [
            {"collection": runs[b].collection, "backbone": runs[b].backbone, "run": runs[b].name}
            for b in dict.fromkeys(v for v in chosen.values() if v is not None)
        ],
        "unpaired": unpaired,
        "collections": list(dict.fromkeys(r.collection for r in runs)),
        "backbones": list(dict.fromkeys(r.backbone for r in runs)),
        "primary_backbone": primary,
        "alpha": ALPHA,
        "correction": "bonferroni",
        "comparisons": sum(1 for i, b in chosen.items() if b is not None and b != i),
        "tests": {
            "accuracy": "exact McNemar (EM)",
            "judged": "exact McNemar (judge)",
            "distinct_tokens": "paired t",
            "step_summed_tokens": "paired t",
            "llm_calls": "paired t",
        },
        "rows": grouped(rows),
        **all_data(runs, rows, primary),
    }


# --- Markdown -----------------------------------------------------------------------------------


def table(rows: list[dict[str, Any]]) -> str:
    """Runs in Markdown, one line each in Table 1's order, with every column and a legend."""
    from sieve.eval.report.markdown import RUNS_NOTE, md_runs

    return "\n".join(md_runs(grouped(rows)) + ["", RUNS_NOTE])


def markdown(report: dict[str, Any], pictures: list[Path] | str | None = None) -> str:
    from sieve.eval.report.markdown import render

    return render(report, pictures)


def write(
    report: dict[str, Any], out: Path, pictures: list[Path] | str | None = None
) -> tuple[Path, Path]:
    """report.json and report.md in `out`, and each table's and figure's data as `<id>.json` (beside
    the figure's `<id>.png`)."""
    out.mkdir(parents=True, exist_ok=True)
    data = {
        **report,
        "figures_drawn": [p.name for p in pictures] if isinstance(pictures, list) else pictures,
    }
    for item in (*report.get("tables", {}).values(), *report.get("figures", {}).values()):
        (out / f"{item['id']}.json").write_text(
            json.dumps(item, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    (out / "report.json").write_text(json.dumps(data, indent=1, ensure_ascii=False))
    (out / "report.md").write_text(markdown(report, pictures), encoding="utf-8")
    return out / "report.json", out / "report.md"


def plots(
    what: dict[str, Any] | list[Run], out: Path, baseline: int | str | None = None
) -> list[Path] | str:
    """The figures as PNG files in `out` (from a report, or from runs); without matplotlib, a
    message naming the extra."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return PICTURES
    from sieve.eval.report.figures import draw_all

    report = what if isinstance(what, dict) else build(what, baseline)
    return draw_all(report["figures"], out)


__all__ = [
    "ALPHA",
    "FAMILIES",
    "OPERATORS",
    "PICTURES",
    "Run",
    "accuracy",
    "build",
    "choose_baselines",
    "compare",
    "compare_each",
    "grouped",
    "load_run",
    "markdown",
    "numbers",
    "paired",
    "plots",
    "primary_backbone",
    "resolve_baseline",
    "right",
    "shared_questions",
    "table",
    "verdict",
    "write",
]
