"""Build benchmark: where a build's time goes, and huge pages against ordinary ones.

    python -m benchmarks.bench_build --corpus /work/benchwork/data/man-sections.jsonl [--rounds 3] [--jobs 2]

Each build runs in a fresh process, the two variants alternating round by round (this machine's
memory state moves single runs by 10-20%): `ordinary` is sieve as it is (a segment's final sort
and writes run with numpy's huge-page advice off, sieve.engine.segment.pages), `huge` the same code with
the advice left as numpy sets it. Per build: wall seconds, the final step's wall, user and system
seconds (`SegmentWriter.finish`), the main process's CPU and minor page faults, the workers' CPU and
the peak RSS of the main process. Prints medians and writes JSON (default
benchmarks/results/build-pages.json).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import contextlib, json, resource, sys, time
import sieve
from sieve.engine.segment import writer
corpus, out, jobs, variant = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if variant == "huge":
    writer.small_pages = contextlib.nullcontext
finish = {}
real = writer.SegmentWriter.finish
def timed(self, extra):
    r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
    try:
        return real(self, extra)
    finally:
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        finish["wall"] = finish.get("wall", 0.0) + time.perf_counter() - t0
        finish["user"] = finish.get("user", 0.0) + r1.ru_utime - r0.ru_utime
        finish["sys"] = finish.get("sys", 0.0) + r1.ru_stime - r0.ru_stime
writer.SegmentWriter.finish = timed
t0 = time.perf_counter()
index = sieve.build_index(corpus, out, force=True, jobs=jobs)
wall = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"documents": len(index), "wall": wall, "finish_wall": finish["wall"], "finish_user": finish["user"],
                  "finish_sys": finish["sys"], "main_user": me.ru_utime, "main_sys": me.ru_stime, "main_faults": me.ru_minflt,
                  "workers_cpu": kids.ru_utime + kids.ru_stime, "main_peak_rss_mb": me.ru_maxrss / 1024}))
"""

FIELDS = ["wall", "finish_wall", "finish_user", "finish_sys", "main_user", "main_sys", "main_faults", "workers_cpu", "main_peak_rss_mb"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", default=None)
    ap.add_argument("--out", default=str(HERE / "results" / "build-pages.json"))
    args = ap.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="sieve-bench-build-"))
    runs: dict[str, list[dict[str, float]]] = {"ordinary": [], "huge": []}
    for r in range(args.rounds):
        for variant in runs:
            done = subprocess.run([sys.executable, "-c", CHILD, args.corpus, str(work / "idx"), str(args.jobs), variant],
                                  check=True, capture_output=True, text=True)
            got = json.loads(done.stdout.strip().splitlines()[-1])
            runs[variant].append(got)
            print(f"round {r + 1} {variant:8s} " + " ".join(f"{k} {got[k]:.2f}" for k in FIELDS), flush=True)
    medians = {v: {k: statistics.median(x[k] for x in rs) for k in FIELDS} for v, rs in runs.items()}
    print(f"\nmedians of {args.rounds} rounds, {runs['ordinary'][0]['documents']:,} documents, jobs={args.jobs}")
    print(f"{'':10s}" + "".join(f"{k:>17s}" for k in FIELDS))
    for v, m in medians.items():
        print(f"{v:10s}" + "".join(f"{m[k]:17.2f}" for k in FIELDS))
    result = {"corpus": args.corpus, "jobs": args.jobs, "rounds": args.rounds, "medians": medians, "runs": runs,
              "thp": {name: Path(f"/sys/kernel/mm/transparent_hugepage/{name}").read_text().strip()
                      for name in ("enabled", "defrag") if Path(f"/sys/kernel/mm/transparent_hugepage/{name}").exists()}}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
