"""Testing search: query regression cases and pytest assertions with explanations.

A case says what a query must do on an index:

    {"query": "heatwave[title] AND date[2020..]", "admits": ["heat-2022"], "rejects": ["cold"],
     "top": ["heat-2022"], "count": 1}

Every key but `query` is optional. `admits`/`rejects`: these documents are / are not in the exact
match; `count`: the match has this many documents; `top`: these ids are the first results, in this
order, of a search with the case's `ranker` (default bm25) over the admitted set (no zero-hit
fallback: a ranking test is about what the query admits). `name` labels a case in reports.

`sieve test CASES.jsonl INDEX` runs a file of cases; `run_cases` does the same from Python; the
`assert_*` functions raise AssertionError with the explanation of every document decided wrongly,
and `index_fixture(records)` makes a pytest fixture of a temporary index.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieve.common import files
from sieve.corpus.formats import parse_line
from sieve.engine.rank.rankers import RANKER_NAMES
from sieve.errors import BQLSyntaxError, CorpusError, InvalidArgumentError, SieveError
from sieve.index.index import Index, build_index

CASE_KEYS = ("query", "admits", "rejects", "top", "count", "ranker", "name")
MAX_CASES_BYTES = 64 << 20  # a case file's bound (a million cases is far less)
_JSON = json.JSONEncoder(ensure_ascii=False)


@dataclass
class CaseResult:
    """One case, run: `problems` lists each expectation that failed, in words, with explanations."""

    case: dict[str, Any]
    line: int | None
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def label(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return where + str(self.case.get("name") or self.case.get("query"))

    def report(self) -> str:
        return f"FAIL {self.label}\n" + "\n".join(
            "  " + p.replace("\n", "\n  ") for p in self.problems
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "case": self.case,
            "passed": self.passed,
            "problems": self.problems,
        }


def _ids(case: dict[str, Any], key: str) -> list[str]:
    value = case.get(key, [])
    if (
        isinstance(value, str)
        or not isinstance(value, list)
        or not all(isinstance(v, str) for v in value)
    ):
        raise InvalidArgumentError(
            f"{key!r} must be a list of document ids (strings), got {_shown(value)}"
        )
    return value


def check_case(case: dict[str, Any]) -> dict[str, Any]:
    """`case` if it is well-formed; InvalidArgumentError naming the problem otherwise."""
    if not isinstance(case, dict):
        raise InvalidArgumentError(f"a case must be a JSON object, got {type(case).__name__}")
    unknown = sorted(set(case) - set(CASE_KEYS))
    if unknown:
        raise InvalidArgumentError(f"unknown keys {unknown}; a case has {', '.join(CASE_KEYS)}")
    if not isinstance(case.get("query"), str) or not case["query"].strip():
        raise InvalidArgumentError("a case needs a 'query' (a non-empty string)")
    for key in ("admits", "rejects", "top"):
        _ids(case, key)
    count = case.get("count")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
        raise InvalidArgumentError(f"'count' must be a whole number, got {_shown(count)}")
    if case.get("name") is not None and not isinstance(case["name"], str):
        raise InvalidArgumentError(f"'name' must be a string, got {type(case['name']).__name__}")
    ranker = case.get("ranker", "bm25")
    if not isinstance(ranker, str) or ranker not in RANKER_NAMES:
        raise InvalidArgumentError(
            f"'ranker' must be one of {', '.join(RANKER_NAMES)}, got {_shown(ranker)}"
        )
    try:
        _JSON.encode(case).encode("utf-8")
    # a lone surrogate (JSON's "\ud800"): no text a report could print
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(
            f"holds a lone surrogate U+{ord(e.object[e.start]):04X} (not valid Unicode text)"
        ) from None
    return case


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text):,} characters)"


def load_cases(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """(line, case) for every case of a JSON Lines file; InvalidArgumentError names the file, and
    the line of a bad case. The file must be a regular file (a FIFO or a device is refused, never
    waited on) of at most MAX_CASES_BYTES, and hold at least one case."""
    out = []
    for n, text in files.read_lines(path, MAX_CASES_BYTES, "the case file"):
        if not text.strip() or text.lstrip().startswith("//"):
            continue
        case = parse_line(str(path), n, text)
        if isinstance(case, CorpusError):
            raise InvalidArgumentError(str(case)) from None
        try:
            out.append((n, check_case(case)))
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"{path}:{n}: {e}") from None
    if not out:
        raise InvalidArgumentError(
            f"{path}: the case file has no cases (one JSON object per line, see docs/testing.md)"
        )
    return out


def _explained(index: Index, query: str, doc_id: str) -> str:
    return index.explain(query, doc_id).render(1)


def run_case(index: Index, case: dict[str, Any], line: int | None = None) -> CaseResult:
    """Run one case; a query the engine refuses (syntax, limits) is a
    failed case, not an exception."""
    result = CaseResult(check_case(case), line)
    query = case["query"]
    try:
        admitted = set(index.match(query).ids)
        for doc_id in _ids(case, "admits"):
            if index.reader.doc_number(doc_id) < 0:
                result.problems.append(
                    f"{doc_id!r} should be admitted, but there is no document with that id"
                )
            elif doc_id not in admitted:
                result.problems.append(
                    f"{doc_id!r} should be admitted, but is "
                    f"rejected:\n{_explained(index, query, doc_id)}"
                )
        for doc_id in _ids(case, "rejects"):
            if doc_id in admitted:
                result.problems.append(
                    f"{doc_id!r} should be rejected, but is "
                    f"admitted:\n{_explained(index, query, doc_id)}"
                )
            elif index.reader.doc_number(doc_id) < 0:
                result.problems.append(
                    f"{doc_id!r} should be rejected, but there "
                    "is no document with that id (check the id)"
                )
        if case.get("count") is not None and len(admitted) != case["count"]:
            result.problems.append(
                f"should admit {case['count']:,} documents, admits {len(admitted):,}"
            )
        top = _ids(case, "top")
        if top:
            got = [
                h.doc_id
                for h in index.search(
                    query,
                    k=len(top),
                    ranker=case.get("ranker", "bm25"),
                    fallback=False,
                    explain=False,
                ).hits
            ]
            if got != top:
                result.problems.append(f"the first {len(top)} results should be {top}, are {got}")
    except BQLSyntaxError as e:
        result.problems.append(f"the query fails: {e}\n{e.pointer(query)}")
    except SieveError as e:
        result.problems.append(f"the query fails: {e}")
    return result


def run_cases(
    index: Index, cases: Iterable[dict[str, Any] | tuple[int, dict[str, Any]]]
) -> list[CaseResult]:
    """Run every case (dicts, or (line, case) pairs from `load_cases`)."""
    out = []
    for c in cases:
        line, case = c if isinstance(c, tuple) else (None, c)
        out.append(run_case(index, case, line))
    return out


def _assert(result: CaseResult) -> None:
    if not result.passed:
        raise AssertionError("\n" + result.report())


def assert_admits(index: Index, query: str, ids: Iterable[str]) -> None:
    """Every document of `ids` is admitted by `query`; the failure explains each one rejected."""
    _assert(run_case(index, {"query": query, "admits": list(ids)}))


def assert_rejects(index: Index, query: str, ids: Iterable[str]) -> None:
    """No document of `ids` is admitted by `query`; the failure explains each one admitted."""
    _assert(run_case(index, {"query": query, "rejects": list(ids)}))


def assert_matches(index: Index, query: str, ids: Iterable[str]) -> None:
    """`query` admits exactly the documents `ids` (any order)."""
    want = list(ids)
    every = [index.reader.doc_id(d) for d in index.doc_numbers().tolist()]
    _assert(
        run_case(
            index,
            {"query": query, "admits": want, "rejects": [i for i in every if i not in set(want)]},
        )
    )


def assert_top(index: Index, query: str, ids: Iterable[str], ranker: str = "bm25") -> None:
    """The first results of `query` are `ids`, in this order."""
    _assert(run_case(index, {"query": query, "top": list(ids), "ranker": ranker}))


def index_fixture(
    records: Iterable[dict[str, Any]] | Callable[[], Iterable[dict[str, Any]]],
    scope: str = "module",
) -> Any:
    """A pytest fixture of a temporary index of `records` (or of what a function returns), removed
    after its scope: `search_index = sieve.testing.index_fixture(RECORDS)`
    in a conftest or test module."""
    import pytest

    @pytest.fixture(scope=scope)  # type: ignore[call-overload]  # scope: a str pytest checks
    def _index() -> Any:
        source = records() if callable(records) else records
        index = build_index(list(source))
        yield index
        index.close()

    return _index
