"""A corpus written to attack the terminal: every field of its documents holds escape sequences
(clear screen, window title, 8-bit CSI), carriage-return and backspace overwrites, bidirectional
overrides, NUL, DEL, line separators and invisible tag characters. Every command of the command
line, run on a real index of it, prints none of them: each shows as a visible escape (or, inside a
card's one-line field, a space), and JSON output reads back as the documents' exact text."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopback import LoopbackServer, Say

from sieve.cli.main import main
from sieve.common.progress import Progress
from sieve.common.terminal import STYLE_CODES, EscapingStream, json_text, visible
from sieve.tools.style import Style

# Typed on a command line as they are (no NUL: an argument cannot hold one).
ARGV_SAFE = "\x1b[2J\x1b]0;owned\x07\x9b31m\rOVER\x08\x08\u202egnp.exe\u2066x\u2069\u2028\x7f\U000e0041"
HOSTILE = ARGV_SAFE + "\x00"
EVIL = "evil" + ARGV_SAFE
RECORDS: list[dict[str, Any]] = [
    {"id": EVIL, "title": "alpha title" + HOSTILE + "\n[2] plain — Forged card", "author": "Mal" + HOSTILE, "date": "2020",
     "infobox": {"key" + HOSTILE: "val" + HOSTILE}, "metadata": {"note": "meta" + HOSTILE},
     "sections": [{"heading": "Intro" + HOSTILE + "\n[3] fake — card", "text": "alpha beta " + HOSTILE + " gamma\n[4] forged\rdelta"},
                  {"heading": "Second" + HOSTILE, "text": "more alpha text " + HOSTILE}]},
    {"id": "plain", "title": "alpha plain", "text": "alpha"},
]
# What a terminal acts on: C0 but line feed and tab, DEL, C1, bidi controls, line separators, tags, surrogates.
ACTED_ON = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff\U000e0000-\U000e007f]")


def inert(text: str) -> str:
    found = ACTED_ON.findall(text)
    assert not found, f"{[hex(ord(c)) for c in found][:8]} reached the terminal in {text[:400]!r}"
    return text


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-terminal")
    lines = [json.dumps(r, ensure_ascii=False) for r in RECORDS]
    lines.append(json.dumps({"id": "bad", "sections": [{"body" + HOSTILE: "x"}]}, ensure_ascii=False))  # a key its error names
    (root / "c.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def index(corpus: Path) -> str:
    out = corpus / "idx"
    stdout, stderr = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, stderr  # a module's fixture has no capsys
    try:
        assert main(["index", str(corpus / "c.jsonl"), str(out), "--skip-bad", "--quiet"]) == 0
    finally:
        sys.stdout, sys.stderr = saved
    inert(stdout.getvalue())
    errors = inert(stderr.getvalue())
    assert "skipped 1 bad records" in errors and "sections[0].body\\x1b[2J" in errors  # the key is named, visibly
    return str(out)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, inert(out), inert(err)


def test_search_cards(index: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "search", index, "alpha", "-k", "5")
    assert rc == 0
    assert re.findall(r"^\[\d+\] ", out, re.M) == ["[1] ", "[2] "]  # the forged "[2] plain" and "[3] fake" stay in their fields
    assert "evil [2J ]0;owned  31m OVER  \\u202egnp.exe\\u2066x\\u2069 " in out  # a one-line field: controls are spaces, bidi escaped


@pytest.mark.parametrize("argv", [
    ("match", "{index}", "alpha"),
    ("match", "{index}", "alpha", "--all"),
    ("search", "{index}", "alpha[section] OR gamma"),
    ("search", "{index}", "alpha AND nowhere"),  # zero hits: the fallback's cards and the diagnosis
    ("search", "{index}", "alpha gamma", "--ranked"),
    ("explain", "{index}", "alpha AND beta[section]", EVIL),
    ("explain", "{index}", "nowhere OR alpha[author]", EVIL),
    ("show", "{index}", EVIL),
    ("visit", "{index}", EVIL),
    ("fetch", "{index}", EVIL, "#1"),
    ("fetch", "{index}", EVIL, "Second"),
    ("fetch", "{index}", EVIL, "facts"),
    ("fetch", "{index}", EVIL, "infobox"),
    ("fetch", "{index}", EVIL, "contents"),
])
def test_every_reading_command(index: str, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    rc, out, err = run(capsys, *(a.format(index=index) for a in argv))
    assert rc == 0, err
    assert "\\u202e" in out or " \\u202egnp" in out  # the document's text is there, escaped


def test_a_query_is_echoed_escaped(index: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "search", index, "alpha\u202e")  # a bidi override is no word: the query admits what alpha does
    assert rc == 0 and out.startswith("2 documents match alpha\\u202e; top 2 by bm25:")


def test_explain_shows_a_heading_on_one_line(index: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(capsys, "explain", index, "beta", EVIL)
    assert rc == 0
    assert out.startswith("admitted: evil\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\x0dOVER\\x08\\x08\\u202egnp.exe")
    assert '§ "Intro\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\x0dOVER\\x08\\x08\\u202egnp.exe\\u2066x\\u2069\\u2028\\x7f\\U000e0041\\x00\\x0a[3] fake — card"' in out
    assert len(out.splitlines()) == 2  # the heading's line break forges no line


@pytest.mark.parametrize("argv", [
    ("fetch", "{index}", EVIL, "no such section"),  # the error lists the document's headings
    ("fetch", "{index}", "nope" + ARGV_SAFE, "intro"),
    ("explain", "{index}", "alpha", "nope" + ARGV_SAFE),
    ("show", "{index}", "nope" + ARGV_SAFE),
    ("search", "{index}", "alpha\x1b[2J"),
    ("match", "{index}", "\"alpha" + ARGV_SAFE),
    ("delete", "{index}/missing-index", "x"),
])
def test_errors_quoting_ids_and_queries(index: str, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    rc, out, err = run(capsys, *(a.format(index=index) for a in argv))
    assert rc == 1 and err.startswith("sieve: ")


def test_an_unknown_id_is_quoted_visibly(index: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, _, err = run(capsys, "show", index, "nope" + ARGV_SAFE)
    assert err == "sieve: no document with id 'nope\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\rOVER\\x08\\x08\\u202egnp.exe\\u2066x\\u2069\\u2028\\x7f\\U000e0041'\n"


def test_test_reports(index: str, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = corpus / "cases.jsonl"
    cases.write_text(json.dumps({"name": "case" + HOSTILE, "query": "alpha", "rejects": [EVIL], "top": ["plain"]}) + "\n", encoding="utf-8")
    rc, out, _ = run(capsys, "test", str(cases), index)
    assert rc == 1
    assert out.startswith("FAIL line 1: case\\x1b[2J")
    assert "should be rejected, but is admitted:" in out and '§ "Intro\\x1b[2J' in out
    assert not re.search(r"^\[3\] fake", out, re.M)


@pytest.mark.parametrize("argv", [
    ("match", "{index}", "alpha", "--json"),
    ("search", "{index}", "alpha", "--json"),
    ("search", "{index}", "alpha AND nowhere", "--json"),
    ("explain", "{index}", "beta", EVIL, "--json"),
    ("show", "{index}", EVIL, "--json"),
    ("visit", "{index}", EVIL, "--json"),
    ("fetch", "{index}", EVIL, "Second", "--json"),
    ("test", "{cases}", "{index}", "--json"),
])
def test_json_is_printable_and_exact(index: str, corpus: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> None:
    cases = corpus / "cases-json.jsonl"
    cases.write_text(json.dumps({"query": "alpha", "rejects": [EVIL]}) + "\n", encoding="utf-8")
    rc, out, _ = run(capsys, *(a.format(index=index, cases=cases) for a in argv))
    assert rc in (0, 1)
    assert EVIL in strings(json.loads(out))  # the id, read back exactly


def strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = [*value, *value.values()]
    return [s for v in value for s in strings(v)] if isinstance(value, list) else []


def test_a_json_error_is_printable_and_exact(index: str, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "show", index, "nope" + ARGV_SAFE, "--json")
    assert rc == 1
    assert json.loads(err)["message"] == f"no document with id {'nope' + ARGV_SAFE!r}"


def test_delete_reports_unknown_ids_visibly(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own = corpus / "own"
    assert main(["index", str(corpus / "c.jsonl"), str(own), "--skip-bad", "--quiet"]) == 0
    capsys.readouterr()
    rc, out, _ = run(capsys, "delete", str(own), EVIL, "gone" + ARGV_SAFE)
    assert rc == 0 and "were not in the index" not in out and "1 id was not in the index: 'gone\\x1b[2J" in out


def test_ask_prints_the_steps_and_answer_escaped(index: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The model's words, the tool results it got (document text) and its answer all reach the terminal."""

    def policy(body: dict[str, Any]) -> Say:
        seen = "\n".join(str(m.get("content") or "") for m in body["messages"][2:])
        if "alpha" in seen:
            return Say(f"<answer>evil says {HOSTILE}\nline two</answer>")
        return Say("thinking" + HOSTILE + '<tool_call>{"name": "search", "arguments": {"query": "alpha"}}</tool_call>')

    with LoopbackServer(policy) as srv:
        rc, out, _ = run(capsys, "ask", index, "what" + ARGV_SAFE, "--llm-url", srv.url, "--model", "scripted", "--tool-style", "text")
    assert rc == 0
    assert "step 1: model" in out and "-> search(" in out
    assert "answer (answered): evil says \\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\x0dOVER" in out and "\nline two" in out


def test_ask_json_record_is_printable_and_exact(index: str, capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer(lambda body: Say(f"<answer>{HOSTILE}</answer>")) as srv:
        rc, out, err = run(capsys, "ask", index, "q", "--llm-url", srv.url, "--model", "scripted", "--tool-style", "text", "--json")
    assert rc == 0 and json.loads(out)["answer"] == HOSTILE


def test_a_real_process_prints_nothing_a_terminal_acts_on(index: str) -> None:
    """The same through a real stdout: a subprocess, its bytes read as UTF-8."""
    for argv in (["search", index, "alpha"], ["visit", index, EVIL], ["match", index, "alpha", "--json"], ["show", index, "nope" + ARGV_SAFE]):
        got = subprocess.run([sys.executable, "-m", "sieve", *argv], capture_output=True)
        inert(got.stdout.decode("utf-8"))
        inert(got.stderr.decode("utf-8"))
        assert b"\x1b" not in got.stdout + got.stderr and b"\xc2\x9b" not in got.stdout + got.stderr


def test_visible_and_json_text() -> None:
    assert visible("a\x1b[2J\r\x08\x9b\u202e\u2028\U000e0041\n\tb") == "a\\x1b[2J\\x0d\\x08\\x9b\\u202e\\u2028\\U000e0041\n\tb"
    assert visible("a\nb\tc", one_line=True) == "a\\x0ab\\x09c"
    assert visible("plain ünïcode — 日本 👍🏽 فارسی\u200c") == "plain ünïcode — 日本 👍🏽 فارسی\u200c"  # joiners stay: scripts need them
    for value in (HOSTILE, {"k" + HOSTILE: [HOSTILE, 1, None]}, "\ud800"):
        text = json_text(value, indent=1)
        assert json.loads(text) == value and not ACTED_ON.search(text.replace("\n", ""))


def test_the_stream_lets_only_sieves_own_colours_through_to_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    style = Style(colour=True)
    coloured = style.id("a") + style.match("b") + style.dim("c") + style.section("d")
    assert set(re.findall(r"\x1b\[([0-9;]*)m", coloured)) <= set(STYLE_CODES)
    for stream, colours in ((Tty(), True), (io.StringIO(), False)):
        print(coloured + "\x1b[2J\x1b[8m", file=EscapingStream(stream))
        got = stream.getvalue()
        assert got.endswith("\\x1b[2J\\x1b[8m\n")
        assert got.startswith(coloured) == colours  # off a terminal, even a colour is shown as text


def test_a_progress_bar_draws_past_the_escaping() -> None:
    """tqdm redraws with carriage returns: on a terminal it gets the stream itself, not the escaping one."""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    raw = Tty()
    bar = Progress("indexing", "docs", total=3, stream=EscapingStream(raw))  # type: ignore[arg-type]
    bar.update(3)
    bar.close()
    assert "\r" in raw.getvalue() and "3/3" in raw.getvalue() and "\\x0d" not in raw.getvalue()
