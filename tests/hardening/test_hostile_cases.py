"""`sieve test` with a hostile case file (and `search --topics`, `delete --ids-file` with hostile
lists): every one is a clear message naming the file (and the line), exit 1, no traceback and no
hang, before any case runs or anything is changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import sieve
from sieve.cli.main import main
from sieve.errors import InvalidArgumentError
from sieve.testing import load_cases

from .deadline import within

GOOD = b'{"query": "alpha", "admits": ["a"]}\n'


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cases")
    corpus = root / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "title": "alpha", "text": "first"}) + "\n" + json.dumps({"id": "b", "title": "beta"}) + "\n")
    sieve.build_index(corpus, root / "ix")
    return root / "ix"


def run_test(cases: Path | str, index: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    with within(10, "sieve test"):
        code = main(["test", str(cases), str(index), *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


HOSTILE = [
    ("invalid UTF-8", GOOD + b'{"query": "caf\xe9"}\n', "c.jsonl:2: not UTF-8 text (invalid continuation byte at byte 15 of the line)"),
    ("UTF-8 of a surrogate", b'{"query": "\xed\xa0\x80"}\n', "c.jsonl:1: not UTF-8 text (invalid continuation byte at byte 12 of the line)"),
    ("a lone surrogate escape", GOOD + GOOD + b'{"query": "alpha \\ud800"}\n', "c.jsonl:3: holds a lone surrogate U+D800 (not valid Unicode text)"),
    ("a lone surrogate in a key", b'{"query": "alpha", "\\udfff": 1}\n', "c.jsonl:1: unknown keys ['\\udfff']; a case has query, admits, rejects, "
                                                                          "top, count, ranker, name"),
    ("a lone surrogate in an id", b'{"query": "alpha", "admits": ["\\udc00"]}\n', "c.jsonl:1: holds a lone surrogate U+DC00 (not valid Unicode text)"),
    ("deeply nested JSON", b'{"query": "x", "admits": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "c.jsonl:1: invalid JSON: nested too deeply"),
    ("nested JSON as the line", b"[" * 3000 + b"]" * 3000 + b"\n", "c.jsonl:1: invalid JSON: nested too deeply"),
    ("a 5,000-digit count", b'{"query": "x", "count": ' + b"9" * 5000 + b"}\n", "c.jsonl:1: invalid JSON: a number too long to read (more than 4,300 digits)"),
    ("a truncated line", GOOD + b'{"query": "x", "adm', "c.jsonl:2: invalid JSON: Unterminated string starting at (column 16)"),
    ("NUL bytes", b"\x00\x00\x00\n", "c.jsonl:1: invalid JSON: Expecting value (column 1)"),
    ("an empty file", b"", "c.jsonl: the case file has no cases (one JSON object per line, see docs/testing.md)"),
    ("only comments and blank lines", b"\n// nothing here\n   \n", "c.jsonl: the case file has no cases (one JSON object per line, see docs/testing.md)"),
    ("an unknown ranker", b'{"query": "x", "ranker": "' + b"r" * 500 + b'"}\n',
     "c.jsonl:1: 'ranker' must be one of bm25, dense, hybrid, indri, indri+dense, got 'rrrrrrrrrrrrrrrrrrr... (502 characters)"),
    ("a name that is no text", b'{"query": "x", "name": {"a": 1}}\n', "c.jsonl:1: 'name' must be a string, got dict"),
    ("a huge id list shown short", b'{"query": "x", "admits": "' + b"a" * 10_000 + b'"}\n',
     "c.jsonl:1: 'admits' must be a list of document ids (strings), got 'aaaaaaaaaaaaaaaaaaa... (10,002 characters)"),
]


@pytest.mark.parametrize("content,message", [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_a_hostile_case_file_is_one_clear_message(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str) -> None:
    cases = tmp_path / "c.jsonl"
    cases.write_bytes(content)
    code, out, err = run_test(cases, index, capsys)
    assert (code, out, err) == (1, "", f"sieve: {tmp_path}/{message}\n")
    with pytest.raises(InvalidArgumentError) as e:  # the API says the same
        load_cases(cases)
    assert str(e.value) == f"{tmp_path}/{message}"


def test_the_json_error_is_json(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "c.jsonl"
    cases.write_bytes(b'{"query": "\\ud800"}\n')
    code, out, err = run_test(cases, index, capsys, "--json")
    assert code == 1 and out == ""
    assert json.loads(err) == {"error": "InvalidArgumentError", "message": f"{cases}:1: holds a lone surrogate U+D800 (not valid Unicode text)"}


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "cases.jsonl"
    os.mkfifo(fifo)
    assert run_test(fifo, index, capsys) == (1, "", f"sieve: {fifo}: the case file is a FIFO (named pipe), not a regular file\n")


def test_a_link_to_a_fifo_is_refused_too(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "cases.jsonl").symlink_to(tmp_path / "pipe")
    code, _, err = run_test(tmp_path / "cases.jsonl", index, capsys)
    assert code == 1 and err == f"sieve: {tmp_path / 'cases.jsonl'}: the case file is a FIFO (named pipe), not a regular file\n"


@pytest.mark.parametrize("path,what", [("/dev/zero", "is a character device, not a regular file"), ("/dev/null", "is a character device, not a regular file"),
                                       ("/", "is a directory, not a regular file"), ("/no/such/cases.jsonl", "does not exist")])
def test_what_is_no_case_file_is_named(index: Path, capsys: pytest.CaptureFixture[str], path: str, what: str) -> None:
    assert run_test(path, index, capsys) == (1, "", f"sieve: {path}: the case file {what}\n")


def test_a_case_file_past_its_bound_is_refused(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import sieve.testing

    monkeypatch.setattr(sieve.testing, "MAX_CASES_BYTES", 100)
    cases = tmp_path / "c.jsonl"
    cases.write_bytes(GOOD * 3)
    assert run_test(cases, index, capsys) == (1, "", f"sieve: {cases}: the case file is larger than 100 bytes\n")


def test_a_byte_order_mark_and_crlf_lines_are_read(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "c.jsonl"
    cases.write_bytes(b"\xef\xbb\xbf" + GOOD.replace(b"\n", b"\r\n") * 2)
    assert run_test(cases, index, capsys) == (0, "2 passed, 0 failed (2 cases)\n", "")


TOPICS = [
    ("invalid UTF-8", b'{"_id": "t1", "text": "alpha"}\nt2\tcaf\xe9\n', "t.jsonl:2: not UTF-8 text (unexpected end of data at byte 7 of the line)"),
    ("deeply nested JSON", b'{"_id": "t1", "text": ' + b"[" * 5000 + b"]" * 5000 + b"}\n", "t.jsonl:1: invalid JSON: nested too deeply"),
    ("a lone surrogate", b'{"_id": "t1", "text": "alpha \\ud800"}\n', "t.jsonl:1: holds a lone surrogate U+D800 (not valid Unicode text)"),
    ("a 5,000-digit id", b'{"_id": ' + b"1" * 5000 + b', "text": "alpha"}\n',
     "t.jsonl:1: invalid JSON: a number too long to read (more than 4,300 digits)"),
    ("an id that is a list", b'{"_id": [1], "text": "alpha"}\n', "t.jsonl:1: a topic needs an id and a query (JSON: _id and text; TSV: id TAB query)"),
]


@pytest.mark.parametrize("content,message", [t[1:] for t in TOPICS], ids=[t[0] for t in TOPICS])
def test_a_hostile_topics_file_is_one_clear_message(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str], content: bytes,
                                                    message: str) -> None:
    topics = tmp_path / "t.jsonl"
    topics.write_bytes(content)
    with within(10):
        code = main(["search", str(index), "--topics", str(topics), "--run", str(tmp_path / "r.run")])
    assert (code, capsys.readouterr().err) == (1, f"sieve: {tmp_path}/{message}\n")
    assert not (tmp_path / "r.run").exists()


def test_a_crlf_topics_file_is_read(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    topics = tmp_path / "t.tsv"
    topics.write_bytes(b"\xef\xbb\xbft1\talpha\r\nt2\tbeta\r\n")
    assert main(["search", str(index), "--topics", str(topics), "--run", str(tmp_path / "r.run")]) == 0
    assert [line.split()[:3] for line in (tmp_path / "r.run").read_text().splitlines()] == [["t1", "Q0", "a"], ["t2", "Q0", "b"]]


@pytest.mark.parametrize("option", ["--topics", "--ids-file"])
def test_a_fifo_or_a_device_as_a_list_is_refused_not_waited_on(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str], option: str) -> None:
    fifo = tmp_path / "list"
    os.mkfifo(fifo)
    what = "the topics file" if option == "--topics" else "the ids file"
    argv = ["search", str(index), "--topics"] if option == "--topics" else ["delete", str(index), "--ids-file"]
    more = ["--run", str(tmp_path / "r.run")] if option == "--topics" else []
    for path, kind in ((fifo, "a FIFO (named pipe)"), ("/dev/zero", "a character device")):
        with within(10):
            code = main([*argv, str(path), *more])
        assert (code, capsys.readouterr().err) == (1, f"sieve: {path}: {what} is {kind}, not a regular file\n")


def test_an_ids_file_that_is_not_utf8_deletes_nothing(tmp_path: Path, index: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_bytes(b"a\nb\xff\n")
    assert main(["delete", str(index), "--ids-file", str(ids)]) == 1
    assert capsys.readouterr().err == f"sieve: {ids}:2: not UTF-8 text (invalid start byte at byte 2 of the line)\n"
    assert len(sieve.open_index(index)) == 2
