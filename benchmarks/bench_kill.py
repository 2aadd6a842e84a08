"""Atomic builds under SIGKILL, many times over: prints how each kill left the target.

    python -m benchmarks.bench_kill                      # 500 kills, about two minutes
    python -m benchmarks.bench_kill --kills 2000 --docs 2000 --seed 3

Kills (seeded) are split four ways: a fresh build and a `--force` rebuild, each killed either at a
random moment (uniform over 1.2 x one build's time) or just before a chosen write-side step (mkdir,
fsync, rename, replace, rmtree, the start of an array file or the manifest; cycling through all of
them); plus `--cli` kills of the real `sieve index` command in a fresh interpreter. After every kill
the target must be absent or complete (fresh), the old or the new index (force), verified to the
last byte and answering exactly as a reference build. Any other state is counted as WRONG and makes
the script exit 1. Writes benchmarks/results/kill.json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent

import sieve  # noqa: E402
from tests.hardening.killing import answers, count_events, fork_build, leftovers, state, unreferenced  # noqa: E402
from tests.hardening.synth import records  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=500, help="forked-build kills (default 500)")
    ap.add_argument("--cli", type=int, default=20, help="extra kills of the real `sieve index` command (default 20)")
    ap.add_argument("--docs", type=int, default=1000, help="documents per corpus (default 1000: a build takes ~0.2 s)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "kill.json")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="sieve-kill-"))
    try:
        return run(args, rng, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, rng: random.Random, work: Path) -> int:
    corpora, known = {}, {}
    for name, seed in (("A", args.seed * 2), ("B", args.seed * 2 + 1)):
        src = work / f"{name}.jsonl"
        src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records(args.docs, seed=seed)), encoding="utf-8")
        corpora[name] = src
        known[name] = answers(sieve.build_index(src, work / f"ref-{name}", jobs=1))
    other = {"A": "B", "B": "A"}
    t0 = time.perf_counter()
    assert fork_build(corpora["A"], work / "timed", force=False) == "finished"
    span = time.perf_counter() - t0
    fresh_steps = count_events(corpora["A"], work / "probe-fresh", force=False)
    shutil.copytree(work / "ref-A", work / "probe-force")
    force_steps = count_events(corpora["B"], work / "probe-force", force=True)
    print(f"corpus {args.docs} documents; one build {span * 1000:.0f} ms in a forked child; "
          f"{len(fresh_steps)} write-side steps fresh, {len(force_steps)} with --force")

    counts: Counter[str] = Counter()
    wrong: list[str] = []
    results: Counter[str] = Counter()
    fresh = work / "fresh" / "idx"
    fresh.parent.mkdir()
    forced, have = work / "forced", "A"
    shutil.copytree(work / "ref-A", forced)
    reader = sieve.open_index(forced)  # open across every kill and switch
    stage_leftovers = 0
    t_start = time.perf_counter()
    for i in range(args.kills):
        mode = ("fresh", "force")[i % 2]
        timing = ("random", "step")[(i // 2) % 2]
        step = (i // 4) % len(fresh_steps if mode == "fresh" else force_steps)
        delay = rng.uniform(0, 1.2 * span) if timing == "random" else None
        if mode == "fresh":
            result = fork_build(corpora["A"], fresh, force=False, delay=delay, kill_at=step if timing == "step" else None)
            try:
                s = state(fresh, {"new": known["A"]})
            except AssertionError as e:
                wrong.append(f"kill {i} ({mode}, {timing}, step {step}): {e}")
                s = "WRONG"
            if s == "new":
                shutil.rmtree(fresh)
        else:
            want = other[have]
            result = fork_build(corpora[want], forced, force=True, delay=delay, kill_at=step if timing == "step" else None)
            try:
                got = state(forced, known)
                s = "old" if got == have else "new"
                have = got
            except AssertionError as e:
                wrong.append(f"kill {i} ({mode}, {timing}, step {step}): {e}")
                s = "WRONG"
        results[result] += 1
        counts[f"{mode:5} {timing:6} -> {s}"] += 1
    elapsed = time.perf_counter() - t_start
    stage_leftovers = len([p for p in fresh.parent.iterdir() if ".building-" in p.name])
    inside = leftovers(forced)
    orphans = unreferenced(forced)
    old_reader_ok = answers(reader) == known["A"]

    # The real command in a fresh interpreter, killed at a random moment of its whole run.
    cli_target, cli_have = work / "cli" / "idx", "absent"
    cli_target.parent.mkdir()

    def cli(name: str) -> list[str]:
        return [sys.executable, "-m", "sieve", "index", str(corpora[name]), str(cli_target), "--quiet", "--jobs", "1"] + (["--force"] if cli_target.exists() else [])

    t0 = time.perf_counter()
    subprocess.run(cli("A")[:5] + [str(work / "cli-timed"), "--quiet", "--jobs", "1"], check=True, stdout=subprocess.DEVNULL)
    whole = time.perf_counter() - t0
    for i in range(args.cli):
        want = "B" if cli_have == "A" else "A"
        proc = subprocess.Popen(cli(want), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.1) * whole)
        proc.send_signal(signal.SIGKILL)
        code = proc.wait()
        try:
            got = state(cli_target, known)
        except AssertionError as e:
            wrong.append(f"cli kill {i}: {e}")
            got = "WRONG"
        label = "absent" if got == "absent" else ("old" if got == cli_have else "new")
        counts[f"cli   {'force' if cli_have != 'absent' else 'fresh':6} -> {label}{' (had finished)' if code == 0 else ''}"] += 1
        cli_have = got if got != "WRONG" else cli_have

    # Afterwards every target takes a normal build.
    for target, name in ((fresh, "B"), (forced, other[have]), (cli_target, "B" if cli_have != "B" else "A")):
        sieve.build_index(corpora[name], target, force=target.exists(), jobs=1)
        assert state(target, known) == name
    tidy = leftovers(forced) == [] and unreferenced(forced) == []

    total = args.kills + args.cli
    print(f"\n{total} kills ({args.kills} forked builds in {elapsed:.1f} s, {args.cli} `sieve index` processes of {whole:.2f} s each)")
    for k in sorted(counts):
        print(f"  {k:40} {counts[k]:5}")
    print(f"  forked children: {dict(results)}")
    print(f"  wrong states: {len(wrong)}")
    for w in wrong[:10]:
        print("    " + w)
    print(f"  stage directories left beside the fresh target: {stage_leftovers} (never opened, never removed)")
    print(f"  temporaries inside the forced target before its next successful build: {len(inside)}; unreferenced generations: {len(orphans)}")
    print(f"  after one successful build: tidy = {tidy}")
    print(f"  a reader opened before all the switches still answers as the first index: {old_reader_ok}")
    out = {
        "kills": total, "forked": args.kills, "cli": args.cli, "docs": args.docs, "seed": args.seed,
        "build_ms": round(span * 1000, 1), "steps": {"fresh": len(fresh_steps), "force": len(force_steps)},
        "outcomes": dict(counts), "children": dict(results), "wrong": wrong, "stage_leftovers": stage_leftovers,
        "inside_leftovers": len(inside), "unreferenced": len(orphans), "tidy_after_build": tidy, "old_reader_ok": old_reader_ok,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1))
    return 1 if wrong or not tidy or not old_reader_ok else 0


if __name__ == "__main__":
    raise SystemExit(main())
