"""Hostile corpora (web crawls have NULs, lone surrogates, broken encodings): every good record is
kept, every bad one is named at its true line, and nothing else escapes but a sieve error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import sieve
import sieve.index.build
from sieve.corpus.formats import CorpusReport
from sieve.errors import CorpusError, InvalidArgumentError


def good(i: int) -> bytes:
    return json.dumps({"id": f"d{i}", "title": f"title {i}", "text": f"body of record {i}"}).encode()


def write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.fixture(params=[1, 2], ids=["one-process", "workers"])
def jobs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr("sieve.index.batches.PARALLEL_MIN_BYTES", 0)  # the worker path even for a small file
    monkeypatch.setattr("sieve.index.batches.BATCH_DOCS", 7)  # several chunks, so a bad line falls inside one
    return int(request.param)


def build(tmp_path: Path, corpus: Path, jobs: int = 1) -> tuple[sieve.Index, CorpusReport]:
    report = CorpusReport()
    index = sieve.build_index(corpus, tmp_path / "idx", on_error="skip", report=report, jobs=jobs)
    return index, report


@pytest.mark.parametrize("bad_line", [1, 2, 41, 61])
def test_invalid_utf8_loses_only_its_own_line(tmp_path: Path, jobs: int, bad_line: int) -> None:
    lines = [good(i) for i in range(1, 62)]
    lines[bad_line - 1] = b'{"id": "bad", "title": "\xff\xfe broken"}'
    index, report = build(tmp_path, write(tmp_path / "c.jsonl", lines), jobs)
    assert len(index) == 60 and report.skipped == 1
    assert report.errors == [f"{tmp_path / 'c.jsonl'}:{bad_line}: not UTF-8 text (invalid start byte at byte 25 of the line)"]
    assert index.match("record").count == 60 and "bad" not in index.match("title").ids


def test_invalid_utf8_names_its_line_when_not_skipping(tmp_path: Path) -> None:
    lines = [good(i) for i in range(1, 10)]
    lines[4] = b'{"id": "bad", "title": "\xc3("}'
    with pytest.raises(CorpusError) as e:
        sieve.build_index(write(tmp_path / "c.jsonl", lines), tmp_path / "idx")
    assert e.value.line == 5 and "not UTF-8 text" in str(e.value)


def test_a_lone_carriage_return_inside_a_record_does_not_split_it(tmp_path: Path) -> None:
    raw = [b'{"id": "a", "title": "one\rtwo", "text": "x\ry"}', good(2)]
    index, report = build(tmp_path, write(tmp_path / "c.jsonl", raw))
    assert report.skipped == 0 and len(index) == 2
    assert index.document("a").title == "one\rtwo"  # kept as it is
    assert index.match("one[title] two[title]").ids == ["a"]


def test_crlf_line_ends_and_a_byte_order_mark(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_bytes(b"\xef\xbb\xbf" + b"\r\n".join(good(i) for i in range(3)) + b"\r\n")
    index, report = build(tmp_path, corpus)
    assert report.skipped == 0 and sorted(index.match("record").ids) == ["d0", "d1", "d2"]


def test_a_null_id_is_no_id(tmp_path: Path) -> None:
    index, report = build(tmp_path, write(tmp_path / "c.jsonl", [b'{"id": null, "_id": "x", "title": "t"}', b'{"id": null, "title": "u"}']))
    assert index.match("t").ids == ["x"]
    assert report.errors == [f"{tmp_path / 'c.jsonl'}:2: missing id (give 'id' or '_id')"]


def test_nul_characters_separate_words_and_are_stored(tmp_path: Path) -> None:
    records = [{"id": "n", "title": "alpha\u0000beta", "sections": [{"heading": "h\u0000i", "text": "gamma\u0000delta"}], "infobox": {"k": "v\u0000w"}},
               {"id": "m", "title": "other"}]
    index = sieve.build_index(records, tmp_path / "idx")
    assert index.match("alpha[title] AND beta[title] AND gamma AND delta AND i[section] AND w[infobox]").ids == ["n"]
    assert not index.match('"beta gamma"').count  # the NUL does not join the title to the body
    doc = index.document("n")
    assert doc.title == "alpha\u0000beta" and doc.sections[0].text == "gamma\u0000delta"
    assert index.check()


@pytest.mark.parametrize("record, message", [
    ({"id": "s", "title": "a\ud800b"}, "title holds a lone surrogate U+D800 at character 1 (not valid Unicode text)"),
    ({"id": "s\udfff"}, "id holds a lone surrogate U+DFFF at character 1 (not valid Unicode text)"),
    ({"id": "s", "text": "\udc80"}, "text holds a lone surrogate U+DC80 at character 0 (not valid Unicode text)"),
    ({"id": "s", "author": ["ok", "x\ud800"]}, "author holds a lone surrogate U+D800 at character 5 (not valid Unicode text)"),
    ({"id": "s", "infobox": {"k": "\ud800"}}, "infobox value of 'k' holds a lone surrogate U+D800 at character 0 (not valid Unicode text)"),
    ({"id": "s", "source": {"deep": ["\ud800"]}}, "metadata holds a lone surrogate U+D800 (not valid Unicode text)"),
])
def test_lone_surrogates_are_corpus_errors(tmp_path: Path, record: dict, message: str) -> None:
    with pytest.raises(CorpusError) as e:
        sieve.build_index([record], tmp_path / "idx")
    assert str(e.value) == f"record 1: {message}"
    assert not (tmp_path / "idx").exists()


def test_json_a_parser_refuses(tmp_path: Path, jobs: int) -> None:
    lines = [good(1), b'{"id": "big", "n": ' + b"9" * 5000 + b"}", b'{"id": "deep", "m": ' + b"[" * 6000 + b"]" * 6000 + b"}",
             b'{"id": "esc", "t": "\\ud800"}', good(2)]
    index, report = build(tmp_path, write(tmp_path / "c.jsonl", lines), jobs)
    name = tmp_path / "c.jsonl"
    assert sorted(index.match("record").ids) == ["d1", "d2"]
    assert report.errors == [f"{name}:2: invalid JSON: a number too long to read (more than 4,300 digits)",
                             f"{name}:3: invalid JSON: nested too deeply",
                             f"{name}:4: metadata holds a lone surrogate U+D800 (not valid Unicode text)"]


def test_metadata_nested_too_deep_from_the_api(tmp_path: Path) -> None:
    deep: list = []
    for _ in range(6000):
        deep = [deep]
    with pytest.raises(CorpusError, match="metadata must be JSON-serialisable"):
        sieve.build_index([{"id": "a", "m": deep}], tmp_path / "idx")


def test_nothing_to_index(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")
    with pytest.raises(CorpusError) as e:
        sieve.build_index(tmp_path / "empty.jsonl", tmp_path / "idx")
    assert str(e.value) == f"{tmp_path / 'empty.jsonl'}: nothing to index: the corpus has no records"
    with pytest.raises(CorpusError, match=r"nothing to index: every record was skipped \(2; first: record 1: missing id"):
        sieve.build_index([{"title": "a"}, {"title": "b"}], tmp_path / "idx", on_error="skip")
    assert not (tmp_path / "idx").exists()


def test_a_truncated_gzip_keeps_what_came_before(tmp_path: Path) -> None:
    raw = gzip.compress(b"\n".join(good(i) for i in range(1, 200)) + b"\n")
    corpus = tmp_path / "c.jsonl.gz"
    corpus.write_bytes(raw[: len(raw) // 2])
    index, report = build(tmp_path, corpus)
    assert report.skipped == 1 and "the compressed file is cut short or damaged here" in report.errors[0]
    line = int(report.errors[0].split(":")[1])
    assert len(index) == line - 1 and index.match("record").count == line - 1
    with pytest.raises(CorpusError, match="cut short or damaged"):
        sieve.build_index(corpus, tmp_path / "idx2")


@pytest.mark.parametrize("call, message", [
    (lambda tmp: sieve.open_index(None), "an index path must be a path (a string or os.PathLike), got NoneType"),
    (lambda tmp: sieve.build_index(None, tmp / "i"), "a corpus must be a path or an iterable of records, got NoneType"),
    # (no path at all is a temporary index: tests/engine/test_decision.py)
    (lambda tmp: sieve.build_index([{"id": "a"}], 123), "an index path must be a path (a string or os.PathLike), got int"),
    (lambda tmp: sieve.build_index([{"id": "a"}], tmp / "i", on_error="x"), "on_error must be 'raise' or 'skip', not 'x'"),
])
def test_bad_api_arguments(tmp_path: Path, call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InvalidArgumentError) as e:
        call(tmp_path)
    assert str(e.value) == message


def test_a_surrogate_id_is_unknown(tmp_path: Path) -> None:
    index = sieve.build_index([{"id": "a", "title": "t"}], tmp_path / "idx")
    for bad in ("\ud800", "a\udfff"):
        with pytest.raises(sieve.UnknownDocumentError):
            index.document(bad)
        with pytest.raises(sieve.UnknownDocumentError):
            index.section(bad, 0)
