"""Candidate codecs for the document postings (`post.doc`), measured on an index's own postings.

    python -m benchmarks.bench_postings_codec INDEX [--queries 200]

`post.doc` was raw int32 up to format 6 (23.6 MB of man-sections' 87.5 MB index); formats 7 and 9
store the "split 16" codec below. Compared here, on the first segment of INDEX (of any format):
- raw: a slice;
- blocks: positions' codec (sieve.engine.format.positions.encode, format 9: 128 per block, each term's
  blocks' 127 differences in 8, 12, 16 or 32 bits with the larger ones as exceptions, the last
  count % 128 raw), decoded whole by `BlockPositions.all` with nothing kept;
- term width: each term's first document raw and its differences in the narrowest width that
  holds the term's largest gap, decoded by one running sum;
- split 16: sieve.engine.format.docids, what formats 7 and 9 store (the low 16 bits of each id, the high bits
  once per run), sliced as a term leaf reads it.
For each: bytes, and the median over bench_engine's term-class words of the best of 30 warm
`bitset.from_ids(docs)` (what a term leaf does with its postings). Prints a table and writes
`results/postings-codec.json`. Nothing here is used by sieve; it decides what to build next.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent

import sieve  # noqa: E402
from sieve.engine.format import bitset  # noqa: E402
from sieve.engine.format.docids import SplitIds, split  # noqa: E402
from sieve.engine.format.position_blocks import BlockPositions  # noqa: E402
from sieve.engine.format.positions import encode  # noqa: E402
from benchmarks.bench_engine import Sampler, to_bql  # noqa: E402


class TermWidth:
    """Each term's differences in one width: the term's first document, then a running sum."""

    def __init__(self, docs: np.ndarray, ptr: np.ndarray) -> None:
        counts = np.diff(ptr)
        self.ptr, self.counts = ptr, counts
        self.first = np.where(counts > 0, docs[np.minimum(ptr[:-1], max(len(docs) - 1, 0))], 0).astype(np.int32)
        gaps = np.diff(docs.astype(np.int64))
        widest = np.zeros(len(counts), dtype=np.int64)
        some = np.flatnonzero(counts > 1)
        if len(some):
            # A term's gaps are gaps[ptr[t] : ptr[t + 1] - 1] (the gap across two terms is left out).
            widest[some] = [int(gaps[ptr[t] : ptr[t + 1] - 1].max()) for t in some.tolist()]
        self.width = np.select([widest < 2**8, widest < 2**16], [0, 1], 2)
        self.off = np.zeros(len(counts), dtype=np.int64)
        self.blobs = []
        for k, dtype in enumerate((np.uint8, np.uint16, np.uint32)):
            mine = np.flatnonzero((self.width == k) & (counts > 1))
            parts = [gaps[ptr[t] : ptr[t + 1] - 1].astype(dtype) for t in mine.tolist()]
            lens = np.array([len(p) for p in parts], dtype=np.int64)
            self.off[mine] = np.cumsum(lens) - lens
            self.blobs.append(np.concatenate(parts) if parts else np.zeros(0, dtype))
        self.nbytes = 4 * len(counts) + sum(b.nbytes for b in self.blobs) + 4 * len(ptr)

    def all(self, t: int) -> np.ndarray:
        c = int(self.counts[t])
        out = np.empty(c, dtype=np.int32)
        if c:
            out[0] = self.first[t]
        if c > 1:
            o = int(self.off[t])
            np.cumsum(self.blobs[int(self.width[t])][o : o + c - 1], out=out[1:], dtype=np.int32)
            out[1:] += self.first[t]
        return out


def best(fn: Callable[[], object], repeat: int = 30) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("index", type=Path)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "postings-codec.json")
    args = ap.parse_args()
    index = sieve.open_index(args.index)
    r = index.segments[0].reader
    ptr = np.asarray(r.post_ptr, dtype=np.int64)
    docs = np.asarray(r.post_doc).astype(np.int32)  # raw, as formats 2 to 6 store it
    enc = encode(docs, np.diff(ptr))
    blocks_ptr = np.zeros(len(ptr), dtype=np.int64)
    blocks_ptr[1:] = np.cumsum(enc.blocks)
    exc_ptr = np.zeros(len(enc.first) + 1, dtype=np.int64)
    np.cumsum(enc.exceptions, out=exc_ptr[1:])
    exceptions = (exc_ptr, enc.exc_at, enc.exc_val.astype(docs.dtype))
    blocks = BlockPositions(ptr, blocks_ptr, enc.first.astype(docs.dtype), enc.dir, enc.rows, enc.tail.astype(docs.dtype), 0, exceptions)
    blocks_bytes = (4 * (len(enc.first) + len(enc.dir) + len(enc.tail) + 2 * len(ptr) + len(exc_ptr)) + sum(x.nbytes for x in enc.rows)
                    + enc.exc_at.nbytes + 4 * len(enc.exc_val))
    width = TermWidth(docs, ptr)
    low, starts, highs = split(docs)
    split16 = SplitIds(low, starts, highs)
    codecs: dict[str, tuple[int, Callable[[int], np.ndarray]]] = {
        "raw": (docs.nbytes + 4 * len(ptr), lambda t: docs[ptr[t] : ptr[t + 1]]),
        "blocks": (blocks_bytes, blocks.all),
        "term width": (width.nbytes, width.all),
        "split 16": (low.nbytes + 4 * len(starts) + highs.nbytes + 4 * len(ptr), lambda t: split16[ptr[t] : ptr[t + 1]]),
    }
    sampler = Sampler(index, 7)
    times: dict[str, list[float]] = {name: [] for name in codecs}
    sizes = []
    for _ in range(args.queries):
        t = r.term_id(to_bql(sampler.spec("term")).split("[")[0])
        if t < 0:
            continue
        truth = docs[ptr[t] : ptr[t + 1]]
        sizes.append(len(truth))
        for name, (_, read) in codecs.items():
            assert np.array_equal(read(t), truth), (name, t)
            times[name].append(best(lambda read=read, t=t: bitset.from_ids(read(t), r.n_docs)))
    result = {"index": str(args.index), "documents": r.n_docs, "postings": len(docs), "queries": len(sizes),
              "median_postings": statistics.median(sizes), "command": "python -m benchmarks.bench_postings_codec INDEX", "codecs": {}}
    print(f"{r.n_docs} documents, {len(docs)} postings; {len(sizes)} term-class words, median {statistics.median(sizes):.0f} postings\n")
    print(f"{'codec':<12}{'MB':>8}{'term leaf us':>14}")
    for name, (nbytes, _) in codecs.items():
        us = statistics.median(times[name])
        result["codecs"][name] = {"mb": round(nbytes / 1e6, 2), "term_leaf_us": round(us, 1)}
        print(f"{name:<12}{nbytes / 1e6:>8.1f}{us:>14.1f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
