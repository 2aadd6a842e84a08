"""Build speed before/after: an earlier commit and this working tree, interleaved, and the files compared.

    python -m benchmarks.bench_build_ab 12974c4 --corpus benchmarks/data/man-sections.jsonl [--rounds 5] [--jobs 1 2]

For each number of worker processes in `--jobs`, each round builds the corpus once with BASE's
package (a `git worktree` of it, loaded by `PYTHONPATH`, as `ab.py` does) and once with this tree's,
in turn, each build in a fresh process into a fresh folder. Wall seconds from the start of
`build_index` to an index on disk. After each pair, the two indexes' files are compared byte for
byte (a change meant to be only faster must leave them equal: `identical` in the JSON). Prints the
medians, each side's fastest and slowest round and the ratio new/base; writes JSON (default
benchmarks/results/build-ab-BASE.json).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.ab import SIDES, sides

HERE = Path(__file__).resolve().parent

BUILD = r"""
import json, sys, time
import sieve
t0 = time.perf_counter()
index = sieve.build_index(sys.argv[1], sys.argv[2], force=True, jobs=int(sys.argv[3]))
print(json.dumps({"seconds": time.perf_counter() - t0, "documents": len(index), "sieve": sieve.__file__}))
"""


def same_files(a: Path, b: Path) -> bool:
    """Whether two folders hold the same files with the same bytes."""
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only or cmp.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not mismatch and not errors and all(same_files(a / d, b / d) for d in cmp.common_dirs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", help="the earlier commit (any git revision)")
    ap.add_argument("--corpus", type=Path, default=HERE / "data" / "man-sections.jsonl")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--work", type=Path, default=HERE / "work" / "ab")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    corpus, work = args.corpus.resolve(), args.work.resolve()
    rev, trees = sides(args.base, work)
    runs: dict[str, dict[str, list[float]]] = {str(j): {s: [] for s in SIDES} for j in args.jobs}
    identical = True
    for r in range(args.rounds):
        for jobs in args.jobs:
            for side in SIDES:
                out = work / f"build-{side}"
                shutil.rmtree(out, ignore_errors=True)
                env = {**os.environ, "PYTHONPATH": str(trees[side]) + os.pathsep + os.environ.get("PYTHONPATH", "")}
                # From the work folder: `python -c` must not find this tree's sieve/ in its cwd.
                got = json.loads(subprocess.run([sys.executable, "-c", BUILD, str(corpus), str(out), str(jobs)], env=env, cwd=work,
                                                check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
                if not got["sieve"].startswith(str(trees[side])):
                    raise SystemExit(f"the {side} build loaded {got['sieve']}, not {trees[side]}")
                runs[str(jobs)][side].append(got["seconds"])
                print(f"round {r + 1} jobs {jobs} {side:4s} {got['seconds']:.2f} s", flush=True)
            same = same_files(work / "build-base", work / "build-new")
            identical &= same
            if not same:
                print(f"round {r + 1} jobs {jobs}: the two indexes differ", flush=True)
    summary = {}
    print(f"\nbase {rev}, new: this working tree; {args.rounds} rounds, interleaved; {corpus.name}; medians (fastest-slowest)")
    for jobs, by_side in runs.items():
        med = {s: statistics.median(v) for s, v in by_side.items()}
        summary[jobs] = {"median_seconds": med, "range_seconds": {s: [min(v), max(v)] for s, v in by_side.items()}, "ratio_new_base": med["new"] / med["base"]}
        cells = "   ".join(f"{s} {med[s]:.2f} s ({min(v):.2f}-{max(v):.2f})" for s, v in by_side.items())
        print(f"jobs {jobs}: {cells}   new/base {med['new'] / med['base']:.2f}")
    print(f"files identical in every round: {identical}")
    out = args.out or HERE / "results" / f"build-ab-{rev}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"base": rev, "corpus": str(args.corpus), "rounds": args.rounds, "identical": identical,
                               "jobs": summary, "runs": runs}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
