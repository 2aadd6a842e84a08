"""The `sieve serve` command."""

from __future__ import annotations

import argparse
import json
import sys

from sieve.serve.service import SERVED_TOOLS, ServeLimits
from sieve.engine.rankers import DENSE_RANKERS, RANKER_NAMES

_LIMITS = ServeLimits()


def cmd_serve(args: argparse.Namespace) -> int:
    from sieve.tools.toolset import ToolConfig
    from sieve.errors import SieveError
    from sieve.serve.service import Service

    limits = ServeLimits(k_max=args.k_max, max_sections=args.max_sections, max_query_chars=args.max_query_chars,
                         max_phrase_words=args.max_phrase_words, call_seconds=args.call_seconds, workers=args.workers)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if args.ray and args.ranker != "bm25":
        from sieve.errors import InvalidArgumentError

        raise InvalidArgumentError(f"indexes served by Ray rank with bm25 only, not {args.ranker}")
    service = Service.open(args.indexes, ray=args.ray, tools=tools, limits=limits, config=ToolConfig(ranker=args.ranker))
    if args.ranker in DENSE_RANKERS:
        for index in service.indexes.values():
            index.use_dense()
    try:  # after the arguments are known good: the SDK takes a second to import
        import anyio

        from sieve.serve.mcp_server import serve_http, serve_stdio
    except ImportError as e:
        raise SieveError(f"sieve serve needs the MCP SDK ({e.name} is missing): pip install 'sieve-search[serve]'") from None
    from sieve import __version__

    names = ", ".join(service.indexes)
    url = f"http://{args.host}:{args.port}/mcp" if args.http else None

    def announce() -> None:  # always on stderr: over stdio, stdout carries the protocol
        if args.json:
            info = {"indexes": {n: str(i.path) for n, i in service.indexes.items()}, "transport": "http" if url else "stdio", "url": url,
                    "tools": list(service.tool_names)}
            print(json.dumps(info), file=sys.stderr, flush=True)
        else:
            print(f"sieve serve: {names} " + (f"at {url} (streamable HTTP; Ctrl-C stops)" if url else "over stdio"), file=sys.stderr, flush=True)

    if url:
        serve_http(service, args.host, args.port, __version__, ready=announce)
    else:
        announce()
        anyio.run(serve_stdio, service, __version__)
    return 0


def add_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    s = sub.add_parser("serve", help="serve indexes' search/fetch tools to any MCP client (stdio, or streamable HTTP)",
                       description="Serve the search-inspect-fetch tools of one or more indexes over the Model Context Protocol.")
    s.add_argument("indexes", nargs="+", metavar="INDEX", help="an index folder, or NAME=FOLDER to name it (names must differ)")
    s.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    s.add_argument("--host", default="127.0.0.1", help="with --http (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8765, help="with --http (default 8765)")
    s.add_argument("--tools", default=",".join(SERVED_TOOLS), help=f"comma-separated (default {','.join(SERVED_TOOLS)}; also ranked_search)")
    s.add_argument("--ranker", default="bm25", choices=RANKER_NAMES)
    s.add_argument("--k-max", type=int, default=_LIMITS.k_max, help=f"most results per search (default {_LIMITS.k_max})")
    s.add_argument("--max-sections", type=int, default=_LIMITS.max_sections, help=f"most sections per fetch (default {_LIMITS.max_sections})")
    s.add_argument("--max-query-chars", type=int, default=_LIMITS.max_query_chars, help=f"longest query (default {_LIMITS.max_query_chars:,})")
    s.add_argument("--max-phrase-words", type=int, default=_LIMITS.max_phrase_words, help=f"most words in one phrase (default {_LIMITS.max_phrase_words})")
    s.add_argument("--call-seconds", type=float, default=_LIMITS.call_seconds, help=f"time limit per call (default {_LIMITS.call_seconds:g})")
    s.add_argument("--workers", type=int, default=_LIMITS.workers, help=f"calls computed at once (default {_LIMITS.workers})")
    s.add_argument("--ray", metavar="ADDRESS", help="sharded indexes answered by their shards' actors on this Ray cluster (HOST:PORT, auto, "
                   "or local; the `ray` extra; bm25 only)")
    s.add_argument("--json", action="store_true", help="announce the server as one JSON line on stderr")
    s.set_defaults(func=cmd_serve)
