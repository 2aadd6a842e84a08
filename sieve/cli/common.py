"""What the command groups share: the query limit options, JSON output and counted nouns."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from sieve.common.terminal import json_text
from sieve.engine.query.bql.parser import MAX_QUERY_CHARS
from sieve.index.index import Limits

RANKER_HELP = (
    "how results are ordered: bm25 (the query's words); dense or hybrid (closeness of "
    "meaning, alone or fused with BM25: run `sieve embed` first); indri or indri+dense "
    "(Indri-style soft scoring: documents that miss parts of the query rank too)"
)


def add_limit_options(s: argparse.ArgumentParser) -> None:
    """The caps on each query (`sieve.Limits`) as options of a command that runs queries."""
    d = Limits()
    s.add_argument(
        "--max-query-chars",
        type=int,
        metavar="N",
        help="longest query, in characters (default "
        f"{d.max_query_chars:,}; at most {MAX_QUERY_CHARS:,})",
    )
    s.add_argument(
        "--max-phrase-words",
        type=int,
        metavar="N",
        help=f"most words in one phrase (default {d.max_phrase_words})",
    )
    s.add_argument(
        "--query-seconds",
        type=float,
        metavar="S",
        help="time allowed for each query, zero-hit fallback "
        f"included (default {d.seconds:g}; 0: no limit)",
    )


def query_limits(args: argparse.Namespace, base: Limits = Limits()) -> Limits:
    """`base` with the options of `add_limit_options` that were given."""
    given = {"max_query_chars": args.max_query_chars, "max_phrase_words": args.max_phrase_words}
    changes: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
    if args.query_seconds is not None:
        changes["seconds"] = args.query_seconds or None
    return replace(base, **changes)


def print_json(obj: Any) -> None:
    sys.stdout.write(json_text(obj, indent=1) + "\n")


def plural(count: int, word: str) -> str:
    """`1 document`, `2 documents`."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"
