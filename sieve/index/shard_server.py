"""One shard of a sharded index, as its Ray actor serves it (`ShardServer`): the shard's segments
opened on the node that holds them, the two rounds of a search (`prepare`: plan, count, term
statistics; `top`: the best k scored with the collection's idfs), matches and document reads. The
coordinator is sieve.index.shard_service."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sieve.corpus.documents import Document
from sieve.engine import deadline
from sieve.engine.format import bitset
from sieve.engine.query.diagnose import ALL, Diagnosis, diagnose_parts
from sieve.engine.query.evaluate import Evaluator
from sieve.engine.query.plan import Limits, Plans
from sieve.engine.rank.bm25 import BM25Params
from sieve.engine.rank.searcher import Searcher
from sieve.engine.segment.snapshot import Snapshot
from sieve.errors import InvalidArgumentError
from sieve.index.queries import parse_query


@dataclass(frozen=True)
class Prepared:
    """A shard's first-round answer for one query."""

    count: int
    dfs: list[int]  # live documents holding each positive term
    volumes: list[int]  # positions each leaf examines here
    # when this shard admits nothing: whether each top-level clause matches here
    clause_hits: list[bool] | None
    # when this shard admits nothing and it was asked: every relaxation admitting something here
    diagnosis: Diagnosis | None
    query: str
    terms: tuple[str, ...]
    stems: tuple[str, ...]
    text: str
    clauses: tuple[str, ...]
    leaves: tuple[str, ...]


class ShardServer:
    """One shard of a sharded index, opened where the actor runs. Plain Python: Ray wraps it."""

    def __init__(
        self,
        root: str,
        commit: str,
        shard: int,
        params: BM25Params = BM25Params(),
        limits: Limits = Limits(),
    ) -> None:
        self.snap = Snapshot(Path(root), Path(root) / commit, shard=shard)
        self.shard = shard
        self.params, self.limits = params, limits
        self._searchers: dict[tuple[int, int], Searcher] = {}
        self._filter = [
            Evaluator(seg.reader, seg.live if seg.deleted is not None else None)
            for seg in self.snap.segments
        ]

    def info(self) -> dict[str, Any]:
        import resource

        from sieve.index.cluster import ray_module

        return {
            "n_live": self.snap.n_live,
            "total_len": self.snap.total_len,
            "shards": self.snap.shards,
            "analyzer": self.snap.analyzer,
            "schema": self.snap.schema,
            "pid": os.getpid(),
            "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
            "resources": sorted(ray_module().get_runtime_context().get_assigned_resources()),
        }

    def _plans(self, query: str) -> Plans:
        return Plans.of(
            parse_query(query, self.snap.schema.text_fields),
            [s.reader for s in self.snap.segments],
            self.limits,
        )

    def _searcher(self, collection: tuple[int, int]) -> Searcher:
        got = self._searchers.get(collection)
        # BM25's length norms depend on the collection's average length: made once per collection
        if got is None:
            got = self._searchers[collection] = Searcher(
                self.snap, self.params, collection=collection
            )
        return got

    def prepare(self, query: str, collection: tuple[int, int], diagnose: bool = False) -> Prepared:
        with deadline.within(self.limits.seconds):
            return self._prepare(query, collection, diagnose)

    def _prepare(self, query: str, collection: tuple[int, int], diagnose: bool) -> Prepared:
        plans = self._plans(query)
        searcher = self._searcher(collection)
        bits = searcher.segment_bits(plans)
        count = sum(bitset.count(b) for b in bits)
        dfs = [
            self.snap.text_df([plan.term_ids[i] for plan in plans.parts])
            for i in range(len(plans.terms))
        ]
        volumes = [
            sum(plan.leaves[i].volume for plan in plans.parts) for i in range(len(plans.leaves))
        ]
        hits, why = None, None
        if not count:
            clause_bits = [
                [part.evaluator.run(c) for c in plan.clauses]
                for part, plan in zip(searcher.parts, plans.parts)
            ]
            hits = [any(bool(cb[i].any()) for cb in clause_bits) for i in range(len(plans.clauses))]
            why = diagnose_parts(searcher.pairs(plans), clause_bits, most=ALL) if diagnose else None
        return Prepared(
            count,
            dfs,
            volumes,
            hits,
            why,
            plans.query,
            plans.terms,
            plans.stems,
            plans.text,
            tuple(str(c.node) for c in plans.clauses),
            tuple(str(leaf.node) for leaf in plans.leaves),
        )

    def top(
        self,
        query: str,
        collection: tuple[int, int],
        idfs: tuple[float, ...],
        k: int,
        whole: bool,
        explain: bool,
    ) -> list[tuple[Any, ...]]:
        """This shard's best k, scored with the collection's statistics: (order key, score, local
        number, id, fields, sections, section numbers) each. `whole`: rank every document (the
        fallback)."""
        with deadline.within(self.limits.seconds):
            return self._top(query, collection, idfs, k, whole, explain)

    def _top(
        self,
        query: str,
        collection: tuple[int, int],
        idfs: tuple[float, ...],
        k: int,
        whole: bool,
        explain: bool,
    ) -> list[tuple[Any, ...]]:
        plans = self._plans(query)
        searcher = self._searcher(collection)
        docs, scores = searcher.bm25_top(
            plans, None if whole else searcher.segment_bits(plans), k, idfs=idfs
        )
        hits = searcher.hits(plans, docs, scores, explain)
        order = self.snap.order
        assert order is not None
        return [
            (int(order[h.doc]), h.score, h.doc, h.doc_id, h.fields, h.sections, h.section_numbers)
            for h in hits
        ]

    def match(self, query: str) -> tuple[str, np.ndarray, list[str]]:
        """(canonical query, order keys, ids) of what this shard admits."""
        with deadline.within(self.limits.seconds):
            plans = self._plans(query)
            bits = [evaluator.run(plan) for evaluator, plan in zip(self._filter, plans.parts)]
        docs = bitset.to_ids(self.snap.join(bits), self.snap.capacity)
        assert self.snap.order is not None
        return plans.query, self.snap.order[docs], self.snap.doc_ids(docs)

    def doc_number(self, doc_id: str) -> int:
        return self.snap.doc_number(doc_id)

    def document(self, d: int) -> Document:
        return Document.stored(self.snap, d)

    def read(self, what: str, d: int, *args: Any) -> Any:
        """One document-level read by local number: doc_id, meta, headings, section_text,
        section_count."""
        if what not in ("doc_id", "meta", "headings", "section_text", "section_count"):
            raise InvalidArgumentError(f"unknown read {what!r}")
        return getattr(self.snap, what)(d, *args)

    def field_lengths(self) -> np.ndarray:
        return self.snap.field_lengths()

    def pid(self) -> int:
        return os.getpid()
