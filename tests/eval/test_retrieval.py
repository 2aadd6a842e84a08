"""`sieve eval retrieval`: TREC runs and nDCG@10 / MRR@10 / recall@100 over a BEIR-layout collection,
checked against the measures computed by hand from the run."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from sieve import open_index
from sieve.errors import CorpusError, InvalidArgumentError
from sieve.eval.retrieval import evaluate_retrieval, load_retrieval, measure

CORPUS = [
    {"_id": "gzip", "title": "gzip", "text": "gzip compresses files with Lempel-Ziv coding"},
    {"_id": "tar", "title": "tar", "text": "tar stores many files in one archive, and can call a compressor"},
    {"_id": "cron", "title": "cron", "text": "cron runs scheduled jobs at given times"},
    {"_id": "at", "title": "at", "text": "at queues jobs for later execution"},
    {"_id": "ls", "title": "ls", "text": "ls lists directory contents"},
    {"_id": "du", "title": "du", "text": "du estimates file space usage of directories"},
]
QUERIES = {
    "q1": "compressing files",  # plain: files only; english: compress file
    "q2": "scheduled jobs running later",
    "q3": "listing directories",
    "q4": "quantum chromodynamics",  # no word in the corpus: retrieves nothing, scores 0
}
QRELS = [("q1", "gzip", 2), ("q1", "tar", 1), ("q2", "cron", 1), ("q2", "at", 1), ("q3", "ls", 1), ("q3", "du", 0), ("q4", "ls", 1)]


def _collection(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in CORPUS))
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in QUERIES.items())
                                        + json.dumps({"_id": "unjudged", "text": "ls"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in QRELS))
    return root


def _by_hand(qrels: dict[str, dict[str, int]], run: dict[str, list[str]]) -> dict[str, float]:
    """trec_eval's definitions: linear gains, log2 discounts; reciprocal rank of the first relevant."""
    out = {"nDCG@10": 0.0, "MRR@10": 0.0, "recall@100": 0.0}
    for q, judged in qrels.items():
        ranked = run.get(q, [])
        gains = [judged.get(d, 0) for d in ranked]
        dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:10]))
        ideal = sorted((g for g in judged.values() if g > 0), reverse=True)
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal[:10]))
        out["nDCG@10"] += dcg / idcg if idcg else 0.0
        first = next((i for i, g in enumerate(gains[:10]) if g > 0), None)
        out["MRR@10"] += 0.0 if first is None else 1.0 / (first + 1)
        relevant = {d for d, g in judged.items() if g > 0}
        out["recall@100"] += len(relevant & set(ranked[:100])) / len(relevant) if relevant else 0.0
    return {k: v / len(qrels) for k, v in out.items()}


def _run_file(path: Path) -> dict[str, list[str]]:
    run: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        qid, q0, doc, rank, score, tag = line.split()
        assert q0 == "Q0" and int(rank) == len(run.setdefault(qid, [])) + 1
        run[qid].append(doc)
    return run


def test_measures_equal_the_hand_computed_ones(tmp_path: Path) -> None:
    root = _collection(tmp_path / "coll")
    s = evaluate_retrieval(root, tmp_path / "out", analyzers=("plain", "english"))
    assert s["queries"] == 4
    task = load_retrieval(root)
    assert "unjudged" not in task.queries
    for row in s["runs"]:
        run = _run_file(Path(row["file"]))
        assert "q4" not in run
        want = _by_hand(task.qrels, run)
        for name, value in want.items():
            assert row[name] == pytest.approx(value, abs=1e-9), (row["run"], name)
    plain, english = (next(r for r in s["runs"] if r["analyzer"] == a) for a in ("plain", "english"))
    # Stemming finds gzip (compresses) and tar (compressor is not compress: only via files) for q1, cron for q2.
    assert english["nDCG@10"] > plain["nDCG@10"]
    assert json.loads((tmp_path / "out" / "retrieval.json").read_text())["runs"] == s["runs"]


def test_a_query_that_retrieves_nothing_counts_zero() -> None:
    qrels = {"a": {"x": 1}, "b": {"y": 1}}
    assert measure(qrels, {"a": [("x", 1.0)], "b": []}) == {"nDCG@10": 0.5, "MRR@10": 0.5, "recall@100": 0.5}


def test_indexes_are_reused(tmp_path: Path) -> None:
    root = _collection(tmp_path / "coll")
    evaluate_retrieval(root, tmp_path / "out")
    current = (tmp_path / "out" / "index-plain" / "CURRENT").read_text()
    evaluate_retrieval(root, tmp_path / "out")
    assert (tmp_path / "out" / "index-plain" / "CURRENT").read_text() == current


def test_bad_collections_and_arguments(tmp_path: Path) -> None:
    root = _collection(tmp_path / "coll")
    with pytest.raises(CorpusError, match="qrels/dev.tsv"):
        load_retrieval(root, "dev")
    (root / "qrels" / "bad.tsv").write_text("q1\tgzip\thigh\n")
    with pytest.raises(CorpusError, match=r"bad.tsv:1: relevance 'high'"):
        load_retrieval(root, "bad")
    (root / "qrels" / "orphan.tsv").write_text("nope\tgzip\t1\n")
    with pytest.raises(CorpusError, match="not in queries.jsonl"):
        load_retrieval(root, "orphan")
    with pytest.raises(InvalidArgumentError, match="unknown ranker"):
        evaluate_retrieval(root, tmp_path / "out", rankers=("bm26",))
    with pytest.raises(InvalidArgumentError, match="unknown analyzer"):
        evaluate_retrieval(root, tmp_path / "out", analyzers=("klingon",))


def test_stop_lists_make_their_own_indexes_and_runs(tmp_path: Path) -> None:
    root = _collection(tmp_path / "coll")
    s = evaluate_retrieval(root, tmp_path / "out", analyzers=("english",), stopwords=(None, "english"))
    assert [r["analyzer"] for r in s["runs"]] == ["english", "english+stop-english"]
    stopped = open_index(tmp_path / "out" / "index-english+stop-english")
    assert stopped.analyzer.stopwords and stopped.manifest["stopwords"]
    for row in s["runs"]:
        want = _by_hand(load_retrieval(root).qrels, _run_file(Path(row["file"])))
        assert row["nDCG@10"] == pytest.approx(want["nDCG@10"], abs=1e-9)
    p = subprocess.run([sys.executable, "-m", "sieve", "eval", "retrieval", "--collection", str(root), "--out", str(tmp_path / "out"),
                        "--analyzer", "english", "--stopwords", "none", "--stopwords", "english", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert [r["analyzer"] for r in json.loads(p.stdout)["runs"]] == ["english", "english+stop-english"]


def test_cli(tmp_path: Path) -> None:
    root = _collection(tmp_path / "coll")
    p = subprocess.run([sys.executable, "-m", "sieve", "eval", "retrieval", "--collection", str(root), "--analyzer", "plain", "--analyzer", "english",
                        "--bm25", "0.9,0.4", "--bm25", "1.2,0.75", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    runs = json.loads(p.stdout)["runs"]
    assert {(r["analyzer"], r["k1"], r["b"]) for r in runs} == {(a, k1, b) for a in ("plain", "english") for k1, b in ((0.9, 0.4), (1.2, 0.75))}
    assert all((root / "sieve-retrieval" / f"{r['run']}.run").is_file() for r in runs)
    p = subprocess.run([sys.executable, "-m", "sieve", "eval", "retrieval", "--collection", str(root), "--bm25", "1.2"], capture_output=True, text=True)
    assert p.returncode == 1 and "--bm25 takes K1,B" in p.stderr
    p = subprocess.run([sys.executable, "-m", "sieve", "eval", "retrieval", "--collection", str(root)], capture_output=True, text=True)
    assert p.returncode == 0 and "| nDCG@10 | MRR@10 | recall@100 |" in p.stdout


def test_dense_units(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers", reason="needs the dense extra")
    root = _collection(tmp_path / "coll")
    s = evaluate_retrieval(root, tmp_path / "out", rankers=("dense", "hybrid"), dense_units=("document", "passage"))
    assert {(r["ranker"], r["unit"]) for r in s["runs"]} == {(r, u) for r in ("dense", "hybrid") for u in ("document", "passage")}
    task = load_retrieval(root)
    for row in s["runs"]:
        want = _by_hand(task.qrels, _run_file(Path(row["file"])))
        assert all(row[name] == pytest.approx(value, abs=1e-9) for name, value in want.items()), row["run"]
    assert sum(p.name.endswith("@passages") for p in (tmp_path / "out" / "index-plain" / "embeddings").iterdir()) == 1
