"""Dense embedding units side by side: a document's first 2,000 characters, or its passages.

    python -m benchmarks.bench_dense_units --corpus /work/benchdata/man-pages.jsonl [--pages 300]

The first `--pages` man pages, each without its NAME section, are indexed once and embedded in
both units with the default model and encoder (`sieve embed`, `--unit document` and `--unit
passage`). Quality on the known-item task of bench_dense (query = the page's NAME line, target =
the page): MRR@10 and nDCG@10 (one relevant page: 1 / log2(rank + 1)) of BM25, and of dense and
hybrid in each unit, every query run through `Index.search` as an agent's plain words are. Cost of
the passage unit: rows, embedding seconds, vector bytes and the dense top-10 p50 beside the
document unit's. Also: how often the best passage of the target page lies past the document
unit's first 2,000 characters. Writes benchmarks/results/dense-units.json.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import sieve
from benchmarks.bench_dense import pages
from benchmarks.harness import MAN_PAGES, RESULTS, percentiles, print_table, timed, write_json
from sieve.dense import store
from sieve.dense.encoder import loaded_encoder
from sieve.dense.units import UNITS
from sieve.tools.toolset import free_text_query


def measures(ranks: list[int | None]) -> dict[str, float]:
    """MRR@10 and nDCG@10 of one relevant document per query (its 1-based rank, None: not in the
    top 10)."""
    rr = [1.0 / r if r else 0.0 for r in ranks]
    gain = [1.0 / math.log2(r + 1) if r else 0.0 for r in ranks]
    return {
        "mrr@10": round(statistics.fmean(rr), 4),
        "ndcg@10": round(statistics.fmean(gain), 4),
        "recall@10": round(sum(1 for r in ranks if r) / len(ranks), 4),
    }


def ranks_of(ix: Any, tasks: list[tuple[str, str]], ranker: str) -> tuple[list, list[float]]:
    """Each query's target rank in the top 10 by `ranker`, and each search's milliseconds."""
    out, ms = [], []
    for q, target in tasks:
        took, r = timed(
            lambda q=q: ix.search(
                free_text_query(q) or q, k=10, ranker=ranker, fallback=False, explain=False
            )
        )
        got = [h.doc_id for h in r.hits]
        out.append(got.index(target) + 1 if target in got else None)
        ms.append(took)
    return out, ms


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--corpus", type=Path, default=MAN_PAGES)
    ap.add_argument("--pages", type=int, default=300)
    ap.add_argument("--out", type=Path, default=RESULTS / "dense-units.json")
    args = ap.parse_args()

    docs, tasks = pages(args.corpus, args.pages)
    tmp = tempfile.TemporaryDirectory()
    ix = sieve.build_index(docs, Path(tmp.name) / "idx")
    encoder = loaded_encoder()  # the default backend: ONNX Runtime where installed
    encoder.encode(["warm up"])
    command = " ".join(["python -m benchmarks.bench_dense_units", *sys.argv[1:]])
    result: dict[str, Any] = {
        "command": command,
        "pages": len(docs),
        "encoder": {"model": encoder.name, "backend": getattr(encoder, "backend", None)},
        "units": {},
    }
    bm25, _ = ranks_of(ix, tasks, "bm25")
    result["bm25"] = measures(bm25)
    rows = [["bm25", "-", "-", *result["bm25"].values(), "-", "-", "-"]]
    for unit in ("document", "passage"):
        t0 = time.perf_counter()
        out = store.embed(ix, encoder=encoder, unit=unit, force=True)
        seconds = time.perf_counter() - t0
        meta = store.read_meta(out)
        ix.use_dense(unit=unit)
        entry: dict[str, Any] = {
            "rows": meta["rows"],
            "rows_per_document": round(meta["rows"] / len(docs), 2),
            "embed_s": round(seconds, 2),
            "vector_bytes": meta["files"]["vectors.sva"]["size"],
        }
        for ranker in ("dense", "hybrid"):
            ranks, ms = ranks_of(ix, tasks, ranker)
            entry[ranker] = {**measures(ranks), "search_ms": percentiles(ms, 2)}
            rows.append(
                [
                    f"{ranker} ({unit})",
                    meta["rows"],
                    round(seconds, 1),
                    *measures(ranks).values(),
                    entry[ranker]["search_ms"]["p50"],
                    entry[ranker]["search_ms"]["p95"],
                    meta["files"]["vectors.sva"]["size"] // 1024,
                ]
            )
        result["units"][unit] = entry
    doc, psg = result["units"]["document"], result["units"]["passage"]
    result["passage_vs_document"] = {
        "rows": round(psg["rows"] / doc["rows"], 2),
        "embed_s": round(psg["embed_s"] / doc["embed_s"], 2),
        **{
            f"{ranker} {m}": round(psg[ranker][m] - doc[ranker][m], 4)
            for ranker in ("dense", "hybrid")
            for m in ("mrr@10", "ndcg@10")
        },
    }
    assert set(result["units"]) == set(UNITS)
    head = ["ranker (unit)", "rows", "embed s", "MRR@10", "nDCG@10", "R@10", "p50 ms", "p95 ms"]
    print_table(
        head + ["vec KiB"],
        rows,
        title=f"{len(docs)} man pages, NAME line -> page, {encoder.name} "
        f"({getattr(encoder, 'backend', '?')})",
    )
    print(f"\npassage minus document (ratios for rows and time): {result['passage_vs_document']}")
    print(f"wrote {write_json(args.out, result)}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
