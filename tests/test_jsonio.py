"""sieve.common.jsonio against the standard library's json, its oracle: the same values and the same errors."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sieve
from sieve.common import jsonio

COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types all the way down (an int is not a float; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return bool(a == b)


def outcome(f: Any, *args: Any) -> tuple[str, Any]:
    try:
        return "value", f(*args)
    except Exception as e:  # noqa: BLE001 - the oracle's exception is what is compared
        return "error", (type(e), str(e))


def agree(text: str | bytes) -> None:
    got, want = outcome(jsonio.loads, text), outcome(lambda t: json.loads(t, strict=False), text)
    assert got[0] == want[0], (text, got, want)
    if got[0] == "value":
        assert same(got[1], want[1]), (text, got, want)
    else:
        assert got[1] == want[1]


scalars = st.one_of(
    st.none(), st.booleans(), st.text(), st.floats(),
    st.integers(), st.integers(min_value=-(2**70), max_value=2**70), st.sampled_from([2**63, 2**64, -(2**63) - 1, 2**64 - 1, -(2**63)]),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(values, st.sampled_from(["compact", "spaced", "ascii"]))
def test_loads_reads_every_json_text_as_json_does(value: Any, style: str) -> None:
    text = {"compact": COMPACT.encode, "spaced": json.dumps, "ascii": lambda v: json.dumps(v, ensure_ascii=True, indent=1)}[style](value)
    agree(text)
    agree(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet='{}[]":,0123456789.eE+-tfalsenuNIy \t\r\n\\u\x00\x1fa\u00e9\ud800', max_size=30))
def test_loads_fails_or_succeeds_as_json_does_on_any_text(text: str) -> None:
    agree(text)


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}',  # the last duplicate wins
    "18446744073709551616", "-9223372036854775809", "[1, 18446744073709551615, -9223372036854775808]",
    '{"id": 123456789012345678901234567890}', "1e400", "-1e400", "NaN", "[Infinity, -Infinity]", "1e19", "-0", "-0.0",
    '"a\tb"', '"\\ud800"', '"\\udc00x"', '"\\ud83d\\ude00"', "[" * 2000 + "]" * 2000, "1" * 5000, "\ufeff{}", "", "  ", "01", "1.",
])
def test_loads_edges(text: str) -> None:
    agree(text)


class Colour(enum.Enum):
    RED = 1


@dataclasses.dataclass
class Point:
    x: int


@pytest.mark.parametrize("obj", [
    {"a": "b", "c": ["d"], "e": {"f": "g"}},
    {"n": float("nan"), "i": float("inf")},  # json writes NaN and Infinity; orjson would write null
    {"m": {"n": [float("-inf")]}},
    {"big": 2**64, "small": -(2**63) - 1, "edge": [2**64 - 1, -(2**63)]},
    {"f": 1e16, "g": -0.0, "h": 1.5e-300},
    {"k": {1: "int key"}},  # json writes "1"; orjson refuses
    {"deep": [[["x"]]], "t": (1, 2)},
    {"ctl": "a\x00\x1f\x7f\u2028\"\\/"},
])
def test_dumps_reads_back_as_json_writes(obj: dict[str, Any]) -> None:
    got = json.loads(jsonio.dumps(obj))
    assert same(got, json.loads(COMPACT.encode(obj)))


@pytest.mark.parametrize("value", [datetime.date(2020, 1, 2), uuid.UUID(int=5), Colour.RED, Point(1), b"bytes", {1, 2}])
def test_dumps_refuses_what_json_refuses(value: Any) -> None:
    """orjson writes dates, UUIDs, enums and dataclasses; json refuses them, so dumps does too."""
    with pytest.raises(TypeError) as want:
        COMPACT.encode({"v": value})
    with pytest.raises(TypeError) as got:
        jsonio.dumps({"v": value})
    assert str(got.value) == str(want.value)


def test_dumps_of_a_lone_surrogate_raises_as_json_did() -> None:
    with pytest.raises(UnicodeEncodeError):
        jsonio.dumps({"a": "x\ud800"})


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=4), values, max_size=5))
def test_dumps_agrees_with_json_on_any_dictionary(obj: dict[str, Any]) -> None:
    got, want = outcome(lambda o: json.loads(jsonio.dumps(o)), obj), outcome(lambda o: json.loads(COMPACT.encode(o).encode()), obj)
    assert got[0] == want[0]
    if got[0] == "value":
        assert same(got[1], want[1])
    else:
        assert got[1][0] == want[1][0]


def test_a_corpus_keeps_what_orjson_alone_would_change(tmp_path: Path) -> None:
    """Through a real build: a 20-digit integer id stays that integer's digits, metadata keeps its
    NaN, integers past 64 bits and raw tabs, and a stored record reads back as it was written."""
    lines = [
        '{"id": 123456789012345678901, "title": "big id", "text": "alpha"}',
        '{"id": "n", "title": "nan", "text": "beta", "score": NaN, "count": 18446744073709551616, "note": "a\tb"}',
        '{"id": "p", "title": "plain", "text": "gamma", "tags": ["x", 1, 2.5, true, null]}',
    ]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = sieve.build_index(corpus, tmp_path / "idx")
    assert index.document("123456789012345678901").title == "big id"
    meta = index.document("n").metadata
    assert math.isnan(meta["score"]) and meta["count"] == 18446744073709551616 and type(meta["count"]) is int
    assert meta["note"] == "a\tb"
    assert index.document("p").metadata["tags"] == ["x", 1, 2.5, True, None]
