"""Tests for sieve.corpus.demo, run against the real standard library."""

from __future__ import annotations

import ast
import inspect
import json
import sys
import sysconfig
import tokenize
from pathlib import Path

import pytest

from sieve.corpus import demo as demo_corpus
from sieve.corpus.demo import stdlib_documents, stdlib_source_dir

STDLIB = Path(sysconfig.get_paths()["stdlib"])


def _read_tree(rel: str) -> ast.Module:
    """Parse a stdlib file independently of the code under test."""
    with tokenize.open(STDLIB / rel) as f:
        return ast.parse(f.read())


@pytest.fixture(scope="module")
def failures() -> list[str]:
    return []


@pytest.fixture(scope="module")
def docs(failures: list[str]) -> list[dict]:
    return list(stdlib_documents(failures=failures))


@pytest.fixture(scope="module")
def by_id(docs: list[dict]) -> dict[str, dict]:
    return {d["id"]: d for d in docs}


def _section(doc: dict, heading: str) -> str:
    matches = [s["text"] for s in doc["sections"] if s["heading"] == heading]
    assert len(matches) == 1, f"{heading!r} in {doc['id']}: {len(matches)} matches"
    return matches[0]


def test_stdlib_source_dir_is_the_real_stdlib() -> None:
    root = stdlib_source_dir()
    assert root == STDLIB
    assert (root / "json" / "__init__.py").is_file()
    assert (root / "os.py").is_file()


@pytest.mark.slow
def test_whole_stdlib_parses_into_many_documents(docs: list[dict], failures: list[str]) -> None:
    assert len(docs) > 300
    assert failures == []  # every non-test stdlib file parses with its own interpreter


def test_json_document_is_jsons_real_documentation(by_id: dict[str, dict]) -> None:
    doc = by_id["json"]
    tree = _read_tree("json/__init__.py")
    intro = _section(doc, "(intro)")
    assert intro == ast.get_docstring(tree)
    assert intro == inspect.cleandoc(json.__doc__)  # json is safe to import
    assert doc["sections"][0]["heading"] == "(intro)"
    assert doc["title"] == "json — " + intro.splitlines()[0]
    assert doc["author"] == json.__author__

    loads = _section(doc, "def loads")
    assert loads.startswith("loads(s, *, cls=None")
    assert "Deserialize" in loads
    assert inspect.getdoc(json.loads) in loads

    # Public functions in source order, each exactly once.
    expected = [f"def {n.name}" for n in tree.body
                if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    assert [s["heading"] for s in doc["sections"][1:]] == expected

    info = doc["infobox"]
    assert info["module"] == "json"
    assert info["kind"] == "package"
    assert info["file"] == "json/__init__.py"
    assert info["public names"] == str(len(json.__all__))
    assert info["lines"] == str(len((STDLIB / "json/__init__.py").read_text("utf-8").splitlines()))
    assert "date" not in doc


def test_class_section_has_signature_docstring_and_methods(by_id: dict[str, dict]) -> None:
    doc = by_id["json.decoder"]
    assert doc["infobox"]["kind"] == "module"
    assert doc["infobox"]["file"] == "json/decoder.py"
    text = _section(doc, "class JSONDecoder")
    lines = text.splitlines()
    assert lines[0] == "class JSONDecoder(object)"
    assert lines[1].startswith("JSONDecoder(*, object_hook=None")  # from __init__, self dropped
    assert "Simple JSON <https://json.org> decoder" in text
    assert "\n\ndecode(s, " in text and "\n\nraw_decode(s, idx=0): Decode a JSON document" in text
    assert "_scan_once" not in text  # no private methods / attributes


def test_module_without_author_has_no_author_key(by_id: dict[str, dict]) -> None:
    assert "__author__" not in (STDLIB / "textwrap.py").read_text("utf-8")
    assert "author" not in by_id["textwrap"]


def test_ids_unique_and_sorted(docs: list[dict]) -> None:
    ids = [d["id"] for d in docs]
    assert len(ids) == len(set(ids))
    assert ids == sorted(ids)


def test_every_document_is_well_formed(docs: list[dict]) -> None:
    for doc in docs:
        assert isinstance(doc["title"], str) and doc["title"].startswith(doc["id"])
        assert doc["sections"], doc["id"]
        headings = [s["heading"] for s in doc["sections"]]
        assert len(headings) == len(set(headings)), doc["id"]
        for section in doc["sections"]:
            heading, text = section["heading"], section["text"]
            assert isinstance(heading, str) and heading.strip(), doc["id"]
            assert isinstance(text, str) and text.strip(), (doc["id"], heading)
            if heading != "(intro)":
                keyword, _, name = heading.rpartition(" ")
                assert keyword in {"def", "async def", "class"}, heading
                assert name.isidentifier() and not name.startswith("_"), heading
        info = doc["infobox"]
        assert set(info) == {"module", "kind", "file", "lines", "public names"}
        assert all(isinstance(v, str) for v in info.values())
        assert info["module"] == doc["id"] and info["kind"] in {"package", "module"}
        assert (STDLIB / info["file"]).is_file()
        assert "author" not in doc or isinstance(doc["author"], str)


def test_no_test_private_or_third_party_modules(docs: list[dict], by_id: dict[str, dict]) -> None:
    for doc in docs:
        parts = doc["id"].split(".")
        assert not any(p.startswith("_") for p in parts), doc["id"]
        assert not {"test", "tests", "idle_test"} & set(parts), doc["id"]
        assert "site-packages" not in doc["infobox"]["file"]
    for absent in ("test", "test.support", "lib2to3.tests", "idlelib.idle_test",
                   "_pydecimal", "json.__main__", "pip"):
        assert absent not in by_id
    assert {"os", "json.decoder", "email.mime.text", "asyncio"} <= set(by_id)


def test_modules_are_read_not_imported(docs: list[dict]) -> None:
    # Importing these has side effects (opens a browser / prints the Zen).
    assert "antigravity" not in sys.modules and "this" not in sys.modules


def test_limit(docs: list[dict]) -> None:
    assert list(stdlib_documents(limit=0)) == []
    assert list(stdlib_documents(limit=7)) == docs[:7]


@pytest.mark.slow
def test_deterministic(docs: list[dict]) -> None:
    assert list(stdlib_documents()) == docs


def test_rules_on_a_synthetic_stdlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "alpha.py": '"""Alpha module.\n\nMore."""\n__author__ = "Ann"\n'
                    "class Box(dict):\n    '''A box.'''\n    def __init__(self, size=1): pass\n"
                    "    def open(self, *, force=False) -> bool:\n        '''Open it.\n\n        Detail.'''\n"
                    "    @staticmethod\n    def make(n): pass\n    def _hidden(self): pass\n"
                    "async def fetch(url):\n    '''Fetch.'''\n"
                    "if X:\n    def twin(): pass\nelse:\n    def twin():\n        '''Doc twin.'''\n"
                    "def _private(): pass\n",
        "pkg/__init__.py": '"""Pkg."""\n',
        "pkg/sub.py": "def f(a, /, b): pass\n",
        "latin.py": '# -*- coding: latin-1 -*-\n"""Caf\xe9."""\n',
        "empty.py": "x = 1\n",
        "broken.py": '"""Doc."""\ndef (:\n',
        "_private.py": '"""Private."""\n',
        "pkg/__main__.py": '"""Main."""\n',
        "test/test_x.py": '"""Test."""\n',
        "site-packages/extra.py": '"""Third party."""\n',
        "config-3.11/foo.py": '"""Not importable."""\n',
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("latin-1" if rel == "latin.py" else "utf-8"))
    monkeypatch.setattr(demo_corpus, "stdlib_source_dir", lambda: tmp_path)

    failures: list[str] = []
    docs = {d["id"]: d for d in stdlib_documents(failures=failures)}
    assert list(docs) == ["alpha", "latin", "pkg", "pkg.sub"]
    assert failures == ["broken.py"]

    alpha = docs["alpha"]
    assert alpha["title"] == "alpha — Alpha module."
    assert alpha["author"] == "Ann"
    assert alpha["infobox"] == {"module": "alpha", "kind": "module", "file": "alpha.py",
                                "lines": str(files["alpha.py"].count("\n")),
                                "public names": "3"}  # Box, fetch, twin
    sections = {s["heading"]: s["text"] for s in alpha["sections"]}
    assert list(sections) == ["(intro)", "class Box", "async def fetch", "def twin"]
    assert sections["class Box"] == ("class Box(dict)\nBox(size=1)\n\nA box.\n\n"
                                     "open(*, force=False) -> bool: Open it.\n\nmake(n)")
    assert sections["async def fetch"] == "fetch(url)\n\nFetch."
    assert sections["def twin"] == "twin()\n\nDoc twin."  # documented twin wins
    assert docs["latin"]["title"] == "latin — Café."
    assert docs["pkg"]["infobox"]["kind"] == "package"
    assert docs["pkg"]["infobox"]["file"] == "pkg/__init__.py"
    assert docs["pkg.sub"]["sections"] == [{"heading": "def f", "text": "f(a, /, b)"}]
    assert docs["pkg.sub"]["title"] == "pkg.sub"
