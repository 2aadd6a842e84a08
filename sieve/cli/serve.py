"""The `sieve serve` command."""

from __future__ import annotations

import argparse
import json
import sys

from sieve.cli.common import RANKER_HELP
from sieve.engine.rank.rankers import DENSE_RANKERS, RANKER_NAMES
from sieve.index.cluster import ADDRESS_HELP
from sieve.serve.hosts import add_arguments
from sieve.serve.service import SERVED_TOOLS, ServeLimits

_LIMITS = ServeLimits()


def cmd_serve(args: argparse.Namespace) -> int:
    from sieve.errors import SieveError, extra_hint
    from sieve.serve.hosts import HostPolicy, bind_problem, exposure
    from sieve.serve.service import Service
    from sieve.tools.toolset import ToolConfig

    if not args.http and (args.allow_host or args.allow_remote):
        args.usage_error(
            "--allow-host and --allow-remote apply to --http (stdio is one client's pipe)"
        )
    problem = bind_problem(args.host, args.allow_remote) if args.http else None
    if problem:
        args.usage_error(problem)
    limits = ServeLimits(
        k_max=args.k_max,
        max_sections=args.max_sections,
        max_query_chars=args.max_query_chars,
        max_phrase_words=args.max_phrase_words,
        call_seconds=args.call_seconds,
        workers=args.workers,
        max_sessions=args.max_sessions,
        session_idle_seconds=args.session_idle_seconds,
    )
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    if args.ray and args.ranker != "bm25":
        from sieve.errors import InvalidArgumentError

        raise InvalidArgumentError(f"indexes served by Ray rank with bm25 only, not {args.ranker}")
    service = Service.open(
        args.indexes,
        ray=args.ray,
        tools=tools,
        limits=limits,
        config=ToolConfig(ranker=args.ranker),
    )
    if args.ranker in DENSE_RANKERS:
        for index in service.indexes.values():
            index.use_dense()
    try:  # after the arguments are known good: the SDK takes a second to import
        import anyio

        from sieve.serve.mcp_server import serve_http, serve_stdio
    except ImportError as e:
        raise SieveError(
            f"sieve serve needs the serve extra (the MCP SDK; {e.name} is missing): "
            + extra_hint("serve")
        ) from None
    from sieve import __version__

    names = ", ".join(service.indexes)
    url = (
        f"http://{'[' + args.host + ']' if ':' in args.host else args.host}:{args.port}/mcp"
        if args.http
        else None
    )
    policy = HostPolicy.of(args.host, args.allow_host)
    exposed = (
        exposure(
            args.host,
            args.port,
            f"call the tools {', '.join(service.tool_names)} on {names}",
            policy,
        )
        if url
        else None
    )

    def announce() -> None:  # always on stderr: over stdio, stdout carries the protocol
        if args.json:
            info: dict[str, object] = {
                "indexes": {n: str(i.path) for n, i in service.indexes.items()},
                "transport": "http" if url else "stdio",
                "url": url,
                "tools": list(service.tool_names),
            }
            if url:
                info |= {
                    "hosts": list(policy.names),
                    "max_sessions": limits.max_sessions,
                    "exposed": exposed,
                }
            print(json.dumps(info), file=sys.stderr, flush=True)
        else:
            print(
                f"sieve serve: {names} "
                + (f"at {url} (streamable HTTP; Ctrl-C stops)" if url else "over stdio"),
                file=sys.stderr,
                flush=True,
            )
            if exposed:
                print(f"sieve serve: {exposed}", file=sys.stderr, flush=True)

    if url:
        serve_http(service, args.host, args.port, __version__, ready=announce, hosts=policy)
    else:
        announce()
        anyio.run(serve_stdio, service, __version__)
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser(
        "serve",
        help="serve indexes' search/fetch tools to any MCP client (stdio, or streamable HTTP)",
        description=(
            "Serve the search-inspect-fetch tools of one or "
            "more indexes over the Model Context Protocol."
        ),
    )
    s.add_argument(
        "indexes",
        nargs="+",
        metavar="INDEX",
        help="an index folder, or NAME=FOLDER to name it (names must differ)",
    )
    s.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    add_arguments(s, 8765, note="with --http: ")
    s.add_argument(
        "--tools",
        default=",".join(SERVED_TOOLS),
        help=f"comma-separated (default {','.join(SERVED_TOOLS)}; also ranked_search)",
    )
    s.add_argument("--ranker", default="bm25", choices=RANKER_NAMES, help=RANKER_HELP)
    s.add_argument(
        "--k-max",
        type=int,
        default=_LIMITS.k_max,
        help=f"most results per search (default {_LIMITS.k_max})",
    )
    s.add_argument(
        "--max-sections",
        type=int,
        default=_LIMITS.max_sections,
        help=f"most sections per fetch (default {_LIMITS.max_sections})",
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
        default=_LIMITS.max_phrase_words,
        help=f"most words in one phrase (default {_LIMITS.max_phrase_words})",
    )
    s.add_argument(
        "--call-seconds",
        type=float,
        default=_LIMITS.call_seconds,
        help=f"time limit per call (default {_LIMITS.call_seconds:g})",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=_LIMITS.workers,
        help=f"calls computed at once (default {_LIMITS.workers})",
    )
    s.add_argument(
        "--max-sessions",
        type=int,
        default=_LIMITS.max_sessions,
        help="with --http: sessions open at once; one more is refused with HTTP 503 and a message "
        f"(default {_LIMITS.max_sessions})",
    )
    s.add_argument(
        "--session-idle-seconds",
        type=float,
        default=_LIMITS.session_idle_seconds,
        help="with --http: a session with no request for this long is closed (default "
        f"{_LIMITS.session_idle_seconds:g})",
    )
    s.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="sharded indexes answered by their shards' actors "
        f"on this Ray cluster (bm25 only). {ADDRESS_HELP}",
    )
    s.add_argument(
        "--json", action="store_true", help="announce the server as one JSON line on stderr"
    )
    s.set_defaults(func=cmd_serve, usage_error=s.error)
