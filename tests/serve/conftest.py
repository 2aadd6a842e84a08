"""Fixtures: real indexes on disk (slices of the standard library's documentation) and a real
`sieve serve --http` process on loopback, talked to with the MCP SDK's own client."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# The serve tests talk to a real server with the MCP SDK (the serve extra); without it they skip, saying so.
pytest.importorskip("mcp", reason="needs the serve extra: pip install -e '.[serve]'")
pytest.importorskip("anyio", reason="needs the serve extra: pip install -e '.[serve]'")

from serving import start_http, stop  # noqa: E402

import sieve
from sieve.corpus.demo import stdlib_documents


@functools.cache
def _halves() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    docs = [d for d in stdlib_documents() if "." not in d["id"]]
    return [d for d in docs if d["id"] < "m"], [d for d in docs if d["id"] >= "m"]


@pytest.fixture(scope="session")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = _halves()[0]
    assert {"gzip", "json"} <= {d["id"] for d in docs}
    return sieve.build_index(docs, tmp_path_factory.mktemp("lib") / "lib").path


@pytest.fixture(scope="session")
def lib2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sieve.build_index(_halves()[1], tmp_path_factory.mktemp("lib2") / "lib2").path


@pytest.fixture(scope="module")
def http_url(lib: Path) -> Iterator[str]:
    proc, url = start_http(f"lib={lib}")
    try:
        yield url
    finally:
        stop(proc)
