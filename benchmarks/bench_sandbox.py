"""What the agent shell's sandbox costs per command: the DCI commands an agent types, run on a staged
folder (the Python standard library's documentation, `sieve demo`'s corpus, one file per document)
by `sieve.tools.shell.shell.run` under each sandbox this machine has, beside the same line run by a plain
`bash -c` with no limits and no watchdog (the peer: what an unconfined shell costs).

    python -m benchmarks.bench_sandbox [--rounds 40] [--mechanisms bwrap,landlock,none]

Rounds interleave the runners (shuffled order per command and round) so that machine noise falls on
all of them alike. Prints p50 and p95 per command and runner, and each runner's p50 overhead over
the plain shell (the issue's target: under 20 ms); writes results/sandbox.json.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent

import sieve  # noqa: E402
from benchmarks.harness import nearest_quantile as _quantile  # noqa: E402
from sieve.corpus.demo import stdlib_documents  # noqa: E402
from sieve.errors import SandboxError  # noqa: E402
from sieve.tools.shell import shell  # noqa: E402
from sieve.tools.shell.files import stage_collection  # noqa: E402
from sieve.tools.shell.sandbox import ShellLimits, _environment, choose  # noqa: E402

COMMANDS = [
    "ls | head -20",
    "grep -il 'socket' * | head",
    "grep -c 'def ' * | sort -t: -k2 -rn | head -5",
    "cat \"$(ls | head -1)\" | head -40",
    "find . -name '*http*' | sort | head",
    "awk '{print $1}' * | sort | uniq -c | sort -rn | head",
    "wc -l * | tail -1",
]


def _plain(folder: Path, scratch: str) -> Callable[[str], None]:
    # The sandbox's own environment (its UTF-8 locale makes sort and awk a little slower than C):
    # the difference measured is the sandbox's, not the locale's.
    env = _environment(scratch)

    def run(line: str) -> None:
        subprocess.run(["bash", "--noprofile", "--norc", "-c", line], cwd=folder, env=env, capture_output=True, check=False)
    return run


def _sandboxed(folder: Path, mechanism: str) -> Callable[[str], None] | str:
    try:
        box = choose(mechanism)
    except SandboxError as e:
        return str(e)
    limits = ShellLimits()

    def run(line: str) -> None:
        got = shell.run(folder, line, limits, box)
        if got.limit is not None:
            raise SystemExit(f"{mechanism}: {line!r} hit the {got.limit} limit: the benchmark's commands must run whole")
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--mechanisms", default="bwrap,landlock,none")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "sandbox.json")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-sandbox-") as tmp:
        index = sieve.build_index(stdlib_documents(), Path(tmp) / "idx")
        staged = stage_collection(index, Path(tmp) / "dci")
        folder = staged.files
        (Path(tmp) / "scratch").mkdir()
        runners: dict[str, Callable[[str], None]] = {"plain bash": _plain(folder, str(Path(tmp) / "scratch"))}
        missing = {}
        for m in args.mechanisms.split(","):
            got = _sandboxed(folder, m)
            if isinstance(got, str):
                missing[m] = got
            else:
                runners[m] = got
        times: dict[str, dict[str, list[float]]] = {r: {c: [] for c in COMMANDS} for r in runners}
        rng = random.Random(7)
        for run in runners.values():  # warm-up: page cache, the probes' first starts
            for c in COMMANDS:
                run(c)
        for _ in range(args.rounds):
            for c in COMMANDS:
                order = list(runners)
                rng.shuffle(order)
                for name in order:
                    t0 = time.perf_counter()
                    runners[name](c)
                    times[name][c].append((time.perf_counter() - t0) * 1000)

    rows = []
    print(f"{len(staged.ids):,} files staged; {args.rounds} rounds; milliseconds (p50 / p95)\n")
    header = "| command | " + " | ".join(runners) + " |"
    print(header)
    print("| --- |" + " ---: |" * len(runners))
    for c in COMMANDS:
        cells = [f"{statistics.median(times[r][c]):.1f} / {_quantile(times[r][c], 0.95):.1f}" for r in runners]
        print(f"| `{c}` | " + " | ".join(cells) + " |")
        rows.append({"command": c, **{r: {"p50_ms": statistics.median(times[r][c]), "p95_ms": _quantile(times[r][c], 0.95)} for r in runners}})
    print("\n| runner | p50 overhead over plain bash (median over commands) | p95 overhead | p50 ratio |")
    print("| --- | ---: | ---: | ---: |")
    summary = {}
    for r in runners:
        if r == "plain bash":
            continue
        over50 = statistics.median(statistics.median(times[r][c]) - statistics.median(times["plain bash"][c]) for c in COMMANDS)
        over95 = statistics.median(_quantile(times[r][c], 0.95) - _quantile(times["plain bash"][c], 0.95) for c in COMMANDS)
        ratio = statistics.median(statistics.median(times[r][c]) / statistics.median(times["plain bash"][c]) for c in COMMANDS)
        summary[r] = {"p50_overhead_ms": over50, "p95_overhead_ms": over95, "p50_ratio": ratio, "detail": choose(r).detail}
        print(f"| {r} | {over50:+.1f} ms | {over95:+.1f} ms | {ratio:.2f}x |")
    for m, why in missing.items():
        print(f"\n{m}: not measured ({why})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"machine": platform.platform(), "files": len(staged.ids), "rounds": args.rounds, "commands": rows,
                                    "overhead": summary, "not_measured": missing}, indent=1))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
