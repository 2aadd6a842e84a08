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
