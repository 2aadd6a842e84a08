"""Document store codecs: size and the cost of reading one block, on an index's own store streams.

    python -m benchmarks.bench_store INDEX [--out benchmarks/results/store-codecs.json]

Reads the index's records and section texts back (whatever it was written with), cuts each stream
into blocks of 4, 8 and 16 KiB, and compresses every block alone with zlib (level 1), LZ4 (fast
and high-compression level 4) and zstd (level 3, if the `zstandard` package is installed; said
so if not). Prints, per stream, codec and block size: total compressed MB, compression seconds,
and the median microseconds to decompress one block picked at random (what a card or a read pays).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
import zlib
from pathlib import Path
from typing import Any, Callable

import lz4.block

import sieve

HERE = Path(__file__).resolve().parent


def codecs() -> dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes, int], bytes]]]:
    out: dict[str, tuple[Callable[[bytes], bytes], Callable[[bytes, int], bytes]]] = {
        "zlib-1": (lambda b: zlib.compress(b, 1), lambda b, n: zlib.decompress(b)),
        "lz4": (lambda b: lz4.block.compress(b, store_size=False), lambda b, n: lz4.block.decompress(b, uncompressed_size=n)),
        "lz4hc-4": (lambda b: lz4.block.compress(b, mode="high_compression", compression=4, store_size=False),
                    lambda b, n: lz4.block.decompress(b, uncompressed_size=n)),
    }
    try:
        import zstandard
    except ImportError:
        print("zstandard is not installed: zstd left out (pip install zstandard)")
    else:
        c, d = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()
        out["zstd-3"] = (c.compress, lambda b, n: d.decompress(b))
    return out


def streams(index: sieve.Index) -> dict[str, bytes]:
    r = index.segments[0].reader
    return {"store.meta": r._meta.read(0, int(r.meta_off[-1])), "store.text": r._text.read(0, int(r.text_off[-1]))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("index", type=Path)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "store-codecs.json")
    args = ap.parse_args()
    index = sieve.open_index(args.index)
    rng = random.Random(1)
    rows: list[dict[str, Any]] = []
    print(f"{'stream':11s} {'codec':8s} {'block':>6s} {'MB':>7s} {'ratio':>6s} {'compress s':>10s} {'read us':>8s}")
    for name, raw in streams(index).items():
        for codec, (comp, decomp) in codecs().items():
            for shift in (12, 13, 14):
                size = 1 << shift
                t = time.perf_counter()
                blocks = [comp(raw[i : i + size]) for i in range(0, len(raw), size)]
                seconds = time.perf_counter() - t
                picks = [rng.randrange(len(blocks)) for _ in range(3000)]
                times = []
                for i in picks:
                    want = min(size, len(raw) - i * size)
                    t = time.perf_counter()
                    decomp(blocks[i], want)
                    times.append((time.perf_counter() - t) * 1e6)
                total = sum(map(len, blocks))
                row = {"stream": name, "codec": codec, "block_bytes": size, "raw_mb": round(len(raw) / 1e6, 2), "mb": round(total / 1e6, 2),
                       "ratio": round(len(raw) / total, 2), "compress_seconds": round(seconds, 2), "read_block_us": round(statistics.median(times), 2)}
                rows.append(row)
                print(f"{name:11s} {codec:8s} {size:6d} {row['mb']:7.2f} {row['ratio']:6.2f} {row['compress_seconds']:10.2f} {row['read_block_us']:8.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"index": str(args.index), "documents": len(index), "rows": rows}, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
