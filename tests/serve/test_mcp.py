"""The real server (`sieve serve`) through the MCP SDK's own client, over stdio and streamable HTTP.

The oracle is the built-in agent's Toolset: the same calls in the same order must give the same
texts, so an MCP client sees exactly what our own agent sees.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from serving import run, start_http, stop

from sieve import open_index
from sieve.tools.toolset import Toolset
from sieve.serve.service import SERVED_TOOLS, Service


def oracle(path: Path) -> Toolset:
    index = open_index(path)
    return Toolset(index, SERVED_TOOLS, Service({"lib": index}).config)


def stdio(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "sieve.cli.main", "serve", *args])


def text(result: Any) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return str(result.content[0].text)


async def same(client: Client, ref: Toolset, name: str, args: Any, ok: bool) -> str:
    """Call `name` on the server and on the reference Toolset; the texts must agree."""
    got = await client.call_tool(name, args)
    want = ref.call(name, args)
    assert text(got) == want.text
    assert got.is_error is (not ok) and want.ok is ok, text(got)
    return text(got)


async def walkthrough(client: Client, path: Path) -> None:
    ref = oracle(path)
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == list(SERVED_TOOLS)
    for tool in listed.tools:
        assert tool.input_schema == ref.tools[tool.name].parameters
        assert tool.annotations is not None and tool.annotations.read_only_hint is True
    search = next(t for t in listed.tools if t.name == "search")
    assert search.description and search.description.endswith(ref.manual())  # the manual is the description

    cards = await same(client, ref, "search", {"query": "gzip[title] OR json[title]", "k": 3}, ok=True)
    assert cards.startswith("2 documents match") and "[1] " in cards and "[2] " in cards
    doc = ref.index.document(ref.listing[0])  # type: ignore[index]
    heading = doc.sections[1].heading
    section = await same(client, ref, "fetch", {"sections": [{"doc": 1, "section": heading}]}, ok=True)
    assert doc.sections[1].text.split()[0] in section

    wrong = await same(client, ref, "fetch", {"sections": [{"doc": 1, "section": "no such heading"}]}, ok=False)
    assert "Sections: " in wrong and heading in wrong  # the error lists what there is
    await same(client, ref, "fetch", {"sections": "intro"}, ok=False)  # bad arguments: an error text
    await same(client, ref, "search", {"query": "gzip[title", "k": 3}, ok=False)  # a syntax error with its caret
    await same(client, ref, "search", {"query": "gzip", "k": 51}, ok=False)
    await same(client, ref, "search", {"query": "x" * 2_001}, ok=False)  # longer than the server's query limit
    await same(client, ref, "visit", {"doc": 3}, ok=False)  # the last listing had two results
    await same(client, ref, "show", {"doc": 2}, ok=True)  # ... and the connection still serves


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_stdio_walkthrough(lib: Path, mode: str) -> None:
    async def main() -> None:
        async with Client(stdio(str(lib)), mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            await walkthrough(client, lib)
    run(main)


def test_http_walkthrough_with_sessions(http_url: str, lib: Path) -> None:
    async def main() -> None:
        async with Client(http_url, mode="legacy") as client:
            await walkthrough(client, lib)
    run(main)


def test_two_http_clients_keep_their_own_listings(http_url: str, lib: Path) -> None:
    index = open_index(lib)
    queries = {"a": "gzip[title]", "b": "json[title]"}
    firsts = {who: index.search(q, k=1).hits[0].doc_id for who, q in queries.items()}
    assert firsts["a"] != firsts["b"]
    seen: dict[str, set[str]] = {"a": set(), "b": set()}

    async def one(who: str) -> None:
        async with Client(http_url, mode="legacy") as client:
            await client.call_tool("search", {"query": queries[who], "k": 1})
            for _ in range(15):
                r = await client.call_tool("show", {"doc": 1})
                assert not r.is_error, text(r)
                seen[who].add(text(r).split("\n", 1)[0])
                await anyio.lowlevel.checkpoint()

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(one, "a")
            tg.start_soon(one, "b")
    run(main)
    assert seen == {"a": {firsts["a"]}, "b": {firsts["b"]}}


def doc_schemas(tools: Any) -> dict[str, Any]:
    """The schema of `doc` in each reading tool a client is offered."""
    out = {}
    for tool in tools:
        props = tool.input_schema["properties"]
        if tool.name == "fetch":
            props = props["sections"]["items"]["properties"]
        if "doc" in props:
            out[tool.name] = props["doc"]
    return out


@pytest.mark.parametrize("transport", ["stdio-legacy", "stdio-auto", "http-sessions"])
def test_connections_that_keep_a_listing_offer_ranks(transport: str, lib: Path,
                                                     http_url: str) -> None:
    """stdio (either protocol era: the pipe is one client's) and HTTP with sessions take a rank."""
    async def main() -> None:
        target = http_url if transport == "http-sessions" else stdio(str(lib))
        async with Client(target, mode="auto" if transport == "stdio-auto" else "legacy") as client:
            docs = doc_schemas((await client.list_tools()).tools)
            assert set(docs) == {"fetch", "visit", "show"}
            assert all(d["type"] == ["integer", "string"] for d in docs.values())
            await client.call_tool("search", {"query": "gzip[title]", "k": 1})
            got = await client.call_tool("fetch", {"sections": [{"doc": 1, "section": "intro"}]})
            assert not got.is_error and text(got).startswith("[gzip] gzip — ")
    run(main)


def test_stateless_http_offers_no_ranks_and_reads_ids(http_url: str, lib: Path) -> None:
    """In the 2026-07-28 era nothing ties two HTTP requests together, so a rank could only be
    refused or a guess: the schemas and the manual this client gets name documents by id alone,
    and the ids the cards show are what a later fetch needs."""
    async def main() -> None:
        async with Client(http_url) as client:
            assert client.protocol_version == "2026-07-28"
            tools = (await client.list_tools()).tools
            docs = doc_schemas(tools)
            assert set(docs) == {"fetch", "visit", "show"}
            assert all(d["type"] == "string" for d in docs.values())
            manual = next(t for t in tools if t.name == "search").description or ""
            assert "a rank from the last search" not in manual
            assert "`doc` is the document id a card shows" in manual
            assert '{"doc": "an-id", "section": "History"}' in manual
            # The same manual as a resource.
            got = await client.read_resource("sieve://lib/manual")
            resource = got.contents[0].text  # type: ignore[union-attr]
            assert manual.endswith(resource) and resource != oracle(lib).manual()
            query = "gzip[title] OR json[title]"
            cards = text(await client.call_tool("search", {"query": query, "k": 2}))
            assert "give its document id, not its rank" in cards
            ids = re.findall(r"^\[\d\] (\S+) — ", cards, re.M)
            assert ids == [h.doc_id for h in open_index(lib).search(query, k=2).hits]
            for doc_id in ids:  # what each card shows is all a later call needs
                asked = {"sections": [{"doc": doc_id, "section": "intro"}]}
                section = await client.call_tool("fetch", asked)
                assert not section.is_error, text(section)
                assert text(section).startswith(f"[{doc_id}] ")
            by_id = await client.call_tool("show", {"doc": "gzip"})
            assert not by_id.is_error and text(by_id).startswith("gzip\ntitle: gzip")
            refused = await client.call_tool("show", {"doc": 1})  # a client sends a rank anyway
            assert refused.is_error
            assert text(refused) == ('show error: "doc" must be a string, got 1. '
                                     'Example: {"doc": "an-id"}')
    run(main)


def test_bad_calls_are_error_texts_over_http(http_url: str) -> None:
    async def main() -> None:
        async with Client(http_url, mode="legacy") as client:
            unknown = await client.call_tool("delete_index", {})
            assert unknown.is_error and text(unknown) == 'error: there is no tool named "delete_index"; the tools are search, fetch, visit, show'
            big = await client.call_tool("fetch", {"sections": [{"doc": "x" * 60_000, "section": "intro"}]})
            assert big.is_error and "this server accepts at most 50,000 per call" in text(big)
            escape = await client.call_tool("show", {"doc": "../../../etc/passwd"})
            assert escape.is_error and text(escape) == 'show error: no document with id "../../../etc/passwd"'
            many = await client.call_tool("fetch", {"sections": [{"doc": "gzip", "section": "intro"}] * 9})
            assert many.is_error and '"sections" may list at most 8 items, got 9' in text(many)
            ok = await client.call_tool("search", {"query": "gzip"})
            assert not ok.is_error
    run(main)


def test_manual_resources(http_url: str, lib: Path) -> None:
    async def main() -> None:
        async with Client(http_url, mode="legacy") as client:
            assert "lib" in (client.instructions or "")
            listed = await client.list_resources()
            assert [str(r.uri) for r in listed.resources] == ["sieve://lib/manual"]
            got = await client.read_resource("sieve://lib/manual")
            assert got.contents[0].text == oracle(lib).manual()  # type: ignore[union-attr]
            with pytest.raises(MCPError, match="no resource 'sieve://nope/manual'") as info:
                await client.read_resource("sieve://nope/manual")
            assert info.value.code == -32002  # the specification's "resource not found"
    run(main)


def test_client_mistakes_get_json_rpc_errors_and_no_traceback(lib: Path) -> None:
    """Invalid ids (an object, a float, 1e400, a boolean) are answered with -32600 at once, not a
    silent 202; an unknown resource with -32002; the server logs no traceback for either."""
    import urllib.error
    import urllib.request

    proc, url = start_http(f"lib={lib}")
    try:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25"}
        for rid in ('{"a": 1}', "1.5", "1e400", "true", "[1]"):
            body = ('{"jsonrpc": "2.0", "id": %s, "method": "ping"}' % rid).encode()
            with pytest.raises(urllib.error.HTTPError) as info:
                urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=10)
            assert info.value.code == 400, rid
            reply = json.loads(info.value.read())
            assert reply["error"]["code"] == -32600 and reply["id"] is None, reply

        async def main() -> None:
            async with Client(url, mode="legacy") as client:
                for _ in range(3):
                    with pytest.raises(MCPError) as info:
                        await client.read_resource("sieve://nope/manual")
                    assert info.value.code == -32002
                assert (await client.call_tool("search", {"query": "json"})).is_error is False
        run(main)
    finally:
        stop(proc)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert "Traceback" not in err, err


def test_several_indexes_are_chosen_by_argument(lib: Path, lib2: Path) -> None:
    a, b = open_index(lib), open_index(lib2)
    proc, url = start_http(f"lib={lib}", f"more={lib2}")
    try:
        async def main() -> None:
            async with Client(url, mode="legacy") as client:
                tools = (await client.list_tools()).tools
                for t in tools:
                    assert t.input_schema["properties"]["index"]["enum"] == ["lib", "more"]
                    assert t.input_schema["required"][0] == "index"
                search = next(t for t in tools if t.name == "search")
                assert "`more`: " in (search.description or "") and f"{len(b):,} documents" in (search.description or "")
                missing = await client.call_tool("search", {"query": "file"})
                assert missing.is_error and 'pass "index" as one of lib, more' in text(missing)
                for name, index in (("lib", a), ("more", b)):
                    cards = text(await client.call_tool("search", {"index": name, "query": "file", "k": 2}))
                    top = index.search("file", k=1).hits[0].doc_id
                    assert f"[1] {top} " in cards
                # Ranks refer to the last search of the same index.
                shown = text(await client.call_tool("show", {"index": "more", "doc": 1}))
                assert shown.startswith(b.search("file", k=1).hits[0].doc_id + "\n")
        run(main)
    finally:
        stop(proc)


def test_the_server_never_writes_to_an_index(lib: Path) -> None:
    def digest() -> dict[str, str]:
        return {str(p.relative_to(lib)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(lib.rglob("*")) if p.is_file()}

    before = digest()

    async def main() -> None:
        async with Client(stdio(str(lib)), mode="legacy") as client:
            await walkthrough(client, lib)
    run(main)
    assert digest() == before


def _readme_walkthrough() -> str:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("python - <<'PY'\n", readme.index("## Serving the tools")) + len("python - <<'PY'\n")
    return readme[start:readme.index("\nPY\n", start)]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_readme_walkthrough_runs(lib: Path, http_url: str, transport: str) -> None:
    """The README's block, as written, but for where the index and the sieve command are."""
    code = _readme_walkthrough().replace('"/tmp/stdlib"', repr(str(lib)))
    code = code.replace('command="sieve", args=["serve"', f'command={sys.executable!r}, args=["-m", "sieve", "serve"')
    if transport == "http":
        code = code.replace("async with Client(SERVER)", f"async with Client({http_url!r})")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "['search', 'fetch', 'visit', 'show']"
    fetched = p.stdout[p.stdout.rindex("[gzip] gzip"):]  # the fetch's text: the section, by document id
    assert "\u00a7 def open\nopen(filename" in fetched and "means nothing here" not in p.stdout
