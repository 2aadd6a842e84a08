"""The DCI conditions' files and tools: staging (names, text, reuse, rebuilds), `read` under the
ceiling, and every refusal as a tool result, never an exception, on a real index."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import sieve
from sieve.errors import InvalidArgumentError
from sieve.tools import Toolset
from sieve.tools.shell.episode import make_tools, stage_root
from sieve.tools.shell.files import FileToolConfig, FileTools, file_name, stage_collection
from sieve.tools.fetch.reading import ReadConfig, read_document


@pytest.fixture()
def index(tmp_path: Path, gold_records: list[dict[str, Any]]) -> sieve.Index:
    odd = [{"id": "a/b c", "title": "Slash", "text": "x"}, {"id": "a_b_c", "title": "Plain", "text": "y"},
           {"id": "-rf", "title": "Dash", "text": "z"}, {"id": "Zürich", "title": "Umlaut", "text": "w"}]
    return sieve.build_index(gold_records + odd, tmp_path / "idx")


def test_file_names_are_plain_distinct_and_never_options(index: sieve.Index) -> None:
    ids = [index.reader.doc_id(d) for d in range(len(index))]
    names = [file_name(i) for i in ids]
    assert len(set(names)) == len(names)
    assert all(n.endswith(".txt") and n[0] not in "-." and "/" not in n for n in names)
    assert file_name("heat-2022") == "heat-2022.txt" and file_name("a_b_c") == "a_b_c.txt"
    assert file_name("a/b c").startswith("a_b_c~") and file_name("-rf").startswith("rf~")


def test_staging_writes_each_document_once_and_reuses_it(index: sieve.Index, tmp_path: Path, gold_records: list[dict[str, Any]]) -> None:
    staged = stage_collection(index, tmp_path / "dci")
    assert sorted(staged.ids.values()) == sorted(index.reader.doc_id(d) for d in range(len(index)))
    cold = (staged.files / "cold.txt").read_text(encoding="utf-8")
    assert cold == "Cold snap in Zürich\n\ndate: 2021\n\nSnow fell on Zürich. Schools stayed open.\n"
    visit = read_document(index.document("cold"), 1, ReadConfig()).text
    assert cold.split("\n\n", 1)[1] == visit.split("\n", 1)[1] + "\n"  # the text a visit shows
    os.utime(staged.files / "cold.txt", (1, 1))
    assert stage_collection(index, tmp_path / "dci").ids == staged.ids
    assert (staged.files / "cold.txt").stat().st_mtime == 1  # reused, not rewritten
    rebuilt = sieve.build_index(gold_records[:2], index.path, force=True)
    again = stage_collection(rebuilt, tmp_path / "dci")
    assert sorted(again.ids.values()) == ["cold", "heat-2022"]  # a new build is staged again
    assert not list((tmp_path).glob(".dci.*"))  # no temporary folder left behind


def tool(index: sieve.Index, cap: int = 12_000) -> FileTools:
    return FileTools(stage_collection(index, stage_root(index)), FileToolConfig(read=ReadConfig(cap=cap, parts=False)))


def test_read_stops_at_the_ceiling_and_says_where_to_go_on(index: sieve.Index) -> None:
    t = tool(index, cap=200)
    first = t.call("read", {"path": "river.txt"})
    assert first.ok and first.tokens <= 200
    last_line = first.text.splitlines()[-1]
    assert last_line.startswith("[text cut at the 200-word ceiling of one call after line ")
    n = int(last_line.split("after line ")[1].split(":")[0])
    assert last_line.endswith(f": continue with line {n + 1}]")
    lines = (t.staged.files / "river.txt").read_text(encoding="utf-8").split("\n")
    assert first.text.splitlines()[:-1] == lines[:n]
    nxt = t.call("read", {"path": "river.txt", "line": n + 1})
    assert nxt.text.splitlines()[0] == lines[n]
    assert t.opened == ["river"] and t.surfaced == ["river"]


@pytest.mark.parametrize("args,message", [
    ({"path": "../ids.json"}, "'..' is not allowed"),
    ({"path": "/etc/passwd"}, "absolute and home paths are not allowed"),
    ({"path": "nope.txt"}, "no file 'nope.txt' in the folder"),
    ({"path": "cold.txt", "line": 99}, "cold.txt has 6 lines, so there is no line 99"),
    ({"path": "cold.txt", "line": 0}, "line"),
    ({"file": "cold.txt"}, "path"),
])
def test_read_refusals_are_tool_results(index: sieve.Index, args: dict[str, object], message: str) -> None:
    r = tool(index).call("read", args)
    assert not r.ok and r.text.startswith("read error: ") and message in r.text


def test_a_link_out_of_the_folder_is_refused(index: sieve.Index, tmp_path: Path) -> None:
    """`read` refuses it by its path; inside the shell's sandbox the link's target does not exist."""
    t = tool(index)
    (tmp_path / "secret.txt").write_text("secret")
    os.symlink(tmp_path / "secret.txt", t.staged.files / "link.txt")
    r = t.call("read", {"path": "link.txt"})
    assert not r.ok and "outside the folder" in r.text and "secret" not in r.text.replace("secret.txt", "")
    r = t.call("bash", {"command": "cat link.txt"})
    assert not r.ok and "secret" not in r.text and r.text.startswith("cat: link.txt: ")


def test_bash_output_is_capped_and_names_surface_documents(index: sieve.Index) -> None:
    t = tool(index, cap=120)
    r = t.call("bash", {"command": "grep -il 'school' *.txt"})
    assert r.ok and set(r.text.split()) == {"cold.txt", "heat-2022.txt"} and t.surfaced == ["cold", "heat-2022"]
    big = t.call("bash", {"command": "cat river.txt"})
    assert big.tokens <= 120 and "[output cut at the 120-word ceiling" in big.text
    removed = t.call("bash", {"command": "rm cold.txt"})
    assert not removed.ok and removed.text.startswith("rm: cannot remove 'cold.txt': ") and (t.staged.files / "cold.txt").is_file()
    assert t.call("nope", {}).text.startswith("error: there is no tool named \"nope\"; the tools are bash, read")
    assert "not valid JSON" in t.call("bash", "{bad").text


def test_conditions_choose_their_tools(index: sieve.Index) -> None:
    assert isinstance(make_tools(index, "dci"), FileTools)
    assert isinstance(make_tools(index, "sieve"), Toolset)
    with pytest.raises(InvalidArgumentError, match="condition 'dci' works on the collection as files"):
        Toolset.for_condition(index, "dci")
    manual = make_tools(index, "dci").manual()
    assert f"folder of {len(index)} text files" in manual and "`grep`" in manual and "{" not in manual.replace('{"path"', "")
    schemas = [s["function"]["name"] for s in make_tools(index, "bounded-dci").schemas()]
    assert schemas == ["bash", "read", "bm25_search"] and json.dumps(schemas)  # the paper's bounded DCI searches live
    assert [s["function"]["name"] for s in make_tools(index, "dci").schemas()] == ["bash", "read"]


def test_bounded_dci_searches_the_whole_collection_and_adds_to_its_folder(index: sieve.Index) -> None:
    from sieve.engine.query.bql.free_text import free_text_query

    tools = make_tools(index, "bounded-dci", k=3)
    assert tools.call("bm25_search", {"query": "snow"}).text.startswith("bm25_search error: bm25_search: the episode has not begun")
    tools.begin("heatwave school closures")
    before = dict(tools.staged.ids)
    assert "cold" not in before.values()
    whole = sorted(p.name for p in tools.whole.files.iterdir())
    got = tools.call("bm25_search", {"query": "snow in Zürich"})
    expect = [h.doc_id for h in index.search(free_text_query("snow in Zürich", index.analyzer), k=3, ranker="bm25", fallback=False).hits]
    assert got.ok and expect and expect[0] == "cold"
    listed = [line.split()[0] for line in got.text.splitlines()[1:]]
    assert [tools.staged.ids[name] for name in listed] == expect  # BM25's order, as the index ranks it
    assert "cold.txt  Cold snap in Zürich  (new in the folder)" in got.text
    assert got.text.startswith(f"{len(expect)} files for 'snow in Zürich', best first ({len(set(expect) - set(before.values()))} new in the folder):")
    shown = tools.call("bash", {"command": "ls; cat cold.txt | head -1"}).text
    assert "cold.txt" in shown and "Cold snap in Zürich" in shown
    assert "cold" in tools.surfaced and json.loads((tools.staged.root / "ids.json").read_text())["cold.txt"] == "cold"
    assert not os.access(tools.staged.files / "cold.txt", os.W_OK) or os.geteuid() == 0
    assert oct((tools.staged.files / "cold.txt").stat().st_mode & 0o777) == "0o444"
    again = tools.call("bm25_search", {"query": "snow in Zürich"})
    assert "(0 new in the folder)" in again.text and "(new in the folder)" not in again.text
    assert tools.call("bm25_search", {"query": "?! --"}).text == "bm25_search: no word to search for (stop words alone are not indexed)"
    assert "no document has any of the words 'zzqx'" in tools.call("bm25_search", {"query": "zzqx"}).text
    assert sorted(p.name for p in tools.whole.files.iterdir()) == whole  # the whole collection's folder is never written
    manual = tools.manual()
    assert "## bm25_search" in manual and "lists the top 3 files" in manual
    assert "bm25_search" not in make_tools(index, "dci").manual()
    tools.close()
