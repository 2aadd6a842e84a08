"""Ranked search inside the admitted set, over every segment of a snapshot: BM25, dense, their
RRF fusion and the Indri-style rankers (`Searcher`, with one `SegmentSearch` per segment).

The Boolean filter decides which documents are eligible; a ranker only orders them. When the
filter admits nothing, recovery (`sieve.engine.rank.fallback`) ranks the whole collection by the
query's positive terms with the same scorer, and says so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from sieve.corpus.documents import made
from sieve.engine.format import bitset
from sieve.engine.format.distinct import distinct
from sieve.engine.query.bql.hints import colon_hints
from sieve.engine.query.diagnose import Diagnosis, diagnose_parts
from sieve.engine.query.evaluate import Evaluator
from sieve.engine.query.explain import Explainer
from sieve.engine.query.plan import Plan, Plans
from sieve.engine.rank import fallback as recovery
from sieve.engine.rank.bm25 import BM25Params, idf
from sieve.engine.rank.fusion import FUSION_POOL, rrf
from sieve.engine.rank.indri import IndriCollection, IndriParams, IndriScorer
from sieve.engine.rank.rankers import SOFT_RANKERS, check_fallback_ranker, check_request
from sieve.engine.rank.results import Hit, Results
from sieve.engine.rank.scorer import BM25Scorer
from sieve.engine.rank.topk import top_k
from sieve.engine.segment.snapshot import Segment, Snapshot
from sieve.errors import InvalidArgumentError

Later = Callable[[Callable[[], Any]], Any]
Found = tuple[tuple[str, ...], tuple[str, ...], tuple[int, ...]]  # fields, sections, their numbers


class DenseScorer(Protocol):
    def top(
        self, text: str, docs: np.ndarray | None, bits: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k (documents, similarity) best for `text` among `docs` (None: the whole
        collection)."""
        ...

    def similarity(self, text: str, docs: np.ndarray) -> np.ndarray:
        """Cosine similarity of `text` to each of `docs`."""
        ...

    def best_sections(self, text: str, docs: list[int]) -> list[int | None]:
        """For each of `docs`, the section of its passage closest to `text` (None: no passages)."""
        ...


class SegmentSearch:
    """One segment's share of every search: its filter, its BM25 and Indri scorers, all over its
    live documents and with the whole collection's statistics."""

    def __init__(
        self,
        seg: Segment,
        snapshot: Snapshot,
        params: BM25Params,
        indri: IndriParams,
        avgdl: float | None = None,
    ) -> None:
        self.seg = seg
        self.reader = seg.reader
        deleted = seg.deleted is not None
        self.evaluator = Evaluator(seg.reader, seg.live if deleted else None)
        # One segment with nothing deleted is its own collection: today's numbers, computed as a
        # fresh build does.
        self.bm25 = BM25Scorer(
            seg.reader,
            params,
            avgdl if avgdl is not None else None if snapshot.dense else snapshot.avgdl,
            self.evaluator.holders,
        )
        self.indri = IndriScorer(seg.reader, indri, seg.live_flags if deleted else None)


class Searcher:
    """Search = match, then rank the admitted set (or, on zero hits, the whole collection), over
    every segment of a snapshot: each segment filters and scores its own documents with the
    collection's statistics, and the best of each are merged (equal scores in index order)."""

    def __init__(
        self,
        snapshot: Snapshot,
        params: BM25Params = BM25Params(),
        indri: IndriParams = IndriParams(),
        collection: tuple[int, int] | None = None,
    ) -> None:
        """`collection`: (live documents, their total length) of the whole collection when
        `snapshot` is one shard of it (sieve.index.shard_service); BM25's idfs then come with each
        call."""
        self.snapshot = snapshot
        self.params = params
        self.collection = collection
        avgdl = collection[1] / collection[0] if collection and collection[0] else None
        self.parts = [
            SegmentSearch(seg, snapshot, params, indri, avgdl) for seg in snapshot.segments
        ]
        self.dense: DenseScorer | None = None
        # What runs work deferred until a result is read (each hit's matched fields and sections):
        # the index's, under its time budget and damage check (None: as it is).
        self.later: Later | None = None

    # ------------------------------------------------------------ filtering

    def segment_bits(self, plans: Plans, shared: bool = False) -> list[np.ndarray]:
        """Each segment's admitted set (local numbers, live documents only); with `shared`, some
        may be read-only rows of the index (`Evaluator.run`)."""
        return [part.evaluator.run(plan, shared) for part, plan in zip(self.parts, plans.parts)]

    def pairs(self, plans: Plans) -> list[tuple[Plan, Evaluator]]:
        return [(plan, part.evaluator) for part, plan in zip(self.parts, plans.parts)]

    # ------------------------------------------------------------ search

    def search(
        self,
        plans: Plans,
        k: int,
        ranker: str,
        fallback: bool = True,
        explain: bool = True,
        diagnose: bool = True,
        fallback_ranker: str | None = None,
    ) -> Results:
        """The best `k` of what `plans` admits, by `ranker`. If it admits nothing and `fallback` is
        on, the whole collection is ranked by the positive terms instead (`Results.fallback`), by
        `fallback_ranker` (None: `ranker`; the paper's fallback is BM25 whatever the ranker), and
        `Results.missing` lists the top-level clauses that match no document; with `diagnose`,
        `Results.diagnosis` says which one-step relaxations would admit documents. A non-empty
        admitted set is never broadened."""
        check_request(k, ranker)
        check_fallback_ranker(fallback_ranker)
        if ranker == "bm25" and self._some_holder(plans):
            # The admitted set is not empty, and the ranking may not need it: it is made only where
            # it is needed, and counted only when the count is read.
            admitted = _Admitted(self, plans)
            top, scores = self.bm25_top(plans, admitted, k)
            return self._results(plans, ranker, top, scores, explain, count=admitted.count)
        bits = self.segment_bits(plans)
        count = sum(bitset.count(b) for b in bits)
        if ranker in SOFT_RANKERS:  # the whole collection, softly; the filter only counts
            top, scores = self.soft(plans, ranker, k)
            why = diagnose_parts(self.pairs(plans)) if not count and diagnose else None
            return self._results(plans, ranker, top, scores, explain, count=count, diagnosis=why)
        if count:
            top, scores = self.rank(plans, ranker, bits, k)
            return self._results(plans, ranker, top, scores, explain, count=count)
        got = recovery.recover(
            self.pairs(plans), plans, ranker, fallback, diagnose, fallback_ranker
        )
        if got.ranker is None:
            return self._results(
                plans, ranker, None, None, explain, missing=got.missing, diagnosis=got.diagnosis
            )
        top, scores = self.rank(plans, got.ranker, None, k)
        return self._results(
            plans,
            got.ranker,
            top,
            scores,
            explain,
            fallback=True,
            missing=got.missing,
            diagnosis=got.diagnosis,
        )

    def _some_holder(self, plans: Plans) -> bool:
        """Whether a segment with nothing deleted admits every document of the query's terms'
        postings (`Plan.admits_holders`) and holds one: then the query admits something."""
        return any(
            _admits_holders(part, plan) and any(t >= 0 for t in plan.term_ids)
            for part, plan in zip(self.parts, plans.parts)
        )

    def soft(
        self, plans: Plans, ranker: str, k: int, scores: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The Indri-style rankers: every document scored by the plan as an inference network
        (indri.py); `indri+dense` adds the dense similarity as one more belief, log((1 + cos) / 2),
        combined with the query's belief as #combine does (the mean of the two), over the union of
        each one's best FUSION_POOL documents. Documents a date excludes never appear (nor any
        other whose belief in `scores`, default `indri_scores(plans)`, is -inf)."""
        if scores is None:
            scores = self.indri_scores(plans)
        alive = np.flatnonzero(np.isfinite(scores))
        order = self.snapshot.order
        if ranker == "indri" or not plans.text or not len(alive):
            return top_k(alive, scores[alive], k, order)
        if self.dense is None:
            raise InvalidArgumentError(
                f"the {ranker} ranker needs embeddings attached (Index.use_dense)"
            )
        pool = max(k, FUSION_POOL)
        best, _ = top_k(alive, scores[alive], pool, order)
        # embeddings hold live documents only
        near, _ = self.dense.top(plans.text, None, None, pool)
        cand = distinct(np.concatenate((best, near[np.isfinite(scores[near])])))
        dense = np.log((1.0 + np.clip(self.dense.similarity(plans.text, cand), -1.0, 1.0)) / 2.0)
        return top_k(cand, (scores[cand] + dense) / 2.0, k, order)

    def indri_search(self, plans: Plans, k: int, ranker: str, explain: bool = True) -> Results:
        """A query in Indri's own language (its plans from `sieve.engine.query.indriql`), ranked by
        an Indri-style ranker over the documents it matches (`IndriScorer.holds`, within its #band,
        #filreq and date filters); `Results.count` is how many those are."""
        check_request(k, ranker)
        if ranker not in SOFT_RANKERS:
            raise InvalidArgumentError(
                f"an Indri query is ranked by {' or '.join(SOFT_RANKERS)}, not {ranker!r}"
            )
        scores = self.indri_scores(plans, candidates=True)
        count = int(np.count_nonzero(np.isfinite(scores)))
        top, got = self.soft(plans, ranker, k, scores)
        return self._results(plans, ranker, top, got, explain, count=count)

    def indri_scores(self, plans: Plans, candidates: bool = False) -> np.ndarray:
        """Every internal number's Indri belief (-inf: excluded by a date, deleted, or no document;
        with `candidates`, also where the query does not match, `IndriScorer.scores`)."""
        snap = self.snapshot
        if snap.dense:
            return self.parts[0].indri.scores(plans.first, candidates=candidates)
        occurrences: dict[int, float] = {}
        lengths: dict[int, float] = {}
        tfs = []
        for part, plan in zip(self.parts, plans.parts):
            occ, lens, tf = part.indri.counts(plan)
            tfs.append(tf)
            for i, v in occ.items():
                occurrences[i] = occurrences.get(i, 0.0) + v
            for m, v in lens.items():
                lengths[m] = lengths.get(m, 0.0) + v
        collection = IndriCollection(occurrences, lengths)
        out = np.full(snap.capacity, -np.inf)
        for part, plan, tf in zip(self.parts, plans.parts, tfs):
            got = part.indri.scores(plan, collection, tf, candidates)
            if part.seg.deleted is not None:
                got[~part.seg.live_flags] = -np.inf
            out[part.seg.base : part.seg.base + part.seg.n] = got
        return out

    def bm25_top(
        self,
        plans: Plans,
        bits: list[np.ndarray] | _Admitted | None,
        k: int,
        idfs: tuple[float, ...] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """BM25's best k of the admitted sets `bits` (None: of the whole collection; an `_Admitted`:
        made only for the segments whose ranking needs them), by internal number; `idfs`: each
        positive term's idf in the whole collection, when this is one shard."""
        snap = self.snapshot
        if idfs is None and self.collection is not None:
            raise InvalidArgumentError("a shard's searcher needs the collection's idfs")
        # the collection's N and document frequencies, over live documents
        if idfs is None and not snap.dense:
            idfs = tuple(
                float(idf(snap.n_live, snap.text_df([plan.term_ids[i] for plan in plans.parts])))
                for i in range(len(plans.terms))
            )
        got_d: list[np.ndarray] = []
        got_s: list[np.ndarray] = []
        for j, (part, plan) in enumerate(zip(self.parts, plans.parts)):
            seg = part.seg
            admitted = None
            holders = bits is not None and _admits_holders(part, plan)
            got: tuple[np.ndarray, np.ndarray] | None = None
            if bits is None:  # the whole collection: documents holding a term, live ones only
                b = None if seg.deleted is None else seg.live
            else:
                if holders and isinstance(bits, _Admitted):
                    got = part.bm25.top(plan.term_ids, None, None, k, idfs, None, True)
                if got is None:
                    b = bits[j]
                    # the scorer lists the admitted documents only if it must
                    admitted = bitset.count(b)
                    if not admitted:
                        continue
            if got is None:
                got = part.bm25.top(plan.term_ids, None, b, k, idfs, admitted, holders)
            # `b` is given, so top never left the admitted set out and returned a pair
            assert got is not None
            d, sc = got
            got_d.append(d + seg.base if seg.base else d)
            got_s.append(sc)
        if len(got_d) == 1:
            return got_d[0], got_s[0]
        if not got_d:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return top_k(np.concatenate(got_d), np.concatenate(got_s), k, snap.order)

    def rank(
        self, plans: Plans, ranker: str, bits: list[np.ndarray] | None, k: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The best k by `ranker` of each segment's admitted set `bits` (None: the whole
        collection)."""
        if ranker == "bm25":
            return self.bm25_top(plans, bits, k)
        if self.dense is None:
            raise InvalidArgumentError(
                f"the {ranker} ranker needs embeddings attached (Index.use_dense)"
            )
        docs: np.ndarray | None = None  # the whole collection (embeddings hold live documents only)
        whole: np.ndarray | None = None
        if bits is not None:
            whole = self.snapshot.join(bits)
            docs = bitset.to_ids(whole, self.snapshot.capacity)
        if not plans.text:  # nothing to compare: index order, as for BM25 with no positive term
            first = (
                self.snapshot.in_order(docs)[:k]
                if docs is not None
                else np.zeros(0, dtype=np.int64)
            )
            return first, np.zeros(len(first))
        if ranker == "dense":
            return self.dense.top(plans.text, docs, whole, k)
        pool = max(k, FUSION_POOL)
        return rrf(
            [self.bm25_top(plans, bits, pool)[0], self.dense.top(plans.text, docs, whole, pool)[0]],
            k,
            order=self.snapshot.order,
        )

    def _results(
        self,
        plans: Plans,
        ranker: str,
        docs: np.ndarray | None,
        scores: np.ndarray | None,
        explain: bool,
        count: int | Callable[[], int] = 0,
        fallback: bool = False,
        missing: list[str] | None = None,
        diagnosis: Diagnosis | None = None,
    ) -> Results:
        closest = ranker in ("dense", "hybrid") and getattr(self.dense, "unit", "") == "passage"
        hits = (
            []
            if docs is None or scores is None
            else self.hits(plans, docs, scores, explain, closest and bool(plans.text))
        )
        hints = colon_hints(
            plans.first.root.node, (n for n, _ in self.snapshot.schema.fields), plans.query
        )
        return Results(
            hits,
            count,  # type: ignore[arg-type]  # Results.count takes a function too (_ReadOnce)
            plans.query,
            fallback,
            missing or [],
            ranker,
            plans.terms,
            plans.stems,
            plans.text,
            diagnosis,
            self.snapshot.analyzer,
            hints,
        )

    def hits(
        self,
        plans: Plans,
        docs: np.ndarray,
        scores: np.ndarray,
        explain: bool,
        closest: bool = False,
    ) -> list[Hit]:
        """Hits for ranked internal numbers: ids and scores, and with `explain` the fields and
        sections matched, found for every hit at the first read of any (`_Deferred`); with
        `closest` (dense or hybrid over passages), each one's closest passage's section, found
        likewise."""
        snap = self.snapshot
        doc_list, score_list = docs.tolist(), scores.tolist()
        ids = snap.doc_ids(docs)
        # `made` skips the frozen dataclass's setattr per field (1 -> 0.4 us a hit).
        if not explain:
            hits = [
                made(
                    Hit,
                    {
                        "doc_id": i,
                        "rank": rank,
                        "score": float(score),
                        "fields": (),
                        "sections": (),
                        "doc": d,
                        "section_numbers": (),
                    },
                )
                for rank, (i, d, score) in enumerate(zip(ids, doc_list, score_list), 1)
            ]
        else:
            where = _Deferred(lambda: self.matched(plans, doc_list), self.later)
            hits = [
                made(
                    Hit,
                    {
                        "doc_id": i,
                        "rank": rank,
                        "score": float(score),
                        "doc": d,
                        "_matched": (where, rank - 1),
                    },
                )
                for rank, (i, d, score) in enumerate(zip(ids, doc_list, score_list), 1)
            ]
        if closest:
            dense, text = self.dense, plans.text
            assert dense is not None
            near = _Deferred(lambda: dense.best_sections(text, doc_list), self.later)
            for at, h in enumerate(hits):
                h.__dict__["_closest"] = (near, at)
        return hits

    def matched(self, plans: Plans, doc_list: list[int]) -> list[Found]:
        """(fields, sections, section numbers) where `plans` matched each document of `doc_list`."""
        snap = self.snapshot
        where: list[tuple[list, list[int]]] = [([], [])] * len(doc_list)
        # segment -> (place in the hits, local number)
        groups: dict[int, list[tuple[int, int]]] = {}
        for at, d in enumerate(doc_list):
            j, local = snap.which(d)
            groups.setdefault(j, []).append((at, local))
        for j, items in groups.items():
            explainer = Explainer(self.parts[j].reader, plans.parts[j])
            for (at, _), w in zip(items, explainer.matched_many([local for _, local in items])):
                where[at] = w
        out = []
        for d, (fields, sections) in zip(doc_list, where):
            # The store is read only to name matched sections.
            headings = snap.headings(d) if sections else ()
            out.append(
                (
                    tuple(f.label for f in fields),
                    tuple(headings[j] for j in sections),
                    tuple(sections),
                )
            )
        return out


class _Deferred:
    """A list computed for a search's hits at the first read of any hit's value that needs it
    (where the query matched: `Searcher.matched`; the closest passages: `best_sections`), through
    the index's `later` (its time budget and damage check) when it gave one. Holds what `find`
    needs until then (no cycle: the hits point here, never back)."""

    __slots__ = ("find", "found", "later", "lock")

    def __init__(self, find: Callable[[], list[Any]], later: Later | None) -> None:
        self.find: Callable[[], list[Any]] | None = find
        self.later = later
        self.lock = threading.Lock()
        self.found: list[Any] | None = None

    def values(self) -> list[Any]:
        with self.lock:
            if self.found is None:
                find = self.find
                assert find is not None
                self.found = find() if self.later is None else self.later(find)
                self.find = self.later = None
            return self.found


def _admits_holders(part: SegmentSearch, plan: Plan) -> bool:
    """Whether the segment's admitted set holds every document of the plan's terms' postings
    (`Plan.admits_holders`, and nothing deleted there)."""
    return part.seg.deleted is None and plan.admits_holders


class _Admitted:
    """Each segment's admitted set, evaluated when first asked for (`Searcher.search` of a query
    whose ranking may need none of them)."""

    __slots__ = ("bits", "plans", "searcher")

    def __init__(self, searcher: Searcher, plans: Plans) -> None:
        self.searcher, self.plans = searcher, plans
        self.bits: list[np.ndarray | None] = [None] * len(plans.parts)

    def __getitem__(self, j: int) -> np.ndarray:
        b = self.bits[j]
        if b is None:
            b = self.bits[j] = self.searcher.parts[j].evaluator.run(self.plans.parts[j])
        return b

    def count(self) -> int:
        """The admitted documents in every segment."""
        return sum(bitset.count(self[j]) for j in range(len(self.bits)))
