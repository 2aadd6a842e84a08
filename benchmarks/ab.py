"""Before/after: the engine and BM25 benchmarks for an earlier commit and this working tree, side by side.

    python -m benchmarks.ab b9c08a0 --rounds 4        # needs bm25s (bench_rank's agreement check)

Each side runs its own copy of `bench_engine.py` and `bench_rank.py --skip-dense` (the earlier one
from a `git worktree` of BASE, this tree's from here), with `PYTHONPATH` pointing at that side's
package, interleaved base, new, base, new... so that the machine's noise falls on both alike. Round 1
builds each side's index (build speed is measured there); later rounds query it again (`--reuse`).
Prints the medians over rounds with the ratio new/base, and writes every run's JSON and the
tables to `--out` (default benchmarks/results/ab-BASE/).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SIDES = ("base", "new")


def run(side: str, tree: Path, bench: str, corpus: Path, work: Path, out: Path, reuse: bool, scripts: Path | None = None) -> dict[str, Any]:
    """One benchmark run of one side; `scripts`: the tree whose benchmark scripts to run (default: the side's own)."""
    args = [f"benchmarks/bench_{bench}.py", "--corpus", str(corpus), "--work", str(work / side), "--out", str(out)]
    if bench == "rank":
        args.append("--skip-dense")
    elif reuse:  # query the index the side built in round 1: a process that just built one is noisier
        args.append("--reuse")
    source = scripts or tree
    paths = [str(tree), os.environ.get("PYTHONPATH", "")]
    if (source / "benchmarks" / "__init__.py").exists():  # a package: run as a module, found after the side's sieve
        command = [sys.executable, "-m", f"benchmarks.bench_{bench}", *args[1:]]
        paths.insert(1, str(source))
    else:  # an older tree's scripts, which put their own folder on sys.path
        command = [sys.executable, str(source / args[0]), *args[1:]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    # Run from the work folder: a subprocess started with `python -c` must not find this tree's sieve/ in its cwd.
    subprocess.run(command, env=env, cwd=work, check=True, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def check_side(tree: Path, work: Path) -> None:
    code = "import sieve, sys; sys.exit(0 if sieve.__file__.startswith(sys.argv[1]) else 1)"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if subprocess.run([sys.executable, "-c", code, str(tree)], env=env, cwd=work).returncode:
        raise SystemExit(f"PYTHONPATH={tree} does not load that tree's sieve (an install shadows it?)")


def sides(base: str, work: Path) -> tuple[str, dict[str, Path]]:
    """(BASE's short hash, {"base": a worktree of it under `work`, "new": this tree}), each checked to load its own sieve."""
    rev = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", base], check=True, capture_output=True, text=True).stdout.strip()
    base_tree = work / f"tree-{rev}"
    if not base_tree.exists():
        work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base_tree), rev], check=True, capture_output=True)
    trees = {"base": base_tree, "new": ROOT}
    for tree in trees.values():
        check_side(tree, work)
    return rev, trees


def median(runs: list[dict[str, Any]], get: Callable[[dict[str, Any]], Any]) -> float | None:
    vals = []
    for r in runs:
        try:
            vals.append(float(get(r)))
        except (KeyError, TypeError):
            continue
    return statistics.median(vals) if vals else None


def cells(runs: dict[str, list[dict[str, Any]]], get: Callable[[dict[str, Any]], Any], nd: int = 3) -> list[str]:
    b, n = (median(runs[s], get) for s in SIDES)
    fmt = lambda v: "-" if v is None else f"{v:.{nd}f}"  # noqa: E731
    return [fmt(b), fmt(n), "-" if not b or n is None else f"{n / b:.2f}"]


def table(head: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def report(engine: dict[str, list[dict[str, Any]]], rank: dict[str, list[dict[str, Any]]]) -> str:
    out = []
    classes = list(engine["base"][0]["match"]) + ["all classes"]
    rows = []
    for c in classes:
        node: Callable[[dict[str, Any]], Any] = (lambda r: r["match_all_classes"]) if c == "all classes" else (lambda r, c=c: r["match"][c]["sieve"])
        rows.append([c, *cells(engine, lambda r, node=node: node(r)["p50"]), *cells(engine, lambda r, node=node: node(r)["p95"])])
    out.append("Boolean `match`, ms (median of rounds)\n\n" + table(["class", "p50 base", "p50 new", "ratio", "p95 base", "p95 new", "ratio"], rows))
    other = [["build docs/s (round 1)", *cells(engine, lambda r: r["build"]["docs_per_s"], 0)], ["index MB", *cells(engine, lambda r: r["index_mb"], 2)],
             ["open ms", *cells(engine, lambda r: r["open"]["open_ms"], 2)], ["RSS after open MB", *cells(engine, lambda r: r["open"]["rss_after_open_mb"], 1)]]
    out.append(table(["engine", "base", "new", "ratio"], other))
    rows = []
    for mode in rank["base"][0]["bm25"]:
        for key, label in (("sieve", "with explanation"), ("sieve_ids_scores", "ids and scores")):
            rows.append([f"{mode.upper()}, {label}", *cells(rank, lambda r, m=mode, k=key: r["bm25"][m][k]["p50"]),
                         *cells(rank, lambda r, m=mode, k=key: r["bm25"][m][k]["p95"])])
    out.append("BM25 top-10 `search`, ms\n\n" + table(["query", "p50 base", "p50 new", "ratio", "p95 base", "p95 new", "ratio"], rows))
    same = [["top-10 overlap with bm25s", *(f"{median(rank[s], lambda r: r['bm25_agreement_bm25s']['top10_overlap_mean']):.4f}" for s in SIDES)]]
    out.append(table(["should not move", "base", "new"], same))
    return "\n\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", help="the earlier commit (any git revision)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--corpus", type=Path, default=HERE / "data" / "man-sections.jsonl")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "ab")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--same-scripts", action="store_true",
                    help="run this tree's benchmark scripts on both sides (when BASE's scripts measured differently; the package still comes from each side)")
    args = ap.parse_args()
    corpus, work = args.corpus.resolve(), args.work.resolve()
    rev, trees = sides(args.base, work)
    out = (args.out or HERE / "results" / f"ab-{rev}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, list[dict[str, Any]]]] = {b: {s: [] for s in SIDES} for b in ("engine", "rank")}
    for bench in ("engine", "rank"):  # engine first: it builds the index that rank then reuses, per side
        for i in range(1, args.rounds + 1):
            for side in SIDES:
                print(f"{bench} {side} round {i}", file=sys.stderr, flush=True)
                results[bench][side].append(run(side, trees[side], bench, corpus, work, out / f"{bench}-{side}-{i}.json", reuse=i > 1,
                                                scripts=ROOT if args.same_scripts else None))
    scripts = "this tree's benchmark scripts on both sides" if args.same_scripts else "each side's own benchmark scripts"
    text = f"base {rev}, new: this working tree; {args.rounds} rounds each, interleaved; {corpus.name}; {scripts}\n\n" + report(results["engine"], results["rank"])
    (out / "report.md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
