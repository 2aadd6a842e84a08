"""`sieve serve --http` against its callers, over real HTTP on loopback with the MCP SDK's own client:
sessions capped (the next refused with a message, room made by a close or by idle expiry), request
bodies bounded, foreign Host and Origin refused (421, 403) unless `--allow-host` names them, and no
listening beyond loopback without `--allow-remote`."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from serving import free_port, run, start_http, stop

if sys.version_info < (3, 11):  # a builtin from 3.11; anyio (under the SDK) brings the backport
    from exceptiongroup import BaseExceptionGroup

FULL = ("this server is full: 2 sessions are open, its limit (--max-sessions); try again when one closes (a client that ends "
        "sends DELETE; a session with no request for {idle} s is closed)")
HOST_REFUSED = ("refused: this request names the host {host!r}; this server answers only to its loopback names (localhost, 127.0.0.1, "
                "[::1]) and the names allowed with --allow-host")
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}


def post(url: str, message: Any, headers: dict[str, str] | None = None, body: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    """One real POST to the MCP endpoint, with exactly these headers (a Host given replaces http.client's)."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        sent = {"Host": f"127.0.0.1:{port}", "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                "Mcp-Protocol-Version": "2025-11-25", **(headers or {})}
        conn.request("POST", "/mcp", body=json.dumps(message).encode() if body is None else body, headers=sent)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def close(url: str, session: str) -> None:
    """End a session as a client does (DELETE), making room under the cap."""
    conn = http.client.HTTPConnection("127.0.0.1", int(url.rsplit(":", 1)[1].split("/")[0]), timeout=20)
    try:
        conn.request("DELETE", "/mcp", headers={"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"})
        assert conn.getresponse().status < 300
    finally:
        conn.close()


def error_of(body: bytes) -> dict[str, Any]:
    reply = json.loads(body)
    assert reply["jsonrpc"] == "2.0" and reply["id"] is None, reply
    return dict(reply["error"])


@pytest.fixture
def capped(lib: Path) -> Iterator[str]:
    proc, url = start_http(f"lib={lib}", "--max-sessions", "2", "--session-idle-seconds", "60")
    try:
        yield url
    finally:
        stop(proc)


def test_sessions_beyond_the_cap_are_refused_with_a_message(capped: str) -> None:
    async def main() -> None:
        async with Client(capped, mode="legacy") as a, Client(capped, mode="legacy") as b:
            for c in (a, b):
                assert not (await c.call_tool("search", {"query": "gzip"})).is_error
            with pytest.raises(BaseException) as info:  # the SDK raises it inside its task groups
                async with Client(capped, mode="legacy"):
                    pass
            refused = info.value
            while isinstance(refused, BaseExceptionGroup):
                refused = refused.exceptions[0]
            assert isinstance(refused, MCPError) and refused.code == -32603 and refused.message == FULL.format(idle=60)
            status, headers, body = post(capped, INITIALIZE)  # the same refusal, as HTTP sees it
            assert status == 503 and headers["retry-after"] == "5" and error_of(body)["message"] == FULL.format(idle=60)
            assert not (await a.call_tool("search", {"query": "json"})).is_error  # the open ones are served on
        async with Client(capped, mode="legacy") as c:  # both closed (DELETE): room again
            assert not (await c.call_tool("search", {"query": "gzip"})).is_error
    run(main)


def test_an_idle_session_expires_and_makes_room(lib: Path) -> None:
    proc, url = start_http(f"lib={lib}", "--max-sessions", "1", "--session-idle-seconds", "1")
    try:
        status, headers, _ = post(url, INITIALIZE)
        assert status == 200
        abandoned = headers["mcp-session-id"]  # a client that went away without DELETE
        assert post(url, INITIALIZE)[0] == 503
        deadline = time.monotonic() + 30
        while (status := post(url, INITIALIZE)[0]) == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status == 200  # the idle one was closed
        gone, _, body = post(url, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, {"Mcp-Session-Id": abandoned})
        assert gone == 404 and error_of(body)["message"] == "Session not found"
    finally:
        stop(proc)


def test_request_bodies_are_bounded(capped: str) -> None:
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "' + b"x" * (1 << 20) + b'"}}'
    status, _, body = post(capped, None, body=big)
    assert status == 413 and error_of(body)["message"] == "invalid request: the body is larger than this server's limit of 1,048,576 bytes"

    # Chunked, with no length declared: refused once the limit is crossed, not read to its end.
    port = int(capped.rsplit(":", 1)[1].split("/")[0])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.request("POST", "/mcp", body=iter([b"x" * 65536] * 40), encode_chunked=True,
                 headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
    r = conn.getresponse()
    assert r.status == 413
    conn.close()


def test_a_foreign_host_gets_421_and_a_foreign_origin_403(capped: str) -> None:
    port = int(capped.rsplit(":", 1)[1].split("/")[0])
    for host in (f"evil.example:{port}", f"localhost.evil.example:{port}", f"0.0.0.0:{port}"):
        status, _, body = post(capped, INITIALIZE, {"Host": host})
        assert status == 421 and error_of(body) == {"code": -32600, "message": HOST_REFUSED.format(host=host)}
    status, _, body = post(capped, INITIALIZE, {"Origin": "http://evil.example"})
    assert status == 403 and error_of(body)["message"].startswith("refused: a cross-origin request from the page at 'http://evil.example'")
    for host in (f"localhost:{port}", f"[::1]:{port}"):
        status, headers, _ = post(capped, INITIALIZE, {"Host": host, "Origin": f"http://{host}"})
        assert status == 200
        close(capped, headers["mcp-session-id"])

    async def main() -> None:  # the SDK's client under a loopback name
        async with Client(capped.replace("127.0.0.1", "localhost"), mode="legacy") as c:
            assert not (await c.call_tool("search", {"query": "gzip"})).is_error
    run(main)


def test_allow_host_admits_a_listed_name(lib: Path) -> None:
    proc, url = start_http(f"lib={lib}", "--allow-host", "search.example", "--allow-host", "pinned.example:9")
    try:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        for host in (f"search.example:{port}", "search.example", "pinned.example:9"):
            status, headers, _ = post(url, INITIALIZE, {"Host": host, "Origin": f"https://{host}"})
            assert status == 200 and headers["mcp-session-id"], host
        for host in (f"pinned.example:{port}", f"evil.search.example:{port}"):
            assert post(url, INITIALIZE, {"Host": host})[0] == 421, host
    finally:
        stop(proc)


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sieve.cli.main", "serve", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def test_listening_beyond_loopback_needs_allow_remote(lib: Path) -> None:
    done = serve(str(lib), "--http", "--host", "0.0.0.0")
    assert done.returncode == 2 and done.stderr.splitlines()[-1] == (
        "sieve: usage error: --host 0.0.0.0 is not a loopback address: anyone who can reach it could use this server; add "
        "--allow-remote to listen there anyway (and --allow-host NAME for each name clients will use)")
    for args, message in [(("--allow-host", "x.example"), "sieve: usage error: --allow-host and --allow-remote apply to --http"),
                          (("--http", "--allow-host", "a b"), "argument --allow-host: 'a b' is not a host name"),
                          (("--http", "--max-sessions", "0"), "max-sessions must be at least 1, got 0"),
                          (("--http", "--session-idle-seconds", "inf"), "session-idle-seconds must be finite, got inf")]:
        done = serve(str(lib), *args)
        assert done.returncode in (1, 2) and message in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)

    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "sieve.cli.main", "serve", f"lib={lib}", "--http", "--host", "0.0.0.0", "--port", str(port),
                          "--allow-remote", "--json"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stderr is not None
        info = json.loads(p.stderr.readline())
        assert info["url"] == f"http://0.0.0.0:{port}/mcp" and info["hosts"] == ["localhost", "127.0.0.1", "[::1]"] and info["max_sessions"] == 100
        assert info["exposed"] == (f"exposed: listening on 0.0.0.0:{port} (every network interface of this machine); anyone who can reach "
                                   "it can call the tools search, fetch, visit, show on lib, with no password. It answers to the Host "
                                   "names localhost, 127.0.0.1, [::1]")

        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "sieve serve did not listen"
                time.sleep(0.1)

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="legacy") as c:
                assert not (await c.call_tool("search", {"query": "gzip"})).is_error
        run(main)
        assert post(f"http://127.0.0.1:{port}/mcp", INITIALIZE, {"Host": f"192.168.1.5:{port}"})[0] == 421
    finally:
        p.terminate()
        p.wait(10)
