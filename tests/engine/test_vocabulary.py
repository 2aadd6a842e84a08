"""Numbering a batch's words where they lie (sieve.engine.analysis.vocabulary): the same terms as analysing
each text alone, the same id for a word in every batch, whatever its length or script."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.analysis.analyzers import SEPARATOR, STOP, analyze, get_analyzer, joined_bytes
from sieve.engine.analysis.vocabulary import KeyTable, Vocabulary


def _terms(vocab: Vocabulary, numbered: tuple[np.ndarray, np.ndarray]) -> list[str]:
    """The terms `ids_of` numbered, each text's followed by SEPARATOR."""
    names = list(vocab.ids)
    ids, counts = numbered
    assert ids.dtype == np.int32 and counts.dtype == np.int32 and counts.sum() == len(ids)
    words = iter(ids.tolist())
    return [t for c in counts.tolist() for t in [*(names[next(words)] for _ in range(c)), SEPARATOR]]


def _expected(texts: list[str]) -> list[str]:
    return [t for text in texts for t in [*analyze(text), SEPARATOR]]


# Words around the key's lengths (8 and 16 bytes), sharing their first 8 or 16 bytes, in two-byte
# and three-byte characters too, and longer ones.
_EDGE_WORDS = ["a", "function", "functions", "functionsabcdefg", "functionsabcdefgh", "functionsabcdefghi",
               "abcdefgh", "abcdefghabcdefgh", "abcdefghabcdefgh1", "zürich", "zurich", "ßßßßß", "東京東京東京", "東京東京東京東",
               "x" * 40, "x" * 41, "0", "007", "k\u0301"]
_TEXT = st.lists(st.one_of(st.sampled_from(_EDGE_WORDS), st.text(max_size=12)), max_size=12).map(
    lambda parts: " ".join(parts))
_SEPARATORS = st.sampled_from([" ", ", ", "\x00", "_", "\u2014", "\t\n", "’"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.tuples(_TEXT, _SEPARATORS).map("".join), max_size=8), min_size=1, max_size=4))
def test_batches_number_the_terms_each_text_has_alone(batches: list[list[str]]) -> None:
    """Every batch through one vocabulary: each token's id names the term `analyze` finds there,
    and a term keeps its id from batch to batch."""
    vocab = Vocabulary()
    seen: dict[str, int] = {}
    for texts in batches:
        numbered = vocab.ids_of(joined_bytes(texts))
        assert _terms(vocab, numbered) == _expected(texts)
        for term, i in zip([t for t in _terms(vocab, numbered) if t != SEPARATOR], numbered[0].tolist()):
            assert seen.setdefault(term, i) == i


def test_words_that_share_a_key_prefix_stay_apart() -> None:
    texts = [" ".join(_EDGE_WORDS), " ".join(reversed(_EDGE_WORDS)), "functions function FUNCTIONS"]
    vocab = Vocabulary()
    first = vocab.ids_of(joined_bytes(texts))
    assert _terms(vocab, first) == _expected(texts)
    again = vocab.ids_of(joined_bytes(texts))  # every word known now: no new ids
    assert np.array_equal(first[0], again[0]) and np.array_equal(first[1], again[1])
    assert len(vocab.ids) == len(set(_expected(texts)))


def test_a_stemming_vocabulary_numbers_stems_and_stop_words() -> None:
    analyzer = get_analyzer("english", "english")
    texts = ["The running runners ran", "runs and RUNNING", "a photographically long wordwordwordword"]
    vocab = Vocabulary(analyzer)
    ids = vocab.ids_of(joined_bytes(texts))
    want = [t for text in texts for t in [*analyzer.analyze(text), SEPARATOR]]
    assert _terms(vocab, ids) == want
    assert STOP in want and vocab.stop_id == vocab.ids[STOP]


def test_an_empty_batch_and_texts_without_words() -> None:
    vocab = Vocabulary()
    ids, counts = vocab.ids_of(b"")
    assert len(ids) == len(counts) == 0
    ids, counts = vocab.ids_of(joined_bytes(["", "  ...  ", "\u2014"]))
    assert len(ids) == 0 and counts.tolist() == [0, 0, 0]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 2**64 - 1), st.integers(0, 2**64 - 1)), max_size=300, unique=True), st.booleans())
def test_the_key_table_against_a_dict(keys: list[tuple[int, int]], pairs: bool) -> None:
    """Inserted in several rounds into a table that starts with 16 slots (so it grows and its
    probes run long), every key finds its value and no other key finds one."""
    if not pairs:
        keys = list(dict.fromkeys((lo, 0) for lo, _ in keys))
    table = KeyTable(pairs, bits=4)
    lo = np.array([k[0] for k in keys], dtype=np.uint64)
    hi = np.array([k[1] for k in keys], dtype=np.uint64) if pairs else None
    inserted = len(keys) // 2
    for a, b in [(0, inserted // 2), (inserted // 2, inserted)]:
        table.insert(lo[a:b], None if hi is None else hi[a:b], np.arange(a, b, dtype=np.int32))
    got = table.find(lo, hi)
    want = [i if i < inserted else -1 for i in range(len(keys))]
    assert got.tolist() == want
    assert 2 * table.used <= len(table.value)
