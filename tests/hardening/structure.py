"""Structural damage to an index folder: every file and folder in it deleted, replaced by a folder,
a file, a FIFO, a symbolic link (to another file, to /dev/zero, to nothing), emptied, cut short,
overwritten with garbage of its size, grown by a byte, or made unreadable; and what opening and
reading the damaged index then does (shared by test_index_structure.py, which runs `main` in a
subprocess with a time and memory bound).

Each variant is made in place and undone (the original moved aside and back), so a sweep over a
few hundred variants costs no copies of the index.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sys
import traceback
from pathlib import Path
from typing import Any, Callable

from .deadline import Hung, within

FILE_VARIANTS = ("deleted", "a folder", "a FIFO", "a link to another file", "a link to /dev/zero", "a link to nothing", "empty", "cut in half",
                 "garbage of its size", "one byte more", "unreadable")
FOLDER_VARIANTS = ("deleted", "a file", "a FIFO", "a link to another folder", "a link to /dev/zero", "a link to nothing", "emptied", "unreadable")
SECONDS = 10  # per variant: far more than any takes; past it the variant is a hang


def _make(path: Path, variant: str, elsewhere: Path, original: Path) -> None:
    """Put `variant` where `path` was (it was moved aside to `original`)."""
    if variant in ("cut in half", "garbage of its size", "one byte more"):
        data = original.read_bytes()
        changed = {"cut in half": data[: len(data) // 2], "garbage of its size": random.Random(len(data)).randbytes(len(data)),
                   "one byte more": data + b"\0"}[variant]
        path.write_bytes(changed)
    elif variant in ("a folder", "emptied"):
        path.mkdir()
    elif variant in ("a file", "empty"):
        path.write_bytes(b"" if variant == "empty" else b"not what sieve wrote\n")
    elif variant == "a FIFO":
        os.mkfifo(path)
    elif variant in ("a link to another file", "a link to another folder"):
        path.symlink_to(elsewhere)
    elif variant == "a link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif variant == "a link to nothing":
        path.symlink_to(path.parent / "no-such-file")


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


def outcome(index: Path, work: Callable[[Any], None]) -> tuple[str, str]:
    """(kind, detail) of opening `index` and doing `work(index)`: ("ok", ""), ("damage", the file
    an IndexDamagedError names), ("sieve", the error's class), ("HANG", "") or ("RAW", what
    escaped and where)."""
    import sieve
    from sieve.errors import IndexDamagedError, SieveError

    try:
        with within(SECONDS):
            work(sieve.open_index(index))
        return "ok", ""
    except IndexDamagedError as e:
        return "damage", e.file
    except SieveError as e:
        return "sieve", type(e).__name__
    except Hung:
        return "HANG", ""
    except BaseException as e:  # noqa: BLE001 - what this records
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return "RAW", f"{type(e).__name__} at {Path(tb.filename).name}:{tb.lineno}: {str(e)[:120]}"


def read_everything(index: Any, dense: bool = False) -> None:
    """What a user of the index does: match, search, read documents and sections, verify."""
    ids = index.match("heatwave OR paris OR date[..2100]").ids
    index.search("heatwave paris", k=5)
    for doc_id in ids[:3]:
        index.document(doc_id)
        index.section(doc_id, 0)
    if dense:
        from .synth import HashEncoder

        index.use_dense(model="hash-64", encoder=HashEncoder())
        index.searcher.dense.exact_max = 0  # through the HNSW graph, so hnsw.bin is read
        index.search("heatwave paris", k=5, ranker="dense")
    index.check()


def sweep(index: Path, aside: Path, dense: bool = False) -> list[dict[str, str]]:
    """Every variant of every entry of `index` (and of `index` itself), each undone after: one
    record per variant, {"entry", "variant", "kind", "detail"}."""
    entries = [index] + sorted(p for p in index.rglob("*") if not p.name.startswith("."))
    other_file = aside / "other-file"
    other_file.write_bytes(b"gen-000009\n" + bytes(range(256)) * 64)
    other_folder = aside / "other-folder"
    other_folder.mkdir()
    (other_folder / "manifest.json").write_text('{"format": "sieve-index"}')
    out = []
    for entry in entries:
        folder = entry.is_dir()
        for variant in FOLDER_VARIANTS if folder else FILE_VARIANTS:
            kept = aside / "kept"
            mode = entry.stat().st_mode
            if variant == "unreadable":
                os.chmod(entry, 0)
            else:
                os.rename(entry, kept)
                _make(entry, variant, other_folder if folder else other_file, kept)
            try:
                kind, detail = outcome(index, lambda ix: read_everything(ix, dense))
            finally:
                if variant == "unreadable":
                    os.chmod(entry, mode)
                else:
                    if os.path.lexists(entry):
                        _remove(entry)
                    os.rename(kept, entry)
            out.append({"entry": entry.relative_to(index.parent).as_posix(), "variant": variant, "kind": kind, "detail": detail})
    return out


def main() -> None:
    """`python -m tests.hardening.structure INDEX ASIDE [dense]`: the sweep, as JSON on stdout."""
    index, aside = Path(sys.argv[1]), Path(sys.argv[2])
    print(json.dumps(sweep(index, aside, dense=sys.argv[3:] == ["dense"])))


if __name__ == "__main__":
    main()
