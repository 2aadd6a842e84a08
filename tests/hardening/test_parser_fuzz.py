"""The BQL parser never crashes and never hangs: every input parses (and prints back to the same
tree) or raises BQLSyntaxError (with a position inside the query) or BQLLimitError, nothing else;
parsed queries run on a real index with nothing but sieve errors. Seeded (derandomized) hypothesis.

Timing (how fast pathological inputs are rejected) is measured in benchmarks/bench_fuzz.py.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sieve
from sieve.engine.query.bql import parse
from sieve.engine.query.bql.ast import Filter, _walk
from sieve.engine.query.bql.parser import MAX_CLAUSES, MAX_DEPTH, MAX_NEGATIONS, MAX_QUERY_CHARS
from sieve.errors import BQLLimitError, BQLSyntaxError, SieveError

from .bql_gen import PATHOLOGICAL, any_text, decoded_bytes, grammar_query, outcome, token_soup
from .synth import records

def seeded(n: int) -> settings:
    return settings(max_examples=n, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
SEEN: Counter[str] = Counter()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    """Opened with the language's own limits: these tests are the grammar's, up to its 10,000
    characters (the default `Limits`, lower, are tests/hardening/test_query_limits.py's)."""
    path = tmp_path_factory.mktemp("fuzz") / "idx"
    sieve.build_index(records(120, seed=5), path, jobs=1)
    return sieve.open_index(path, limits=sieve.Limits(max_query_chars=MAX_QUERY_CHARS, max_phrase_words=MAX_QUERY_CHARS))


def _run(index: sieve.Index, q: str) -> None:
    """The parser property, then the same query on the index: a result or a sieve error."""
    kind = outcome(q).split(",")[0]
    SEEN[kind] += 1
    # A filter field is checked against the index it meets: a query that parses but names one this
    # index does not declare ("the" + "date[2023]" is thedate[2023]) gets a syntax error at its name.
    undeclared = kind == "ok" and any(isinstance(n, Filter) and index.schema.type_of(n.name) is None for n in _walk(parse(q)))
    try:
        m = index.match(q)
        assert kind == "ok" and not undeclared and m.query == str(parse(q))
        index.search(q, k=3)
    except (BQLSyntaxError, BQLLimitError) as e:
        if undeclared:
            assert isinstance(e, BQLSyntaxError) and str(e).startswith("unknown filter field"), (q, e)
        else:
            assert kind != "ok" or isinstance(e, BQLLimitError), (q, e)  # a prefix over the cap is found at run time
    except SieveError as e:
        raise AssertionError(f"{q!r}: {e!r}") from e


@seeded(1000)
@given(q=grammar_query)
def test_grammar_driven_queries(index: sieve.Index, q: str) -> None:
    _run(index, q)


@seeded(700)
@given(q=token_soup)
def test_token_soup(index: sieve.Index, q: str) -> None:
    _run(index, q)


@seeded(700)
@given(q=any_text)
def test_any_unicode_text(index: sieve.Index, q: str) -> None:
    _run(index, q)


@seeded(400)
@given(q=decoded_bytes)
def test_random_bytes_decoded_with_surrogateescape(index: sieve.Index, q: str) -> None:
    _run(index, q)


def test_the_fuzzers_reach_every_outcome() -> None:
    # Runs after the four above in file order; guards against a generator that only makes errors.
    if sum(SEEN.values()) < 2800:
        pytest.skip("the fuzz tests above did not all run")
    assert SEEN["ok"] >= 500 and SEEN["syntax"] >= 500, SEEN


# ------------------------------------------------------------------ pathological inputs



@pytest.mark.parametrize("what, q, error, message", PATHOLOGICAL, ids=[p[0] for p in PATHOLOGICAL])
def test_pathological_inputs_are_rejected(index: sieve.Index, what: str, q: str, error: type, message: str) -> None:
    with pytest.raises(error) as info:
        parse(q)
    assert message in str(info.value)
    assert info.value.pos is None or 0 <= info.value.pos <= len(q)
    with pytest.raises(error):
        index.match(q)


VALID_EXTREMES = [
    ("32 nested parentheses", "(" * MAX_DEPTH + "heatwave" + ")" * MAX_DEPTH),
    ("100 NOTs", "NOT " * MAX_NEGATIONS + "heatwave"),
    ("100 minus signs in a row of words", " ".join(["-heatwave"] * MAX_NEGATIONS)),
    ("1,024 OR clauses", " OR ".join(["heatwave", "paris", "kernel", "the"] * (MAX_CLAUSES // 4))),
    ("1,024 AND clauses", " ".join(["heat"] * MAX_CLAUSES)),  # short words: the canonical form (explicit AND) must fit 10,000 chars
    ("a 9,000-char word", "a" * 9_000),
    ("a 9,000-char phrase", '"' + "the a " * 1_500 + '"'),
    ("NEAR/999999999999999999", "the NEAR/999999999999999999 a"),
    ("every prefix letter", " OR ".join(f"{c}*" for c in "abcdefghijklmnopqrstuvwxyz")),
    ("alternating nesting", "(a OR (b AND (NOT c OR (d AND (e OR -f)))))[title] date[..2020]"),
]


@pytest.mark.parametrize("what, q", VALID_EXTREMES, ids=[v[0] for v in VALID_EXTREMES])
def test_extreme_but_valid_queries_parse_and_run(index: sieve.Index, what: str, q: str) -> None:
    assert outcome(q).startswith("ok")
    m = index.match(q)
    assert m.count == len(m.ids)
    index.search(q, k=5)


@pytest.mark.parametrize("q", [" ".join(["heatwave"] * MAX_CLAUSES), "(" + " ".join(["kernel"] * 1_000) + ")[title]", "a b c d e f g h[ti,ab] " * 100])
def test_a_query_whose_canonical_form_outgrows_the_limit_is_refused(q: str) -> None:
    """docs/bql.md promises that parsing the canonical form gives the same tree back, so the length
    limit holds for the canonical form (explicit AND, a tag on every word) as well as for the text."""
    assert len(q) <= MAX_QUERY_CHARS
    with pytest.raises(BQLLimitError, match=r"query length limit exceeded: \d+ > 10000 \(characters once written in canonical form"):
        parse(q)


@pytest.mark.parametrize("n", [200, 600, 900])
def test_long_accepted_queries_round_trip(n: int) -> None:
    for q in (" ".join(["heatwave"] * n), "(" + " ".join(["kernel"] * n) + ")[title]", "a b[ti,ab] " * (n // 2)):
        try:
            tree = parse(q)
        except BQLLimitError as e:
            assert "canonical form" in str(e) or "clause" in str(e)
            continue
        assert len(str(tree)) <= MAX_QUERY_CHARS and parse(str(tree)) == tree


@seeded(300)
@given(st.integers(0, 0x10FFFF))
def test_any_single_character_between_words(index: sieve.Index, cp: int) -> None:
    _run(index, f"heatwave {chr(cp)} paris")
