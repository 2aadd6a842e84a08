"""The protocol-free half of `sieve serve` (names, limits, sessions) and the per-call time limit,
through the MCP SDK's in-process client (the same handlers as over a transport)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from serving import run

from sieve import open_index
from sieve.engine import deadline
from sieve.tools.toolset import ToolResult
from sieve.errors import DeadlineExceededError, InvalidArgumentError
from sieve.serve.mcp_server import build_server
from sieve.serve.service import ServeLimits, Service, Session, index_names


def test_index_names(tmp_path: Path) -> None:
    assert index_names(["a/lib", "docs=b/lib"]) == {"lib": Path("a/lib"), "docs": Path("b/lib")}
    with pytest.raises(InvalidArgumentError, match="two indexes are named 'lib': name them apart with NAME=PATH"):
        index_names(["a/lib", "b/lib"])
    with pytest.raises(InvalidArgumentError, match="index name 'bad name'"):
        index_names(["bad name=x"])
    with pytest.raises(InvalidArgumentError, match="no index to serve"):
        index_names([])


@pytest.mark.parametrize("kwargs, message", [
    ({"k_max": 0}, "k-max must be at least 1, got 0"),
    ({"max_query_chars": 10_001}, "max-query-chars must be between 1 and 10,000, got 10,001"),
    ({"call_seconds": 0}, "call-seconds must be positive, got 0"),
    ({"workers": 0}, "workers must be at least 1, got 0"),
    ({"max_sessions": 0}, "max-sessions must be at least 1, got 0"),
    ({"session_idle_seconds": -1.0}, "session-idle-seconds must be positive, got -1.0"),
    ({"session_idle_seconds": float("nan")}, "session-idle-seconds must be positive, got nan"),
    ({"call_seconds": float("inf")}, "call-seconds must be finite, got inf"),
    ({"max_request_bytes": 0}, "max-request-bytes must be at least 1, got 0"),
])
def test_limits_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        ServeLimits(**kwargs)


def test_limits_reach_the_schemas(lib: Path) -> None:
    service = Service({"lib": open_index(lib)}, limits=ServeLimits(k_max=7, max_sections=2, max_query_chars=100))
    schemas = {t.name: t.input_schema for t in service.tools}
    assert schemas["search"]["properties"]["k"]["maximum"] == 7
    assert schemas["search"]["properties"]["query"]["maxLength"] == 100
    assert schemas["fetch"]["properties"]["sections"]["maxItems"] == 2
    r = service.call(service.new_session(), "search", {"query": "gzip", "k": 8})
    assert not r.ok and r.text.startswith('search error: "k" must be at most 7, got 8')


def test_query_caps_are_error_texts_the_agent_reads(lib: Path) -> None:
    """Service.open gives each index the server's query length; a phrase past the engine's word cap
    (the default Limits) is the same BQLLimitError text the Toolset gives, never a failed call."""
    service = Service.open([str(lib)], limits=ServeLimits(max_query_chars=5_000))
    session = service.new_session()
    long = service.call(session, "search", {"query": " OR ".join(["gzip"] * 500)})
    assert long.ok  # 5,000 characters allowed by this server, past the engine's default 2,000
    phrase = service.call(session, "search", {"query": '"' + " ".join(["gzip"] * 65) + '"'})
    assert not phrase.ok and phrase.text == ("search error: phrase length limit exceeded: 65 > 64 (words in one phrase; quote its rarest "
                                             "few words, or leave the quotes off to find the words anywhere)")
    past = service.call(session, "search", {"query": "gzip " * 1_001})
    assert not past.ok and past.text.startswith('search error: "query" may be at most 5,000 characters long')


def test_sessions_are_separate(lib: Path) -> None:
    service = Service({"lib": open_index(lib)})
    a, b = service.new_session(), service.new_session()
    service.call(a, "search", {"query": "gzip[title]", "k": 1})
    assert service.call(a, "show", {"doc": 1}).text.startswith("gzip\n")
    r = service.call(b, "show", {"doc": 1})
    assert not r.ok and "there is no earlier search" in r.text


def test_a_session_without_a_listing_is_offered_ids_only(lib: Path) -> None:
    """Where calls share nothing, no schema or manual sentence offers a rank (issue 50)."""
    service = Service({"lib": open_index(lib), "again": open_index(lib)})
    for keeps in (True, False):
        tools = {t.name: t for t in service.tools_for(keeps)}
        doc = tools["show"].input_schema["properties"]["doc"]
        assert doc["type"] == (["integer", "string"] if keeps else "string")
        assert ("Ranks refer to the last search" in tools["show"].description) is keeps
        assert ("a rank from the last search (a number)" in service.manual("lib", keeps)) is keeps
    stateless = service.new_session(keeps_listing=False)
    r = service.call(stateless, "visit", {"index": "lib", "doc": 1})
    assert not r.ok
    assert r.text == 'visit error: "doc" must be a string, got 1. Example: {"doc": "an-id"}'
    assert service.call(stateless, "visit", {"index": "lib", "doc": "gzip"}).ok


class SlowService(Service):
    """Every call takes `delay` seconds: the time limit must answer before it ends."""

    delay = 1.5

    def call(self, session: Session, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        time.sleep(self.delay)
        return super().call(session, name, arguments)


def test_time_limit_and_busy_workers_are_error_texts(lib: Path) -> None:
    service = SlowService({"lib": open_index(lib)}, limits=ServeLimits(call_seconds=0.4, workers=1))
    results: list[tuple[float, Any]] = []

    async def main() -> None:
        async with Client(build_server(service)) as client:
            async def one() -> None:
                t0 = time.monotonic()
                r = await client.call_tool("search", {"query": "gzip"})
                results.append((time.monotonic() - t0, r))

            async with anyio.create_task_group() as tg:
                tg.start_soon(one)
                await anyio.sleep(0.1)  # the first call holds the only worker
                tg.start_soon(one)
            service.delay = 0.0
            await anyio.sleep(1.5)  # the abandoned calls finish in their threads and free the worker
            r = await client.call_tool("search", {"query": "gzip"})
            assert not r.is_error and "gzip" in r.content[0].text  # and the server still serves

    run(main)
    texts = sorted(r.content[0].text for _, r in results)
    assert all(r.is_error for _, r in results)
    assert texts[0].startswith("search error: the call took longer than 0.4 s (this server's limit per call) and was abandoned")
    assert texts[1] == "search error: the server is busy (1 calls running) and this call waited 0.4 s for its turn; try again"
    assert all(seconds < 1.2 for seconds, _ in results)  # answered at the limit, not when the work ended


class EndlessService(Service):
    """A call that would never end by itself ("endless"): it stops only when the engine's deadline
    says so; and one ("early") whose deadline fires before the server's wait times out, as was seen
    on a loaded machine."""

    def call(self, session: Session, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        query = (arguments or {}).get("query")
        if query == "endless":
            while True:
                deadline.check()
                time.sleep(0.01)
        if query == "early":
            raise DeadlineExceededError(0.3)
        return super().call(session, name, arguments)


def test_an_abandoned_call_is_stopped_and_frees_its_worker(lib: Path) -> None:
    service = EndlessService({"lib": open_index(lib)}, limits=ServeLimits(call_seconds=0.3, workers=1))

    async def main() -> None:
        async with Client(build_server(service)) as client:
            r = await client.call_tool("search", {"query": "endless"})
            assert r.is_error and "took longer than 0.3 s" in r.content[0].text
            await anyio.sleep(0.1)  # the deadline has passed: the worker's next check ends the call
            r = await client.call_tool("search", {"query": "gzip"})
            assert not r.is_error and "gzip" in r.content[0].text  # one worker, so it was freed

    run(main)


def test_the_engine_stops_at_its_deadline(lib: Path) -> None:
    index = open_index(lib)
    with deadline.within(60):
        assert index.search("gzip OR json*", k=3).hits
    with pytest.raises(DeadlineExceededError, match="stopped after 0 s"):
        with deadline.within(0):
            time.sleep(0.001)
            index.search("gzip OR json*", k=3)
    with pytest.raises(DeadlineExceededError):
        with deadline.within(0):
            time.sleep(0.001)
            index.match("gzip")
    with deadline.within(60), deadline.within(0):  # nested: the earlier end wins
        time.sleep(0.001)
        with pytest.raises(DeadlineExceededError):
            index.match("gzip")
    assert index.match("gzip").count  # outside any budget nothing is checked


def test_a_deadline_that_fires_first_is_the_same_time_limit_answer(lib: Path) -> None:
    service = EndlessService({"lib": open_index(lib)}, limits=ServeLimits(call_seconds=0.3, workers=1))

    async def main() -> None:
        async with Client(build_server(service)) as client:
            r = await client.call_tool("search", {"query": "early"})
            assert r.is_error and "took longer than 0.3 s" in r.content[0].text
            r = await client.call_tool("search", {"query": "gzip"})
            assert not r.is_error

    run(main)


def test_a_session_holds_its_last_listing_and_no_more(lib: Path) -> None:
    """What a long session keeps does not grow with its calls: the listing of its last search only."""
    service = Service({"lib": open_index(lib)})
    session = service.new_session()
    for word in ("file", "json", "gzip", "socket", "time", "data", "string", "list"):
        service.call(session, "search", {"query": word, "k": 50})
        service.call(session, "show", {"doc": 1})
    toolset = session.toolsets["lib"]
    assert toolset.surfaced == [] and toolset.opened == [] and toolset.listing is not None and len(toolset.listing) <= 50


def test_errors_name_the_index_not_its_folder(lib: Path, tmp_path: Path) -> None:
    """An engine error that names a file of the index (here: no embeddings) shows the served name."""
    from sieve.tools.toolset import ToolConfig

    service = Service({"docs": open_index(lib)}, config=ToolConfig(ranker="dense"))
    r = service.call(service.new_session(), "search", {"query": "gzip"})
    assert not r.ok and r.text == "search error: docs has no embeddings: run `sieve embed docs` first"
    assert str(lib) not in r.text

