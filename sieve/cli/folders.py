"""What `sieve index` and `sieve add` say about a folder of documents: the corpus argument with its
file rules (`--max-file-mb`, `--strict`) and the files passed over."""

from __future__ import annotations

import sys
from typing import Any

from sieve.cli.common import plural
from sieve.errors import InvalidArgumentError


def corpus_argument(path: str, max_file_mb: float | None, strict: bool) -> Any:
    """CORPUS as a build reads it: a folder of documents with the rules for its files asked for."""
    from sieve.corpus.folders import MAX_FILE_MB, Folder, is_document_folder

    if is_document_folder(path):
        return Folder(path, MAX_FILE_MB if max_file_mb is None else max_file_mb, strict)
    if max_file_mb is not None or strict:
        raise InvalidArgumentError(
            "--max-file-mb and --strict are for a folder "
            f"of documents; {path} is read as a JSONL corpus"
        )
    return path


UNREAD_WORDS = {
    "links": ("symbolic link", "out of the folder or to nothing"),
    "special": ("special file", "(FIFO, socket, device)"),
    "oversized": ("file", "over --max-file-mb"),
    "unreadable": ("file", "that could not be read"),
}


def print_unread(s: dict[str, Any]) -> None:
    """The files of a folder corpus passed over, on stderr."""
    if not any(s["unread"].values()):
        return
    counts = ", ".join(
        f"{plural(n, UNREAD_WORDS[k][0])} {UNREAD_WORDS[k][1]}" for k, n in s["unread"].items() if n
    )
    print(f"  not read: {counts} (--strict makes them errors); first ones:", file=sys.stderr)
    for note in s["unread_files"]:
        print(f"    {note}", file=sys.stderr)
