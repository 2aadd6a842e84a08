"""Fixtures: real indexes on disk (slices of the standard library's documentation) and a real
`sieve serve --http` process on loopback, talked to with the MCP SDK's own client."""

from __future__ import annotations

import functools
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import sieve
from sieve.demo_corpus import stdlib_documents


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(main: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(main)


# Top-level modules only (167 documents; a-l and m-z): fast to build, real text.
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


def start_http(*args: str) -> tuple[subprocess.Popen[bytes], str]:
    """`sieve serve ARGS --http` on a free loopback port; (process, URL of its /mcp endpoint)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sieve.cli", "serve", *args, "--http", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sieve serve exited {proc.returncode}: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("sieve serve --http did not start listening within 60 s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="module")
def http_url(lib: Path) -> Iterator[str]:
    proc, url = start_http(f"lib={lib}")
    try:
        yield url
    finally:
        stop(proc)
