"""`sieve test` and `sieve.testing`: cases pass and fail as they should, failures explain each
document decided wrongly, the exit codes, JSON, malformed case files, and the pytest fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import sieve
from sieve.cli.main import main
from sieve.errors import InvalidArgumentError
from sieve.testing import assert_admits, assert_matches, assert_rejects, assert_top, index_fixture, load_cases, run_cases

RECORDS = [
    {"id": "heat", "title": "Heatwave of 2022", "date": "2022-07", "sections": [{"heading": "School closures", "text": "Schools closed early."}]},
    {"id": "cold", "title": "Cold snap", "date": "2021-01", "text": "Snow fell. Schools stayed open."},
    {"id": "mild", "title": "Mild spring", "text": "Nothing happened to the heat or the schools."},
]

search_index = index_fixture(RECORDS)


def test_the_fixture_is_a_temporary_index(search_index: sieve.Index) -> None:
    assert search_index.temporary and len(search_index) == 3


def test_cases_pass_and_fail(search_index: sieve.Index) -> None:
    ranked = [h.doc_id for h in search_index.search("heatwave[title] OR snow", k=2).hits]
    results = run_cases(search_index, [
        {"query": "heatwave[title]", "admits": ["heat"], "rejects": ["cold", "mild"], "count": 1, "top": ["heat"]},
        {"query": "heatwave[title] OR snow", "top": ranked[::-1], "count": 3},
        {"query": "schools AND date[2022]", "admits": ["cold"], "rejects": ["heat"]},
        {"query": "(heat", "admits": ["heat"]},
        {"query": "heat", "admits": ["ghost"], "rejects": ["phantom"]},
    ])
    assert [r.passed for r in results] == [True, False, False, False, False]
    assert results[1].problems == ["should admit 3 documents, admits 2", f"the first 2 results should be {ranked[::-1]}, are {ranked}"]
    wrong = results[2].problems
    assert wrong[0].startswith("'cold' should be admitted, but is rejected:\n") and "its date 2021-01 is outside the range" in wrong[0]
    assert wrong[1].startswith("'heat' should be rejected, but is admitted:\n") and "matches in body" in wrong[1]
    assert results[3].problems == ["the query fails: expected a closing ')' at 5 (the '(' at 0 is never closed)\n  (heat\n       ^"]
    assert results[4].problems == ["'ghost' should be admitted, but there is no document with that id",
                                   "'phantom' should be rejected, but there is no document with that id (check the id)"]


def test_assertions_raise_with_explanations(search_index: sieve.Index) -> None:
    assert_admits(search_index, "schools", ["heat", "cold", "mild"])
    assert_rejects(search_index, "snow[title]", ["cold"])
    assert_matches(search_index, "schools AND NOT date[2022]", ["cold", "mild"])
    assert_top(search_index, "heatwave OR heat", ["heat"])
    with pytest.raises(AssertionError) as e:
        assert_matches(search_index, "schools AND date[2021..]", ["cold"])
    assert "'heat' should be rejected, but is admitted" in str(e.value) and "yes  date[2021-01-01..]" in str(e.value)


def test_the_cli_runs_a_case_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ix = sieve.build_index(RECORDS, tmp_path / "ix")
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"query": "heatwave[title]", "admits": ["heat"], "count": 1}) + "\n\n// a comment\n"
                    + json.dumps({"name": "no snow in titles", "query": "snow[title]", "count": 0}) + "\n")
    assert main(["test", str(good), str(ix.path)]) == 0
    assert capsys.readouterr().out == "2 passed, 0 failed (2 cases)\n"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"name": "snow", "query": "snow", "rejects": ["cold"]}) + "\n")
    assert main(["test", str(bad), str(ix.path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("FAIL line 1: snow\n  'cold' should be rejected, but is admitted:\n    yes  snow  (matches in body") and out.endswith("0 passed, 1 failed (1 cases)\n")
    assert main(["test", str(bad), str(ix.path), "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["cases"], data["failed"]) == (1, 1) and data["results"][0]["line"] == 1
    assert main(["explain", str(ix.path), "snow AND date[2022]", "cold", "--json"]) == 0
    tree: Any = json.loads(capsys.readouterr().out)
    assert tree["doc_id"] == "cold" and tree["admits"] is False and [c["admits"] for c in tree["children"]] == [True, False]
    assert main(["explain", str(ix.path), "snow", "nope"]) == 1
    assert capsys.readouterr().err == "sieve: no document with id 'nope'\n"


@pytest.mark.parametrize("line,message", [
    ('{"query": "x", "admit": ["a"]}', "c.jsonl:1: unknown keys ['admit']"),
    ('{"admits": ["a"]}', "c.jsonl:1: a case needs a 'query'"),
    ('{"query": "x", "admits": "a"}', "c.jsonl:1: 'admits' must be a list of document ids"),
    ('{"query": "x", "count": -1}', "c.jsonl:1: 'count' must be a whole number"),
    ("{not json", "c.jsonl:1: "),
])
def test_malformed_case_files_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text(line + "\n")
    with pytest.raises(InvalidArgumentError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_cases(f)
