"""An index path the system will not let a build write (/proc, a path through a file or a FIFO)
is an IndexPathError naming the path and why, never a raw OSError, and leaves nothing behind."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

import sieve
from sieve.cli.main import main
from sieve.errors import IndexExistsError, IndexPathError


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"id": f"d{i}", "title": f"title {i}", "text": "some words"}) + "\n" for i in range(3)))
    return path


@pytest.mark.parametrize("shards", [None, 2], ids=["one", "sharded"])
def test_a_path_under_proc_is_an_index_path_error(corpus: Path, shards: int | None) -> None:
    with pytest.raises(IndexPathError) as e:
        sieve.build_index(corpus, "/proc/x", shards=shards, jobs=1)
    assert str(e.value) == "/proc/x: cannot write an index here: the system does not let files be created in /proc"
    assert e.value.path == "/proc/x" and isinstance(e.value, sieve.SieveError)
    assert isinstance(e.value, OSError) and e.value.errno == errno.ENOENT  # what the system said, for callers that handle OSErrors


@pytest.mark.parametrize("below", ["x", "x/y/z"])
def test_a_path_through_a_regular_file_names_the_file(tmp_path: Path, corpus: Path, below: str) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(IndexPathError) as e:
        sieve.build_index(corpus, blocker / below)
    assert str(e.value) == f"{blocker / below}: cannot write an index here: {blocker} is a regular file, not a folder"
    assert e.value.errno in (errno.EEXIST, errno.ENOTDIR)
    assert sorted(p.name for p in tmp_path.iterdir()) == before and blocker.read_text() == "not a folder"  # no lock, no stage left


def test_a_path_through_a_fifo_or_a_device_names_it(tmp_path: Path, corpus: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(IndexPathError, match=f"^{fifo}/x: cannot write an index here: {fifo} is a FIFO \\(named pipe\\), not a folder$"):
        sieve.build_index(corpus, fifo / "x")
    with pytest.raises(IndexPathError, match="^/dev/null/x: cannot write an index here: /dev/null is a character device, not a folder$"):
        sieve.build_index(corpus, "/dev/null/x")


def test_an_existing_index_is_still_refused_as_existing(tmp_path: Path, corpus: Path) -> None:
    sieve.build_index(corpus, tmp_path / "ix")
    with pytest.raises(IndexExistsError, match="already exists"):  # an OSError too, but not a path problem
        sieve.build_index(corpus, tmp_path / "ix")


@pytest.mark.parametrize("command", ["index", "add"])
def test_the_cli_says_why_and_exits_1(corpus: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    argv = [command, str(corpus), "/proc/x", "--quiet"] if command == "index" else [command, "/proc/x", str(corpus)]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.err == "sieve: /proc/x: cannot write an index here: the system does not let files be created in /proc\n"
    assert captured.out == ""
