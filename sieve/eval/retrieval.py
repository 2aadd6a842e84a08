"""Retrieval quality: rank a labelled collection's queries, write TREC runs, score them.

A collection in BEIR layout: `corpus.jsonl`, `queries.jsonl` (`_id`, `text`) and
`qrels/<split>.tsv` (query id, document id, graded relevance; a header line is allowed). Each
query is run as plain language (`Index.ranked_search`: any of its words, no BQL), so every ranker
sees the same question. Measures come from ir-measures (the `eval` extra): nDCG@10, MRR@10
(`RR@10`) and recall@100, each the mean over the queries that have judgements; a query that
retrieves nothing scores 0, it is not dropped. They follow the order sieve returned (equal scores
in index order); the TREC files keep the scores, and trec_eval, which re-sorts equal scores by
document id, may differ from them where scores tie (hybrid's fused ranks do).
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieve import BM25Params
from sieve.engine.analysis.analyzers import get_analyzer
from sieve.engine.query.bql.parser import MAX_QUERY_CHARS
from sieve.engine.rank.rankers import DENSE_RANKERS, RANKER_NAMES
from sieve.errors import CorpusError, InvalidArgumentError, extra_hint
from sieve.index.index import Index, Limits, build_index, open_index

# ir-measures names, and the names this report prints.
MEASURES = {"nDCG@10": "nDCG@10", "RR@10": "MRR@10", "R@100": "recall@100"}
DEPTH = 100  # ranked per query: recall@100 needs 100
# A benchmark's own queries are measured as they are written (some, as ArguAna's, are whole
# arguments of a few thousand characters), with no time budget: they are data, not an agent's calls.
MEASURED = Limits(max_query_chars=MAX_QUERY_CHARS, seconds=None)
BM25_RANKERS = ("bm25", "hybrid")  # the rankers BM25's k1 and b change


@dataclass
class RetrievalTask:
    """A labelled collection: queries by id, graded judgements by query id, and the corpus."""

    name: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    corpus: Path
    skipped: list[str] = field(
        default_factory=list
    )  # judged queries with no text (reported, not run)


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        for n, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if not row or (n == 1 and row[0] in ("query-id", "qid", "query_id")):
                continue
            if len(row) == 4:  # TREC qrels: qid iteration docid relevance
                row = [row[0], row[2], row[3]]
            if len(row) != 3:
                raise CorpusError(
                    "expected 3 tab-separated columns (query "
                    f"id, document id, relevance), got {len(row)}",
                    str(path),
                    n,
                )
            try:
                grade = int(float(row[2]))
            except ValueError:
                raise CorpusError(f"relevance {row[2]!r} is not a number", str(path), n) from None
            qrels.setdefault(row[0], {})[row[1]] = grade
    return qrels


def load_retrieval(folder: str | Path, split: str = "test") -> RetrievalTask:
    """The BEIR-layout collection in `folder`; queries without judgements in `split` are left
    out."""
    root = Path(folder)
    for need in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (root / need).is_file():
            raise CorpusError(
                f"a retrieval collection needs {need} (BEIR layout: "
                "corpus.jsonl, queries.jsonl, qrels/<split>.tsv)",
                str(root),
            )
    qrels = _read_qrels(root / "qrels" / f"{split}.tsv")
    queries: dict[str, str] = {}
    with open(root / "queries.jsonl", encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise CorpusError(
                    f"not valid JSON ({e.msg})", str(root / "queries.jsonl"), n
                ) from None
            qid = str(rec.get("_id", rec.get("id", "")))
            if not qid:
                raise CorpusError("query has no _id", str(root / "queries.jsonl"), n)
            if qid in qrels:
                queries[qid] = str(rec.get("text", ""))
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise CorpusError(
            f"{len(missing)} judged queries are not in queries.jsonl (first: {missing[0]!r})",
            str(root / "qrels" / f"{split}.tsv"),
        )
    skipped = [q for q, text in queries.items() if not text.strip()]
    return RetrievalTask(
        root.name,
        {q: t for q, t in queries.items() if t.strip()},
        {q: r for q, r in qrels.items() if q not in skipped},
        root / "corpus.jsonl",
        skipped,
    )


Run = dict[str, list[tuple[str, float]]]  # query id -> (document id, score), best first


def rank_queries(
    index: Index, queries: dict[str, str], ranker: str = "bm25", depth: int = DEPTH
) -> Run:
    """Each query's top `depth` documents by `ranker`, as plain language over the whole
    collection."""
    return {
        qid: [
            (h.doc_id, h.score)
            for h in index.ranked_search(text, k=depth, ranker=ranker, explain=False).hits
        ]
        for qid, text in queries.items()
    }


def write_trec(path: Path, run: Run, tag: str) -> None:
    """The run in TREC format: `qid Q0 docid rank score tag`, one line per retrieved document."""
    with open(path, "w", encoding="utf-8") as fh:
        for qid, ranked in run.items():
            for rank, (doc, score) in enumerate(ranked, 1):
                fh.write(f"{qid} Q0 {doc} {rank} {score:.6f} {tag}\n")


def measure(qrels: dict[str, dict[str, int]], run: Run) -> dict[str, float]:
    """Mean nDCG@10, MRR@10 and recall@100 over the judged queries (ir-measures)."""
    try:
        import ir_measures
    except ImportError:
        raise InvalidArgumentError(
            "retrieval measures need ir-measures, which the eval extra installs: "
            + extra_hint("eval")
        ) from None
    # Scored in sieve's order: trec_eval re-sorts by score and breaks ties by document id, and fused
    # (RRF) scores tie often, so each document is given its rank instead of its score.
    # ir-measures drops queries with no retrieved document; they
    # count as 0 here, so every judged query weighs the same.
    scored = {
        q: {d: float(len(ranked) - i) for i, (d, _) in enumerate(ranked)}
        for q, ranked in run.items()
        if ranked
    }
    per_query: dict[str, dict[str, float]] = {name: {} for name in MEASURES}
    for m in ir_measures.iter_calc(
        [ir_measures.parse_measure(name) for name in MEASURES], qrels, scored
    ):
        per_query[str(m.measure)][m.query_id] = float(m.value)
    return {
        shown: sum(per_query[name].get(q, 0.0) for q in qrels) / len(qrels) if qrels else 0.0
        for name, shown in MEASURES.items()
    }


def analysis_label(analyzer: str, stopwords: str | None) -> str:
    """How runs name an analyzer and stop list: `english`, `english+stop-english`,
    `plain+stop-mylist`."""
    return analyzer if stopwords is None else f"{analyzer}+stop-{Path(stopwords).stem}"


def _index_for(
    task: RetrievalTask,
    out: Path,
    analyzer: str,
    stopwords: str | None,
    progress: Callable[[str], None],
) -> Index:
    label = analysis_label(analyzer, stopwords)
    path = out / f"index-{label}"
    if (path / "CURRENT").exists():
        index = open_index(path)
        if index.analyzer == get_analyzer(analyzer, stopwords) and index.manifest.get(
            "source"
        ) == str(task.corpus):
            return index
        index.close()
    progress(f"indexing {task.corpus} with the {label} analyzer")
    return build_index(task.corpus, path, force=True, analyzer=analyzer, stopwords=stopwords)


def evaluate_retrieval(
    folder: str | Path,
    out: str | Path,
    rankers: tuple[str, ...] = ("bm25",),
    analyzers: tuple[str, ...] = ("plain",),
    bm25: tuple[BM25Params, ...] = (BM25Params(),),
    split: str = "test",
    depth: int = DEPTH,
    dense_units: tuple[str, ...] = ("document",),
    progress: Callable[[str], None] = lambda _: None,
    stopwords: tuple[str | None, ...] = (None,),
) -> dict[str, Any]:
    """Every (analyzer, stop list, ranker, BM25 parameters, embedding unit) combination over the
    collection in `folder`: indexes under `out` (built and embedded once, reused), one TREC run
    file each, and their measures. Dense rankers run once per unit of `dense_units` ("document",
    "passage"). `stopwords`: None (no list) or a list as `build_index` takes it, by name or file."""
    for name in rankers:
        if name not in RANKER_NAMES:
            raise InvalidArgumentError(f"unknown ranker {name!r}; known: {', '.join(RANKER_NAMES)}")
    analyses = [(name, stop) for name in analyzers for stop in stopwords]
    for name, stop in analyses:
        get_analyzer(name, stop)
    task = load_retrieval(folder, split)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, stop in analyses:
        analyzer = analysis_label(name, stop)
        base = _index_for(task, out, name, stop, progress)
        for ranker in rankers:
            dense = ranker in DENSE_RANKERS
            for unit in dense_units if dense else (None,):
                if unit is not None:
                    from sieve.dense.store import embed

                    progress(f"embedding {len(base)} documents by {unit} ({analyzer} index)")
                    embed(base, unit=unit)
                uses_bm25 = ranker in BM25_RANKERS
                for params in bm25 if uses_bm25 else bm25[:1]:
                    index = Index(base.path, bm25=params, limits=MEASURED)
                    if unit is not None:
                        index.use_dense(unit=unit)
                    t0 = time.perf_counter()
                    run = rank_queries(index, task.queries, ranker, depth)
                    seconds = time.perf_counter() - t0
                    tag = (
                        f"sieve-{ranker}"
                        + (f"-{unit}" if unit else "")
                        + f"-{analyzer}"
                        + (f"-k1_{params.k1:g}-b_{params.b:g}" if uses_bm25 else "")
                    )
                    write_trec(out / f"{tag}.run", run, tag)
                    row = {
                        "run": tag,
                        "ranker": ranker,
                        "unit": unit,
                        "analyzer": analyzer,
                        "k1": params.k1 if uses_bm25 else None,
                        "b": params.b if uses_bm25 else None,
                        **measure(task.qrels, run),
                        "queries": len(task.qrels),
                        "ms_per_query": round(1000 * seconds / max(1, len(task.queries)), 3),
                        "file": str(out / f"{tag}.run"),
                    }
                    progress(f"{tag}: " + ", ".join(f"{k} {row[k]:.4f}" for k in MEASURES.values()))
                    rows.append(row)
                    index.close()
        base.close()
    summary = {
        "collection": str(folder),
        "split": split,
        "queries": len(task.qrels),
        "skipped_queries": task.skipped,
        "depth": depth,
        "runs": rows,
    }
    (out / "retrieval.json").write_text(json.dumps(summary, indent=1))
    return summary


def table(summary: dict[str, Any]) -> str:
    """The runs as a Markdown table, best nDCG@10 first."""
    lines = [
        "| run | ranker | analyzer | k1 | b | nDCG@10 | MRR@10 | recall@100 | ms/query |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(summary["runs"], key=lambda r: -r["nDCG@10"]):
        lines.append(
            f"| {r['run']} | {r['ranker']} | {r['analyzer']} | "
            f"{r['k1'] if r['k1'] is not None else '-'} | "
            f"{r['b'] if r['b'] is not None else '-'} | {r['nDCG@10']:.4f} | "
            f"{r['MRR@10']:.4f} | {r['recall@100']:.4f} | {r['ms_per_query']} |"
        )
    return "\n".join(lines)
