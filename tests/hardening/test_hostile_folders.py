"""Corpora, case files and index paths as an attacker would shape them: a folder whose links lead
out of it (to a secret, to /proc/self/environ, to /dev/zero), a FIFO that would block a reader
forever, an alias bomb in front matter, values Python cannot read; a `sieve test` case file that is
not text, nested past any parser or holding a lone surrogate; an index written where no index can
be. Each is a clear sieve error or a file passed over and counted, never a traceback, a hang or a
byte of the secret in the index."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

import sieve
from sieve.cli.main import main
from sieve.errors import CorpusError, IndexPathError, InvalidArgumentError, SieveError
from sieve.testing import load_cases

SECRET = "TOPSECRET-loader-91c"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str], seconds: float = 60) -> tuple[int, str, str]:
    """The CLI in this process, on a thread that must end within `seconds` (a hang fails the test)."""
    got: dict[str, int] = {}
    t = threading.Thread(target=lambda: got.setdefault("rc", main(argv)), daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"sieve {' '.join(argv)} still running after {seconds} s"
    out, err = capsys.readouterr()
    return got["rc"], out, err


@pytest.fixture()
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of two real documents and every way out of it a file name can offer."""
    monkeypatch.setenv("SIEVE_TEST_SECRET", SECRET)
    secret = tmp_path / "secret.md"
    secret.write_text(f"# Secret\n\n{SECRET}\n")
    root = tmp_path / "docs"
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "install.md").write_text("# Install\n\nRun the installer.\n")
    (root / "notes.txt").write_text("plain notes about the installer\n")
    os.symlink(secret, root / "leak.md")  # a file outside
    os.symlink("/proc/self/environ", root / "environ.txt")  # the environment of whoever reads it
    os.symlink("/dev/zero", root / "zero.txt")  # endless
    os.symlink(tmp_path, root / "up")  # a folder outside
    os.symlink(root / "guide" / "install.md", root / "alias.md")  # inside: read under its own name
    os.symlink(tmp_path / "nowhere.md", root / "dangling.md")
    os.mkfifo(root / "pipe.md")  # a reader that opens it waits for a writer forever
    return root


def test_only_regular_files_inside_the_folder_are_read(hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(["index", str(hostile), str(tmp_path / "idx")], capsys)
    assert rc == 0, err
    index = sieve.open_index(tmp_path / "idx")
    assert sorted(index.reader.doc_id(d) for d in index.doc_numbers().tolist()) == ["alias.md", "guide/install.md", "notes.txt"]
    assert index.match("TOPSECRET*").count == 0 and index.match("SIEVE_TEST_SECRET").count == 0
    for f in (tmp_path / "idx").rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    assert "not read: 5 symbolic links out of the folder or to nothing, 1 special file (FIFO, socket, device)" in err
    assert "leak.md: is a symbolic link to " in err and "outside the folder" in err
    assert "dangling.md: is a symbolic link to " in err and "which does not exist" in err
    assert "pipe.md: is a FIFO (named pipe), never opened" in err
    assert "Traceback" not in err


def test_strict_makes_each_file_passed_over_an_error(hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(["index", str(hostile), str(tmp_path / "idx"), "--strict"], capsys)
    assert rc == 1 and "Traceback" not in err
    assert "dangling.md" in err and "symbolic link" in err
    assert not (tmp_path / "idx" / "CURRENT").exists()  # nothing half-built is left as an index
    with pytest.raises(CorpusError, match="symbolic link"):
        sieve.build_index(sieve.Folder(hostile, strict=True), tmp_path / "api")


def test_a_fifo_never_holds_the_build_lock(hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two builds of the folder one after another: the first must not block on pipe.md (holding the
    index's lock), so the second gets the lock at once."""
    for _ in range(2):
        rc, _, err = _run(["index", str(hostile), str(tmp_path / "idx"), "--force"], capsys, seconds=30)
        assert rc == 0, err


def test_the_size_cap_applies_to_every_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "small.md").write_text("# Small\n\nfine\n")
    (root / "big.txt").write_bytes(b"word " * 300_000)  # 1.5 MB
    rc, _, err = _run(["index", str(root), str(tmp_path / "idx"), "--max-file-mb", "1"], capsys)
    assert rc == 0 and "1 file over --max-file-mb" in err and "big.txt: is 1,500,000 bytes, over the 1,048,576-byte cap" in err
    assert len(sieve.open_index(tmp_path / "idx")) == 1
    rc, _, err = _run(["index", str(root), str(tmp_path / "idx2"), "--max-file-mb", "0"], capsys)
    assert rc in (1, 2) and "max" in err and "Traceback" not in err


BAD_FRONT_MATTER = [
    # the billion laughs: nine levels of nine aliases, a billion strings written out
    ("bomb.md", "---\na: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n---\n# T\n",
     "alias"),
    ("date.md", "---\ntitle: T\ndate: 2024-13-45\n---\nbody\n", "date.md:3"),
    ("digits.md", "---\ntitle: T\nviews: " + "9" * 5000 + "\n---\nbody\n", "digits.md:3"),
    ("tag.md", "---\ntitle: !!python/object/apply:os.system ['echo pwned']\n---\nbody\n", "tag.md:2"),
    ("deep.md", "---\ntitle: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n", "deep.md"),
]


@pytest.mark.parametrize("name, text, where", BAD_FRONT_MATTER, ids=[b[0] for b in BAD_FRONT_MATTER])
def test_bad_front_matter_is_a_corpus_error_at_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, where: str) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / name).write_text(text)
    t0 = time.monotonic()
    with pytest.raises(CorpusError) as e:
        list(sieve.read_documents(root))
    assert time.monotonic() - t0 < 20  # the bomb is refused, not expanded (a generous bound: this is not a speed test)
    assert where in str(e.value), str(e.value)
    rc, _, err = _run(["index", str(root), str(tmp_path / "idx")], capsys)
    assert rc == 1 and where.split(":")[0] in err and "Traceback" not in err
    assert not Path("pwned").exists()


CASE_FILES = [
    ("bad-utf8.jsonl", b'{"query": "a", "admits": []}\n{"query": "\xff\xfe"}\n', "bad-utf8.jsonl:2: not UTF-8 text"),
    ("nested.jsonl", b'{"query": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n", "nested.jsonl:1"),
    ("surrogate.jsonl", b'{"query": "a\\ud800b", "admits": []}\n', "surrogate.jsonl:1: holds a lone surrogate U+D800"),
    ("empty.jsonl", b"\n// nothing\n", "empty.jsonl: the case file has no cases"),
    ("ranker.jsonl", b'{"query": "a", "ranker": "magic"}\n', "ranker.jsonl:1: 'ranker' must be one of"),
    ("digits.jsonl", b'{"query": "a", "count": ' + b"9" * 5000 + b"}\n", "digits.jsonl:1"),
]


@pytest.mark.parametrize("name, content, message", CASE_FILES, ids=[c[0] for c in CASE_FILES])
def test_sieve_test_case_files_are_errors_naming_file_and_line(tmp_path: Path, gold: sieve.Index, capsys: pytest.CaptureFixture[str],
                                                               name: str, content: bytes, message: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InvalidArgumentError) as e:
        load_cases(path)
    assert message in str(e.value)
    rc, out, err = _run(["test", str(path), str(gold.path)], capsys)
    assert rc == 1 and message in err and "Traceback" not in err


def test_a_case_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path, gold: sieve.Index, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "cases.jsonl")
    rc, _, err = _run(["test", str(tmp_path / "cases.jsonl"), str(gold.path)], capsys, seconds=20)
    assert rc == 1 and "cases.jsonl: the case file is a FIFO (named pipe), not a regular file" in err


@pytest.mark.parametrize("where", ["/proc/x", "FILE/idx", "/dev/null/idx"])
def test_an_index_where_none_can_be_written_is_an_error_naming_the_path(tmp_path: Path, gold_records: list[dict], where: str,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "FILE").write_text("a regular file, not a folder")
    path = where.replace("FILE", str(tmp_path / "FILE"))
    with pytest.raises(IndexPathError) as e:
        sieve.build_index(gold_records, path)
    assert str(e.value).startswith(f"{path}: cannot write an index here: ")
    assert isinstance(e.value, SieveError)
    (tmp_path / "c.jsonl").write_text("\n".join(json.dumps(r) for r in gold_records))
    rc, _, err = _run(["index", str(tmp_path / "c.jsonl"), path], capsys)
    assert rc == 1 and f"{path}: cannot write an index here" in err and "Traceback" not in err
