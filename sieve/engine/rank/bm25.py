"""BM25 as Lucene computes it (BM25Similarity, Lucene 8 and later), as pure functions over arrays.

    idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
    score(t, d) = idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))

Lucene 8 dropped the constant (k1 + 1) numerator factor of Robertson's formula (it does not change
any ranking); so do we. Unlike Lucene, document lengths are exact, not quantised to one byte.
tf counts the term in the document's title, headings and section texts; dl is their token count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class BM25Params:
    k1: float = 0.9
    b: float = 0.4


def idf(n_docs: int, df: int | np.ndarray) -> float | np.ndarray:
    """Lucene's BM25 idf; always positive."""
    return np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def length_norm(doc_len: npt.ArrayLike, avgdl: float, params: BM25Params) -> np.ndarray:
    """k1 * (1 - b + b * dl / avgdl) for every document: the part of the denominator that does not
    depend on the term, computed once when an index is opened."""
    return params.k1 * (1.0 - params.b + params.b * np.asarray(doc_len, dtype=np.float64) / avgdl)


def term_scores(
    tf: np.ndarray, norm: np.ndarray, idf_t: float, scratch: bool = False
) -> np.ndarray:
    """BM25 contribution of one term: idf * tf / (tf + norm), per posting. With `scratch`, `tf`
    (float64) and `norm` are the caller's temporaries: the scores are computed in their memory."""
    # The same operations as the formula, in place. Every fresh array of a long list is pages the
    # kernel must map and zero on first touch, which costs more than the arithmetic (measured: a
    # 71,556-posting word's search took 667 page faults): with `scratch`, none is made.
    out = tf if scratch and tf.dtype == np.float64 else np.array(tf, dtype=np.float64)
    den = np.add(out, norm, out=norm) if scratch else out + norm
    out *= idf_t
    out /= den
    return out


def add_scores(
    acc: np.ndarray, d: np.ndarray, s: np.ndarray, risen: list[np.ndarray], first: bool = False
) -> None:
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


class Posting(NamedTuple):  # made for every term of every search: a tuple, not a frozen dataclass
    lo: int  # the term's postings are post_doc[lo:hi]
    hi: int
    # also a strict upper bound of the term's score in any document: tf / (tf + norm) < 1
    idf: float
    tid: int = -1
