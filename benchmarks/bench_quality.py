"""Retrieval quality on labelled real text: sieve's analyzers, BM25 parameters and rankers, beside tantivy.

    python -m benchmarks.bench_quality                      # both tasks, BM25 + dense + hybrid, tantivy
    python -m benchmarks.bench_quality --skip-dense         # BM25 only

Two known-item tasks, built deterministically from text every machine of ours has:

* `man-linux`: the Linux/POSIX man pages (Debian's `manpages` and `manpages-dev`, from
  benchmarks/data/man-pages.jsonl, made by benchmarks/corpora/manpages.py). The query is a page's
  NAME-line description with the page's own names removed (`acos, acosf - arc cosine function` ->
  `arc cosine function`); the one relevant document is that page, indexed without its NAME section
  and without the description in its infobox, so the query must be found in the rest of the page.
* `python-modules`: the standard library's modules as `sieve demo` reads them (sieve.corpus.demo).
  The query is a module's one-line summary with the module's name words removed; the relevant
  document is that module, its title cut to the name and the summary removed from its text.

Dense and hybrid run twice: one vector per document (its start) and one per passage (every
section in pieces of up to 128 words; a document scores as its best passage).
Descriptions shared by several pages and queries of fewer than two words are left out. Every query
runs as plain language (any word, `Index.ranked_search`); the peer gets the same words ORed over
one text field holding what sieve's BM25 counts (title, headings, section texts), with tantivy's
simple tokenizer + lowercase + ASCII folding (`plain`) or that + its English Snowball stemmer
(`english`), each also with its English stop-word filter (`+stop-english`: the same 33 words as
sieve's `english` list), k1 1.2 and b 0.75 (tantivy's fixed parameters). Measures: nDCG@10, MRR@10, recall@100
(ir-measures). `--speed` also times building and querying with each analyzer on a larger corpus.
Prints tables and writes benchmarks/results/quality.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import sieve
from sieve.engine.analysis.analyzers import analyze
from sieve.engine.rank.bm25 import BM25Params
from sieve.eval.retrieval import MEASURES, analysis_label, evaluate_retrieval, load_retrieval, measure, write_trec

HERE = Path(__file__).resolve().parent
PARAMS = (BM25Params(0.9, 0.4), BM25Params(1.2, 0.75))
ANALYZERS = ("plain", "english")
STOPWORDS = (None, "english")
ANALYSES = tuple((a, s) for a in ANALYZERS for s in STOPWORDS)  # (analyzer, stop list)


# --------------------------------------------------------------------------------------------
# Tasks (BEIR layout: corpus.jsonl, queries.jsonl, qrels/test.tsv)


def _query_words(text: str, names: set[str]) -> list[str]:
    """The description's words, without those that are (only) the page's own names."""
    out = []
    for w in re.findall(r"\S+", text):
        terms = analyze(w)
        if terms and not set(terms) <= names:
            out.append(w)
    return out


def _write_task(folder: Path, items: list[tuple[dict[str, Any], str]]) -> int:
    """items: (document, its description); descriptions found more than once are dropped."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    seen: dict[str, int] = {}
    for _, q in items:
        seen[q.lower()] = seen.get(q.lower(), 0) + 1
    n = 0
    with open(folder / "corpus.jsonl", "w") as corpus, open(folder / "queries.jsonl", "w") as queries, open(folder / "qrels" / "test.tsv", "w") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for doc, q in items:
            corpus.write(json.dumps(doc) + "\n")
            if q and seen[q.lower()] == 1 and len(q.split()) >= 2:
                n += 1
                queries.write(json.dumps({"_id": f"q{n}", "text": q}) + "\n")
                qrels.write(f"q{n}\t{doc['id']}\t1\n")
    return n


def man_linux(pages: Path, folder: Path) -> int:
    items = []
    for line in open(pages, encoding="utf-8"):
        d = json.loads(line)
        if d.get("package") not in ("manpages", "manpages-dev"):
            continue
        name_sec = next((s for s in d["sections"] if s["heading"] == "NAME"), None)
        if name_sec is None or " - " not in name_sec["text"]:
            continue
        names_part, desc = name_sec["text"].split(" - ", 1)
        names = set(analyze(names_part)) | set(analyze(d.get("infobox", {}).get("name", "")))
        infobox = {k: v for k, v in d.get("infobox", {}).items() if k != "description"}
        doc = {"id": d["id"], "title": d["title"], "sections": [s for s in d["sections"] if s["heading"] != "NAME"], "infobox": infobox}
        if d.get("date"):
            doc["date"] = d["date"]
        items.append((doc, " ".join(_query_words(" ".join(desc.split()), names))))
    return _write_task(folder, items)


def python_modules(folder: Path) -> int:
    from sieve.corpus.demo import stdlib_documents

    items = []
    for d in stdlib_documents():
        title = d["title"]
        name, _, summary = title.partition(" \u2014 ")
        sections = [dict(s) for s in d.get("sections", [])]
        if summary and sections and sections[0]["heading"] == "(intro)" and sections[0]["text"].startswith(summary):
            sections[0]["text"] = sections[0]["text"][len(summary):].lstrip()
        doc = {**d, "title": name, "sections": sections}
        items.append((doc, " ".join(_query_words(summary, set(analyze(name)))) if summary else ""))
    return _write_task(folder, items)


# --------------------------------------------------------------------------------------------
# The peer


def _flat_text(doc: dict[str, Any]) -> str:
    parts = [doc.get("title", "")]
    for s in doc.get("sections", []):
        if s.get("heading") and s["heading"] != "(intro)":
            parts.append(s["heading"])
        parts.append(s.get("text", ""))
    return "\n".join(parts)


def tantivy_runs(folder: Path, work: Path) -> list[dict[str, Any]]:
    import tantivy

    task = load_retrieval(folder)
    rows = []
    for name, stop in ANALYSES:
        analyzer = analysis_label(name, stop)
        b = tantivy.SchemaBuilder()
        b.add_text_field("id", stored=True, tokenizer_name="raw")
        b.add_text_field("text", tokenizer_name="peer")
        schema = b.build()
        builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.lowercase()).filter(tantivy.Filter.ascii_fold())
        if stop is not None:
            builder = builder.filter(tantivy.Filter.stopword(stop))
        if name == "english":
            builder = builder.filter(tantivy.Filter.stemmer("english"))
        text_analyzer = builder.build()
        path = work / f"tantivy-{analyzer}"
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        ix = tantivy.Index(schema, str(path))
        ix.register_tokenizer("peer", text_analyzer)
        w = ix.writer(heap_size=200_000_000, num_threads=1)
        for line in open(folder / "corpus.jsonl", encoding="utf-8"):
            d = json.loads(line)
            w.add_document(tantivy.Document(id=d["id"], text=_flat_text(d)))
        w.commit()
        w.wait_merging_threads()
        ix.reload()
        searcher = ix.searcher()
        run = {}
        t0 = time.perf_counter()
        for qid, text in task.queries.items():
            terms = list(dict.fromkeys(text_analyzer.analyze(text)))
            q = tantivy.Query.boolean_query([(tantivy.Occur.Should, tantivy.Query.term_query(schema, "text", t)) for t in terms])
            hits = searcher.search(q, limit=100).hits
            run[qid] = [(searcher.doc(a).get_first("id"), float(s)) for s, a in hits]
        seconds = time.perf_counter() - t0
        tag = f"tantivy-bm25-{analyzer}-k1_1.2-b_0.75"
        write_trec(work / f"{tag}.run", run, tag)
        rows.append({"run": tag, "ranker": "bm25", "analyzer": analyzer, "k1": 1.2, "b": 0.75, "engine": "tantivy", **measure(task.qrels, run),
                     "queries": len(task.qrels), "ms_per_query": round(1000 * seconds / len(task.queries), 3)})
    return rows


# --------------------------------------------------------------------------------------------
# Speed of the english analyzer against plain


SPEED = (("plain", None), ("english", None), ("english", "english"))


def speed(corpus: Path, queries: list[str], work: Path, rounds: int) -> dict[str, Any]:
    """Build time (one process) with each analysis, alternating, best of `rounds`; then ranked
    search (BM25 top 10) over every index in one process, alternating query by query, each query's
    best of 3: sequential runs drift by more than the difference measured here."""
    labels = [analysis_label(a, s) for a, s in SPEED]
    build: dict[str, list[float]] = {a: [] for a in labels}
    for _ in range(rounds):
        for (name, stop), label in zip(SPEED, labels):
            t0 = time.perf_counter()
            sieve.build_index(corpus, work / f"speed-{label}", force=True, jobs=1, analyzer=name, stopwords=stop).close()
            build[label].append(time.perf_counter() - t0)
    ixs = {a: sieve.open_index(work / f"speed-{a}") for a in labels}
    for ix in ixs.values():
        for q in queries[:100]:
            ix.ranked_search(q, k=10)  # warm the pages
    best: dict[str, list[float]] = {a: [] for a in labels}
    admitted: dict[str, list[int]] = {a: [] for a in labels}
    for q in queries:
        for a, ix in ixs.items():
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                r = ix.ranked_search(q, k=10)
                times.append(time.perf_counter() - t0)
            best[a].append(min(times))
            admitted[a].append(r.count)
    docs = len(ixs["plain"])
    out: dict[str, Any] = {"corpus": str(corpus), "documents": docs, "rounds": rounds, "queries": len(queries), "analyses": labels}
    for a in labels:
        out[a] = {"build_s": round(min(build[a]), 2), "docs_per_s": round(docs / min(build[a])), "search_p50_ms": round(statistics.median(best[a]) * 1000, 3),
                  "median_admitted": statistics.median(admitted[a]), "index_mb": round(sum(f.stat().st_size for f in (work / f"speed-{a}").rglob("*") if f.is_file()) / 1e6, 1),
                  "build_ratio": round(min(build[a]) / min(build["plain"]), 3), "search_ratio": round(statistics.median(best[a]) / statistics.median(best["plain"]), 3)}
    return out


def _dense_available() -> bool:
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=Path, default=HERE / "data" / "man-pages.jsonl", help="man-pages.jsonl (benchmarks/corpora/manpages.py)")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "quality")
    ap.add_argument("--skip-dense", action="store_true")
    ap.add_argument("--skip-peer", action="store_true")
    ap.add_argument("--speed", type=Path, help="also time build and search per analyzer on this corpus (e.g. data/man-sections.jsonl)")
    ap.add_argument("--speed-rounds", type=int, default=2)
    ap.add_argument("--speed-only", action="store_true", help="with --speed: only the speed measurement (the tasks' folders must exist)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "quality.json")
    args = ap.parse_args()

    rankers = ("bm25",) if args.skip_dense or not _dense_available() else ("bm25", "dense", "hybrid")
    if "dense" not in rankers and not args.skip_dense:
        print("dense extra not installed: BM25 only", file=sys.stderr)
    tasks = {"man-linux": lambda f: man_linux(args.pages, f), "python-modules": python_modules}
    result: dict[str, Any] = {"tasks": {}}
    for name, make in ({} if args.speed_only else tasks).items():
        folder = args.work / name
        n = make(folder)
        print(f"{name}: {n} queries", file=sys.stderr)
        s = evaluate_retrieval(folder, folder / "sieve", rankers=("bm25",), analyzers=ANALYZERS, bm25=PARAMS, stopwords=STOPWORDS,
                               progress=lambda m: print("  " + m, file=sys.stderr))
        rows = [{**r, "engine": "sieve"} for r in s["runs"]]
        if len(rankers) > 1:  # embeddings do not depend on the analyzer: dense and hybrid over the plain index only
            d = evaluate_retrieval(folder, folder / "sieve", rankers=rankers[1:], analyzers=("plain",), bm25=PARAMS, dense_units=("document", "passage"),
                                   progress=lambda m: print("  " + m, file=sys.stderr))
            rows += [{**r, "engine": "sieve"} for r in d["runs"]]
        if not args.skip_peer:
            rows += tantivy_runs(folder, folder / "peer")
        result["tasks"][name] = {"queries": s["queries"], "documents": sum(1 for _ in open(folder / "corpus.jsonl")), "runs": rows}
    if args.speed:
        if not (args.work / "man-linux" / "queries.jsonl").exists():
            man_linux(args.pages, args.work / "man-linux")
        qs = list(load_retrieval(args.work / "man-linux").queries.values())
        result["speed"] = speed(args.speed, qs, args.work, args.speed_rounds)

    for name, t in result["tasks"].items():
        print(f"\n### {name}: {t['queries']} queries over {t['documents']} documents\n")
        print("| engine | ranker | analyzer | k1, b | nDCG@10 | MRR@10 | recall@100 | ms/query |")
        print("|---|---|---|---|---|---|---|---|")
        for r in sorted(t["runs"], key=lambda r: (r["ranker"], r.get("unit") or "", r["analyzer"], r["k1"] or 0, r["engine"])):
            kb = f"{r['k1']}, {r['b']}" if r["k1"] is not None else "-"
            ranker = r["ranker"] + (f" ({r['unit']}s)" if r.get("unit") else "")
            print(f"| {r['engine']} | {ranker} | {r['analyzer']} | {kb} | " + " | ".join(f"{r[m]:.3f}" for m in MEASURES.values()) + f" | {r['ms_per_query']} |")
    if "speed" in result:
        sp = result["speed"]
        print(f"\n### analyzer speed: {sp['documents']} documents ({sp['corpus']}), best of {sp['rounds']}\n")
        print("| analyzer | build s | docs/s | index MB | ranked search p50 ms | build / plain | search / plain |\n|---|---|---|---|---|---|---|")
        for a in sp["analyses"]:
            r = sp[a]
            print(f"| {a} | {r['build_s']} | {r['docs_per_s']} | {r['index_mb']} | {r['search_p50_ms']} | {r['build_ratio']}x | {r['search_ratio']}x |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
