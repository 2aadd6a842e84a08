"""`sieve serve` as a command: what it says on start, and the errors it exits 1 with."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path


def serve(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sieve.cli.main", "serve", *args], stdin=subprocess.DEVNULL, check=False,
                          capture_output=True, text=True, timeout=timeout)


def test_stdio_announces_on_stderr_and_ends_with_its_input(lib: Path) -> None:
    done = serve(f"docs={lib}", "--json")
    assert done.returncode == 0 and done.stdout == ""  # stdout belongs to the protocol
    info = json.loads(done.stderr.splitlines()[0])
    assert info == {"indexes": {"docs": str(lib)}, "transport": "stdio", "url": None, "tools": ["search", "fetch", "visit", "show"]}


def test_user_errors_exit_1_with_a_message(lib: Path, tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        taken = serve(str(lib), "--http", "--port", str(port))
    assert taken.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in taken.stderr
    for args, message in [
        ((str(lib), f"{tmp_path}/x/lib"), "two indexes are named 'lib': name them apart with NAME=PATH"),
        ((str(tmp_path / "none"),), "no such index directory"),
        ((str(lib), "--tools", "search,drop"), "unknown tools ['drop']"),
        ((str(lib), "--k-max", "0"), "k-max must be at least 1, got 0"),
    ]:
        done = serve(*args)
        assert done.returncode == 1 and message in done.stderr, (args, done.stderr)
