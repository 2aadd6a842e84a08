"""`sieve web` over real HTTP on loopback: search pages, cards, sections, errors marked at their
position, the fallback, limits, and untrusted text that never runs. A real browser drives it in
test_browser.py."""

from __future__ import annotations

import html
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("starlette", reason="sieve web needs the web extra (starlette, uvicorn, jinja2)")
pytest.importorskip("jinja2", reason="sieve web needs the web extra (starlette, uvicorn, jinja2)")
uvicorn = pytest.importorskip("uvicorn", reason="sieve web needs the web extra (starlette, uvicorn, jinja2)")

from sieve.index.index import build_index  # noqa: E402
from sieve.web import WebLimits, create_app  # noqa: E402

EVIL = '<script>document.title="pwned"</script><img src=x onerror=alert(1)>'
DOCS = [
    {"id": "heat-1", "title": "Heatwave plan", "date": "2021-06", "author": "City Council", "infobox": {"country": "France"},
     "sections": [{"heading": "Overview", "text": "The heatwave plan covers schools."},
                  {"heading": "School closure", "text": "A school closure starts when the heatwave lasts three days."}],
     "year": 2021},
    {"id": "cold-2", "title": "Cold snap", "sections": [{"heading": "Advice", "text": "Keep schools warm during a cold snap."}], "year": 2019},
    {"id": "evil", "title": "Evil " + EVIL, "sections": [{"heading": "Head " + EVIL, "text": "evil text " + EVIL}], "year": 2000},
]


class Server:
    def __init__(self, app: Any) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> "Server":
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the web server did not start")
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def get(self, path: str, **params: Any) -> tuple[int, str, dict[str, str]]:
        url = f"http://127.0.0.1:{self.port}{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=20) as r:
                return r.status, r.read().decode("utf-8", "replace"), dict(r.headers)  # an image's bytes are not UTF-8
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode("utf-8", "replace"), dict(e.headers)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    ix = build_index(DOCS, fields={"year": "number"})
    other = build_index(DOCS[:1])
    with Server(create_app({"news": ix, "small": other}, WebLimits(k_max=2, max_query_chars=60))) as s:
        yield s
    ix.close()
    other.close()


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_home_lists_the_indexes(server: Server) -> None:
    status, page, headers = server.get("/")
    assert status == 200 and "news: 3 documents" in page and "small: 1 documents" in page
    assert "script-src" not in headers["content-security-policy"] and "default-src 'none'" in headers["content-security-policy"]


def test_search_shows_the_canonical_form_the_count_and_cards(server: Server) -> None:
    status, page, _ = server.get("/search", index="news", q='heatwave "school closure"[section]')
    assert status == 200
    text = _text(page)
    assert '1 document matches heatwave AND "school closure"[section]; top 1 by bm25' in " ".join(text.split())
    card = page[page.index('id="card-1"'):]
    assert "heat-1" in card and "2021-06" in card and "by City Council" in card and "year 2021" in card
    assert '<li class="matched"><a href="/doc?index=news&amp;id=heat-1&amp;section=1' in card and "*School closure*" in card
    assert "*Overview*" in card  # heatwave is in its text
    _, page, _ = server.get("/search", index="news", q='"school closure"')
    card = page[page.index('id="card-1"'):]
    assert "<li><a" in card and ">Overview</a>" in card and "*School closure*" in card  # an unmatched heading: listed, not starred
    assert "infobox: country" in card and "matched: body, section" in _text(card).replace("section, body", "body, section")
    assert '<mark class="hit">closure</mark>' in card


def test_a_heading_opens_its_section(server: Server) -> None:
    _, page, _ = server.get("/search", index="news", q="closure")
    href = html.unescape(re.search(r'<li class="matched"><a href="([^"]+)"', page).group(1))
    status, doc, _ = server.get(href.split("?")[0], **dict(urllib.parse.parse_qsl(href.split("?")[1])))
    assert status == 200
    assert '<h2 id="heading">School closure</h2>' in doc and "A school closure starts when the heatwave lasts three days." in doc
    assert doc.count("<li>") == 2 and 'class="current">School closure' in doc  # the outline, the open section marked
    assert "back to the results" in doc


def test_a_syntax_error_is_marked_at_its_position(server: Server) -> None:
    status, page, _ = server.get("/search", index="news", q="heatwave AND (school")
    assert status == 400
    assert 'heatwave AND (school<mark id="error-at"> </mark>' in page  # at the end: the place a ')' is missing
    assert "expected a closing ')' (the '(' at 13 is never closed)" in _text(page)
    status, page, _ = server.get("/search", index="news", q="heatwave[titel]")
    assert status == 400 and 'heatwave[<mark id="error-at">t</mark>itel]' in page and "did you mean title?" in page


def test_the_fallback_is_marked_with_what_matched_nothing(server: Server) -> None:
    status, page, _ = server.get("/search", index="news", q="heatwave AND zeppelin")
    assert status == 200 and 'id="fallback"' in page and "zeppelin" in _text(page[page.index('id="fallback"'):])
    assert 'id="card-1"' in page


def test_limits_and_unknown_names(server: Server) -> None:
    _, page, _ = server.get("/search", index="news", q="school OR cold OR heatwave", k="2")
    assert 'id="card-2"' in page and 'id="card-3"' not in page
    status, page, _ = server.get("/search", index="news", q="school OR cold OR heatwave", k="50")  # over the server's k_max (2)
    assert status == 400 and "k (results) must be a whole number from 1 to 2, got &#39;50&#39;" in page and 'id="card-1"' not in page
    status, page, _ = server.get("/search", index="news", q="x " * 40)
    assert status == 400 and "at most 60" in page
    assert server.get("/search", index="../etc", q="x")[0] == 404
    assert server.get("/doc", index="news", id="nope")[0] == 404
    assert server.get("/doc", index="news", id="heat-1", section="9")[0] == 404
    assert server.get("/doc", index="news", id="heat-1", section="-1")[0] == 404
    status, page, _ = server.get("/search", index="news", q="year[2020..]")
    assert status == 200 and "heat-1" in page and "cold-2" not in page


def test_untrusted_text_is_escaped_everywhere(server: Server) -> None:
    for path, params in (("/search", {"index": "news", "q": "evil"}), ("/doc", {"index": "news", "id": "evil", "section": "0"}),
                         ("/search", {"index": "news", "q": EVIL[:50]})):
        status, page, headers = server.get(path, **params)
        assert "<script" not in page.lower() and "<img" not in page.lower() and "onerror=alert" not in page.replace("onerror=alert(1)&gt;", "")
        assert "&lt;script&gt;" in page or status == 400
        assert "default-src 'none'" in headers["content-security-policy"]


def test_the_command_serves_on_loopback(tmp_path: Any) -> None:
    import socket
    import subprocess
    import sys

    build_index(DOCS, tmp_path / "ix").close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "sieve", "web", f"news={tmp_path / 'ix'}", "--port", str(port)], stderr=subprocess.PIPE, text=True)
    try:
        assert p.stderr is not None
        assert f"sieve web: news at http://127.0.0.1:{port}/" in p.stderr.readline()
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/search?q=heatwave", timeout=5) as r:
                    assert r.status == 200 and "Heatwave plan" in r.read().decode()
                break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "sieve web did not answer"
                time.sleep(0.1)
    finally:
        p.terminate()
        p.wait(10)
    bad = subprocess.run([sys.executable, "-m", "sieve", "web", str(tmp_path / "ix"), "--k-max", "0"], capture_output=True, text=True)
    assert bad.returncode != 0 and "--k-max" in bad.stderr and "Traceback" not in bad.stderr
