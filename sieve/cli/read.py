"""The commands that read a document: `sieve fetch`, `visit`, `show`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from sieve.cli.common import print_json


def _cli_hint(index: str) -> Callable[[str, str | None, int], str]:
    """How a person reads the next part: the command line to run."""
    import shlex

    def hint(doc_id: str, section: str | None, part: int) -> str:
        words = (
            ["sieve", "fetch", index, doc_id, section]
            if section is not None
            else ["sieve", "visit", index, doc_id]
        )
        return shlex.join(words + ["--part", str(part)])

    return hint


def _read_config(args: argparse.Namespace) -> Any:
    from sieve.tools.fetch.reading import ReadConfig
    from sieve.tools.fetch.tokens import make_counter

    return ReadConfig(
        cap=args.max_tokens, counter=make_counter(args.tokenizer), hint=_cli_hint(args.index)
    )


def _print_read(read: Any, as_json: bool) -> None:
    if as_json:
        print_json(
            {
                "id": read.doc_id,
                "section": read.name or None,
                "part": read.part,
                "parts": read.parts,
                "text": read.body,
            }
        )
    else:
        print(read.text)


def cmd_fetch(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index
    from sieve.tools.fetch.reading import read_section

    doc = open_index(args.index).document(args.doc_id)
    _print_read(read_section(doc, args.section, args.part, _read_config(args)), args.json)
    return 0


def cmd_visit(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index
    from sieve.tools.fetch.reading import read_document

    doc = open_index(args.index).document(args.doc_id)
    _print_read(read_document(doc, args.part, _read_config(args)), args.json)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index
    from sieve.tools.fetch.reading import outline_text
    from sieve.tools.fetch.tokens import WhitespaceCounter
    from sieve.tools.style import terminal_style

    doc = open_index(args.index).document(args.doc_id)
    words = WhitespaceCounter()
    if args.json:
        print_json(
            {
                "id": doc.id,
                "title": doc.title,
                "author": doc.author,
                "date": doc.date,
                "infobox": dict(doc.infobox),
                "sections": [
                    {"heading": s.heading, "words": words.count(s.text)} for s in doc.sections
                ],
            }
        )
        return 0
    first, _, rest = outline_text(doc, words).partition("\n")
    print(f"{terminal_style(sys.stdout).id(first)}\n{rest}")
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`fetch`, `visit` and `show`."""
    for name, helptext, func in (
        ("fetch", "read one section of a document (or intro, facts, infobox, contents)", cmd_fetch),
        ("visit", "read a whole document", cmd_visit),
    ):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("index")
        s.add_argument("doc_id")
        if name == "fetch":
            s.add_argument(
                "section",
                help="a heading (case-insensitive; a unique prefix "
                "will do), #N, intro, facts, infobox or contents",
            )
        s.add_argument(
            "--part",
            type=int,
            default=1,
            help="which part of a text longer than one read (default 1)",
        )
        s.add_argument(
            "--max-tokens", type=int, default=12_000, help="the cap of one read (default 12000)"
        )
        s.add_argument(
            "--tokenizer",
            help="count tokens with a tokenizer.json (path, "
            "or 'minilm' for the bundled one) instead of words",
        )
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=func)

    s = sub.add_parser("show", help="list a document's facts and sections")
    s.add_argument("index")
    s.add_argument("doc_id")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_show)
