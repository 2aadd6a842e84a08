"""BM25's best k over one segment's postings, restricted to a candidate set: a plain scan (in
chunks), MaxScore (`BM25Scorer.top`, `_pruned`) and a windowed scan over window maxima
(`sieve.engine.rank.windows`), each giving the same documents and the same scores, to the bit."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import numpy as np

from sieve.engine import deadline
from sieve.engine.format import bitset
from sieve.engine.format.distinct import distinct
from sieve.engine.format.ranges import ragged
from sieve.engine.rank import windows
from sieve.engine.rank.bm25 import (
    BM25Params,
    Posting,
    add_scores,
    idf,
    length_norm,
    term_scores,
)
from sieve.engine.rank.topk import top_k
from sieve.engine.segment.reader import SegmentReader, search_sorted

# Postings scored at a time in a scan (64 KB of floats: sizes malloc reuses without new pages).
CHUNK = 8192
# _one unpacks the admitted set to one byte a document when the list is at least this share of
# the documents (1/UNPACK_SHARE); a shorter list tests its documents' bits.
UNPACK_SHARE = 64
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
# 1/_WINDOWED_SHARE of the postings: gathering a posting
# costs about twice what reading it in order does.
_WINDOWED_SHARE = 2
# ... and is not tried for a k above 1/_WINDOWS_PER_RANK of the windows (a hybrid search's pool of
# 1,000 at 100,000 documents): the k-th best score then bars too few windows to pay for the rounds.
_WINDOWS_PER_RANK = 4


class BM25Scorer:
    """Vectorised BM25 over postings restricted to a candidate set."""

    def __init__(
        self,
        reader: SegmentReader,
        params: BM25Params = BM25Params(),
        avgdl: float | None = None,
        holders: Callable[[int], np.ndarray] | None = None,
    ) -> None:
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
        # Accumulators kept between scans, one per scan
        # running at once (scorers are shared by threads).
        self._spare: list[np.ndarray] = []
        self._spare_lock = threading.Lock()
        # terms' window maxima, for the norms of these parameters
        self.windows = windows.WindowCache()

    def _postings(
        self, tids: tuple[int, ...], idfs: tuple[float, ...] | None = None
    ) -> list[Posting]:
        """`idfs`: each term's idf over the whole collection (default:
        from this reader's statistics)."""
        r, out = self.r, []
        for i, tid in enumerate(tids):
            if tid >= 0:
                w = idfs[i] if idfs is not None else float(idf(r.n_docs, int(r.text_df[tid])))
                out.append(Posting(int(r.post_ptr[tid]), int(r.post_ptr[tid + 1]), w, tid))
        return out

    def _at(self, p: Posting, docs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(index into `docs`, the term's score there) for the `docs`
        (ascending) that hold the term."""
        if self.holders is not None and p.tid >= 0 and len(docs) * _RANKED_SHARE >= self.r.n_docs:
            # Many candidates: each one's posting is its rank in the set of the term's documents
            # (stored rows, mostly, for a frequent term), with no binary search in the postings.
            where, at = bitset.ranks(self.holders(p.tid), docs)
        else:
            pdocs = self.r.post_doc[p.lo : p.hi]
            at = search_sorted(pdocs, docs)
            # past the end: compared with the last, which is smaller
            np.minimum(at, len(pdocs) - 1, out=at)
            where = np.flatnonzero(pdocs[at] == docs)
            at = at[where]
        return where, term_scores(
            self.r.text_tf(p.lo, p.hi, at, np.float64), self.norm[docs[where]], p.idf, scratch=True
        )

    def scores(
        self, tids: tuple[int, ...], docs: np.ndarray | None, idfs: tuple[float, ...] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(documents, BM25 score) of the terms `tids` (-1: absent). `docs`: the candidate set, or
        None for every document (then only documents containing a term are returned)."""
        return self._scores(self._postings(tids, idfs), docs)

    def _term(self, p: Posting, d: np.ndarray, lo: int | None = None) -> np.ndarray:
        """The term's score in its postings from `lo` (default: its first)
        on, whose documents are `d`."""
        lo = p.lo if lo is None else lo
        # np.take gathers by postings' numbers faster than
        # indexing does (measured on int32: 1.5-2.5x).
        # tf 0 (the term only in author or infobox) scores 0: harmless, and cheaper than filtering.
        return term_scores(
            self.r.text_tf(lo, lo + len(d), dtype=np.float64),
            np.take(self.norm, d),
            p.idf,
            scratch=True,
        )

    def _chunks(self, p: Posting) -> Iterator[tuple[np.ndarray, np.ndarray]]:
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

    def _scores(
        self,
        postings: list[Posting],
        docs: np.ndarray | None,
        bits: np.ndarray | None = None,
        ordered: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
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
                    parts = self._chunks(p)  # type: ignore[assignment]  # a list or an iterator: only iterated
                for d, s in parts:
                    add_scores(acc, d, s, risen, p is postings[0])
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

    def top(
        self,
        tids: tuple[int, ...],
        docs: np.ndarray | None,
        bits: np.ndarray | None,
        k: int,
        idfs: tuple[float, ...] | None = None,
        admitted: int | None = None,
        holders: bool = False,
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """`top_k(*scores(tids, docs), k)` (`bits`: `docs` as a bitset; with `docs` None, the
        documents that may appear), the same documents and the same scores, without scanning every
        posting of frequent terms when that provably cannot change the top k. `admitted` (with
        `docs` None): `bits` is the admitted set, of that many documents, and is read as a list of
        numbers only if every posting must be scored (MaxScore needs none). `holders`: the admitted
        set holds every document of the terms' postings (`Plan.admits_holders`, in a segment with
        nothing deleted), so the documents scored are not tested against it; it may then be left out
        (`bits` and `admitted` None), and None is returned when it is needed: when fewer than k
        documents score above 0 (the set's others fill the ranks).

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
                    # the held terms' postings are not few:
                    # scoring them all is about the scan's cost
                    break
                if sum(p.idf for p in held) < sum(p.idf for p in rest):
                    # a document would need most of the other terms too: the bound rarely holds
                    continue
                got = self._pruned(postings, held, rest, test, k)
                if got is not None:
                    return got
        # `bits` is the admitted set, or left out
        if docs is None and (admitted is not None or holders):
            # Unless the admitted documents are few next to the postings (an AND, a filter: then
            # they are listed and looked up below), the postings are scanned, and the admitted
            # documents that score above 0 come from them: when there are k of them, no other
            # admitted document (scoring 0) can enter, and the admitted set need not be listed.
            if postings and (
                admitted is None or admitted * 16 >= max(p.hi - p.lo for p in postings)
            ):
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

    def term_windows(self, p: Posting) -> windows.TermWindows:
        """A term's postings by window of documents, with each window's largest tf / (tf + norm):
        measured at its first windowed scan, in the scan's pieces, and kept (a rare term too: the
        fixed cost, some 40 us, is most of what measuring it takes)."""
        got = self.windows.get(p.lo)
        if got is None:
            # idf 1: the fractions
            got = windows.measure(self._chunks(Posting(p.lo, p.hi, 1.0)), self.r.n_docs)
            self.windows.put(p.lo, got)
        return got

    def _windowed(
        self, postings: list[Posting], bits: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """What a scan's `top_k` gives (the documents in `bits`, None: all, that score above 0),
        scoring only the windows of documents whose bound reaches the k-th best score
        (`sieve.engine.rank.windows`): in rounds, the windows with the highest bounds first, each
        round skipping the windows whose bound is below the k-th best score found so far. None when
        the postings are too few or k too large to be worth it, when most of the postings would be
        scored anyway (a scan is then cheaper), or when fewer than k documents score."""
        total = sum(p.hi - p.lo for p in postings)
        if (
            not postings
            or total < _WINDOWED_MIN
            or k * _WINDOWS_PER_RANK > windows.window_count(self.r.n_docs)
        ):
            return None
        spans = [self.term_windows(p) for p in postings]
        bound = np.zeros(len(spans[0].best))
        sizes = np.zeros(len(bound), dtype=np.int64)
        for p, tw in zip(postings, spans):
            # in float64: a float32 product could round below
            bound += tw.best.astype(np.float64) * p.idf
            sizes += np.diff(tw.starts)
        # A document's score is a sum of terms' contributions, each within rounding of idf times its
        # fraction: the margin, far above rounding, keeps
        # every window whose documents could reach the bar.
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
                upto = min(
                    len(order),
                    int(np.searchsorted(reached, want + (reached[done - 1] if done else 0))) + 1,
                )
                chosen = order[done:upto]
                self._score_windows(
                    postings, spans, np.sort(chosen[bound[chosen] >= bar]), acc, risen, found, bits
                )
                done, want = upto, want * 2
                if sum(len(f) for f in found) >= k:
                    cand = np.concatenate(found)
                    found[:] = [cand]
                    got = acc[cand]
                    bar = float(np.partition(got, len(got) - k)[len(got) - k])
            if cand is None:
                # fewer than k score above 0: the caller fills ranks from the admitted set
                return None
            return top_k(cand, acc[cand], k)
        finally:
            for d in risen:
                acc[d] = 0.0
            self._give(acc)

    def _score_windows(
        self,
        postings: list[Posting],
        spans: list[windows.TermWindows],
        chosen: np.ndarray,
        acc: np.ndarray,
        risen: list[np.ndarray],
        found: list[np.ndarray],
        bits: np.ndarray | None,
    ) -> None:
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
            add_scores(
                acc,
                d,
                term_scores(
                    self.r.text_tf(p.lo, p.hi, at, np.float64),
                    np.take(self.norm, d),
                    p.idf,
                    scratch=True,
                ),
                risen,
                p is postings[0],
            )
        if len(risen) > before_round:
            new = np.concatenate(risen[before_round:])
            found.append(new if bits is None else new[bitset.contains(bits, new)])

    def _one(
        self, p: Posting, bits: np.ndarray | None, k: int
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """The top k of one term's admitted postings (`bits`: the admitted set; None: all), when at
        least k of them score above 0: then no other admitted document (scoring 0) can enter, and
        neither the admitted set's list nor a sum per document is needed. None otherwise."""
        best_d: list[np.ndarray] = []
        best_s: list[np.ndarray] = []
        scored = 0
        r = self.r
        # Membership: a long list tests one byte per document (unpacked once), a short one its
        # own documents' bits (unpacking 100,000 documents costs more than a few hundred tests).
        flags = None
        if bits is not None and (p.hi - p.lo) * UNPACK_SHARE >= r.n_docs:
            flags = bitset.to_bool(bits, len(bits) * 64)
        for a in range(p.lo, p.hi, CHUNK):
            deadline.check()
            b = min(a + CHUNK, p.hi)
            d = r.post_doc[a:b]
            sel = keep = None
            if bits is not None:
                keep = flags[d] if flags is not None else bitset.contains(bits, d)
                kept = int(np.count_nonzero(keep))
                if kept == len(d):
                    keep = None
                elif kept * 2 < len(d):
                    # Only the admitted postings are scored (a field's share of a common word
                    # is often a few percent of it); each score is the same to the bit.
                    sel = np.flatnonzero(keep)
                    keep = None
                    if not len(sel):
                        continue
                    d = d[sel]
            s = term_scores(r.text_tf(a, b, sel, np.float64), np.take(self.norm, d), p.idf, True)
            if keep is not None:  # most are admitted: scoring all and dropping a few is cheaper
                d, s = d[keep], s[keep]
            scored += int(np.count_nonzero(s))
            # A chunk's best k hold every document of it in the whole top k (chunks are in
            # document order, so ties across chunks fall as they would in one list).
            d, s = top_k(d, s, k)
            best_d.append(d)
            best_s.append(s)
        if scored < k:
            return None
        if len(best_d) == 1:
            return best_d[0], best_s[0]
        return top_k(np.concatenate(best_d), np.concatenate(best_s), k)

    def _pruned(
        self,
        postings: list[Posting],
        held: list[Posting],
        rest: list[Posting],
        bits: np.ndarray | None,
        k: int,
    ) -> tuple[np.ndarray, np.ndarray] | None:
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
            # exact scores: the margin, far above rounding, keeps
            # every candidate whose exact score could reach it.
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
            # `low` is exact, and the last test was the one below (`ahead` is 0)
            return top_k(cand, low, k)
        # Exact scores: the contributions added in query order, as `scores` adds them (a term
        # missing from a document adds 0.0, which changes no sum), so they agree to the bit.
        acc = np.zeros(len(cand), dtype=np.float64)
        for exact in part:
            if exact is not None:
                acc += exact
        if outside > float(np.partition(acc, len(acc) - k)[len(acc) - k]):
            return None
        return top_k(cand, acc, k)
