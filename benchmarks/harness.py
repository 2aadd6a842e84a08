"""What every benchmark shares: where corpora and results live, the timing loop and its
percentiles, the peers, JSON output and the printed table.

Benchmarks run from the repository root as `python -m benchmarks.NAME`, so they import this module,
each other (`benchmarks.bench_engine`), the peers (`benchmarks.peers`) and the test suite's helpers
(`tests.support.loopback`, `tests.hardening.synth`) by their package names, with no `sys.path`
edits.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"  # corpora built by benchmarks/corpora/manpages.py (git-ignored)
WORK = HERE / "work"  # indexes and peers' builds (git-ignored)
RESULTS = HERE / "results"  # the committed figures: docs/benchmarks.md is written from them
MAN_SECTIONS = DATA / "man-sections.jsonl"
MAN_PAGES = DATA / "man-pages.jsonl"


# ---------------------------------------------------------------- arguments


def corpus_arg(ap: argparse.ArgumentParser, default: Path = MAN_SECTIONS) -> None:
    """`--corpus` (default man-sections) and `--work`, as every corpus benchmark takes them."""
    ap.add_argument("--corpus", type=Path, default=default)
    ap.add_argument("--work", type=Path, default=WORK)


def peer_arg(ap: argparse.ArgumentParser) -> None:
    ap.add_argument(
        "--peer", action="append", default=[], help="sqlite-fts5, tantivy and/or lucene"
    )


# ---------------------------------------------------------------- timing


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(milliseconds, result) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return (time.perf_counter() - t0) * 1000, out


def repeat(fn: Callable[[], Any], n: int) -> list[float]:
    """Milliseconds of `n` calls, one after another."""
    return [timed(fn)[0] for _ in range(n)]


def percentiles(ms: Sequence[float], digits: int = 4) -> dict[str, float]:
    """p50, p95 (numpy's linear interpolation) and the mean."""
    arr = np.asarray(ms)
    return {
        "p50": round(float(np.percentile(arr, 50)), digits),
        "p95": round(float(np.percentile(arr, 95)), digits),
        "mean": round(float(arr.mean()), digits),
    }


def rank_quantile(xs: Iterable[float], q: float) -> float:
    """The q-quantile as the value at rank int(q * n) of the sorted values (no interpolation):
    what the benchmarks that time few calls report."""
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def nearest_quantile(xs: Iterable[float], q: float) -> float:
    """The q-quantile as the value nearest to q * (n - 1), numpy's `nearest` method."""
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def median_of(
    rows: Sequence[dict[str, float]], keys: Sequence[str] = ("p50", "p95", "mean")
) -> dict[str, float]:
    """Each figure the median of the rounds' (one round's p95 moves by a fifth on this machine)."""
    return {k: round(statistics.median(r[k] for r in rows), 4) for k in keys}


# ---------------------------------------------------------------- peers


def open_peers(names: Sequence[str]) -> dict[str, Any]:
    """The named peers (benchmarks/peers.py), constructed; each still has to build or open."""
    if not names:
        return {}
    from benchmarks.peers import PEERS

    return {name: PEERS[name]() for name in names}


# ---------------------------------------------------------------- output


def write_json(path: Path, result: Any) -> Path:
    """The result as indented JSON (the folder made if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return path


def print_table(head: Sequence[str], rows: Iterable[Sequence[Any]], title: str = "") -> None:
    """A plain-text table, columns as wide as their widest cell, numbers right-aligned."""
    cells = [[str(c) for c in head]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(head))]
    if title:
        print(title)
    for n, row in enumerate(cells):
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))
            )
        )
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
