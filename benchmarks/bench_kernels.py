"""What compiled kernels would buy phrase and NEAR queries: an experiment, not a feature.

    pip install numba      # not a dependency of sieve: this script alone uses it
    python -m benchmarks.bench_kernels --corpus benchmarks/data/man-sections.jsonl --work benchmarks/work

sieve executes queries in numpy, and a phrase or NEAR query's median time on man-sections goes
mostly to decoding position lists met for the first time (some 20 array operations a list, each
paying numpy's per-call cost) and to intersecting sorted lists (a binary search per target). This
script replaces exactly those two steps with loops compiled by numba (`BlockPositions.decode_run`
where it decodes a term's whole list, and `positions.common`, the intersection, by galloping) and
measures, in one process, both ways in turn:

1. the decode of one term's whole list, by its number of blocks (median us, each list decoded once);
2. `match` p50 and p95 per class, the queries of `bench_engine.py` (same sampler, seed and order,
   parsed and planned afresh), numpy and numba rounds interleaved.

Everything else (parsing, planning, the unit and document lookups, the sets) stays as it is, so the
difference is what these kernels alone are worth. Prints a table; writes JSON (default
benchmarks/results/kernels-<corpus>.json). Needs the index `bench_engine.py` builds in --work.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import sieve
from sieve.engine.format import position_blocks, positions

HERE = Path(__file__).resolve().parent
from benchmarks.bench_engine import CLASSES, Sampler, percentiles, sieve_runs, to_bql  # noqa: E402

try:
    import numba
except ImportError:  # pragma: no cover - the script's one requirement beyond sieve
    raise SystemExit("bench_kernels.py needs numba (pip install numba); sieve itself does not") from None

BLOCK = positions.BLOCK


@numba.njit(cache=True, nogil=True)
def _decode(first: Any, rows: Any, eptr: Any, place: Any, val: Any, tail: Any, out: Any, twelve: bool) -> None:  # pragma: no cover
    """A running sum per block over its row's differences (one row element each for the tables of
    8, 16 and 32 bits; with `twelve`, differences 2i and 2i + 1 in bytes 3i..3i + 2), an
    exception's whole difference taken in place of its row's; then the tail."""
    e0 = eptr[0]
    for j in range(first.shape[0]):
        base = j * BLOCK
        v = first[j]
        out[base] = v
        k, end = eptr[j] - e0, eptr[j + 1] - e0
        for i in range(BLOCK - 1):
            if twelve:
                h = 3 * (i >> 1)
                if i & 1:
                    d = (np.uint64(rows[j, h + 1]) >> 4) | (np.uint64(rows[j, h + 2]) << 4)
                else:
                    d = np.uint64(rows[j, h]) | ((np.uint64(rows[j, h + 1]) & np.uint64(0xF)) << 8)
            else:
                d = np.uint64(rows[j, i])
            if k < end and place[k] == i:
                d = np.uint64(val[k])
                k += 1
            v += d
            out[base + i + 1] = v
    for i in range(tail.shape[0]):
        out[first.shape[0] * BLOCK + i] = tail[i]


@numba.njit(cache=True, nogil=True)
def _intersect(a: Any, b: Any) -> Any:  # pragma: no cover
    """The values in both ascending arrays: each of the shorter's found in the longer by galloping
    from where the last one was."""
    if a.shape[0] > b.shape[0]:
        a, b = b, a
    out = np.empty(a.shape[0], dtype=a.dtype)
    n, j, nb = 0, 0, b.shape[0]
    for i in range(a.shape[0]):
        x = a[i]
        step = 1
        while j + step < nb and b[j + step] < x:
            j += step
            step <<= 1
        lo, hi = j, min(j + step, nb - 1)
        while lo < hi:
            mid = (lo + hi) >> 1
            if b[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        j = lo
        if j < nb and b[j] == x:
            out[n] = x
            n += 1
    return out[:n]


NUMPY_DECODE_RUN = position_blocks.BlockPositions.decode_run
NUMPY_COMMON = positions.common


def compiled_decode_run(self: position_blocks.BlockPositions, a: int, b: int, tail: Any = None) -> np.ndarray:
    """`BlockPositions.decode_run` by the compiled loop where a run is one table's consecutive rows
    with exceptions aside (format 9: a term's whole list); numpy's otherwise."""
    n = b - a
    c0 = int(self.dir[a]) if n else 0
    if not n or self.exceptions is None or int(self.dir[b - 1]) != c0 + ((n - 1) << 2):
        return NUMPY_DECODE_RUN(self, a, b, tail)
    k, r0 = c0 & 3, c0 >> 2
    tail = np.asarray(tail if tail is not None else self.tail[:0])
    out = np.empty(n * BLOCK + len(tail), dtype=self.dtype)
    eptr = np.asarray(self.exceptions[0][a : b + 1]).astype(np.int64)
    e0, e1 = int(eptr[0]), int(eptr[-1])
    args = (np.asarray(self.first[a:b]), np.asarray(self.rows[k][r0 : r0 + n]), eptr,
            np.asarray(self.exceptions[1][e0:e1]), np.asarray(self.exceptions[2][e0:e1]), tail, out)
    _decode(*args, k == 1)
    return out


def use(compiled: bool) -> None:
    position_blocks.BlockPositions.decode_run = compiled_decode_run if compiled else NUMPY_DECODE_RUN  # type: ignore[method-assign]
    positions.common = _intersect if compiled else NUMPY_COMMON
    position_blocks.common = positions.common  # the block reader's own name for it


def decode_table(index: sieve.Index) -> dict[str, dict[str, float]]:
    """Median us to decode a term's whole list once, by its blocks, numpy against compiled; the
    lists are checked equal on the way."""
    pos = index.segments[0].reader.pos
    blocks = np.diff(np.asarray(pos.blocks_ptr).astype(np.int64))
    rng = np.random.default_rng(0)
    out = {}
    for lo, hi in ((1, 4), (5, 20), (21, 60), (61, 200), (201, 1000)):
        tids = np.flatnonzero((blocks >= lo) & (blocks <= hi))
        rng.shuffle(tids)
        ranges = [(a, b, pos.tail[ta:tb]) for a, b, ta, tb in (pos._range(int(t)) for t in tids[:300])]
        row: dict[str, list[float]] = {"numpy": [], "compiled": []}
        for r in ranges:
            for name, f in (("numpy", NUMPY_DECODE_RUN), ("compiled", compiled_decode_run)):
                t0 = time.perf_counter()
                got = f(pos, *r)
                row[name].append((time.perf_counter() - t0) * 1e6)
            assert np.array_equal(got, NUMPY_DECODE_RUN(pos, *r))
        out[f"{lo}-{hi} blocks"] = {name: round(statistics.median(v), 1) for name, v in row.items()}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "data" / "man-sections.jsonl")
    ap.add_argument("--work", type=Path, default=HERE / "work")
    ap.add_argument("--queries", type=int, default=200, help="queries per class and round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    index = sieve.open_index(args.work / f"{args.corpus.stem}.sieve")
    # Compile (or load from numba's cache) and check the kernels before timing anything.
    use(True)
    decodes = decode_table(index)
    a, b = np.sort(np.random.default_rng(1).choice(10**6, (2, 5000))).astype(np.uint32)
    assert np.array_equal(_intersect(a, b), np.intersect1d(a, b))

    warm = Sampler(index, args.seed + 1)
    for cls in CLASSES:
        for _ in range(10):
            index.match(to_bql(warm.spec(cls)))
    times: dict[str, dict[str, list[float]]] = {way: {cls: [] for cls in CLASSES} for way in ("numpy", "compiled")}
    per_round: list[dict[str, dict[str, float]]] = []
    for r in range(args.rounds):
        sampler = Sampler(index, args.seed + 1000 * r)
        specs = {cls: [sampler.spec(cls) for _ in range(args.queries)] for cls in CLASSES}
        got: dict[str, dict[str, float]] = {}
        for way in (("numpy", "compiled") if r % 2 == 0 else ("compiled", "numpy")):
            use(way == "compiled")
            for cls in CLASSES:
                ms, _ = sieve_runs(index, specs[cls])
                times[way][cls] += ms
                got[f"{way} {cls}"] = percentiles(ms)["p50"]
        per_round.append(got)
    use(False)
    match = {cls: {way: percentiles(times[way][cls]) for way in times} for cls in CLASSES}
    result = {"corpus": str(args.corpus), "numba": numba.__version__, "decode_us": decodes, "match_ms": match, "rounds_p50_ms": per_round}
    out = args.out or HERE / "results" / f"kernels-{args.corpus.stem}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))

    print(f"decode of one term's whole list, median us (numba {numba.__version__})")
    for k, v in decodes.items():
        print(f"  {k:>16}: numpy {v['numpy']:7.1f}  compiled {v['compiled']:7.1f}")
    print("match, ms (p50 / p95), numpy | compiled decode and intersection")
    for cls, row in match.items():
        n, c = row["numpy"], row["compiled"]
        print(f"  {cls:8} {n['p50']:.3f} / {n['p95']:.3f} | {c['p50']:.3f} / {c['p95']:.3f}   p50 ratio {c['p50'] / n['p50']:.2f}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
