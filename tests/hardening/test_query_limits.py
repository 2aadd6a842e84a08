"""Every query is bounded: its length, its phrases' length and the time of the whole call (zero-hit
fallback and diagnosis included). Each cap passed is a BQLLimitError naming it, the value and the
cap; the time budget ends in a DeadlineExceededError; the agent's tools turn both into text it reads.
Outcomes are asserted, never speed (benchmarks measure that)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sieve
from sieve import Limits
from sieve.cli import main
from sieve.engine import deadline
from sieve.engine.bql.parser import MAX_QUERY_CHARS
from sieve.errors import BQLLimitError, DeadlineExceededError, InvalidArgumentError, SieveError
from sieve.serve import ServeLimits
from sieve.tools import Toolset
from sieve.tools.toolset import ToolConfig

from .bql_gen import expression
from .synth import COMMON, TAIL, records

LIFTED = dict(max_query_chars=MAX_QUERY_CHARS, max_phrase_words=MAX_QUERY_CHARS)  # the language's own limits
NO_TIME = 1e-9  # a budget every call has spent by its first check


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("limits") / "idx"
    sieve.build_index(records(300, seed=11), out, jobs=1)
    return out


@pytest.fixture(scope="module")
def index(path: Path) -> sieve.Index:
    return sieve.open_index(path)


def passage(words: int, seed: int = 0) -> str:
    """Words of the corpus in an order no document has: a pasted passage the index does not hold."""
    rng = random.Random(seed)
    return " ".join(rng.choice(COMMON + TAIL[:30]) for _ in range(words))


def test_one_default_for_every_caller(index: sieve.Index) -> None:
    assert Limits() == Limits(max_prefix_terms=10_000, max_positions=50_000_000, max_query_chars=2_000, max_phrase_words=64, seconds=10.0)
    assert index.limits == Limits() and ServeLimits().max_query_chars == 2_000
    schema = Toolset(index).tools["search"].parameters["properties"]["query"]
    assert schema["maxLength"] == 2_000  # the model is told the index's cap
    lifted = Toolset(sieve.open_index(index.path, limits=Limits(max_query_chars=5_000)))
    assert lifted.tools["search"].parameters["properties"]["query"]["maxLength"] == 5_000
    assert Toolset(index, config=ToolConfig(max_query_chars=300)).tools["search"].parameters["properties"]["query"]["maxLength"] == 300


@pytest.mark.parametrize("call", ["match", "search", "explain", "ranked_search"])
def test_a_query_past_the_length_cap(index: sieve.Index, call: str) -> None:
    q = ("heatwave " * 300)[:2_001]
    args = (q, "doc-00001") if call == "explain" else (q,)
    with pytest.raises(BQLLimitError) as info:
        getattr(index, call)(*args)
    e = info.value
    assert (e.limit, e.value, e.maximum, e.pos) == ("query length", 2_001, 2_000, 2_000)
    assert str(e) == "query length limit exceeded: 2001 > 2000 (characters; shorten the query)"
    getattr(index, call)(*((q[:2_000], "doc-00001") if call == "explain" else (q[:2_000],)))  # at the cap: runs


def test_ranked_search_caps_the_text_not_the_query_made_of_it(index: sieve.Index) -> None:
    """A plain-language text just under the cap becomes a longer BQL query (each word quoted, ORed, tagged):
    that query is sieve's, and runs."""
    text = " ".join(f"{w}{i}" for i, w in enumerate(TAIL * 20))[:1_990]
    r = index.ranked_search(text, k=3)
    assert len(r.query) > 2_000 and r.query.startswith('"heatwave0"[title,body] OR "school1"[title,body] OR ')


def test_a_phrase_past_the_word_cap(index: sieve.Index) -> None:
    for q, pos in (('heatwave AND "' + passage(65) + '"', 13), ("x-" * 64 + "x", 0)):
        with pytest.raises(BQLLimitError) as info:
            index.search(q)
        e = info.value
        assert (e.limit, e.value, e.maximum, e.pos) == ("phrase length", 65, 64, pos)
        assert str(e) == ("phrase length limit exceeded: 65 > 64 (words in one phrase; quote its rarest few words, "
                          "or leave the quotes off to find the words anywhere)")
    index.search('"' + passage(64) + '"')  # at the cap: runs


def test_the_limits_are_configurable(path: Path) -> None:
    roomy = sieve.open_index(path, limits=Limits(max_query_chars=5_000, max_phrase_words=500))
    assert roomy.search('"' + passage(400) + '"').count == 0
    assert roomy.reopen().limits == roomy.limits
    for bad, message in (
        (dict(max_query_chars=10_001), "Limits.max_query_chars must be at most 10,000 (the query language's own limit), got 10,001"),
        (dict(max_query_chars=0), "Limits.max_query_chars must be a whole number of at least 1, got 0"),
        (dict(max_phrase_words=1), "Limits.max_phrase_words must be a whole number of at least 2, got 1"),
        (dict(seconds=0), "Limits.seconds must be a positive number of seconds, or None for no limit, got 0"),
        (dict(seconds="10"), "Limits.seconds must be a positive number of seconds, or None for no limit, got '10'"),
    ):
        with pytest.raises(InvalidArgumentError) as info:
            Limits(**bad)  # type: ignore[arg-type]
        assert str(info.value) == message


def test_the_reported_case_a_long_phrase_in_the_agents_fallback(stdlib: sieve.Index) -> None:
    """1,100 words of the documents, quoted: the fallback would rank the whole collection by every one
    of them (15.7 s on a large index). It ends at once in the limit, as text the agent reads."""
    words = [w for i in stdlib.match("json OR file").ids[:20] for s in stdlib.document(i).sections for w in s.text.split() if w.isalpha() and len(w) < 8]
    q = '"' + " ".join(random.Random(0).choice(words) for _ in range(1_100)) + '"'
    tools = Toolset(stdlib)  # fallback and diagnosis on, as the agent has them
    r = tools.call("search", {"query": q})
    assert not r.ok and r.text.startswith(f'search error: "query" may be at most 2,000 characters long, got {len(q):,}.')
    with pytest.raises(BQLLimitError, match="^query length limit exceeded"):
        stdlib.search(q)
    wide = Toolset(sieve.open_index(stdlib.path, limits=Limits(**LIFTED, seconds=None)))
    assert wide.call("search", {"query": q}).ok  # the same call without the caps: what it cost is benchmarks/ 's to say
    long_chars = Toolset(sieve.open_index(stdlib.path, limits=Limits(max_query_chars=MAX_QUERY_CHARS)))
    r = long_chars.call("search", {"query": q})
    assert not r.ok and r.text == ("search error: phrase length limit exceeded: 1100 > 64 (words in one phrase; quote its rarest few "
                                   "words, or leave the quotes off to find the words anywhere)")


@pytest.mark.parametrize("call", [
    lambda ix: ix.match("heatwave"),
    lambda ix: ix.search('"heatwave school" AND nowhere'),  # zero hits: the fallback and the diagnosis
    lambda ix: ix.search("heatwave", ranker="indri"),
    lambda ix: ix.explain('"heatwave paris"', "doc-00000"),
    lambda ix: ix.ranked_search("heatwave in paris"),
], ids=["match", "fallback", "indri", "explain", "ranked_search"])
def test_the_time_budget_ends_every_call(path: Path, call) -> None:  # type: ignore[no-untyped-def]
    spent = sieve.open_index(path, limits=Limits(seconds=NO_TIME))
    with pytest.raises(DeadlineExceededError) as info:
        call(spent)
    assert info.value.seconds == NO_TIME
    assert str(info.value) == ("stopped after 1e-09 s (the time allowed for this call); narrow the query "
                               "(fewer frequent words, fewer NEAR or prefix terms) or ask for fewer results")
    call(sieve.open_index(path, limits=Limits(seconds=None)))  # no budget: the same call runs


def test_no_budget_of_its_own_leaves_the_callers(path: Path) -> None:
    unbounded = sieve.open_index(path, limits=Limits(seconds=None))
    with deadline.within(NO_TIME), pytest.raises(DeadlineExceededError):
        unbounded.search("heatwave AND nowhere")


def test_the_agent_reads_the_deadline_and_goes_on(path: Path) -> None:
    tools = Toolset(sieve.open_index(path, limits=Limits(seconds=NO_TIME)))
    for _ in range(2):  # an observation, not a crash: the session goes on
        r = tools.call("search", {"query": "heatwave AND nowhere"})
        assert not r.ok and r.text.startswith("search error: stopped after 1e-09 s (the time allowed for this call)")
    assert Toolset(sieve.open_index(path)).call("search", {"query": "heatwave AND nowhere"}).ok


def test_the_command_line_reports_the_limits(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", str(path), "heatwave " * 300]) == 1
    assert capsys.readouterr().err == "sieve: query length limit exceeded: 2700 > 2000 (characters; shorten the query)\n"
    assert main(["match", str(path), '"' + passage(70) + '"', "--json"]) == 1
    err = capsys.readouterr().err
    assert '"error": "BQLLimitError"' in err and '"limit": "phrase length"' in err and '"value": 70' in err and '"maximum": 64' in err


# ------------------------------------------------------------------ random long and deep queries

VOCAB = COMMON + TAIL
word = st.sampled_from(VOCAB)
long_or_deep = st.one_of(
    st.lists(word, min_size=20, max_size=800).map(" ".join),  # a long AND: usually zero hits, so the fallback ranks every word
    st.lists(word, min_size=2, max_size=400).map(lambda ws: '"' + " ".join(ws) + '"'),  # a long phrase
    st.lists(word, min_size=2, max_size=500).map(" OR ".join),
    st.lists(st.builds(lambda a, n, b: f"{a} NEAR/{n} {b}", word, st.integers(1, 50), word), min_size=1, max_size=120).map(" OR ".join),
    st.lists(word.map(lambda w: w[:1] + "*"), min_size=1, max_size=60).map(" OR ".join),  # prefixes
    st.builds(lambda d, inner: "(" * d + inner + ")" * d, st.integers(1, 40), st.lists(word, min_size=1, max_size=50).map(" OR ".join)),
    expression,  # the grammar's own shapes
)


@settings(max_examples=150, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@given(q=long_or_deep, roomy=st.booleans())
def test_random_long_and_deep_queries_end_in_a_result_or_a_sieve_error(path: Path, q: str, roomy: bool) -> None:
    """Under the default caps, or the language's with a budget of a few milliseconds: every search
    (fallback and diagnosis on) and every agent call ends, with hits or a sieve error, never anything else."""
    limits = Limits(**LIFTED, seconds=0.005) if roomy else Limits()
    index = _opened(path, limits)
    try:
        r = index.search(q, k=5)
        assert r.count >= 0 and len(r.hits) <= 5
    except DeadlineExceededError as e:
        assert e.seconds == limits.seconds
    except SieveError:
        pass
    assert isinstance(Toolset(index).call("search", {"query": q}).text, str)


_OPENED: dict[Limits, sieve.Index] = {}


def _opened(path: Path, limits: Limits) -> sieve.Index:
    if limits not in _OPENED:
        _OPENED[limits] = sieve.open_index(path, limits=limits)
    return _OPENED[limits]
