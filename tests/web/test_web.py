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


MATCHED = '<li class="matched" title="this section matches the query">'


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
    # A matched heading is marked by its style, not by the text cards' stars (stray Markdown here).
    assert f'{MATCHED}<a href="/doc?index=news&amp;id=heat-1&amp;section=1' in card
    assert ">School closure</a>" in card
    assert "*School closure*" not in card
    # heatwave is in its text:
    assert f'{MATCHED}<a href="/doc?index=news&amp;id=heat-1&amp;section=0' in card
    _, page, _ = server.get("/search", index="news", q='"school closure"')
    card = page[page.index('id="card-1"'):]
    # An unmatched heading: listed, not marked.
    assert "<li><a" in card and ">Overview</a>" in card and f"{MATCHED}<a" in card
    assert "infobox: country" in card and "matched: body, section" in _text(card).replace("section, body", "body, section")
    assert '<mark class="hit">closure</mark>' in card


def test_a_heading_opens_its_section(server: Server) -> None:
    _, page, _ = server.get("/search", index="news", q="closure")
    href = html.unescape(re.search(f'{MATCHED}<a href="([^"]+)"', page).group(1))
    status, doc, _ = server.get(href.split("?")[0], **dict(urllib.parse.parse_qsl(href.split("?")[1])))
    assert status == 200
    assert '<h2 id="heading">School closure</h2>' in doc and "A school closure starts when the heatwave lasts three days." in doc
    # The outline, the open section marked.
    assert doc.count("<li>") == 2 and 'class="current" aria-current="page">School closure' in doc
    assert "back to the results" in doc


def test_a_syntax_error_is_marked_at_its_position(server: Server) -> None:
    status, page, _ = server.get("/search", index="news", q="heatwave AND (school")
    assert status == 400
    # The query with a caret under the place: at the end, where a ')' is missing.
    pointer = '<pre class="pointer" id="error-pointer">'
    assert pointer + "  heatwave AND (school\n                      ^</pre>" in page
    assert "expected a closing ')' (the '(' at 13 is never closed)" in _text(page)
    status, page, _ = server.get("/search", index="news", q="heatwave[titel]")
    assert status == 400 and "did you mean title?" in page
    assert pointer + "  heatwave[titel]\n           ^</pre>" in page
    # The query is escaped in the pointer too.
    status, page, _ = server.get("/search", index="news", q='"<b>x</b>" AND (')
    assert status == 400 and "  &#34;&lt;b&gt;x&lt;/b&gt;&#34; AND (\n" in page
    assert "<b>x" not in page


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


# Issue 50: cards that fold long heading lists, Markdown emphasis, zero-hit suggestions, scores a
# person reads, the outline beside the text.
HOSTILE = "*<script>alert(1)</script>* and **<img src=x onerror=alert(1)>**"
LONG = {"id": "long", "title": "A long manual",
        "sections": [{"heading": f"Part {j}", "text": f"filler text number {j}."}
                     for j in range(30)]}
LONG["sections"][20] = {"heading": "Part 20", "text": "the zeppelin section"}
RICH = [LONG,
        {"id": "short", "title": "Short",
         "sections": [{"heading": f"Bit {j}", "text": "airship"} for j in range(8)]},
        {"id": "marked", "title": "Marked up", "sections": [
            {"heading": "Usage",
             "text": "Call *emphasis* and **strong** words, keep snake_case_name "
                     "and f(*args, **kwargs) and *.py as written."},
            {"heading": "Hostile", "text": "hostile " + HOSTILE}]}]


@pytest.fixture(scope="module")
def rich() -> Iterator[Server]:
    ix = build_index(RICH + DOCS[:2])
    with Server(create_app({"rich": ix})) as s:
        yield s
    ix.close()


def _card(page: str, rank: int = 1) -> str:
    start = page.index(f'id="card-{rank}"')
    end = page.find('id="card-', start + 10)
    return page[start:end if end > 0 else len(page)]


def test_a_long_heading_list_shows_the_matched_and_the_first_few_the_rest_behind_more(
        rich: Server) -> None:
    _, page, _ = rich.get("/search", index="rich", q="zeppelin")
    card = _card(page)
    at_once, _, later = card.partition('<details class="more"')
    assert later, "the 24 other headings wait behind a toggle"
    assert [f"Part {j}" for j in (0, 1, 2, 3, 4, 20)] == re.findall(r">(Part \d+)</a>", at_once)
    assert f'{MATCHED}<a href="/doc?index=rich&amp;id=long&amp;section=20' in at_once
    assert "<summary>24 more headings</summary>" in later
    assert re.findall(r">(Part \d+)</a>", later) == [f"Part {j}" for j in range(5, 30) if j != 20]
    _, page, _ = rich.get("/search", index="rich", q="airship")  # 8 headings: too few to fold
    card = _card(page)
    assert "<details" not in card and len(re.findall(r">(Bit \d)</a>", card)) == 8


def test_emphasis_is_rendered_and_everything_else_escaped(rich: Server) -> None:
    _, page, _ = rich.get("/search", index="rich", q="emphasis")
    snippet = _card(page).split('class="snippet"')[1]
    assert '<em><mark class="hit">emphasis</mark></em>' in snippet
    assert "<strong>strong</strong>" in snippet
    assert "snake_case_name" in snippet and "f(*args, **kwargs)" in snippet and "*.py" in snippet
    _, doc, _ = rich.get("/doc", index="rich", id="marked", section="0")
    assert "Call <em>emphasis</em> and <strong>strong</strong> words" in doc
    for path, params in (("/search", {"index": "rich", "q": "hostile"}),
                         ("/doc", {"index": "rich", "id": "marked", "section": "1"})):
        _, page, _ = rich.get(path, **params)
        assert "<em>&lt;script&gt;alert(1)&lt;/script&gt;</em>" in page, path
        assert "<strong>&lt;img src=x onerror=alert(1)&gt;</strong>" in page, path
        assert "<script" not in page.lower() and "<img" not in page.lower()


def test_a_zero_hit_query_suggests_the_changes_that_would_admit_documents(rich: Server) -> None:
    from sieve.tools.cards import relaxations_line

    status, page, _ = rich.get("/search", index="rich", q="heatwave AND snap", k="3")
    assert status == 200 and 'id="suggestions"' in page
    box = page[page.index('id="suggestions"'):]
    links = re.findall(r'<a href="(/search\?[^"]+)">([^<]+)</a>', box)
    assert [(html.unescape(h), t) for h, t in links] == [
        ("/search?index=rich&q=snap&ranker=bm25&k=3", "1 without heatwave"),
        ("/search?index=rich&q=heatwave&ranker=bm25&k=3", "1 without snap")]
    ix = build_index(RICH + DOCS[:2])  # the CLI's and the tools' line names the same changes
    assert relaxations_line(ix.search("heatwave AND snap")) == (
        "\nOne change would admit documents: 1 without heatwave; 1 without snap.")
    ix.close()
    status, page, _ = rich.get("/search", index="rich", q="snap")  # the suggestion has results
    assert status == 200 and 'id="card-1"' in page and 'id="suggestions"' not in page


def test_scores_show_three_significant_digits(rich: Server) -> None:
    _, page, _ = rich.get("/search", index="rich", q="schools OR heatwave")
    scores = re.findall(r"score ([\d.,]+)</span>", page)
    digits = [s.replace(".", "").replace(",", "").lstrip("0") for s in scores]
    assert scores and all(len(d) <= 3 for d in digits), scores
    ix = build_index(RICH + DOCS[:2])
    want = ix.search("schools OR heatwave", k=10).hits[0].score
    ix.close()
    assert scores[0] == f"{want:.3g}" and scores[0] != f"{want:.4f}"


def test_the_outline_sits_beside_the_text(rich: Server) -> None:
    _, doc, _ = rich.get("/doc", index="rich", id="long", section="20")
    grid = doc[doc.index('<div class="document">'):]
    nav = grid.index('<nav class="outline" id="outline"')
    main = grid.index('<main class="text" id="text">')
    assert nav < main < grid.index('id="section"')
    _, css, _ = rich.get("/")
    assert re.search(r"\.document \{ display: grid; grid-template-columns: minmax\(12em, 17em\)",
                     css)
    narrow = (r"@media \(max-width: 48em\) \{\s*"
              r"\.document \{ grid-template-columns: minmax\(0, 1fr\); \}")
    assert re.search(narrow, css)
