"""Integrity at length: every bit of every file, and damaged payloads read through the API.

    python -m benchmarks.bench_integrity                 # about two minutes
    python -m benchmarks.bench_integrity --trials 2000 --big-trials 0

1. Exhaustive (a small index, --docs): every bit of every byte of every array file is flipped
   (and restored) and must fail `verify_array` (what `Index.check()` / `sieve check` run) naming
   the file; likewise every bit of manifest.json and CURRENT through the readers `open_index` uses,
   and every truncation of every file.
2. Damaged payloads (--trials): the payload of a random file of a 300-document index is damaged
   (bit flips, random bytes, runs of 0x00/0xff) behind an intact header and footer, the index is
   opened as if every file were large (nothing checksummed at open), and random match / search /
   document / section calls run: each must give the undamaged index's answer or raise a sieve
   error (a different answer counts as "WRONG ANSWER" and fails the run; blocks are verified on
   first read, so none should occur). Then check() must name the file.
3. The same on a copy of man-sections (--big, --big-trials), whose large files open unverified
   for real.

Exit status 1 if any promise fails. Writes benchmarks/results/integrity.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

import sieve  # noqa: E402
from tests.hardening.damage import damage, exercise  # noqa: E402
from tests.hardening.synth import queries, records  # noqa: E402
from sieve.engine.format import commits, storage  # noqa: E402
from sieve.engine.segment.files import WRITTEN  # noqa: E402  (every file this version writes)
from sieve.errors import IndexDamagedError  # noqa: E402


def _flip_all(path: Path, check: Any, name: str, stats: Counter[str], missed: list[str]) -> None:
    """Flip every bit of `path` in place, run check() (which must raise IndexDamagedError(name))."""
    size = path.stat().st_size
    fd = os.open(path, os.O_RDWR)
    try:
        for offset in range(size):
            byte = os.pread(fd, 1, offset)
            for bit in range(8):
                os.pwrite(fd, bytes([byte[0] ^ (1 << bit)]), offset)
                stats["flips"] += 1
                try:
                    check()
                except IndexDamagedError as e:
                    stats["detected" if e.file == name else "misnamed"] += 1
                else:
                    missed.append(f"{name} offset {offset} bit {bit}")
            os.pwrite(fd, byte, offset)
    finally:
        os.close(fd)


def segment_dir(idx: Path) -> Path:
    """The directory of a fresh build's one segment (its array files); the commit point lists it."""
    return idx / commits.read_manifest(commits.current_commit(idx))["segments"][0]["name"]


def exhaustive(work: Path, docs: int) -> dict[str, Any]:
    idx = work / "exhaustive"
    sieve.build_index(records(docs, seed=3), idx, jobs=1)
    gen = commits.current_commit(idx)
    seg = segment_dir(idx)
    manifest = commits.read_manifest(seg)
    stats: Counter[str] = Counter()
    missed: list[str] = []
    for name in WRITTEN:
        path, entry = seg / name, manifest["files"][name]
        _flip_all(path, lambda path=path, name=name, entry=entry: storage.verify_array(path, name, entry), name, stats, missed)
        data = path.read_bytes()
        for length in range(len(data)):
            path.write_bytes(data[:length])
            stats["truncations"] += 1
            try:
                storage.verify_array(path, name, entry)
                missed.append(f"{name} truncated to {length}")
            except IndexDamagedError as e:
                stats["truncations detected"] += e.file == name
        path.write_bytes(data)
    for name, check in ((storage.MANIFEST, lambda: commits.read_manifest(gen)), (storage.CURRENT, lambda: commits.current_commit(idx))):
        path = gen / name if name == storage.MANIFEST else idx / name
        _flip_all(path, check, name, stats, missed)
        data = path.read_bytes()
        for length in range(len(data)):
            path.write_bytes(data[:length])
            stats["truncations"] += 1
            try:
                check()
                missed.append(f"{name} truncated to {length}")
            except IndexDamagedError as e:
                stats["truncations detected"] += e.file == name
        path.write_bytes(data)
    sieve.open_index(idx).check()
    total = sum(p.stat().st_size for p in gen.iterdir()) + (idx / storage.CURRENT).stat().st_size
    return {"bytes": total, "files": len(WRITTEN) + 2, **stats, "missed": missed}


def payloads(work: Path, trials: int, seed: int, big: Path | None) -> dict[str, Any]:
    rng = random.Random(seed)
    if big is None:
        idx = work / "payload"
        recs = records(300, seed=4)
        sieve.build_index(recs, idx, jobs=1)
        truth = sieve.open_index(shutil.copytree(idx, work / "payload-truth"))
        ids, qs = [r["id"] for r in recs], queries(500, seed=8)
        names = [n for n in WRITTEN if segment_dir(idx).joinpath(n).stat().st_size > storage.HEADER_SIZE + storage.FOOTER_SIZE]
        old_limit, storage.VERIFY_ON_OPEN_BYTES = storage.VERIFY_ON_OPEN_BYTES, 0
    else:
        idx = work / "big"
        shutil.copytree(big, idx)
        index = truth = sieve.open_index(big)
        ids = [index.reader.doc_id(d) for d in rng.sample(range(len(index)), 500)]
        qs = queries(500, seed=8) + ["the NEAR/10 a", '"of the"', "s*", "open[title] file", "NOT the", "date[2010..2020] socket"]
        files = index.segments[0].reader.manifest["files"]
        names = [n for n in WRITTEN if files[n]["size"] - storage.HEADER_SIZE - storage.FOOTER_SIZE > storage.VERIFY_ON_OPEN_BYTES]
        old_limit = storage.VERIFY_ON_OPEN_BYTES
    gen = segment_dir(idx)
    counts: Counter[str] = Counter()
    per_file: Counter[str] = Counter()
    unexpected: dict[str, str] = {}
    check_missed = []
    try:
        for t in range(trials):
            name = names[t % len(names)]
            path = gen / name
            size = path.stat().st_size
            # Damage a window of the payload in place (pread/pwrite: the big files are 100s of MB).
            lo = rng.randrange(storage.HEADER_SIZE, size - storage.FOOTER_SIZE)
            hi = min(size - storage.FOOTER_SIZE, lo + 64)
            fd = os.open(path, os.O_RDWR)
            original = os.pread(fd, hi - lo, lo)
            window = bytearray(b"\0" * storage.HEADER_SIZE + original + b"\0" * storage.FOOTER_SIZE)
            window[40:48] = (hi - lo).to_bytes(8, "little")  # the payload-size field damage() reads
            kind = damage(window, rng)
            os.pwrite(fd, bytes(window[storage.HEADER_SIZE : storage.HEADER_SIZE + hi - lo]), lo)
            os.close(fd)
            counts[f"damage: {kind}"] += 1
            try:
                if window[storage.HEADER_SIZE : storage.HEADER_SIZE + hi - lo] == original:
                    counts["damage: no change"] += 1
                    continue
                try:
                    index = sieve.open_index(idx)
                except IndexDamagedError as e:
                    counts["open: named" if e.file == name else "open: MISNAMED"] += 1
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    seen = exercise(index, rng, 30, qs, ids, damaged=name, unexpected=unexpected, truth=truth)
                counts.update({f"op: {k}": v for k, v in seen.items()})
                per_file[name] += seen["UNEXPECTED"]
                try:
                    index.check()
                    check_missed.append(name)
                except IndexDamagedError as e:
                    counts["check: named" if e.file == name else "check: MISNAMED"] += 1
            finally:
                fd = os.open(path, os.O_RDWR)
                os.pwrite(fd, original, lo)
                os.close(fd)
    finally:
        storage.VERIFY_ON_OPEN_BYTES = old_limit
    sieve.open_index(idx).check()
    return {"index": str(big or "synthetic 300 documents"), "trials": trials, "files": names, **counts, "check_missed": check_missed, "unexpected": unexpected, "unexpected_by_file": {k: v for k, v in per_file.items() if v}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=20, help="documents in the exhaustively flipped index (default 20)")
    ap.add_argument("--trials", type=int, default=900, help="damaged-payload trials on the small index (default 900: 30 per file)")
    ap.add_argument("--big", type=Path, default=HERE / "work" / "man-sections.sieve")
    ap.add_argument("--big-trials", type=int, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, default=HERE / "results" / "integrity.json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sieve-integrity-"))
    out: dict[str, Any] = {}
    failed = []
    try:
        t0 = time.perf_counter()
        ex = exhaustive(work, args.docs)
        out["exhaustive"] = ex
        rate = ex["detected"] / ex["flips"]
        print(f"1. exhaustive: {ex['flips']:,} single-bit flips over {ex['bytes']:,} bytes of {ex['files']} files: "
              f"{ex['detected']:,} detected and named ({100 * rate:.3f}%), {ex.get('misnamed', 0)} misnamed, {len(ex['missed'])} missed; "
              f"{ex['truncations detected']:,}/{ex['truncations']:,} truncations detected ({time.perf_counter() - t0:.0f} s)")
        for m in ex["missed"][:10]:
            print("   MISSED " + m)
        if ex["missed"] or ex.get("misnamed"):
            failed.append("exhaustive")
        for label, big, trials in (("2. damaged payloads, small index", None, args.trials), ("3. damaged payloads, man-sections", args.big, args.big_trials)):
            if trials == 0 or (big is not None and not (big / "CURRENT").exists()):
                print(f"{label}: skipped")
                continue
            t0 = time.perf_counter()
            r = payloads(work, trials, args.seed, big)
            out[label] = r
            print(f"{label}: {trials} trials over {len(r['files'])} files ({time.perf_counter() - t0:.0f} s)")
            for k in sorted(k for k in r if ":" in k):
                print(f"   {k:28} {r[k]:7,}")
            print(f"   check() missed: {len(r['check_missed'])}")
            for k, q in list(r["unexpected"].items())[:15]:
                print(f"   UNEXPECTED {k}\n      query {q[:100]!r}")
            if r["unexpected"] or r["check_missed"] or r.get("check: MISNAMED") or r.get("open: MISNAMED"):
                failed.append(label)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out["failed"] = failed
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1))
    print(f"\n{'FAILED: ' + ', '.join(failed) if failed else 'all promises held'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
