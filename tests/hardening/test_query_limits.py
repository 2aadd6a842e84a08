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
from sieve.cli.main import main
from sieve.engine import deadline
from sieve.engine.query.bql.parser import MAX_QUERY_CHARS
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
    from sieve.web import WebLimits

    assert Limits() == Limits(max_prefix_terms=10_000, max_positions=50_000_000, max_query_chars=2_000, max_phrase_words=64, seconds=10.0)
    assert index.limits == Limits()
    served, web = ServeLimits(), WebLimits()
    assert served.max_query_chars == web.max_query_chars == 2_000 and served.max_phrase_words == 64
    assert served.call_seconds == web.request_seconds == Limits().seconds
    with pytest.raises(InvalidArgumentError, match="^limits must be a sieve.Limits, got dict$"):
        sieve.open_index(index.path, limits={"seconds": 1})  # type: ignore[arg-type]
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


SPENT = ("stopped after 1e-09 s (the time allowed for this call); narrow the query (fewer frequent words, fewer NEAR or prefix terms) "
         "or ask for fewer results")


@pytest.mark.parametrize("command", [
    ["search", "{path}", "heatwave AND nowhere"],  # zero hits: the fallback and the diagnosis
    ["search", "{path}", "heatwave in paris", "--ranked"],
    ["match", "{path}", "heatwave"],
    ["explain", "{path}", "heatwave", "doc-00000"],
], ids=["search", "ranked", "match", "explain"])
def test_the_command_lines_time_budget_is_a_message(path: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    args = [a.format(path=path) for a in command]
    assert main(args + ["--query-seconds", "1e-9"]) == 1
    out = capsys.readouterr()
    assert out.err == f"sieve: {SPENT}\n" and out.out == ""
    assert main(args + ["--query-seconds", "1e-9", "--json"]) == 1
    assert '"error": "DeadlineExceededError"' in capsys.readouterr().err
    assert main(args + ["--query-seconds", "0"]) == 0  # 0: no limit


def test_the_command_line_as_a_program(path: Path) -> None:
    """A real `sieve` process: exit 1, the message, no traceback."""
    import subprocess
    import sys

    for extra, message in ((["--query-seconds", "1e-9"], SPENT),
                           (["--max-phrase-words", "3"], "phrase length limit exceeded: 4 > 3 (words in one phrase; quote its rarest few "
                                                          "words, or leave the quotes off to find the words anywhere)")):
        p = subprocess.run([sys.executable, "-m", "sieve", "search", str(path), '"heatwave school closure paris"', *extra],
                           capture_output=True, text=True, timeout=120)
        assert (p.returncode, p.stdout, p.stderr) == (1, "", f"sieve: {message}\n")


def test_the_command_lines_options_change_the_caps(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long = ("heatwave " * 300).strip()
    assert main(["search", str(path), long, "--max-query-chars", "5000"]) == 0
    assert main(["match", str(path), '"' + passage(70) + '"', "--max-phrase-words", "100"]) == 0
    capsys.readouterr()
    case = tmp_path / "cases.jsonl"
    case.write_text('{"query": "heatwave", "count": 1}\n', encoding="utf-8")
    assert main(["test", str(case), str(path), "--query-seconds", "1e-9"]) == 1
    assert "stopped after 1e-09 s" in capsys.readouterr().out  # a failed case that says why
    assert main(["search", str(path), "heatwave", "--max-query-chars", "10001"]) == 1
    assert capsys.readouterr().err == "sieve: Limits.max_query_chars must be at most 10,000 (the query language's own limit), got 10,001\n"
    assert main(["search", str(path), "heatwave", "--query-seconds", "-1"]) == 1
    assert capsys.readouterr().err == "sieve: Limits.seconds must be a positive number of seconds, or None for no limit, got -1.0\n"


def test_a_benchmarks_topics_run_as_written(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sieve search --topics` measures a benchmark's queries (ArguAna's are whole arguments) as
    `sieve eval retrieval` does: up to the language's 10,000 characters, no time limit, unless told."""
    topics, run = tmp_path / "topics.tsv", tmp_path / "run.trec"
    topics.write_text(f"q1\t{passage(600)}\nq2\theatwave\n", encoding="utf-8")
    assert len(passage(600)) > 2_000
    assert main(["search", str(path), "--ranked", "--topics", str(topics), "--run", str(run)]) == 0
    assert {line.split()[0] for line in run.read_text().splitlines()} == {"q1", "q2"}
    capsys.readouterr()
    assert main(["search", str(path), "--ranked", "--topics", str(topics), "--run", str(run), "--query-seconds", "1e-9"]) == 1
    assert capsys.readouterr().err == f"sieve: {topics}:1: topic 'q1': {SPENT}\n"


def test_the_mcp_service_reads_each_limit_as_text(path: Path) -> None:
    pytest.importorskip("mcp", reason="needs the serve extra: pip install -e '.[serve]'")
    from mcp import Client

    from sieve.serve import Service
    from sieve.serve.mcp_server import build_server

    service = Service.open([f"lib={path}"], limits=ServeLimits(max_query_chars=300, max_phrase_words=10, call_seconds=7))
    assert service.indexes["lib"].limits == Limits(max_query_chars=300, max_phrase_words=10, seconds=7)  # the server's caps are the engine's
    spent = Service({"lib": sieve.open_index(path, limits=Limits(seconds=NO_TIME))})
    got: list[tuple[bool, str]] = []

    async def calls() -> None:
        async with Client(build_server(service)) as client:
            for query in ("heatwave " * 40, '"' + passage(11) + '"', "heatwave"):
                r = await client.call_tool("search", {"query": query})
                got.append((r.is_error, r.content[0].text))
        async with Client(build_server(spent)) as client:
            r = await client.call_tool("search", {"query": "heatwave AND nowhere"})
            got.append((r.is_error, r.content[0].text))

    import anyio

    anyio.run(calls)
    assert got[0][0] is True and got[0][1].startswith('search error: "query" may be at most 300 characters long, got 360.')
    assert got[1] == (True, "search error: phrase length limit exceeded: 11 > 10 (words in one phrase; quote its rarest few words, or "
                            "leave the quotes off to find the words anywhere)")
    assert got[2][0] is False and "heatwave" in got[2][1]
    assert got[3] == (True, f"search error: {SPENT}")
    with pytest.raises(InvalidArgumentError, match="^max-phrase-words must be at least 2, got 1$"):
        ServeLimits(max_phrase_words=1)


def test_the_web_view_shows_each_limit_on_a_4xx_page(path: Path) -> None:
    """`sieve web` as a program on loopback: its options are the engine's caps; each one passed is
    a 400 page with the message, and the server goes on."""
    import html
    import re
    import socket
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.parse
    import urllib.request

    def page(port: int, query: str) -> tuple[int, str]:
        url = f"http://127.0.0.1:{port}/search?" + urllib.parse.urlencode({"q": query})
        try:
            with urllib.request.urlopen(url, timeout=20) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def shown(text: str) -> str:
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())

    for extra, query, status, message in (
        (["--request-seconds", "1e-9"], "heatwave AND nowhere", 400, SPENT),
        (["--max-phrase-words", "3"], '"heatwave school closure paris"', 400, "phrase length limit exceeded: 4 > 3"),
        ([], '"heatwave school closure paris"', 200, "heatwave"),
    ):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        p = subprocess.Popen([sys.executable, "-m", "sieve", "web", f"news={path}", "--port", str(port), *extra],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            assert p.stderr is not None and "sieve web: news at" in p.stderr.readline()
            end = time.monotonic() + 30
            while True:
                try:
                    got = page(port, query)
                    break
                except (urllib.error.URLError, ConnectionError):
                    assert time.monotonic() < end, "sieve web did not answer"
                    time.sleep(0.1)
            assert got[0] == status and message in shown(got[1]), shown(got[1])[:400]
            assert page(port, "")[0] == 200  # and it goes on serving
        finally:
            p.terminate()
            p.wait(10)


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


def test_each_shards_part_runs_under_the_budget(tmp_path: Path) -> None:
    """A sharded index served by Ray: each shard's actor (plain Python; Ray only wraps it, so it is
    called here directly) runs its part of a call under the index's budget and caps."""
    from sieve.engine.format import commits
    from sieve.index.shard_server import ShardServer

    out = tmp_path / "sharded"
    sieve.build_index(records(60, seed=2), out, jobs=1, shards=2)
    commit = commits.current_commit(out).name
    collection = (60, 1)
    spent = ShardServer(str(out), commit, 0, limits=Limits(seconds=NO_TIME))
    for call in (lambda: spent.prepare("heatwave AND nowhere", collection, True), lambda: spent.match("heatwave"),
                 lambda: spent.top("heatwave", collection, (1.0,), 5, True, True)):
        with pytest.raises(DeadlineExceededError):
            call()
    with pytest.raises(BQLLimitError, match="^phrase length limit exceeded: 65 > 64"):
        ShardServer(str(out), commit, 1).prepare('"' + passage(65) + '"', collection)
    assert ShardServer(str(out), commit, 1).prepare("heatwave", collection).query == "heatwave"
