"""Attacks on `sieve web` over real HTTP on loopback: a page of another site that reaches the server
by DNS rebinding (a foreign Host) or sends it a form (a foreign Origin), every route's parameters
fuzzed (each answer is a 4xx page with a message, never a 500, and never shows a server path), and
the command's refusal to listen beyond loopback unless told to."""

from __future__ import annotations

import html
import http.client
import json
import re
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="sieve web needs the web extra (starlette, uvicorn, jinja2)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sieve.index.index import build_index  # noqa: E402
from sieve.serve.hosts import HostPolicy  # noqa: E402
from sieve.web import create_app  # noqa: E402
from sieve.web.runs import load_all  # noqa: E402
from test_runs_view import evil_record  # noqa: E402
from test_web import DOCS, Server  # noqa: E402

HOST_REFUSED = ("refused: this request names the host {host!r}; this server answers only to its loopback names "
                "(localhost, 127.0.0.1, [::1]) and the names allowed with --allow-host")
ORIGIN_REFUSED = ("refused: a cross-origin request from the page at {origin!r}; this server answers pages on its loopback names "
                  "(localhost, 127.0.0.1, [::1]) and the names allowed with --allow-host only")


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("served")
    build_index(DOCS, root / "ix", fields={"year": "number"}).close()
    (root / "runs").mkdir()
    (root / "runs" / "evil.json").write_text(json.dumps(evil_record()))
    return {"root": root, "index": root / "ix", "run": root / "runs" / "evil.json"}


@pytest.fixture(scope="module")
def site(places: dict[str, Path]) -> Iterator[Server]:
    from sieve.index.index import open_index

    ix = open_index(places["index"])
    app = create_app({"news": ix}, runs=load_all([str(places["run"])]), hosts=HostPolicy.of("127.0.0.1", ["search.example", "pinned.example:9"]))
    with Server(app) as s:
        yield s
    ix.close()


def ask(port: int, method: str, target: str, headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    """One real request with exactly these headers (http.client sends no Host of its own when one is given)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        conn.request(method, target, headers={"Host": f"127.0.0.1:{port}", **(headers or {})})
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace"), {k.lower(): v for k, v in r.getheaders()}
    finally:
        conn.close()


def error_text(page: str) -> str:
    """The message of an error page: the paragraph marked id="error", or the first inside the element so marked."""
    m = re.search(r'<p id="error">(.*?)</p>', page, re.S) or re.search(r'id="error"[^>]*>\s*<p>(.*?)</p>', page, re.S)
    assert m is not None, page[-500:]
    return html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip()


# ---------------------------------------------------------------- who is asking

@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "localhost.evil.example:{port}", "127.0.0.1.evil.example",
                                  "0.0.0.0:{port}", "127.1:{port}", "search.example.evil:{port}", "pinned.example:{port}", "[::2]:{port}"])
def test_a_foreign_host_is_refused_and_learns_nothing(site: Server, host: str) -> None:
    """DNS rebinding: the attacker's page reads what it gets back, so the refusal holds no index name."""
    host = host.format(port=site.port)
    status, page, headers = ask(site.port, "GET", "/search?index=news&q=heatwave", {"Host": host})
    assert status == 421 and error_text(page) == HOST_REFUSED.format(host=host)
    assert "news" not in page and "Heatwave" not in page and headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST", "[::1]:{port}", "search.example:{port}",
                                  "search.example", "pinned.example:9"])
def test_the_loopback_names_and_allowed_hosts_are_served(site: Server, host: str) -> None:
    status, page, _ = ask(site.port, "GET", "/search?index=news&q=heatwave", {"Host": host.format(port=site.port)})
    assert status == 200 and "Heatwave plan" in page


def test_a_request_without_a_host_is_refused(site: Server) -> None:
    with socket.create_connection(("127.0.0.1", site.port), timeout=20) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 421 ") and b"this request names no Host header" in reply


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1.evil.example:{port}", "http://user@127.0.0.1:{port}",
                                    "file://", "http://127.0.0.1:{port}/path", "ftp://127.0.0.1:{port}"])
@pytest.mark.parametrize("method", ["POST", "GET", "PUT", "DELETE"])
def test_a_page_of_another_origin_is_refused(site: Server, origin: str, method: str) -> None:
    """A form or a fetch from another site carries its Origin: refused whatever the method."""
    origin = origin.format(port=site.port)
    status, page, _ = ask(site.port, method, "/search?index=news&q=heatwave", {"Origin": origin})
    assert status == 403 and error_text(page) == ORIGIN_REFUSED.format(origin=origin) and "Heatwave" not in page


def test_own_origin_is_served_and_other_methods_get_a_message(site: Server) -> None:
    mine = {"Origin": f"http://127.0.0.1:{site.port}"}
    assert ask(site.port, "GET", "/search?index=news&q=heatwave", mine)[0] == 200
    status, page, headers = ask(site.port, "POST", "/search?index=news&q=heatwave", mine)
    assert status == 405 and error_text(page) == "Method Not Allowed (every page here is read with GET)" and "GET" in headers["allow"]
    status, page, _ = ask(site.port, "GET", "/admin")
    assert status == 404 and error_text(page) == "no such page"


# ---------------------------------------------------------------- what they ask for

@pytest.mark.parametrize(("target", "status", "message"), [
    ("/doc?index=news&id=heat-1&section=%C2%B2", 404, "document 'heat-1' has 2 sections, numbered from 0; no section '²'"),
    ("/doc?index=news&id=heat-1&section=1_0", 404, "document 'heat-1' has 2 sections, numbered from 0; no section '1_0'"),
    ("/doc?index=news&id=heat-1&section=" + "9" * 5000, 404,
     "document 'heat-1' has 2 sections, numbered from 0; no section '" + "9" * 60 + "'..."),
    ("/doc?index=news&id=%00", 404, "no document '\\x00' in news"),
    ("/doc?index=news&id=..%2F..%2Fetc%2Fpasswd", 404, "no document '../../etc/passwd' in news"),
    ("/search?index=news&q=heat&k=%D9%A3", 400, "k (results) must be a whole number from 1 to 50, got '٣'"),
    ("/search?index=news&q=heat&k=-1", 400, "k (results) must be a whole number from 1 to 50, got '-1'"),
    ("/search?index=news&q=heat&k=", 400, "k (results) must be a whole number from 1 to 50, got ''"),
    ("/search?index=news&q=heat&ranker=bm26", 400, "no ranker named 'bm26'; choose bm25, dense, hybrid, indri, indri+dense"),
    ("/search?index=..%2Fix&q=heat", 404, "no index named '../ix'; this server has news"),
    ("/search?index=news&q=%00", 400, "control character U+0000 (remove it)"),
    ("/search?index=news&q=heat&ranker=dense", 400, "news has no embeddings: run `sieve embed news` first"),
    ("/episode?run=evil&q=x&vs=..%2Fevil", 404, "run '../evil' has no question 'x'"),
    ("/figure?run=evil&name=..%2F..%2Fevil.json", 404, "no such figure"),
    ("/search?index=news&q=" + "heat+" * 401, 400, "the query has 2,005 characters; at most 2,000"),
    ("/search?index=news&q=%22" + "+".join(["heat"] * 65) + "%22", 400,
     "phrase length limit exceeded: 65 > 64 (words in one phrase; quote its rarest few words, or leave the quotes off to find the words anywhere)"),
])
def test_bad_parameters_get_a_4xx_page_that_says_what_is_wrong(site: Server, places: dict[str, Path], target: str, status: int, message: str) -> None:
    got, page, _ = ask(site.port, "GET", target)
    assert got == status and error_text(page) == message
    assert str(places["root"]) not in page


# Each route with parameters it answers; every odd value below replaces each of them in turn.
VALID = {"/search": {"index": "news", "q": "heatwave", "ranker": "bm25", "k": "3"}, "/doc": {"index": "news", "id": "heat-1", "section": "1", "q": "x"},
         "/run": {"name": "evil"}, "/episode": {"run": "evil", "q": "x", "vs": "evil"}, "/figure": {"run": "evil", "name": "x.png"},
         "/": {}, "/runs": {}}
ODD = ["", "²", "٣", "1_0", "-1", "0", "1", "2", "1e3", " 2", "+3", "9" * 5000, str(10**40), str(-(10**40)), "\x00", "a\x00b", "..",
       "../../etc/passwd", "/etc/passwd", "news/../news", "..\\..\\x", "heat-1", "evil", "x", "news", "dense", "hybrid", "indri",
       "NEAR/2", "heat*", '"', "(", "date[2020..]", "x" * 3000, "\ufeff", "\u202e", "𝟙"]
RAW = ["%", "%zz", "%ff%fe", "%ED%A0%80", "%C0%AF", "%00", "%2e%2e%2f", "a%", "%%", "%E2%82"]  # invalid UTF-8 and broken escapes


def _check(site: Server, places: dict[str, Path], target: str) -> str | None:
    """What is wrong with the answer to `target`, if anything: a 5xx, a 4xx without a message, a server path."""
    status, page, _ = ask(site.port, "GET", target)
    if status >= 500:
        return f"{status} for {target[:200]}"
    if status >= 400 and 'id="error"' not in page:
        return f"{status} without a message for {target[:200]}"
    for where in (places["root"], places["root"].resolve(), Path.cwd()):
        if str(where) in page:
            return f"{where} shown for {target[:200]}"
    return None


def test_every_odd_value_of_every_parameter_is_answered(site: Server, places: dict[str, Path]) -> None:
    """Each parameter of each route, the others valid, takes each odd value (quoted, and as raw broken escapes)."""
    wrong = []
    for route, valid in VALID.items():
        for name in [*valid, "zzz"]:
            for value in [urllib.parse.quote(v, safe="") for v in ODD] + RAW:
                query = "&".join(f"{k}={urllib.parse.quote(v, safe='')}" for k, v in valid.items() if k != name) + f"&{name}={value}"
                wrong.append(_check(site, places, f"{route}?{query}"))
    assert [w for w in wrong if w] == []


values = st.one_of(st.sampled_from(ODD), st.text(max_size=40), st.integers(-(10**30), 10**30).map(str))
params = st.lists(st.tuples(st.sampled_from(["index", "q", "ranker", "k", "id", "section", "name", "run", "vs"]), values,
                            st.sampled_from(["", *RAW])), max_size=5)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from([*VALID, "/nope", "//doc", "/doc/"]), params=params)
def test_no_mix_of_parameters_gets_a_500_or_a_server_path(site: Server, places: dict[str, Path], route: str, params: list[tuple[str, str, str]]) -> None:
    """Any route under any mix of parameters: a page, or a 4xx page with a message; no server path."""
    query = "&".join(f"{k}={urllib.parse.quote(v, safe='')}{raw}" for k, v, raw in params)
    assert _check(site, places, route + ("?" + query if query else "")) is None


# ---------------------------------------------------------------- the command

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _web(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sieve", "web", *args], capture_output=True, text=True, timeout=60)


def test_listening_beyond_loopback_needs_a_flag(places: dict[str, Path]) -> None:
    done = _web(str(places["index"]), "--host", "0.0.0.0")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == ("sieve: usage error: --host 0.0.0.0 is not a loopback address: anyone who can reach it could "
                                            "use this server; add --allow-remote to listen there anyway (and --allow-host NAME for each "
                                            "name clients will use)")
    for args, message in [(("--allow-host", "evil.example/x"), "argument --allow-host: 'evil.example/x' is not a host name"),
                          (("--host", "127.0.0.1:80"), "argument --host: '127.0.0.1:80' is not an address to listen on"),
                          (("--port", "70000"), "argument --port: '70000' is not a port: give a number from 1 to 65535")]:
        done = _web(str(places["index"]), *args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)


def test_allow_remote_says_what_it_exposes_and_still_checks_hosts(places: dict[str, Path]) -> None:
    port = _free_port()
    p = subprocess.Popen([sys.executable, "-m", "sieve", "web", f"news={places['index']}", "--host", "0.0.0.0", "--port", str(port),
                          "--allow-remote", "--allow-host", "search.example"], stderr=subprocess.PIPE, text=True)
    try:
        assert p.stderr is not None
        assert p.stderr.readline().startswith(f"sieve web: news at http://0.0.0.0:{port}/")
        assert p.stderr.readline().rstrip("\n") == (
            f"sieve web: exposed: listening on 0.0.0.0:{port} (every network interface of this machine); anyone who can reach it can "
            "read news, with no password. It answers to the Host names localhost, 127.0.0.1, [::1], search.example")
        deadline = time.monotonic() + 20
        while True:
            try:
                status, page, _ = ask(port, "GET", "/search?q=heatwave", {"Host": f"search.example:{port}"})
                break
            except OSError:
                assert time.monotonic() < deadline, "sieve web did not answer"
                time.sleep(0.1)
        assert status == 200 and "Heatwave plan" in page
        assert ask(port, "GET", "/", {"Host": f"192.168.1.5:{port}"})[0] == 421  # a LAN address that was not named
    finally:
        p.terminate()
        p.wait(10)
