"""Helpers for the serve tests: a real `sieve serve --http` process on a free loopback port.

A module of its own (not conftest): `from conftest import ...` would find another folder's conftest
when the whole suite is collected at once.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(main: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(main)


# Top-level modules only (167 documents; a-l and m-z): fast to build, real text.
def start_http(*args: str) -> tuple[subprocess.Popen[bytes], str]:
    """`sieve serve ARGS --http` on a free loopback port; (process, URL of its /mcp endpoint)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sieve.cli.main", "serve", *args, "--http", "--port", str(port)],
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
