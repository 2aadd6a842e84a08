"""Ranked search inside the admitted set: BM25, dense, their RRF fusion, and zero-hit recovery.

The Boolean filter decides which documents are eligible; a ranker only orders them. When the
filter admits nothing, recovery ranks the whole collection by the query's positive terms with
the same scorer, and says so (`fallback=True`, with the clauses that matched nothing in `missing`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, NamedTuple, Protocol

import numpy as np

from sieve.corpus.documents import made
from sieve.engine.format import bitset
from sieve.engine import deadline
from sieve.engine.rank import windows
from sieve.engine.format.ranges import ragged
from sieve.engine.analysis.analyzers import PLAIN, Analyzer
from sieve.engine.rank.bm25 import BM25Params, idf, length_norm, term_scores
from sieve.engine.query.bql.hints import colon_hints
from sieve.engine.query.diagnose import Diagnosis, diagnose_parts
from sieve.engine.format.distinct import distinct
from sieve.engine.query.evaluate import Evaluator
from sieve.engine.query.explain import Explainer
from sieve.engine.rank.indri import IndriCollection, IndriParams, IndriScorer
from sieve.engine.query.plan import Plan, Plans
from sieve.engine.rank.rankers import RANKER_NAMES, SOFT_RANKERS
from sieve.engine.segment.reader import IndexReader, search_sorted
from sieve.engine.segment.snapshot import Segment, Snapshot
from sieve.errors import InvalidArgumentError

RRF_K = 60
# Postings scored at a time in a scan (64 KB of floats: sizes malloc reuses without new pages).
CHUNK = 8192
# MaxScore looks at least 1/_RANKED_SHARE of the documents up in a term by their ranks in the set of
# its documents (made per lookup, ~50 us at 100,000 documents, then time in the candidates); fewer,
# by binary search in its postings (measured on man-sections' OR queries: the crossover at ~1/40).
_RANKED_SHARE = 40
# MaxScore holds the rarest terms while their postings are at most 1/_HELD_SHARE of the query's:
# beyond that, scoring them all costs about what scanning everything does.
_HELD_SHARE = 4
# A scan that would score at least this many postings goes window by window (`_windowed`); below,
# measuring the windows costs about what it saves.
_WINDOWED_MIN = 65536
# Postings the first round of a windowed scan scores (the windows with the highest bounds first):
# its k-th best score is the bar every other window's bound must reach.
_FIRST_ROUND = 4096
_FIRST_SHARE = 3  # and at least 1/8 of the postings
# A windowed scan gives way to a plain one when the windows left to score hold more than
# 1/_WINDOWED_SHARE of the postings: gathering a posting costs about twice what reading it in order does.
_WINDOWED_SHARE = 2
# ... and is not tried for a k above 1/_WINDOWS_PER_RANK of the windows (a hybrid search's pool of
# 1,000 at 100,000 documents): the k-th best score then bars too few windows to pay for the rounds.
_WINDOWS_PER_RANK = 4
FUSION_POOL = 1000  # each ranker's depth fused by RRF: deep enough for dense to promote BM25's low ranks


@dataclass(frozen=True)
class Hit:
    """One ranked document: `fields` and `sections` are where the query's positive atoms matched."""

    doc_id: str
    rank: int
    score: float
    fields: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    doc: int = field(default=-1, repr=False, compare=False)  # internal document number
    # The matched sections by number (0-based), in order: `sections` names them, but two sections
    # may share a heading, and a card must star only the one that matched.
    section_numbers: tuple[int, ...] = field(default=(), repr=False, compare=False)

    def matched_sections(self, headings: list[str] | tuple[str, ...]) -> list[int]:
        """The numbers of the sections the query matched (by name, for a hit built without numbers)."""
        if self.section_numbers or not self.sections:
            return list(self.section_numbers)
        return [j for j, h in enumerate(headings) if h in self.sections]


class _ReadOnce:
    """A dataclass field that may be given a zero-argument function instead of its value: called at
    the first read, and its value kept. A search that ranks without listing the admitted set counts
    it only if the count is read (an agent's card reads it; a caller after ids and scores does not)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = "_" + name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError(self.slot)  # the field has no default
        value = obj.__dict__[self.slot]
        if callable(value):
            value = obj.__dict__[self.slot] = value()
        return value

    def __set__(self, obj: object, value: Any) -> None:  # only __init__ gets here: the dataclass is frozen
        obj.__dict__[self.slot] = value


@dataclass(frozen=True)
class Results:
    hits: list[Hit]
    count: int = _ReadOnce()  # type: ignore[assignment]  # exact size of the admitted set (0 when the fallback fired)
    query: str  # canonical form
    fallback: bool = False
    missing: list[str] = field(default_factory=list)  # top-level clauses no document matches
    ranker: str = "bm25"
    # From the query's plan, for whoever shows the hits (snippets, headers) without parsing it again:
    terms: tuple[str, ...] = ()  # the positive analysed terms, each once, in query order
    stems: tuple[str, ...] = ()  # the positive prefix stems
    text: str = ""  # the positive words as written (what a dense ranker read)
    # For a query that admits nothing: each clause's count alone and the one-step relaxations that
    # would admit documents (sieve.engine.query.diagnose); None when it admits something or was not asked.
    diagnosis: Diagnosis | None = None
    analyzer: Analyzer = field(default=PLAIN, repr=False, compare=False)  # the index's: how `terms` were made from the words
    hints: tuple[str, ...] = ()  # what the query may have meant instead (`title:zlib`: bql.hints)

    @property
    def ranked(self) -> bool:
        """Whether the ranker had anything to score (BM25 ignores prefixes and dates; dense reads stems too)."""
        return bool(self.terms) if self.ranker == "bm25" else bool(self.text)

    def __getstate__(self) -> dict[str, Any]:
        self.count  # a count still to compute is computed: a function does not pickle
        return self.__dict__


class DenseScorer(Protocol):
    def top(self, text: str, docs: np.ndarray | None, bits: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k (documents, similarity) best for `text` among `docs` (None: the whole collection)."""
        ...

    def similarity(self, text: str, docs: np.ndarray) -> np.ndarray:
        """Cosine similarity of `text` to each of `docs`."""
        ...


# top_k sorts this many candidates whole: fewer numpy calls than narrowing them first, and as fast.
_SORT_ALL = 256


def top_k(docs: np.ndarray, scores: np.ndarray, k: int, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The k best (doc, score) pairs, best first; equal scores in index order (`order`: each
    internal number's order key, for a snapshot whose index order is not ascending number)."""
    if len(docs) > max(k, _SORT_ALL):
        # A floor under the k-th best score: the least of k block maxima (k distinct entries, so
        # the k-th best is at least that). It leaves a few dozen candidates to partition instead
        # of every score (np.partition costs ~10 ns an element: 0.1 ms for 11,000).
        m = len(scores) // k * k
        floor = scores[:m].reshape(k, -1).max(axis=1).min()
        sel = np.flatnonzero(scores >= floor)
        if len(sel) > k:
            sub = scores[sel]
            kth = np.partition(sub, len(sub) - k)[len(sub) - k]
            sel = sel[sub >= kth]  # ties at the boundary all enter, order decides below
        docs, scores = docs[sel], scores[sel]
    best = np.lexsort((docs if order is None else order[docs], -scores))[:k]
    return docs[best], scores[best]


def _add(acc: np.ndarray, d: np.ndarray, s: np.ndarray, risen: list[np.ndarray], first: bool = False) -> None:
    """Add one term's scores `s` in documents `d` to the accumulator; the documents whose sum
    rose from 0.0 go to `risen`. A term's documents are distinct, so each contribution is added
    once, per document in query order from 0.0: the sums np.bincount of them all makes, to the bit.
    A score is never negative, so a sum leaves 0.0 once and for good. `first`: nothing was added
    in `d` before (the scan's first term), so each sum is the score itself."""
    if first:
        acc[d] = s  # 0.0 + s is s, to the bit
        rise = s > 0.0  # tf 0 (the term only in author or infobox) adds nothing
        risen.append(d if rise.all() else d[rise])
        return
    before = acc[d]
    rise = before == 0.0
    rise &= s > 0.0
    before += s
    acc[d] = before
    if rise.any():
        risen.append(d[rise])


class _Posting(NamedTuple):  # made for every term of every search: a tuple, not a frozen dataclass
    lo: int  # the term's postings are post_doc[lo:hi]
    hi: int
    idf: float  # also a strict upper bound of the term's score in any document: tf / (tf + norm) < 1
    tid: int = -1


class BM25Scorer:
    """Vectorised BM25 over postings restricted to a candidate set."""

    def __init__(self, reader: IndexReader, params: BM25Params = BM25Params(), avgdl: float | None = None,
                 holders: Callable[[int], np.ndarray] | None = None) -> None:
        """`avgdl`: the collection's average length, when `reader` is one segment of several
        (default: this reader's own). `holders`: a term's documents (any field, deleted ones too)
        as a bitset, from its id (`Evaluator.holders`), to look many candidates up by."""
        self.r = reader
        self.holders = holders
        self.params = params
        n = reader.n_docs
        if avgdl is None:
            avgdl = float(np.asarray(reader.doc_len, dtype=np.float64).mean()) if n else 1.0
        self.avgdl = avgdl or 1.0
        self.norm = length_norm(reader.doc_len, self.avgdl, params)
        # Accumulators kept between scans, one per scan running at once (scorers are shared by threads).
        self._spare: list[np.ndarray] = []
        self._spare_lock = threading.Lock()
        self.windows = windows.WindowCache()  # terms' window maxima, for the norms of these parameters

    def _postings(self, tids: tuple[int, ...], idfs: tuple[float, ...] | None = None) -> list[_Posting]:
        """`idfs`: each term's idf over the whole collection (default: from this reader's statistics)."""
        r, out = self.r, []
        for i, tid in enumerate(tids):
            if tid >= 0:
                w = idfs[i] if idfs is not None else float(idf(r.n_docs, int(r.text_df[tid])))
                out.append(_Posting(int(r.post_ptr[tid]), int(r.post_ptr[tid + 1]), w, tid))
        return out

    def _at(self, p: _Posting, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into `docs`, the term's score there) for the `docs` (ascending) that hold the term."""
        if self.holders is not None and p.tid >= 0 and len(docs) * _RANKED_SHARE >= self.r.n_docs:
            # Many candidates: each one's posting is its rank in the set of the term's documents
            # (stored rows, mostly, for a frequent term), with no binary search in the postings.
            where, at = bitset.ranks(self.holders(p.tid), docs)
        else:
            pdocs = self.r.post_doc[p.lo : p.hi]
            at = search_sorted(pdocs, docs)
            np.minimum(at, len(pdocs) - 1, out=at)  # past the end: compared with the last, which is smaller
            where = np.flatnonzero(pdocs[at] == docs)
            at = at[where]
        return where, term_scores(self.r.text_tf(p.lo, p.hi, at, np.float64), self.norm[docs[where]], p.idf, scratch=True)

    def scores(self, tids: tuple[int, ...], docs: np.ndarray | None, idfs: tuple[float, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(documents, BM25 score) of the terms `tids` (-1: absent). `docs`: the candidate set, or
        None for every document (then only documents containing a term are returned)."""
        return self._scores(self._postings(tids, idfs), docs)

    def _term(self, p: _Posting, d: np.ndarray, lo: int | None = None) -> np.ndarray:
        """The term's score in its postings from `lo` (default: its first) on, whose documents are `d`."""
        lo = p.lo if lo is None else lo
        # np.take gathers by postings' numbers faster than indexing does (measured on int32: 1.5-2.5x).
        # tf 0 (the term only in author or infobox) scores 0: harmless, and cheaper than filtering.
        return term_scores(self.r.text_tf(lo, lo + len(d), dtype=np.float64), np.take(self.norm, d), p.idf, scratch=True)

    def _chunks(self, p: _Posting) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(documents, scores) of a term's postings, CHUNK at a time. A long list scored at once
        makes arrays of megabytes, fresh pages for the kernel to map and zero on every search (a
        71,556-posting word's took 667 page faults, half its time); chunks reuse the same memory
        and stay in the CPU's cache between the steps."""
        for a in range(p.lo, p.hi, CHUNK):
            d = self.r.post_doc[a : min(a + CHUNK, p.hi)]
            yield d, self._term(p, d, a)

    def _take(self) -> np.ndarray:
        """An accumulator: a score per document, all 0.0. Kept between scans rather than made per
        scan: a fresh one is pages to map and zero (800 KB at 100,000 documents). As many exist as
        scans ever ran at once, not one per thread that ever searched."""
        with self._spare_lock:
            if self._spare:
                return self._spare.pop()
        return np.zeros(self.r.n_docs, dtype=np.float64)

    def _give(self, acc: np.ndarray) -> None:
        """Return an accumulator `_take` gave, all 0.0 again."""
        with self._spare_lock:
            self._spare.append(acc)

    def _scores(self, postings: list[_Posting], docs: np.ndarray | None, bits: np.ndarray | None = None,
                ordered: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """`docs` None: the documents holding a term with a score above 0 (those in `bits`, if
        given, as for live documents only), ascending unless not `ordered`."""
        acc = self._take()
        # The documents whose sum left 0.0, each once, in the order they did (a score is never
        # negative, so a sum leaves 0.0 once and for good). Every other entry of the buffer is
        # still 0.0 when the scan ends, so clearing these clears it.
        risen: list[np.ndarray] = []
        try:
            for p in postings:
                deadline.check()
                if docs is not None and len(docs) * 16 < p.hi - p.lo:
                    # Few candidates, long postings: look the candidates up instead of scanning.
                    where, s = self._at(p, docs)
                    parts = [(docs[where], s)]
                else:
                    # Score every posting: only the admitted documents' entries are read back below,
                    # which is cheaper than testing each posting against the admitted set.
                    parts = self._chunks(p)  # type: ignore[assignment]
                for d, s in parts:
                    _add(acc, d, s, risen, p is postings[0])
            if docs is None:
                docs = np.concatenate(risen) if risen else np.zeros(0, dtype=np.intp)
                if ordered:
                    docs = np.sort(docs)
                if bits is not None:
                    docs = docs[bitset.contains(bits, docs)]
            return docs, acc[docs]
        finally:
            for d in risen:
                acc[d] = 0.0
            self._give(acc)

    def top(self, tids: tuple[int, ...], docs: np.ndarray | None, bits: np.ndarray | None, k: int,
            idfs: tuple[float, ...] | None = None, admitted: int | None = None, holders: bool = False) -> tuple[np.ndarray, np.ndarray] | None:
        """`top_k(*scores(tids, docs), k)` (`bits`: `docs` as a bitset; with `docs` None, the documents that may appear), the same documents and the same scores, without
        scanning every posting of frequent terms when that provably cannot change the top k.
        `admitted` (with `docs` None): `bits` is the admitted set, of that many documents, and is
        read as a list of numbers only if every posting must be scored (MaxScore needs none).
        `holders`: the admitted set holds every document of the terms' postings (`Plan.admits_holders`,
        in a segment with nothing deleted), so the documents scored are not tested against it; it
        may then be left out (`bits` and `admitted` None), and None is returned when it is needed:
        when fewer than k documents score above 0 (the set's others fill the ranks).

        MaxScore, term at a time. The rarest terms are "held": every document holding one is a
        candidate, scored by the held terms alone (a lower bound of its score). Before each other
        term, rarest first, is looked up (by binary search, in its postings) a candidate survives
        only if its bound plus the idfs of the terms not yet looked up (their upper bounds) reaches
        the k-th best bound. If the k-th best exact score is then at least the other terms' idfs
        together, a document holding only other terms scores strictly less and cannot enter.
        Exact scores add contributions in query order, as `scores` adds them, so sums agree to the
        bit. Otherwise, the postings are scanned (`_scores`, `_one`)."""
        postings = self._postings(tids, idfs)
        size = len(docs) if docs is not None else admitted
        test = None if holders and docs is None else bits  # what scored documents must be in
        if len(postings) > 1:
            by_rarity = sorted(postings, key=lambda p: -p.idf)
            total = sum(p.hi - p.lo for p in postings)
            for split in range(1, len(by_rarity)):
                held, rest = by_rarity[:split], by_rarity[split:]
                n_held = sum(p.hi - p.lo for p in held)
                if n_held * _HELD_SHARE > total or (size is not None and n_held * 4 > size):
                    break  # the held terms' postings are not few: scoring them all is about the scan's cost
                if sum(p.idf for p in held) < sum(p.idf for p in rest):
                    continue  # a document would need most of the other terms too: the bound rarely holds
                got = self._pruned(postings, held, rest, test, k)
                if got is not None:
                    return got
        if docs is None and (admitted is not None or holders):  # `bits` is the admitted set, or left out
            # Unless the admitted documents are few next to the postings (an AND, a filter: then
            # they are listed and looked up below), the postings are scanned, and the admitted
            # documents that score above 0 come from them: when there are k of them, no other
            # admitted document (scoring 0) can enter, and the admitted set need not be listed.
            if postings and (admitted is None or admitted * 16 >= max(p.hi - p.lo for p in postings)):
                got = self._windowed(postings, test, k)
                if got is None and len(postings) == 1:
                    got = self._one(postings[0], test, k)
                elif got is None:
                    got_d, got_s = self._scores(postings, None, test, ordered=False)
                    got = top_k(got_d, got_s, k) if len(got_d) >= k else None
                if got is not None:
                    return got
            if bits is None:
                return None  # the admitted set was left out, and its unscored documents are needed
            docs = bitset.to_ids(bits, self.r.n_docs)
        elif docs is None:  # the whole collection (`bits`: its live documents, or None)
            got = self._windowed(postings, bits, k)
            if got is not None:
                return got
        return top_k(*self._scores(postings, docs, bits), k)

    def term_windows(self, p: _Posting) -> windows.TermWindows:
        """A term's postings by window of documents, with each window's largest tf / (tf + norm):
        measured at its first windowed scan, in the scan's pieces, and kept (a rare term too: the
        fixed cost, some 40 us, is most of what measuring it takes)."""
        got = self.windows.get(p.lo)
        if got is None:
            got = windows.measure(self._chunks(_Posting(p.lo, p.hi, 1.0)), self.r.n_docs)  # idf 1: the fractions
            self.windows.put(p.lo, got)
        return got

    def _windowed(self, postings: list[_Posting], bits: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """What a scan's `top_k` gives (the documents in `bits`, None: all, that score above 0),
        scoring only the windows of documents whose bound reaches the k-th best score
        (`sieve.engine.rank.windows`): in rounds, the windows with the highest bounds first, each round
        skipping the windows whose bound is below the k-th best score found so far. None when the
        postings are too few or k too large to be worth it, when most of the postings would be
        scored anyway (a scan is then cheaper), or when fewer than k documents score."""
        total = sum(p.hi - p.lo for p in postings)
        if not postings or total < _WINDOWED_MIN or k * _WINDOWS_PER_RANK > windows.window_count(self.r.n_docs):
            return None
        spans = [self.term_windows(p) for p in postings]
        bound = np.zeros(len(spans[0].best))
        sizes = np.zeros(len(bound), dtype=np.int64)
        for p, tw in zip(postings, spans):
            bound += tw.best.astype(np.float64) * p.idf  # in float64: a float32 product could round below
            sizes += np.diff(tw.starts)
        # A document's score is a sum of terms' contributions, each within rounding of idf times its
        # fraction: the margin, far above rounding, keeps every window whose documents could reach the bar.
        bound *= 1.0 + 1e-9
        order = np.argsort(-bound, kind="stable")
        order = order[bound[order] > 0.0]  # windows where no term scores hold nothing to rank
        reached = np.cumsum(sizes[order])
        acc = self._take()
        risen: list[np.ndarray] = []
        found: list[np.ndarray] = []  # the admitted documents that rose, round by round
        try:
            # Rounds over the windows by falling bound, each twice the postings of the one before;
            # once k documents score, the k-th best is the bar, and it only rises.
            done, want, bar, cand = 0, max(_FIRST_ROUND, total >> _FIRST_SHARE), -np.inf, None
            while done < len(order) and bound[order[done]] >= bar:
                if cand is not None:
                    # What is left to score at this bar, at most: when that is most of the postings,
                    # a scan (sequential reads, no gathers) costs less.
                    left = order[done:]
                    if int(sizes[left[bound[left] >= bar]].sum()) * _WINDOWED_SHARE > total:
                        return None
                upto = min(len(order), int(np.searchsorted(reached, want + (reached[done - 1] if done else 0))) + 1)
                chosen = order[done:upto]
                self._score_windows(postings, spans, np.sort(chosen[bound[chosen] >= bar]), acc, risen, found, bits)
                done, want = upto, want * 2
                if sum(len(f) for f in found) >= k:
                    cand = np.concatenate(found)
                    found[:] = [cand]
                    got = acc[cand]
                    bar = float(np.partition(got, len(got) - k)[len(got) - k])
            if cand is None:
                return None  # fewer than k score above 0: the caller fills ranks from the admitted set
            return top_k(cand, acc[cand], k)
        finally:
            for d in risen:
                acc[d] = 0.0
            self._give(acc)

    def _score_windows(self, postings: list[_Posting], spans: list[windows.TermWindows], chosen: np.ndarray, acc: np.ndarray,
                       risen: list[np.ndarray], found: list[np.ndarray], bits: np.ndarray | None) -> None:
        """Add every term's contributions in the `chosen` windows (ascending) to `acc`, terms in
        query order as `_scores` adds them, so that sums agree to the bit; the documents that rose
        from 0.0 go to `risen`, and those of them in `bits` to `found`."""
        before_round = len(risen)
        for p, tw in zip(postings, spans):
            deadline.check()
            first = tw.starts[chosen]
            at = ragged(first, tw.starts[chosen + 1] - first)
            if not len(at):
                continue
            d = self.r.post_docs_at(at + p.lo)
            # The windows of a round were never scored before: the first term adds to 0.0.
            _add(acc, d, term_scores(self.r.text_tf(p.lo, p.hi, at, np.float64), np.take(self.norm, d), p.idf, scratch=True), risen,
                 p is postings[0])
        if len(risen) > before_round:
            new = np.concatenate(risen[before_round:])
            found.append(new if bits is None else new[bitset.contains(bits, new)])

    def _one(self, p: _Posting, bits: np.ndarray | None, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The top k of one term's admitted postings (`bits`: the admitted set; None: all), when at
        least k of them score above 0: then no other admitted document (scoring 0) can enter, and
        neither the admitted set's list nor a sum per document is needed. None otherwise."""
        best_d: list[np.ndarray] = []
        best_s: list[np.ndarray] = []
        scored = 0
        flags = None if bits is None else bitset.to_bool(bits, len(bits) * 64)
        for d, s in self._chunks(p):
            deadline.check()
            keep = None if flags is None else flags[d]
            if keep is not None and not keep.all():
                d, s = d[keep], s[keep]
            scored += int(np.count_nonzero(s))
            # A chunk's best k hold every document of it in the whole top k (chunks are in
            # document order, so ties across chunks fall as they would in one list).
            d, s = top_k(d, s, k)
            best_d.append(d)
            best_s.append(s)
        if scored < k:
            return None
        return top_k(np.concatenate(best_d), np.concatenate(best_s), k)

    def _pruned(self, postings: list[_Posting], held: list[_Posting], rest: list[_Posting], bits: np.ndarray | None,
                k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """The top k by MaxScore with `held` scored in full and the `rest` (rarest first) looked
        up for survivors only; None when that cannot prove the top k (then the caller holds more
        terms or scans)."""
        r = self.r
        # When the terms are looked up in query order, `low` adds their contributions in the order
        # `scores` does: it is the exact sum, bit for bit. Otherwise each term's contribution to
        # each candidate is kept, one array a term (in query order; None: none yet), and added in
        # that order at the end.
        in_order = all(a is b for a, b in zip(held + rest, postings))
        part: list[np.ndarray | None] = [None] * len(postings)
        column = {id(p): j for j, p in enumerate(postings)}
        if len(held) == 1:  # one term's documents are ascending and distinct already
            p = held[0]
            cand = r.post_doc[p.lo : p.hi]
            low = self._term(p, cand)  # a fresh array: it grows
            if not in_order:
                part[column[id(p)]] = low.copy()
        else:
            held_docs = [r.post_doc[p.lo : p.hi] for p in held]
            cand = distinct(np.concatenate(held_docs))
            low = np.zeros(len(cand), dtype=np.float64)
            for p, d in zip(held, held_docs):
                # Each held posting's document is a candidate: find its place among them.
                col = np.zeros(len(cand), dtype=np.float64)
                col[np.searchsorted(cand, d)] = self._term(p, d)
                low += col
                if not in_order:
                    part[column[id(p)]] = col
        if bits is not None:
            keep = bitset.contains(bits, cand)
            if not keep.all():
                cand, low = cand[keep], low[keep]
                part = [c if c is None else c[keep] for c in part]
        if len(cand) < k:
            return None  # too few to set a bar: hold the next rarest term too
        outside = sum(p.idf for p in rest)  # a document holding none of `held` scores strictly less
        ahead = outside  # what the terms not yet looked up can still add
        kth = float(np.partition(low, len(low) - k)[len(low) - k])  # the k-th best lower bound
        for p in rest:
            # `low` is a lower bound of each candidate's score, `low + ahead` an upper one: only a
            # candidate whose upper bound reaches the k-th best lower bound can be in the top k
            # (the k best always do, so `kth` stays). The bounds are sums in another order than the
            # exact scores: the margin, far above rounding, keeps every candidate whose exact score could reach it.
            surv = np.flatnonzero(low + ahead >= kth - 1e-9 * (1.0 + kth))
            if len(surv) < len(cand):
                cand, low = cand[surv], low[surv]
                part = [c if c is None else c[surv] for c in part]
            deadline.check()
            where, s = self._at(p, cand)
            col = np.zeros(len(cand), dtype=np.float64)
            col[where] = s
            low += col
            if not in_order:
                part[column[id(p)]] = col
            ahead -= p.idf
            kth = float(np.partition(low, len(low) - k)[len(low) - k])
            if kth + ahead < outside:
                return None  # even at best a document holding only other terms could still enter
        if in_order:
            return top_k(cand, low, k)  # `low` is exact, and the last test was the one below (`ahead` is 0)
        # Exact scores: the contributions added in query order, as `scores` adds them (a term
        # missing from a document adds 0.0, which changes no sum), so they agree to the bit.
        acc = np.zeros(len(cand), dtype=np.float64)
        for col in part:
            if col is not None:
                acc += col
        if outside > float(np.partition(acc, len(acc) - k)[len(acc) - k]):
            return None
        return top_k(cand, acc, k)


def check_request(k: int, ranker: str) -> None:
    """Raise InvalidArgumentError unless `k` is a positive integer and `ranker` a known name."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidArgumentError(f"k must be a positive integer, got {k!r}")
    if ranker not in RANKER_NAMES:
        raise InvalidArgumentError(f"unknown ranker {ranker!r}; choose one of {', '.join(RANKER_NAMES)}")


def check_fallback_ranker(name: str | None) -> None:
    """Raise InvalidArgumentError unless `name` is None or a ranker that can rank the whole collection
    by the query's terms (not a soft ranker: those never fall back)."""
    if name is not None and (name not in RANKER_NAMES or name in SOFT_RANKERS):
        hard = [r for r in RANKER_NAMES if r not in SOFT_RANKERS]
        raise InvalidArgumentError(f"unknown fallback ranker {name!r}; choose one of {', '.join(hard)}")


class SegmentSearch:
    """One segment's share of every search: its filter, its BM25 and Indri scorers, all over its
    live documents and with the whole collection's statistics."""

    def __init__(self, seg: Segment, snapshot: Snapshot, params: BM25Params, indri: IndriParams, avgdl: float | None = None) -> None:
        self.seg = seg
        self.reader = seg.reader
        deleted = seg.deleted is not None
        self.evaluator = Evaluator(seg.reader, seg.live if deleted else None)
        # One segment with nothing deleted is its own collection: today's numbers, computed as a fresh build does.
        self.bm25 = BM25Scorer(seg.reader, params, avgdl if avgdl is not None else None if snapshot.dense else snapshot.avgdl,
                               self.evaluator.holders)
        self.indri = IndriScorer(seg.reader, indri, seg.live_flags if deleted else None)


class Searcher:
    """Search = match, then rank the admitted set (or, on zero hits, the whole collection), over
    every segment of a snapshot: each segment filters and scores its own documents with the
    collection's statistics, and the best of each are merged (equal scores in index order)."""

    def __init__(self, snapshot: Snapshot, params: BM25Params = BM25Params(), indri: IndriParams = IndriParams(),
                 collection: tuple[int, int] | None = None) -> None:
        """`collection`: (live documents, their total length) of the whole collection when
        `snapshot` is one shard of it (sieve.index.shard_service); BM25's idfs then come with each call."""
        self.snapshot = snapshot
        self.params = params
        self.collection = collection
        avgdl = collection[1] / collection[0] if collection and collection[0] else None
        self.parts = [SegmentSearch(seg, snapshot, params, indri, avgdl) for seg in snapshot.segments]
        self.dense: DenseScorer | None = None

    # ------------------------------------------------------------ filtering

    def segment_bits(self, plans: Plans, shared: bool = False) -> list[np.ndarray]:
        """Each segment's admitted set (local numbers, live documents only); with `shared`, some
        may be read-only rows of the index (`Evaluator.run`)."""
        return [part.evaluator.run(plan, shared) for part, plan in zip(self.parts, plans.parts)]

    def pairs(self, plans: Plans) -> list[tuple[Plan, Evaluator]]:
        return [(plan, part.evaluator) for part, plan in zip(self.parts, plans.parts)]

    # ------------------------------------------------------------ search

    def search(self, plans: Plans, k: int, ranker: str, fallback: bool = True, explain: bool = True, diagnose: bool = True,
               fallback_ranker: str | None = None) -> Results:
        """The best `k` of what `plans` admits, by `ranker`. If it admits nothing and `fallback` is on,
        the whole collection is ranked by the positive terms instead (`Results.fallback`), by
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
        clause_bits = [[part.evaluator.run(c) for c in plan.clauses] for part, plan in zip(self.parts, plans.parts)]
        missing = [str(c.node) for i, c in enumerate(plans.clauses) if not any(cb[i].any() for cb in clause_bits)]
        why = diagnose_parts(self.pairs(plans), clause_bits) if diagnose else None
        if not fallback or not (plans.terms or plans.text):
            return self._results(plans, ranker, None, None, explain, missing=missing, diagnosis=why)
        by = fallback_ranker or ranker
        top, scores = self.rank(plans, by, None, k)
        return self._results(plans, by, top, scores, explain, fallback=True, missing=missing, diagnosis=why)

    def _some_holder(self, plans: Plans) -> bool:
        """Whether a segment with nothing deleted admits every document of the query's terms'
        postings (`Plan.admits_holders`) and holds one: then the query admits something."""
        return any(_admits_holders(part, plan) and any(t >= 0 for t in plan.term_ids) for part, plan in zip(self.parts, plans.parts))

    def soft(self, plans: Plans, ranker: str, k: int, scores: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
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
            raise InvalidArgumentError(f"the {ranker} ranker needs embeddings attached (Index.use_dense)")
        pool = max(k, FUSION_POOL)
        best, _ = top_k(alive, scores[alive], pool, order)
        near, _ = self.dense.top(plans.text, None, None, pool)  # embeddings hold live documents only
        cand = distinct(np.concatenate((best, near[np.isfinite(scores[near])])))
        dense = np.log((1.0 + np.clip(self.dense.similarity(plans.text, cand), -1.0, 1.0)) / 2.0)
        return top_k(cand, (scores[cand] + dense) / 2.0, k, order)

    def indri_search(self, plans: Plans, k: int, ranker: str, explain: bool = True) -> Results:
        """A query in Indri's own language (its plans from `sieve.engine.query.indriql`), ranked by an
        Indri-style ranker over the documents it matches (`IndriScorer.holds`, within its #band,
        #filreq and date filters); `Results.count` is how many those are."""
        check_request(k, ranker)
        if ranker not in SOFT_RANKERS:
            raise InvalidArgumentError(f"an Indri query is ranked by {' or '.join(SOFT_RANKERS)}, not {ranker!r}")
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

    def bm25_top(self, plans: Plans, bits: "list[np.ndarray] | _Admitted | None", k: int,
                 idfs: tuple[float, ...] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """BM25's best k of the admitted sets `bits` (None: of the whole collection; an `_Admitted`:
        made only for the segments whose ranking needs them), by internal number; `idfs`: each
        positive term's idf in the whole collection, when this is one shard."""
        snap = self.snapshot
        if idfs is None and self.collection is not None:
            raise InvalidArgumentError("a shard's searcher needs the collection's idfs")
        if idfs is None and not snap.dense:  # the collection's N and document frequencies, over live documents
            idfs = tuple(float(idf(snap.n_live, snap.text_df([plan.term_ids[i] for plan in plans.parts])))
                         for i in range(len(plans.terms)))
        got_d: list[np.ndarray] = []
        got_s: list[np.ndarray] = []
        for j, (part, plan) in enumerate(zip(self.parts, plans.parts)):
            seg = part.seg
            admitted = None
            holders = bits is not None and _admits_holders(part, plan)
            got = None
            if bits is None:  # the whole collection: documents holding a term, live ones only
                b = None if seg.deleted is None else seg.live
            else:
                if holders and isinstance(bits, _Admitted):
                    got = part.bm25.top(plan.term_ids, None, None, k, idfs, None, True)
                if got is None:
                    b = bits[j]
                    admitted = bitset.count(b)  # the scorer lists the admitted documents only if it must
                    if not admitted:
                        continue
            d, sc = got if got is not None else part.bm25.top(plan.term_ids, None, b, k, idfs, admitted, holders)  # type: ignore[misc]
            got_d.append(d + seg.base if seg.base else d)
            got_s.append(sc)
        if len(got_d) == 1:
            return got_d[0], got_s[0]
        if not got_d:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return top_k(np.concatenate(got_d), np.concatenate(got_s), k, snap.order)

    def rank(self, plans: Plans, ranker: str, bits: list[np.ndarray] | None, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The best k by `ranker` of each segment's admitted set `bits` (None: the whole collection)."""
        if ranker == "bm25":
            return self.bm25_top(plans, bits, k)
        if self.dense is None:
            raise InvalidArgumentError(f"the {ranker} ranker needs embeddings attached (Index.use_dense)")
        docs: np.ndarray | None = None  # the whole collection (embeddings hold live documents only)
        whole: np.ndarray | None = None
        if bits is not None:
            whole = self.snapshot.join(bits)
            docs = bitset.to_ids(whole, self.snapshot.capacity)
        if not plans.text:  # nothing to compare: index order, as for BM25 with no positive term
            first = self.snapshot.in_order(docs)[:k] if docs is not None else np.zeros(0, dtype=np.int64)
            return first, np.zeros(len(first))
        if ranker == "dense":
            return self.dense.top(plans.text, docs, whole, k)
        pool = max(k, FUSION_POOL)
        return rrf([self.bm25_top(plans, bits, pool)[0], self.dense.top(plans.text, docs, whole, pool)[0]], k, order=self.snapshot.order)

    def _results(self, plans: Plans, ranker: str, docs: np.ndarray | None, scores: np.ndarray | None, explain: bool,
                 count: int | Callable[[], int] = 0, fallback: bool = False, missing: list[str] | None = None, diagnosis: Diagnosis | None = None) -> Results:
        hits = [] if docs is None or scores is None else self.hits(plans, docs, scores, explain)
        hints = colon_hints(plans.first.root.node, (n for n, _ in self.snapshot.schema.fields), plans.query)
        return Results(hits, count, plans.query, fallback, missing or [], ranker, plans.terms, plans.stems, plans.text, diagnosis,
                       self.snapshot.analyzer, hints)

    def hits(self, plans: Plans, docs: np.ndarray, scores: np.ndarray, explain: bool) -> list[Hit]:
        """Hits for ranked internal numbers: ids, and with `explain` the fields and sections matched."""
        snap = self.snapshot
        doc_list, score_list = docs.tolist(), scores.tolist()
        if not explain:
            # Every search makes these: `made` skips the frozen dataclass's setattr per field (1 -> 0.4 us a hit).
            return [made(Hit, {"doc_id": i, "rank": rank, "score": float(score), "fields": (), "sections": (), "doc": d, "section_numbers": ()})
                    for rank, (i, d, score) in enumerate(zip(snap.doc_ids(docs), doc_list, score_list), 1)]
        where: list[tuple[list, list[int]]] = [([], [])] * len(doc_list)
        groups: dict[int, list[tuple[int, int]]] = {}  # segment -> (place in the hits, local number)
        for at, d in enumerate(doc_list):
            j, local = snap.which(d)
            groups.setdefault(j, []).append((at, local))
        for j, items in groups.items():
            found = Explainer(self.parts[j].reader, plans.parts[j]).matched_many([local for _, local in items])
            for (at, _), w in zip(items, found):
                where[at] = w
        hits = []
        for rank, (i, d, score, (fields, sections)) in enumerate(zip(snap.doc_ids(docs), doc_list, score_list, where), 1):
            headings = snap.headings(d) if sections else ()  # the store is read only to name matched sections
            hits.append(made(Hit, {"doc_id": i, "rank": rank, "score": float(score), "fields": tuple(f.label for f in fields),
                                   "sections": tuple(headings[j] for j in sections), "doc": d, "section_numbers": tuple(sections)}))
        return hits


def _admits_holders(part: SegmentSearch, plan: Plan) -> bool:
    """Whether the segment's admitted set holds every document of the plan's terms' postings
    (`Plan.admits_holders`, and nothing deleted there)."""
    return part.seg.deleted is None and plan.admits_holders


class _Admitted:
    """Each segment's admitted set, evaluated when first asked for (`Searcher.search` of a query
    whose ranking may need none of them)."""

    __slots__ = ("searcher", "plans", "bits")

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


def rrf(orderings: list[np.ndarray], k: int, c: int = RRF_K, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal rank fusion: score(d) = sum over orderings of 1 / (c + rank), rank from 1
    (equal fused scores in index order: `order` as for `top_k`)."""
    fused: dict[int, float] = {}
    for ranking in orderings:
        for rank, d in enumerate(ranking.tolist(), 1):
            fused[d] = fused.get(d, 0.0) + 1.0 / (c + rank)
    if not fused:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    docs = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
    scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    return top_k(docs, scores, k, order)
