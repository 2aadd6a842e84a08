"""The `sieve web` command."""

from __future__ import annotations

import argparse
import sys

from sieve.engine.query.bql.parser import MAX_QUERY_CHARS
from sieve.index.index import Limits
from sieve.serve.hosts import add_arguments
from sieve.web.app import WebLimits

_LIMITS = WebLimits()


def cmd_web(args: argparse.Namespace) -> int:
    from sieve.errors import InvalidArgumentError
    from sieve.index.index import open_index
    from sieve.serve.hosts import HostPolicy, bind_problem, exposure
    from sieve.serve.service import index_names
    from sieve.web.app import check_extra, serve
    from sieve.web.runs import load_all

    problem = bind_problem(args.host, args.allow_remote)
    if problem:
        args.usage_error(problem)
    if (
        args.k_max < 1
        or not 1 <= args.max_query_chars <= MAX_QUERY_CHARS
        or args.max_phrase_words < 2
        or not args.request_seconds > 0
    ):
        raise InvalidArgumentError(
            "--k-max must be at least 1, --max-query-chars between 1 and "
            f"{MAX_QUERY_CHARS:,}, --max-phrase-words at least 2, --request-seconds positive"
        )
    if not args.indexes and not args.runs:
        raise InvalidArgumentError("sieve web needs an index or --runs RUN_DIR to show")
    check_extra()  # before the address is announced: without the extra nothing will answer there
    # The page's caps on a query and its time per page are the indexes' own.
    engine = Limits(
        max_query_chars=args.max_query_chars,
        max_phrase_words=args.max_phrase_words,
        seconds=args.request_seconds,
    )
    indexes = (
        {name: open_index(path, limits=engine) for name, path in index_names(args.indexes).items()}
        if args.indexes
        else {}
    )
    runs = load_all(args.runs or [])
    limits = WebLimits(
        k_max=args.k_max, max_query_chars=args.max_query_chars, request_seconds=args.request_seconds
    )
    shown = ", ".join(list(indexes) + [f"run {r}" for r in runs])
    print(
        f"sieve web: {shown} at http://{args.host}:{args.port}/ (read-only; Ctrl-C stops)",
        file=sys.stderr,
        flush=True,
    )
    exposed = exposure(
        args.host, args.port, f"read {shown}", HostPolicy.of(args.host, args.allow_host)
    )
    if exposed:
        print(f"sieve web: {exposed}", file=sys.stderr, flush=True)
    serve(indexes, args.host, args.port, limits, runs, args.allow_host)
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser(
        "web",
        help="explore indexes and replay agent runs in a browser (read-only, loopback by default)",
    )
    s.add_argument(
        "indexes",
        nargs="*",
        metavar="INDEX",
        help="an index folder, or NAME=FOLDER to name it (names must differ)",
    )
    s.add_argument(
        "--runs",
        nargs="+",
        action="extend",
        metavar="RUN_DIR",
        help="eval run folders to replay (trajectories.jsonl, summary.json; their report/ if any), "
        "or `sieve ask --json` records",
    )
    add_arguments(s, 8000)
    s.add_argument(
        "--k-max",
        type=int,
        default=_LIMITS.k_max,
        help=f"most results per search (default {_LIMITS.k_max})",
    )
    s.add_argument(
        "--max-query-chars",
        type=int,
        default=_LIMITS.max_query_chars,
        help=f"longest query (default {_LIMITS.max_query_chars:,})",
    )
    s.add_argument(
        "--max-phrase-words",
        type=int,
        default=Limits.max_phrase_words,
        help=f"most words in one phrase (default {Limits.max_phrase_words})",
    )
    s.add_argument(
        "--request-seconds",
        type=float,
        default=_LIMITS.request_seconds,
        help=f"engine time per page (default {_LIMITS.request_seconds:g})",
    )
    s.set_defaults(func=cmd_web, usage_error=s.error)
