"""docs/benchmarks.md and the README's speed table, written from the committed result files.

    python -m benchmarks.report            # rewrite docs/benchmarks.md and the README's table
    python -m benchmarks.report --check    # exit 1 if either differs from what the results give

The figures live in benchmarks/results/*.json (each benchmark writes its own); this script is the
only writer of the pages that quote them, so a page cannot drift from its results
(tests/test_benchmark_report.py runs `--check`).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
BEGIN = "<!-- speed table: written by `python -m benchmarks.report` from benchmarks/results -->"
END = "<!-- end of speed table -->"

PEERS = {"tantivy": "tantivy 0.27", "lucene": "Lucene 9.9.1", "sqlite-fts5": "SQLite FTS5"}
CLASSES = ["term", "field", "and", "or", "not", "phrase", "prefix", "date", "near", "nested"]

ALL_PEERS = " --peer sqlite-fts5 --peer tantivy --peer lucene"
# What wrote each result file: its command (benchmarks/README.md says what each measures).
WRITERS = {
    "engine-": "python -m benchmarks.bench_engine" + ALL_PEERS + " --rounds 3",
    "rank-bm25": "python -m benchmarks.bench_rank" + ALL_PEERS + " --skip-dense --rounds 3",
    "rank.json": "python -m benchmarks.bench_rank --peer tantivy --peer sqlite-fts5",
    "build-peers": "python -m benchmarks.bench_build_peers --peer tantivy --peer lucene",
    "build-ab-": "python -m benchmarks.bench_build_ab BASE",
    "build-pages": "python -m benchmarks.bench_build",
    "ab-": "python -m benchmarks.ab REV",
    "agent-llamacpp": "python -m benchmarks.bench_agent_llamacpp",
    "grid-llamacpp": "python -m benchmarks.bench_grid_llamacpp",
    "checksums": "python -m benchmarks.bench_checksums",
    "diagnose": "python -m benchmarks.bench_diagnose",
    "faults": "python -m benchmarks.bench_faults",
    "filters": "python -m benchmarks.bench_filters",
    "fuzz": "python -m benchmarks.bench_fuzz",
    "calls-man-sections-before": "python -m benchmarks.bench_calls (at a54ef2e, before issue 51)",
    "calls-": "python -m benchmarks.bench_calls --corpus benchmarks/data/man-sections.jsonl",
    "folders-before": "python -m benchmarks.bench_folders --out benchmarks/results/folders-before.json (at a88829c~)",
    "folders": "python -m benchmarks.bench_folders",
    "indri": "python -m benchmarks.bench_indri",
    "integrity": "python -m benchmarks.bench_integrity",
    "kernels-": "python -m benchmarks.bench_kernels",
    "kill": "python -m benchmarks.bench_kill",
    "pair": "python -m benchmarks.bench_pair A_INDEX B_INDEX",
    "parse": "python -m benchmarks.bench_parse",
    "postings-codec": "python -m benchmarks.bench_postings_codec INDEX",
    "quality": "python -m benchmarks.bench_quality",
    "reading": "python -m benchmarks.bench_reading",
    "sandbox": "python -m benchmarks.bench_sandbox",
    "scale": "python -m benchmarks.bench_scale",
    "serve": "python -m benchmarks.bench_serve",
    "shards": "python -m benchmarks.bench_shards",
    "store-codecs": "python -m benchmarks.bench_store INDEX",
    "testing": "python -m benchmarks.bench_testing",
    "web": "python -m benchmarks.bench_web",
    "dense.json": "python -m benchmarks.bench_dense --corpus benchmarks/data/man-pages.jsonl --pages 300",
    "dense_scale": "python -m benchmarks.bench_dense_scale",
    "hybrid": "python -m benchmarks.bench_hybrid --corpus benchmarks/data/man-pages.jsonl --pages 300",
    "dense-units": "python -m benchmarks.bench_dense_units --corpus benchmarks/data/man-pages.jsonl --pages 300",
}


def load(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def pair(row: dict[str, Any] | None) -> str:
    """`p50 / p95` in milliseconds, as the tables print them."""
    return "" if not row else f"{row['p50']:.3f} / {row['p95']:.3f}"


def table(head: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return out + ["| " + " | ".join(r) + " |" for r in rows]


def engine_table(engine: dict[str, Any], peers: list[str]) -> list[str]:
    """Boolean `match` per query class: sieve and each peer on the same queries."""
    rows = []
    for cls in CLASSES:
        row = engine["match"][cls]
        rows.append(
            [cls, str(row["median_count"]), pair(row["sieve"])] + [pair(row.get(p)) for p in peers]
        )
    return table(["class", "median hits", "sieve"] + [PEERS[p] for p in peers], rows)


def bm25_table(rank: dict[str, Any], peers: list[str]) -> list[str]:
    """BM25 top 10: sieve's ids and scores, with the cards' explanations, and each peer."""
    rows = []
    for cls, row in rank["bm25"].items():
        rows.append(
            [
                cls.upper(),
                str(row["median_admitted"]),
                pair(row["sieve_ids_scores"]),
                pair(row["sieve"]),
            ]
            + [pair(row.get(p)) for p in peers]
        )
    return table(
        ["query", "median admitted", "sieve ids and scores", "sieve with explanations"]
        + [PEERS[p] for p in peers],
        rows,
    )


def build_table(build: dict[str, Any]) -> list[str]:
    med = build["median_seconds"]
    docs = build["documents"]
    rows = [[name, f"{s:.2f}", f"{docs / s:,.0f}"] for name, s in med.items()]
    return table(["engine", "build, median s", "documents/s"], rows)


def speed_table() -> list[str]:
    """The README's short table: a few classes beside tantivy and Lucene, BM25, build, size."""
    engine, rank, build = (
        load("engine-man-sections.json"),
        load("rank-bm25.json"),
        load("build-peers.json"),
    )
    peers = ["tantivy", "lucene"]
    rows = []
    for cls in ("term", "and", "phrase", "near", "prefix"):
        row = engine["match"][cls]
        rows.append([f"match: {cls}", pair(row["sieve"])] + [pair(row[p]) for p in peers])
    bm = rank["bm25"]["or"]
    rows.append(
        ["BM25 top 10 (ids and scores)", pair(bm["sieve_ids_scores"])]
        + [pair(bm[p]) for p in peers]
    )
    med = build["median_seconds"]
    rows.append(
        [
            "build, one process / two workers (s)",
            f"{med['sieve (one process)']:.1f} / {med['sieve (2 workers)']:.1f}",
            f"{med['tantivy']:.1f} (one thread)",
            f"{med['lucene']:.1f} (one thread)",
        ]
    )
    rows.append(
        [
            "index on disk, + document store (MB)",
            f"{engine['index_mb']:.1f} + {engine['store_mb']:.1f}",
            "",
            "",
        ]
    )
    return table(["", "sieve", PEERS["tantivy"], PEERS["lucene"]], rows)


CALLS = "calls-man-sections-after.json"
CALL_CLASSES = ("term", "field", "or", "not", "date", "phrase", "near")


def calls_table() -> list[str]:
    """The calls users make, beside tantivy in the same run: every admitted id, the top 10 with
    ids and scores read, and the Toolset's five cards. p50 ms, and sieve's ratio to tantivy."""
    classes = load(CALLS)["classes"]
    rows = []
    for cls in CALL_CLASSES:
        c = classes.get(cls)
        if not c:
            continue
        mine, peer = c["sieve"], c.get("tantivy", {})
        ids, top = peer.get("ids", {}), peer.get("top10", {})
        rows.append(
            [
                cls,
                f"{mine['ids']['p50']:.2f} / {ids.get('p50', float('nan')):.2f}",
                f"{mine['search']['p50']:.2f} / {top.get('p50', float('nan')):.2f}",
                f"{mine['cards5']['p50']:.2f}",
            ]
        )
    head = ["class", "`match().ids`, sieve / tantivy", "`search(k=10)`, sieve / tantivy", "+ 5 cards"]
    return table(head, rows)


def dense_table() -> list[str]:
    """Each encoder of the default model on the same texts and threads as plain
    sentence-transformers float32 (`dense.json`): speed, query encoding and quality."""
    dense = load("dense.json")
    rows = []
    for name, e in dense["encoders"].items():
        q = e["query_encode_ms"]
        rows.append([name, f"{e['docs_per_s']:.1f}", f"{e['speed_vs_fp32']:.2f}x",
                     f"{q['p50']:.2f} / {q['p95']:.2f}", f"{e['mrr@10']:.3f}",
                     f"{e['top10_agreement']:.3f}"])
    head = ["encoder", "pages/s", "vs float32", "query encode p50 / p95 ms", "MRR@10",
            "top-10 agreement"]
    return table(head, rows)


def dense_scale_lines() -> list[str]:
    """Latency and bytes at 100,000 rows (`dense_scale.json`)."""
    sc = load("dense_scale.json")
    ms, b = sc["search_ms"], sc["bytes_per_vector"]
    dense, hybrid = ms["dense all int8 approximate"], ms["hybrid all int8 approximate"]
    enc = sc["query_encode_ms"]
    return para(
        f"At {sc['rows']:,} rows ({sc['note']}): dense top 10 p50 / p95 {pair(dense)} ms and hybrid",
        f"{pair(hybrid)} ms without the query's encoding (MiniLM on ONNX Runtime adds",
        f"{pair(enc)} ms; the static encoder about 0.3 ms). Bytes per vector: int8",
        f"{b['vectors.sva'] + b['scales.sva']:.0f} (float32 {b['float32 vectors.sva']:.0f}), HNSW",
        f"graph {b['hnsw.bin']:.0f}.",
    )


def writer(path: Path) -> str:
    """The command that wrote a result: its benchmark's, else the one the file records."""
    for prefix, command in WRITERS.items():
        if path.name.startswith(prefix):
            return f"`{command}`"
    recorded = load(path.name).get("command", "") if path.suffix == ".json" else ""
    return recorded.replace("|", "\\|")


def para(*sentences: str) -> list[str]:
    """One paragraph, wrapped at 100 characters, and the blank line after it."""
    return [*textwrap.wrap(" ".join(sentences), 100, break_on_hyphens=False), ""]


def page() -> str:
    engine, rank = load("engine-man-sections.json"), load("rank-bm25.json")
    build = load("build-peers.json")
    peers = [p for p in PEERS if engine["match"]["term"].get(p)]
    floor = ", ".join(f"{cls} {f['p50']:.3f}" for cls, f in engine["floor"].items())
    agree = rank.get("bm25_agreement_bm25s", {})
    opened = engine["open"]
    lines = [
        "# Benchmarks: the figures",
        "",
        *para(
            "Written by `python -m benchmarks.report` from the result files in",
            "`benchmarks/results/`; do not edit by hand. How to run each benchmark, and what it",
            "measures: [benchmarks/README.md](../benchmarks/README.md). The machine has 2 cores",
            "and is shared, so quote ratios to a peer measured in the same run.",
        ),
        "## Boolean match, per query class",
        "",
        *para(
            f"man-sections: {engine['documents']:,} documents, {engine['corpus_mb']} MB of JSON",
            "Lines. Milliseconds, p50 / p95, each query parsed and planned afresh, each engine on",
            "the same queries in one run, medians of the rounds (`engine-man-sections.json`).",
        ),
        *engine_table(engine, peers),
        "",
        *para(
            f"All classes together: {pair(engine['match_all_classes'])} ms. The floor, p50 ms",
            "(the same shapes over words in no document: parsing, planning and the count, nothing",
            f"read): {floor}. Open: {opened['open_ms']} ms, resident memory after open",
            f"{opened['rss_after_open_mb']} MB. Index {engine['index_mb']} MB, document store",
            f"{engine['store_mb']} MB.",
        ),
        "## BM25 top 10",
        "",
        *para(
            "Milliseconds, p50 / p95 (`rank-bm25.json`). The peers return ids and scores; sieve's",
            "cards also read each hit's matched fields and sections.",
        ),
        *bm25_table(rank, [p for p in PEERS if rank["bm25"]["or"].get(p)]),
        "",
    ]
    if agree:
        lines += para(
            f"Agreement with bm25s over {agree['queries']} queries: mean top-10 overlap",
            f"{agree['top10_overlap_mean']}, identical top 10 for",
            f"{agree['identical_top10_share']:.0%} of them.",
        )
    calls = load(CALLS)
    lines += [
        "## The calls users make",
        "",
        *para(
            f"man-sections ({calls['documents']:,} documents), {calls['queries_per_class']} queries",
            "a class, p50 ms (`calls-man-sections-after.json`; before issue 51's changes:",
            "`calls-man-sections-before.json`): every admitted id as a Python list, the top 10",
            "with ids and scores read, and the Toolset's search tool rendering five cards.",
            "tantivy reads each hit's stored id; its top 10 returns ids and scores.",
        ),
        *calls_table(),
        "",
        "## Dense retrieval on a CPU",
        "",
        *para(
            f"{load('dense.json')['pages']} man pages (`dense.json`), every encoder on the same",
            "texts and threads, the pages cut into pieces embedded by each encoder in turn; quality",
            "on the known-item task (query: a page's NAME line).",
        ),
        *dense_table(),
        "",
        *dense_scale_lines(),
        "## Build",
        "",
        *para(
            f"{build['documents']:,} documents, medians of {build['rounds']} rounds, the engines",
            "in turn within each round (`build-peers.json`).",
        ),
        *build_table(build),
        "",
        "## Every result file",
        "",
        *table(
            ["file", "written by"], [[f"`{p.name}`", writer(p)] for p in sorted(RESULTS.iterdir())]
        ),
        "",
    ]
    return "\n".join(lines)


def readme(text: str) -> str:
    """The README with its speed table replaced by the one the results give."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    calls = [
        "",
        "The calls users make (`match().ids` materialised, `search` with ids and scores read, the",
        "search tool's five cards), p50 ms, each query parsed afresh, tantivy in the same run:",
        "",
        *calls_table(),
    ]
    dense = [
        "",
        "Dense retrieval on a CPU (`sieve embed`, the bundled MiniLM; the static encoder is opt-in),",
        "the same texts and threads as plain sentence-transformers float32:",
        "",
        *dense_table(),
        "",
        *dense_scale_lines()[:-1],
    ]
    body = speed_table() + calls + dense
    return text[:start] + "\n" + "\n".join(body) + "\n" + text[end:]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if a page is not what the results give",
    )
    args = ap.parse_args()
    wanted = {PAGE: page(), README: readme(README.read_text(encoding="utf-8"))}
    stale = [
        p for p, text in wanted.items() if not p.exists() or p.read_text(encoding="utf-8") != text
    ]
    if args.check:
        for p in stale:
            print(
                f"{p.relative_to(ROOT)} is not what the results give:"
                " run python -m benchmarks.report",
                file=sys.stderr,
            )
        return 1 if stale else 0
    for p in stale:
        p.write_text(wanted[p], encoding="utf-8")
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
