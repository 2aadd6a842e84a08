"""BQL parse time per query class: `parse` (recursive descent, the grammar for errors) against the
LALR grammar alone, and optionally against an earlier revision's `parse`.

    python -m benchmarks.bench_parse [--against 7847399] [--queries 100]

Each query is parsed 15 times; the table gives the median over a class's queries of the best
time, in microseconds. `--against REV` loads REV's `sieve/engine/query/bql/parser.py` (with this tree's
lexer and syntax tree, which must still offer what it imports) and checks it gives the same trees.
Queries are bench_engine's, drawn from man-sections (`--corpus`). Writes `results/parse.json`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent

import sieve  # noqa: E402
from benchmarks.bench_engine import CLASSES, Sampler, to_bql  # noqa: E402
from sieve.engine.query.bql.parser import parse, parse_lalr  # noqa: E402

REPEATS = 15


def best_median(fn: Callable[[str], Any], qs: list[str]) -> float:
    out = []
    for q in qs:
        best = float("inf")
        for _ in range(REPEATS):
            t = time.perf_counter()
            fn(q)
            best = min(best, time.perf_counter() - t)
        out.append(best * 1e6)
    return round(statistics.median(out), 1)


def load_parser(rev: str) -> Any:
    source = subprocess.run(["git", "show", f"{rev}:sieve/engine/query/bql/parser.py"], cwd=HERE.parent, capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / f"parser_{rev}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "data" / "man-sections.jsonl")
    ap.add_argument("--work", type=Path, default=HERE / "work")
    ap.add_argument("--against", help="an earlier revision whose parse to time beside this one")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "parse.json")
    args = ap.parse_args()
    idx_path = args.work / f"{args.corpus.stem}.sieve"
    index = sieve.open_index(idx_path) if idx_path.exists() else sieve.build_index(args.corpus, idx_path)
    old = load_parser(args.against) if args.against else None
    sampler = Sampler(index, args.seed)
    rows: dict[str, Any] = {}
    head = f"{'class':8s} {'parse':>7s} {'LALR':>7s}" + (f" {args.against:>9s}" if old else "")
    print(f"BQL parse, us (median over {args.queries} queries of the best of {REPEATS})\n{head}")
    for cls in CLASSES:
        qs = [to_bql(sampler.spec(cls)) for _ in range(args.queries)]
        assert all(parse(q) == parse_lalr(q) for q in qs)
        row = {"parse": best_median(parse, qs), "lalr": best_median(parse_lalr, qs)}
        if old is not None:
            assert all(old.parse(q) == parse(q) for q in qs), "the revisions disagree on a tree"
            row[args.against] = best_median(old.parse, qs)
        rows[cls] = row
        print(f"{cls:8s} {row['parse']:7.1f} {row['lalr']:7.1f}" + (f" {row[args.against]:9.1f}" if old else ""))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"corpus": str(args.corpus), "queries": args.queries, "against": args.against, "classes": rows}, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
