"""Resolving what the user wrote as words (`ast.Term`, `ast.Phrase`) into the leaf that runs: one
term, or the phrase of the terms a word or quoted text analyses into (stop words leave gaps)."""

from __future__ import annotations

from typing import Any

from sieve.engine.analysis.analyzers import STOP
from sieve.engine.query.bql import ast
from sieve.engine.query.ops.base import LeafOp, LeafPlan, Resolver
from sieve.engine.query.ops.phrase import PHRASE
from sieve.engine.query.ops.term import TERM
from sieve.errors import BQLLimitError


class WordsOp(LeafOp):
    """Resolution only: its leaves run as TERM or PHRASE."""

    name = "words"
    nodes = (ast.Term, ast.Phrase)

    def leaf(self, b: Resolver, node: Any) -> LeafPlan:
        return word_leaf(b, node, node.word if type(node) is ast.Term else node.text)


WORDS = WordsOp()


def word_leaf(b: Resolver, node: Any, written: str) -> LeafPlan:
    """The leaf of a word or a phrase: one term, or the phrase of the terms it analyses into."""
    terms, offsets, mask, declared = b.analysed(node, _words, written)
    words = offsets[-1] + 1  # stop words inside count: each stands for a word
    if words > b.limits.max_phrase_words:
        raise BQLLimitError(
            "phrase length",
            words,
            b.limits.max_phrase_words,
            "words in one phrase; quote its rarest few words,"
            " or leave the quotes off to find the words anywhere",
            pos=node.span[0],
        )
    tids = b.ids(terms)
    if len(terms) == 1:
        return LeafPlan(
            node, TERM, terms, tids, mask=mask, text=written, declared=declared, size=b.df(tids[0])
        )
    # Only the rarest term's positions are scanned; the others are probed by binary search.
    volume = 0 if min(tids) < 0 else min(b.r.position_count(t) for t in tids)
    return LeafPlan(
        node,
        PHRASE,
        terms,
        tids,
        mask=mask,
        volume=volume,
        text=written,
        offsets=offsets,
        declared=declared,
    )


def _words(
    b: Resolver, node: Any, written: str
) -> tuple[tuple[str, ...], tuple[int, ...], int, str]:
    """(terms, each one's place relative to the first, mask, declared field) of a word or phrase."""
    analysed = b.analyzer.analyze(written)
    if (
        len(analysed) == 1 and analysed[0] != STOP
    ):  # one term (most words): no places to list and shift
        mask, declared, ns = b.scope(node.fields)
        return (ns(analysed[0]),), (0,), mask, declared
    # Stop words are not indexed: at either end of a phrase they are dropped, inside one
    # they stand for any one word (their place is kept), as in Lucene (docs/bql.md).
    placed = [(i, t) for i, t in enumerate(analysed) if t != STOP]
    if not placed:
        raise b.all_stop(node, written)
    mask, declared, ns = b.scope(node.fields)
    return (
        tuple(ns(t) for _, t in placed),
        tuple(i - placed[0][0] for i, _ in placed),
        mask,
        declared,
    )
