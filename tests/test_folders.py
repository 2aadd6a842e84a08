"""Folders of Markdown, HTML and text files as corpora: one document per file, headings as sections."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import sieve
from sieve.corpus.formats import CorpusReport
from sieve.errors import CorpusError
from sieve.corpus.folders import document_files, records

GUIDE = """---
title: The Guide
date: 2024-03-05
author: [Ann, Bob]
tags: [setup, cli]
---
Intro text before any heading.

## Install

Run `pip install x` to **install** it.

| option | meaning |
|---|---|
| -q | quiet |

## Usage

- first step
- second step

```sh
x --run
```
"""

PAGE = """<!doctype html><html><head><title>Page Title</title>
<meta name="author" content="Carl"><meta name="date" content="2023-01-02T10:00:00Z">
<meta name="description" content="a test page"><style>p { color: red }</style></head>
<body><nav>menu</nav><h1>Page Title</h1><p>Opening words &amp; more.</p><script>var secret = 1;</script>
<h2>Details</h2><p>Detail text</p><pre>code
  block</pre><h3>Deeper</h3><ul><li>one</li><li>two</li></ul></body></html>
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "guide").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "README.md").write_text(GUIDE)
    (root / "guide" / "page.html").write_text(PAGE)
    (root / "guide" / "notes.txt").write_text("plain words here\nsecond line\n")
    (root / "guide" / "h1.md").write_text("# Named by its heading\n\nbody under the title\n\n## Next\n\nmore\n")
    (root / ".git" / "config.md").write_text("# hidden\n")
    (root / ".hidden.md").write_text("# hidden\n")
    (root / "data.json").write_text("{}")
    return root


def _by_id(root: Path) -> dict[str, dict]:
    return {rec["id"]: rec for _, _, rec in records(root)}  # type: ignore[index]


def test_files_in_path_order_without_hidden_ones(folder: Path) -> None:
    assert [p.relative_to(folder).as_posix() for p in document_files(folder)] == ["README.md", "guide/h1.md", "guide/notes.txt", "guide/page.html"]


def test_markdown_front_matter_and_headings(folder: Path) -> None:
    rec = _by_id(folder)["README.md"]
    assert rec["title"] == "The Guide" and rec["date"] == "2024-03-05" and rec["author"] == ["Ann", "Bob"] and rec["tags"] == ["setup", "cli"]
    assert [s["heading"] for s in rec["sections"]] == ["", "Install", "Usage"]
    assert rec["sections"][0]["text"] == "Intro text before any heading."
    assert rec["sections"][1]["text"] == "Run pip install x to install it.\n\noption\n\nmeaning\n\n-q\n\nquiet"
    assert rec["sections"][2]["text"] == "first step\n\nsecond step\n\nx --run"
    h1 = _by_id(folder)["guide/h1.md"]
    assert h1["title"] == "Named by its heading" and [s["heading"] for s in h1["sections"]] == ["", "Next"]
    assert h1["sections"][0]["text"] == "body under the title"


def test_html_title_meta_and_headings(folder: Path) -> None:
    rec = _by_id(folder)["guide/page.html"]
    assert rec["title"] == "Page Title" and rec["author"] == "Carl" and rec["date"] == "2023-01-02" and rec["description"] == "a test page"
    assert [s["heading"] for s in rec["sections"]] == ["", "Details", "Deeper"]
    assert rec["sections"][0]["text"] == "menu\n\nOpening words & more."  # the script and the style are not text
    assert rec["sections"][1]["text"] == "Detail text\n\ncode\n  block"  # <pre> keeps its layout
    assert rec["sections"][2]["text"] == "one\n\ntwo"


def test_text_files(folder: Path) -> None:
    assert _by_id(folder)["guide/notes.txt"] == {"id": "guide/notes.txt", "title": "notes", "text": "plain words here\nsecond line"}


def test_index_a_folder_and_fetch_its_headings(folder: Path, tmp_path: Path) -> None:
    ix = sieve.build_index(folder, tmp_path / "ix")
    assert sorted(ix.match("date[2020..] OR notes[title] OR heading[title]").ids) == ["README.md", "guide/h1.md", "guide/notes.txt", "guide/page.html"]
    assert ix.match("install[section]").ids == ["README.md"]
    assert ix.match("secret OR color").ids == []
    assert ix.section("guide/page.html", 1).text == "Detail text\n\ncode\n  block"
    assert ix.document("README.md").metadata == {"tags": ["setup", "cli"]}
    p = subprocess.run([sys.executable, "-m", "sieve", "fetch", str(tmp_path / "ix"), "README.md", "Usage"], capture_output=True, text=True)
    assert p.returncode == 0 and "first step" in p.stdout


@pytest.mark.parametrize("name, content, where, message", [
    ("bad.md", "---\ntitle: [unclosed\n---\ntext\n", 2, "front matter is not valid YAML"),
    ("later.md", "# t\n\n---\nnot: front matter\n---\n", 0, ""),
    ("date.md", "---\ntitle: t\ndate: someday\n---\ntext\n", 3, "front matter date: unparseable date"),  # the line of the date
    ("list.md", "---\n- a\n- b\n---\n", 2, "front matter must be a mapping"),
    ("latin.txt", b"caf\xe9 au lait\nline two\n", 1, "not UTF-8 text"),
    ("later.txt", b"ok\nfine\ncaf\xe9\n", 3, "not UTF-8 text"),
])
def test_bad_files_are_errors_with_file_and_line(tmp_path: Path, name: str, content: str | bytes, where: int, message: str) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "good.md").write_text("# fine\n")
    (root / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    if not message:  # a thematic break and a setext heading further down: not front matter, no error
        assert len(sieve.build_index(root)) == 2
        return
    with pytest.raises(CorpusError, match=f"{name}:{where}: {message}"):
        sieve.build_index(root, tmp_path / "ix")
    report = CorpusReport()
    ix = sieve.build_index(root, tmp_path / "ix", on_error="skip", report=report)
    assert report.skipped == 1 and ix.match("fine").ids == ["good.md"]


def test_an_index_inside_the_folder_is_not_read(folder: Path) -> None:
    sieve.build_index(folder, folder / "index").close()
    assert all("index" not in p.relative_to(folder).parts for p in document_files(folder))
    ix = sieve.build_index(folder, folder / "index", force=True)
    assert len(ix) == 4


def test_a_beir_folder_is_still_a_beir_folder(tmp_path: Path) -> None:
    root = tmp_path / "beir"
    root.mkdir()
    (root / "corpus.jsonl").write_text(json.dumps({"_id": "x", "title": "t", "text": "from jsonl"}) + "\n")
    (root / "stray.md").write_text("# not read\n")
    assert sieve.build_index(root).match("jsonl").ids == ["x"]


# Titles and leading sections ------------------------------------------------------------------


def _one(tmp_path: Path, name: str, content: str) -> dict:
    root = tmp_path / "one"
    root.mkdir(exist_ok=True)
    (root / name).write_text(content)
    return _by_id(root)[name]


@pytest.mark.parametrize("name, content, title", [
    ("fm.md", "---\ntitle: From Front Matter\n---\n# A heading\n\ntext\n", "From Front Matter"),
    ("h1.md", "# Opening Heading\n\ntext\n", "Opening Heading"),
    ("h2.md", "Lead words first.\n\n## Install\n\nrun it\n\n## Usage\n\nuse it\n", "Install"),
    ("badge.md", '<p align="center"><img src="logo.png"></p>\n\n# Project\n\nwhat it does\n', "Project"),
    ("getting-started.md", "just words, no heading\n", "getting started"),
    ("release_notes.txt", "plain words\n", "release notes"),
    ("2024-03-05-launch.md", "words\n", "2024-03-05 launch"),
    ("page.html", "<body><p>lead</p><h2>Second Level</h2><p>text</p></body>", "Second Level"),
    ("bare-page.html", "<body><p>only text</p></body>", "bare page"),
])
def test_a_title_is_front_matter_else_the_first_heading_else_the_readable_file_name(
        tmp_path: Path, name: str, content: str, title: str) -> None:
    assert _one(tmp_path, name, content)["title"] == title


def test_a_heading_that_names_the_document_stays_a_section_unless_it_opens_the_file(tmp_path: Path) -> None:
    rec = _one(tmp_path, "h2.md", "Lead words first.\n\n## Install\n\nrun it\n\n## Usage\n\nuse it\n")
    assert [(s["heading"], s["text"]) for s in rec["sections"]] == [("", "Lead words first."), ("Install", "run it"),
                                                                      ("Usage", "use it")]
    opening = _one(tmp_path, "h1.md", "# Opening Heading\n\nthe lead\n\n## Next\n\nmore\n")
    assert [s["heading"] for s in opening["sections"]] == ["", "Next"]


@pytest.mark.parametrize("name, content, sections", [
    # the title again as a heading, right above the first real section
    ("fm.md", "---\ntitle: The Guide\n---\n# The Guide\n\n## Install\n\nrun it\n", [("Install", "run it")]),
    ("site.html", "<title>Page</title><h1>Site Name</h1><h2>Page</h2><p>body</p>", [("Page", "body")]),
    ("blank-lead.md", "<!-- a comment -->\n\n## Only\n\ntext\n", [("Only", "text")]),
    # a heading with no text further down is structure, and stays
    ("nested.md", "# T\n\nlead\n\n## Options\n\n### -a\n\nall\n\n### -b\n\nbrief\n",
     [("", "lead"), ("Options", ""), ("-a", "all"), ("-b", "brief")]),
    ("headings-only.md", "# T\n\n## One\n\n## Two\n", [("One", ""), ("Two", "")]),
])
def test_no_empty_section_comes_before_the_first_with_text(tmp_path: Path, name: str, content: str,
                                                          sections: list[tuple[str, str]]) -> None:
    rec = _one(tmp_path, name, content)
    assert [(s["heading"], s["text"]) for s in rec["sections"]] == sections


def test_a_lead_section_is_named_as_a_jsonl_documents_lead(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("Lead words.\n\n## Install\n\nrun it\n")
    (tmp_path / "a.jsonl").write_text(json.dumps({"id": "a.md", "title": "t", "text": "Lead words."}) + "\n")
    folder_doc = sieve.build_index(root, tmp_path / "ix").document("a.md")
    jsonl_doc = sieve.build_index(tmp_path / "a.jsonl", tmp_path / "ix2").document("a.md")
    assert folder_doc.headings == [jsonl_doc.headings[0], "Install"] == ["(intro)", "Install"]
    assert folder_doc.title == "Install"


# Batches, workers and progress ----------------------------------------------------------------


def _many(root: Path, files: int = 230) -> Path:
    """A folder of varied documents, a bad one and one passed over among them."""
    words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
             "sigma tau upsilon phi chi psi omega").split()
    for i in range(files):
        sub = root / f"part{i % 7}"
        sub.mkdir(parents=True, exist_ok=True)
        body = " ".join(words[(i * k) % len(words)] for k in range(1, 40))
        kind = i % 3
        if kind == 0:
            (sub / f"doc-{i:03d}.md").write_text(f"---\ntitle: Doc {i}\ndate: 2024-01-{i % 28 + 1:02d}\n---\n"
                                                 f"## Part {i}\n\n{body} *word{i}*\n\n## More\n\n`code{i}`\n")
        elif kind == 1:
            (sub / f"page_{i:03d}.html").write_text(f"<title>Page {i}</title><h1>Page {i}</h1><p>{body}</p>"
                                                    f"<h2>Extra</h2><p>word{i}</p>")
        else:
            (sub / f"note-{i:03d}.txt").write_text(f"{body}\nword{i}\n")
    (root / "part3" / "broken.md").write_text("---\ntitle: [unclosed\n---\ntext\n")
    (tmp_path_outside := root.parent / "outside.md").write_text("# outside\n")
    (root / "part4" / "leak.md").symlink_to(tmp_path_outside)
    return root


def _built(root: Path, out: Path, jobs: int) -> tuple[sieve.Index, CorpusReport, list[int]]:
    report = CorpusReport()
    steps: list[int] = []
    ix = sieve.build_index(root, out, jobs=jobs, on_error="skip", report=report, progress=lambda n, _b: steps.append(n))
    return ix, report, steps


def test_a_folder_builds_the_same_index_whatever_the_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setattr("sieve.index.batches.FOLDER_PARALLEL_MIN_BYTES", 0)  # this small folder goes to the workers too
    root = _many(tmp_path / "docs")
    one, r1, _ = _built(root, tmp_path / "ix1", 1)
    two, r2, _ = _built(root, tmp_path / "ix2", 2)
    assert len(one) == len(two) == 230
    every = "alpha OR beta OR omega OR code0 OR word0 OR word1 OR word2"
    assert one.match(every).count == 230 and one.match(every).ids == two.match(every).ids  # ids and order
    for doc_id in one.match(every).ids:
        assert one.document(doc_id) == two.document(doc_id)
    for q in ("alpha", "word17 OR word18", "part[section]", "date[2024-01-05..2024-01-09]", '"gamma delta"'):
        a, b = one.search(q, k=20), two.search(q, k=20)
        assert [(h.doc_id, h.rank, h.score, h.sections) for h in a.hits] == [(h.doc_id, h.rank, h.score, h.sections) for h in b.hits]
        assert a.count == b.count
    assert one.stats == two.stats
    assert (r1.documents, r1.skipped, r1.errors, r1.unread, r1.unread_files) == (r2.documents, r2.skipped, r2.errors,
                                                                                 r2.unread, r2.unread_files)
    assert r1.skipped == 1 and "broken.md:2: front matter is not valid YAML" in r1.errors[0]
    assert r1.unread == {"links": 1}


def test_a_folder_build_reports_progress_as_it_goes(tmp_path: Path) -> None:
    root = _many(tmp_path / "docs")
    _, report, steps = _built(root, tmp_path / "ix", 1)
    assert report.documents == 230
    assert len(steps) >= 3 and steps == sorted(steps) and steps[-1] == 230  # a step per run of files, not one at the end


def test_jobs_start_workers_past_a_size_where_html_counts_six_times(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Markdown is read about as fast as JSON (sieve's block scanner), HTML still is not: workers start
    for a folder past FOLDER_PARALLEL_MIN_BYTES, each HTML byte counted as HTML_COST."""
    from sieve.engine.analysis.analyzers import get_analyzer
    from sieve.engine.analysis.schema import NO_FIELDS
    from sieve.index import batches

    monkeypatch.setattr("sieve.index.batches.FOLDER_PARALLEL_MIN_BYTES", 3000)
    md, html = tmp_path / "md", tmp_path / "html"
    md.mkdir(), html.mkdir()
    for i in range(4):  # 2,000 bytes of each
        (md / f"p{i}.md").write_text(f"# Page {i}\n\n" + "word " * 98)
        (html / f"p{i}.html").write_text(f"<h1>Page {i}</h1>" + "word " * 97)

    def keys(folder: Path) -> set[object]:
        got = batches.folder_batches(str(folder), "raise", CorpusReport(), 2, get_analyzer("plain"), False, NO_FIELDS)
        return {key for key, _ in got}

    assert keys(md) == {"local"}  # 2,000 bytes: one process
    assert "local" not in keys(html)  # 12,000 as HTML: the workers


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux's /proc (a file whose size says 0)")
def test_a_file_is_read_to_its_end_and_no_further_than_the_cap(tmp_path: Path) -> None:
    """read_regular reads past the size a file states (a /proc file says 0) and stops past the cap."""
    from sieve.common import files

    status = files.read_regular("/proc/self/status", 1 << 20)
    assert status.startswith(b"Name:") and len(status) > 100
    with pytest.raises(files.FileTooLargeError):
        files.read_regular("/proc/self/status", 50)
    big = tmp_path / "big.md"
    big.write_bytes(b"x" * 70_000)  # more than one read's worth past the stated size
    assert files.read_regular(big, 70_000) == b"x" * 70_000
    with pytest.raises(files.FileTooLargeError):
        files.read_regular(big, 69_999)
