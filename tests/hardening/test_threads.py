"""Readers are safe together: threads sharing one opened index get exactly the answers one thread
gets, for every kind of query, through match, search (BM25, with matched fields and sections),
document and section. The GIL switch interval is cut so threads interleave inside numpy calls."""

from __future__ import annotations

import random
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

import sieve

from .synth import queries, records

THREADS = 8
EXTRA = ["the", "a*", "s*", "the NEAR/10 a", '"the a"', "NOT the", "date[..2024]", "heatwave[all] OR paris[tiab]", "(a* OR e*)[body] NOT date[2000..2010]"]


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("threads") / "idx"
    sieve.build_index(records(500, seed=9), path, jobs=1)
    return path


@pytest.fixture()
def busy_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def answer(index: sieve.Index, q: str) -> Any:
    """Everything a reader can see of one query (errors included, by message)."""
    try:
        m = index.match(q)
        r = index.search(q, k=10)
        hits = [(h.doc_id, h.rank, h.score, h.fields, h.sections) for h in r.hits]
        first = index.document(hits[0][0]) if hits else None
        sec = index.section(hits[0][0], 0) if hits else None
        return (m.query, m.count, tuple(m.ids), r.count, r.fallback, tuple(r.missing), tuple(hits), first, sec)
    except sieve.SieveError as e:
        return (type(e).__name__, str(e))


@pytest.mark.slow
def test_threads_sharing_one_index_agree_with_one_thread(index_path: Path, busy_switching: None) -> None:
    qs = queries(200, seed=11) + EXTRA
    index = sieve.open_index(index_path)
    expected = {q: answer(index, q) for q in qs}
    assert sum(isinstance(v[0], str) and v[0].startswith("BQL") for v in expected.values()) < len(qs) // 4
    start = threading.Barrier(THREADS)

    def worker(seed: int) -> list[str]:
        order = list(qs)
        random.Random(seed).shuffle(order)
        start.wait()
        return [q for q in order if answer(index, q) != expected[q]]

    with ThreadPoolExecutor(THREADS) as pool:
        wrong = [q for got in pool.map(worker, range(THREADS)) for q in got]
    assert wrong == []


@pytest.mark.slow
def test_threads_opening_and_querying_at_once(index_path: Path, busy_switching: None) -> None:
    """Every thread opens its own Index while others query theirs."""
    qs = EXTRA + queries(16, seed=12)
    expected = {q: answer(sieve.open_index(index_path), q) for q in qs}
    start = threading.Barrier(THREADS)

    def worker(seed: int) -> int:
        start.wait()
        bad = 0
        for _ in range(2):
            index = sieve.open_index(index_path)
            for q in random.Random(seed).sample(qs, len(qs)):
                bad += answer(index, q) != expected[q]
        return bad

    with ThreadPoolExecutor(THREADS) as pool:
        assert sum(pool.map(worker, range(THREADS))) == 0
