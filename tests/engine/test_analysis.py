"""The analyzer: folding, splitting, and agreement between the ASCII fast path and the full path."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.analysis.analyzers import SEPARATOR, analyze, analyze_joined


@pytest.mark.parametrize(
    "text, terms",
    [
        ("Zürich", ["zurich"]),
        ("O_RDONLY", ["o", "rdonly"]),
        ("Straße", ["strasse"]),
        ("ﬁle", ["file"]),  # NFKC ligature
        ("Ångström café", ["angstrom", "cafe"]),
        ("naïve-résumé", ["naive", "resume"]),
        ("x² + H₂O", ["x2", "h2o"]),
        ("IPv6 port 8080", ["ipv6", "port", "8080"]),
        ("東京タワー", ["東京タワー"]),
        ("ΣΊΣΥΦΟΣ", ["σισυφοσ"]),
        ("don't stop", ["don", "t", "stop"]),
        ("   ", []),
        ("", []),
        ("--- *** ///", []),
        ("a\u0301b", ["ab"]),  # combining mark removed, no split
    ],
)
def test_examples(text: str, terms: list[str]) -> None:
    assert analyze(text) == terms


def _reference(text: str) -> list[str]:
    """A slow, obviously-correct reading of the rules, character by character."""
    s = unicodedata.normalize("NFKC", text).casefold()
    s = "".join(c for c in unicodedata.normalize("NFD", s) if not unicodedata.category(c).startswith("M"))
    s = unicodedata.normalize("NFC", s)
    out, cur = [], []
    for c in s:
        if c.isalnum() and c != "_":
            cur.append(c)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40))
def test_matches_the_rules_on_any_text(text: str) -> None:
    assert analyze(text) == _reference(text)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_fast_path_equals_full_path(text: str) -> None:
    assert analyze(text) == _reference(text)


def test_idempotent_on_its_own_output() -> None:
    for word in ["zurich", "strasse", "東京タワー", "x2"]:
        assert analyze(" ".join(analyze(word))) == analyze(word)


def test_the_lazy_mark_table_deletes_exactly_the_combining_marks() -> None:
    import sys
    import unicodedata

    from sieve.engine.analysis.analyzers import _MARKS

    text = "".join(chr(cp) for cp in range(0x80, sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF)
    want = "".join(c for c in text if not unicodedata.category(c).startswith("M"))
    assert text.translate(_MARKS) == want
    assert text.translate(_MARKS) == want  # and again from the filled table


_ASCII = st.text(alphabet=st.characters(max_codepoint=127), max_size=30)
_ANY = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
# Mostly ASCII with a few others (letters, digits, punctuation, spaces, a lone surrogate), as real text is.
_MOSTLY_ASCII = st.text(alphabet=st.one_of(st.characters(max_codepoint=127), st.sampled_from("éïÉ’“”—€²ßΣς東\u2003\x85\u0660\u0301\ud800")), max_size=30)


@settings(max_examples=300)
@given(st.lists(st.one_of(_ASCII, _MOSTLY_ASCII, _ANY), max_size=12))
def test_a_joined_batch_equals_each_text_analysed_alone(texts: list[str]) -> None:
    """Batches of ASCII texts (split without the regex), other texts, and runs of both: the
    terms of each text in turn, each text's followed by SEPARATOR (NULs, controls and
    underscores inside a text included)."""
    assert analyze_joined(texts) == [t for text in texts for t in [*analyze(text), SEPARATOR]]


def test_a_joined_batch_of_mixed_runs() -> None:
    texts = ["Fast_Path 42", "a\x00b", "Zürich café’s", "ΣΊΣΥΦΟΣ", "\x1cplain\x0btext\t", "", "東京 x2"]
    assert analyze_joined(texts) == ["fast", "path", "42", SEPARATOR, "a", "b", SEPARATOR, "zurich", "cafe", "s", SEPARATOR,
                                     "σισυφοσ", SEPARATOR, "plain", "text", SEPARATOR, SEPARATOR, "東京", "x2", SEPARATOR]


@pytest.mark.parametrize("context", ["one two three four five a{}b six", "{}x", "e\u0301{}\u0338 word. {}"])
def test_every_character_splits_and_folds_as_the_query_side_does(context: str) -> None:
    """A batch folds only the chunks that hold other characters than ASCII (or the whole text when
    they are dense): every 5th code point, inside mostly-ASCII text and alone, gives the terms
    `analyze` gives each text (the query side, which folds the whole text)."""
    texts = [context.format(chr(c), chr(c)) for c in range(0, 0x110000, 5) if not 0xD800 <= c <= 0xDFFF]
    assert analyze_joined(texts) == [t for text in texts for t in [*analyze(text), SEPARATOR]]


def test_folding_only_the_chunks_that_need_it() -> None:
    mostly_ascii = "It\u2019s a \ufb01le na\u0131ve E\u0301TE \u212a <\u0338 x\u00a0y \u00bd caf\u00e9"
    cyrillic = "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u0401\u043b\u043a\u0430"
    assert analyze_joined([mostly_ascii, cyrillic]) == [*analyze(mostly_ascii), SEPARATOR, *analyze(cyrillic), SEPARATOR]
    assert analyze(mostly_ascii) == ["it", "s", "a", "file", "na\u0131ve", "ete", "k", "x", "y", "1", "2", "cafe"]
    assert analyze(cyrillic) == ["\u043f\u0440\u0438\u0432\u0435\u0442", "\u043c\u0438\u0440", "\u0435\u043b\u043a\u0430"]


def test_the_kept_words_of_chunks_stay_bounded_and_right(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch folds each chunk with other characters than ASCII once and keeps its words (up to
    a bound, then starts again): the same terms every time, from kept words or fresh."""
    from sieve.engine.analysis import analyzers as analysis

    monkeypatch.setattr(analysis, "_CHUNK_WORDS", {})
    monkeypatch.setattr(analysis, "_CHUNKS_KEPT", 5)
    texts = [f"caf\u00e9{i} na\u00efve\u2014{i % 3} \ufb01le" for i in range(40)]
    for _ in range(2):
        assert analyze_joined(texts) == [t for text in texts for t in [*analyze(text), SEPARATOR]]
        assert 0 < len(analysis._CHUNK_WORDS) <= 5
