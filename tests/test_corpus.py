"""Corpus input: records, flat and structured, BEIR folders, and every bad record named by line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sieve
from sieve.corpus.formats import CorpusReport, line_spans, raw_lines, read_documents, span_lines
from sieve.corpus.documents import INTRO, Document, Section, document_from_record
from sieve.errors import CorpusError


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_structured_record() -> None:
    doc = document_from_record(
        {
            "_id": 7,
            "title": "T",
            "sections": [{"heading": "", "text": "lead"}, {"heading": "History", "text": "h"}],
            "author": ["Ann Smith", "Bo Li"],
            "date": "2020-05",
            "infobox": "born: 1900; died: 1950",
            "url": "http://x",
        }
    )
    assert doc == Document(
        id="7",
        title="T",
        sections=(Section(INTRO, "lead"), Section("History", "h")),
        author="Ann Smith; Bo Li",
        date="2020-05",
        infobox={"born": "1900", "died": "1950"},
        metadata={"url": "http://x"},
    )


def test_flat_record_becomes_one_intro_section() -> None:
    doc = document_from_record({"id": "a", "title": "T", "text": "body text"})
    assert doc.sections == (Section(INTRO, "body text"),)


def test_structured_record_keeps_its_flat_text_as_metadata() -> None:
    doc = document_from_record({"id": "a", "sections": [{"heading": "H", "text": "x"}], "text": "flat"})
    assert doc.metadata == {"text": "flat"}


def test_timestamp_kept_to_its_day() -> None:
    assert document_from_record({"id": "a", "date": "2021-03-04T10:11:12Z"}).date == "2021-03-04"


def test_round_trip_through_to_record() -> None:
    rec = {"id": "x", "title": "t", "sections": [{"heading": "H", "text": "b"}], "author": "a", "date": "2001", "infobox": {"k": "v"}, "extra": [1, 2]}
    doc = document_from_record(rec)
    assert document_from_record(doc.to_record()) == doc


@pytest.mark.parametrize(
    "record, message",
    [
        ({"title": "no id"}, "missing id (give 'id' or '_id')"),
        ({"id": ""}, "missing id (give 'id' or '_id')"),
        ({"id": 1.5}, "id must be a string or an integer, got float"),
        ({"id": True}, "id must be a string or an integer, got bool"),
        ({"id": "a", "_id": "b"}, "'id' 'a' and '_id' 'b' disagree"),
        ({"id": "a", "title": 3}, "title must be a string, got int"),
        ({"id": "a", "sections": "x"}, "sections must be a list, got str"),
        ({"id": "a", "sections": [{"heading": 1, "text": "x"}]}, "section 0 heading must be a string, got int"),
        ({"id": "a", "sections": [{"heading": "h", "text": None}]}, "section 0 text must be a string, got NoneType"),
        ({"id": "a", "date": "2020-13-01"}, "unparseable date '2020-13-01': month 13 does not exist in '2020-13-01'"),
        ({"id": "a", "date": "yesterday"}, "unparseable date 'yesterday': not an ISO date (YYYY, YYYY-MM or YYYY-MM-DD): 'yesterday'"),
        ({"id": "a", "date": "2021-02-29"}, "unparseable date '2021-02-29': day 29 does not exist in '2021-02-29'"),
        ({"id": "a", "author": 5}, "author must be a string or a list of strings, got int"),
        ({"id": "a", "infobox": "no colon here"}, "infobox item 'no colon here' has no 'key: value' colon"),
        ({"id": "a", "infobox": {"k": {"nested": 1}}}, "infobox value of 'k' must be a string, number or list of them"),
        ([1, 2], "a record must be a JSON object, got list"),
        ({"id": "a", "extra": object()}, "metadata must be JSON-serialisable"),
        ({"id": "a", "extra": "ok", "x\ud800": "v"}, "metadata holds a lone surrogate U+D800 (not valid Unicode text)"),
        ({"id": "a", "extra": "caf\ud800"}, "metadata holds a lone surrogate U+D800 (not valid Unicode text)"),
        ({"id": "a", "date": ["2020"]}, "date must be a string, got list"),
    ],
)
def test_bad_records(record: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        document_from_record(record)
    assert str(info.value) == message


def test_bad_line_stops_the_build_with_file_and_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", ['{"id": "a", "text": "x"}', "", '{"id": "b", "text": }', '{"id": "c"}'])
    with pytest.raises(CorpusError) as info:
        sieve.build_index(path, tmp_path / "idx")
    assert str(info.value) == f"{path}:3: invalid JSON: Expecting value (column 21)"
    assert info.value.line == 3
    assert not (tmp_path / "idx").exists()  # nothing half-built left behind
    assert [p.name for p in tmp_path.iterdir()] == ["c.jsonl"]


def test_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", ['{"id": "a"}', '{"id": "b"}', '{"_id": "a"}'])
    with pytest.raises(CorpusError) as info:
        list(read_documents(path))
    assert str(info.value) == f"{path}:3: duplicate id 'a' (first seen at line 1)"


def test_skip_counts_every_bad_record(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        ['{"id": "a", "text": "x"}', "not json", '{"id": "a"}', '{"title": "no id"}', '{"id": "d", "date": "13/2020"}', '{"id": "e"}'],
    )
    report = CorpusReport()
    index = sieve.build_index(path, tmp_path / "idx", on_error="skip", report=report)
    assert len(index) == 2
    assert report.documents == 2 and report.skipped == 4
    assert [e.split(": ", 1)[0] for e in report.errors] == [f"{path}:{n}" for n in (2, 3, 4, 5)]
    assert index.manifest["skipped"] == 4


def test_iterable_errors_name_the_record_number() -> None:
    with pytest.raises(CorpusError) as info:
        list(read_documents([{"id": "a"}, {"id": "b", "date": "bad"}]))
    assert str(info.value).startswith("record 2: unparseable date 'bad'")


def test_beir_folder_and_gzip(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    with gzip.open(beir / "corpus.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "d1", "title": "Alpha", "text": "first"}) + "\n")
        fh.write(json.dumps({"_id": "d2", "title": "Beta", "sections": [{"heading": "H", "text": "second"}]}) + "\n")
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "alpha?"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    index = sieve.build_index(beir, tmp_path / "idx")
    assert index.match("first OR second").ids == ["d1", "d2"]
    assert index.document("d2").sections == (Section("H", "second"),)


def test_folder_without_corpus_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError) as info:
        list(read_documents(tmp_path))
    assert "needs a corpus.jsonl" in str(info.value)


def test_not_utf8_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"id": "\xff"}\n')
    with pytest.raises(CorpusError) as info:
        list(read_documents(path))
    assert "not UTF-8" in str(info.value)


@pytest.mark.parametrize("batched", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_the_id_registry_finds_every_duplicate_and_its_first_line(seed: int, batched: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compact registry (digests in a dict, then in sorted arrays behind a bitmap) answers as
    a plain dict of every id does, across many spills into the arrays: one id at a time, and in
    batches of up to 300 (`first_lines`, an id repeated within a batch included, digested by the
    registry or given)."""
    import random

    from sieve.corpus.formats import IdRegistry, id_key

    monkeypatch.setattr(IdRegistry, "RECENT", 97)
    monkeypatch.setattr(IdRegistry, "BITS", 1 << 12)  # a small bitmap: many ids reach the arrays
    r = random.Random(seed)
    reg, first_seen = IdRegistry(), {}
    ids = [r.choice([f"d{r.randrange(3000)}", "\u00fcber", "", "x\x00y", f"{r.random()}"]) for _ in range(1, 8000)]
    got: dict[int, str | None] = {}
    if batched:
        line = 1
        while line <= len(ids):
            lines = list(range(line, min(line + r.randrange(1, 300), len(ids) + 1)))
            batch = [ids[n - 1] for n in lines]
            found = dict(reg.first_lines(batch, lines, b"".join(map(id_key, batch)) if r.random() < 0.5 else None))
            got.update({n: None if i not in found else f"c.jsonl:{n}: duplicate id {ids[n - 1]!r} (first seen at line {found[i]})"
                        for i, n in enumerate(lines)})
            line = lines[-1] + 1
    else:
        got = {n: None if (e := reg.duplicate(ids[n - 1], "c.jsonl", n)) is None else str(e) for n in range(1, len(ids) + 1)}
    for line, doc_id in enumerate(ids, 1):
        first = first_seen.setdefault(doc_id, line)
        if first == line:
            assert got[line] is None, (doc_id, line)
        else:
            assert got[line] == f"c.jsonl:{line}: duplicate id {doc_id!r} (first seen at line {first})"
    assert reg._levels  # the arrays were used


# --------------------------------------------------------------------------------------------
# No silent loss: text under keys the format does not know


@pytest.mark.parametrize("record, key", [
    ({"id": "a", "Title": "Big", "text": "x"}, "'Title'"),
    ({"id": "a", "title": "t", "TEXT": "words"}, "'TEXT'"),
    ({"ID": "a", "id": "a", "title": "t"}, "'ID'"),
    ({"id": "a", "sections": [{"heading": "h", "body": "lost"}]}, "sections[0].body"),
    ({"id": "a", "sections": [{"heading": "h", "text": "ok"}, {"Heading": "H", "text": "t"}]}, "sections[1].Heading"),
])
def test_text_under_unknown_keys_is_an_error(record: dict, key: str, tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match=key.replace("[", r"\[").replace("]", r"\]")) as e:
        document_from_record(record)
    assert "--lenient" in str(e.value)
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "ok", "title": "fine"}) + "\n" + json.dumps(record) + "\n")
    with pytest.raises(CorpusError, match=r"c.jsonl:2: "):
        sieve.build_index(path, tmp_path / "ix")
    assert not (tmp_path / "ix").exists()


def test_other_unknown_keys_stay_metadata() -> None:
    doc = document_from_record({"id": "a", "title": "t", "url": "http://x", "Source": "web"})
    assert doc.metadata == {"url": "http://x", "Source": "web"}  # not a known key in another case: metadata by design


def test_lenient_keeps_them_as_metadata_and_counts_them(tmp_path: Path) -> None:
    recs = [{"id": "a", "Title": "Big", "text": "words"}, {"id": "b", "sections": [{"heading": "h", "body": "lost", "text": "kept"}]},
            {"id": "c", "title": "clean"}]
    doc = document_from_record(recs[1], lenient=True)
    assert doc.sections == (Section("h", "kept"),) and doc.metadata == {"section_keys": {"0": {"body": "lost"}}}
    assert document_from_record(recs[0], lenient=True).metadata == {"Title": "Big"}
    report = CorpusReport()
    ix = sieve.build_index(recs, tmp_path / "ix", lenient=True, report=report)
    assert report.kept == 2 and len(ix) == 3
    assert ix.document("b").metadata["section_keys"] == {"0": {"body": "lost"}}
    assert ix.match("lost").count == 0  # kept, not searchable
    with ix.writer() as w:
        with pytest.raises(CorpusError, match="Title"):
            w.add({"id": "d", "Title": "x"})
        w.add({"id": "d", "Title": "x"}, lenient=True)
    assert w.summary.kept == 0  # add() of one record counts nothing; add_from counts


def test_lenient_parallel_build_counts_like_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    path = tmp_path / "c.jsonl"
    with path.open("w") as fh:
        for i in range(3000):
            fh.write(json.dumps({"id": f"d{i}", "title": "t", **({"Text": "x"} if i % 3 == 0 else {"text": "y"})}) + "\n")
    monkeypatch.setattr("sieve.index.batches.PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr("sieve.index.batches.BATCH_DOCS", 250)
    for jobs in (1, 2):
        report = CorpusReport()
        sieve.build_index(path, tmp_path / f"ix{jobs}", jobs=jobs, lenient=True, report=report)
        assert report.kept == 1000, jobs
    with pytest.raises(CorpusError, match=r"c.jsonl:1: key 'Text'"):
        sieve.build_index(path, tmp_path / "strict", jobs=2)


def test_cli_lenient(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"id": "a", "Title": "Big"}) + "\n")
    p = subprocess.run([sys.executable, "-m", "sieve", "index", str(path), str(tmp_path / "ix")], capture_output=True, text=True)
    assert p.returncode == 1 and "c.jsonl:1: key 'Title'" in p.stderr and "indexing" not in p.stderr  # no bar before the error
    p = subprocess.run([sys.executable, "-m", "sieve", "index", str(path), str(tmp_path / "ix"), "--lenient", "--json"], capture_output=True, text=True)
    assert p.returncode == 0 and json.loads(p.stdout)["kept"] == 1


_LINE_BYTES = st.lists(st.sampled_from([b"a", b"{}", b" ", b"\r", b"\n", b"\n", b"\xef\xbb\xbf", b"\xff", b"\xc3\xa9", b"\t"]), max_size=40).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(data=_LINE_BYTES, lines=st.integers(1, 5), read_size=st.sampled_from([1, 2, 3, 7, 64, 1 << 20]))
def test_pieces_read_by_workers_give_the_lines_of_the_file(tmp_path_factory: pytest.TempPathFactory, data: bytes, lines: int,
                                                           read_size: int) -> None:
    """The parallel build's workers read `line_spans` pieces with `span_lines`: together the same
    (line number, text or error) as `raw_lines` (BOM, blank lines, \\r, bad UTF-8, no final newline),
    however the file is cut into reads, and every piece but the last holds `lines` lines."""
    path = tmp_path_factory.mktemp("spans") / "c.jsonl"
    path.write_bytes(data)
    spans = list(line_spans(path, lines, read_size))
    assert [first for _, _, first in spans] == list(range(1, 1 + lines * len(spans), lines))
    assert all(data[a : a + n].count(b"\n") == lines for a, n, _ in spans[:-1])
    assert sum(length for _, length, _ in spans) == len(data)
    got = [item for span in spans for item in span_lines(path, *span)]
    want = list(raw_lines(path))
    assert [(n, str(x) if isinstance(x, CorpusError) else x.rstrip("\n")) for n, x in got] == \
           [(n, str(x) if isinstance(x, CorpusError) else x.rstrip("\n")) for n, x in want]


def test_a_piece_cut_short_after_the_split_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a"}\n{"id": "b"}\n{"id": "c"}\n')
    spans = list(line_spans(path, 2))
    path.write_bytes(b'{"id": "a"}\n{"id": "b"}\n')  # truncated between the split and the read
    assert [n for n, _ in span_lines(path, *spans[0])] == [1, 2]
    with pytest.raises(CorpusError, match="changed while it was read") as info:
        span_lines(path, *spans[1])
    assert info.value.line == 3


def test_a_date_checked_again_gives_the_same_answer() -> None:
    """Dates are checked once per distinct string: a repeated good date is kept the same way, a
    repeated bad one refused every time."""
    for _ in range(3):
        assert document_from_record({"id": "a", "date": " 2020-01-02T10:00:00Z"}).date == "2020-01-02"
        assert document_from_record({"id": "a", "date": 2020}).date == "2020"
        with pytest.raises(CorpusError, match="unparseable date 'yesterday'"):
            document_from_record({"id": "a", "date": "yesterday"})
