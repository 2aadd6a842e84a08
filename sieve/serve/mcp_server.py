"""`sieve serve`: the Service over the Model Context Protocol (the official `mcp` SDK, extra
`serve`).

Sessions. A handshake-era connection (protocol 2025-11-25 and earlier: stdio, or streamable HTTP
with an `Mcp-Session-Id`) lives across requests, so its Session is kept in the connection's own
state. In the 2026-07-28 era every request is its own exchange: over stdio the pipe still belongs
to one client, so the Session is keyed by the pipe; over HTTP nothing ties two requests together,
so each call gets a fresh Session that keeps no listing. Such a client is offered no rank: its
tool schemas take a document id (every card shows it) and its manual says so, rather than a rank
that could only be refused or answered from a stranger's list.
A streamable-HTTP session with no request in flight for `limits.session_idle_seconds` (10 minutes)
is closed; an open GET event stream counts as one in flight, so a client still connected keeps it.
At most `limits.max_sessions` are open at once: a client that would open one more gets HTTP 503
with a JSON-RPC error that says so and how room is made. A session holds its Toolsets' last
listings (at most k_max ids per index) and the SDK's transport; a request body is at most
`limits.max_request_bytes`. Requests for another Host or from another origin are refused before
anything is read (sieve.serve.hosts).

Client mistakes are JSON-RPC errors with their codes and leave no traceback in the log: an unknown
resource is -32002 (the specification's "resource not found"), a request whose id is not a string,
an integer or null is -32600 with HTTP 400 (the SDK would accept it with a 202 and never reply).

Time. Each call runs in a worker thread (at most `limits.workers` at once) and the reply is an
error text when it has not finished within `limits.call_seconds`, waiting for a worker included;
the computation runs under the engine's deadline (sieve.engine.deadline) for the same time, so an
abandoned one stops at the engine's next check and frees its worker.
The SDK's transports run on asyncio (anyio's default backend, and uvicorn's), which this uses.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from sieve.engine import deadline
from sieve.errors import DeadlineExceededError
from sieve.serve.hosts import HostPolicy, guarded, json_rpc_page
from sieve.serve.service import ServeLimits, Service, Session

MANUAL_URI = "sieve://{name}/manual"
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for resources/read of an unknown URI
INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603  # the SDK's code for a refused session


def _reply(
    status: int, code: int, message: str, headers: tuple[tuple[bytes, bytes], ...] = ()
) -> list[dict[str, Any]]:
    """The ASGI messages of a JSON-RPC error with no id."""
    body = json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    ).encode()
    return [
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        },
        {"type": "http.response.body", "body": body},
    ]


class Sessions:
    """The Session of each client connection (see the module docstring for what a connection is)."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._by_pipe: weakref.WeakKeyDictionary[Any, Session] = weakref.WeakKeyDictionary()

    def _place(self, ctx: Any) -> tuple[Any, Any] | None:
        """Where the connection of a request keeps its Session, as (store, key); None where two
        requests share nothing (stateless HTTP)."""
        # mcp 2.3 offers the request's Connection only as a private attribute of its ServerSession;
        # without it every call is treated as stateless (ids only), never as shared.
        conn = getattr(ctx.session, "_connection", None)
        if conn is None:
            return None
        if conn.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return conn.state, "sieve"
        if conn.has_standalone_channel:  # a duplex pipe (stdio): one client
            return self._by_pipe, conn.outbound
        return None

    def keeps_listing(self, ctx: Any) -> bool:
        """Whether the client of this request keeps its listing from one call to the next."""
        return self._place(ctx) is not None

    def of(self, ctx: Any) -> Session:
        place = self._place(ctx)
        if place is None:
            return self.service.new_session(keeps_listing=False)
        store, key = place
        if key not in store:
            store[key] = self.service.new_session()
        return store[key]


def _within(seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
    """Run `fn` under the engine's deadline: a call abandoned at its time limit stops at the
    engine's next check (each plan node, term, explained atom) instead of finishing unseen."""
    with deadline.within(seconds):
        return fn(*args)


def _text(text: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def build_server(service: Service, version: str = "") -> Server[Any]:
    """An MCP server (low-level API: the schemas are ours, not derived from signatures)."""
    sessions = Sessions(service)
    # Our own pool, not anyio's threads: a call abandoned
    # at its time limit keeps its worker until it
    # really ends, so abandoned work can never pile up beyond `workers` threads.
    pool = ThreadPoolExecutor(max_workers=service.limits.workers, thread_name_prefix="sieve-call")
    annotations = types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    tools = {
        keeps: [
            types.Tool(
                name=t.name,
                description=t.description,
                input_schema=t.input_schema,
                annotations=annotations,
            )
            for t in service.tools_for(keeps)
        ]
        for keeps in (True, False)
    }

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools[sessions.keeps_listing(ctx)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        session = sessions.of(ctx)
        arguments = params.arguments
        if arguments is not None and not isinstance(arguments, dict):
            return _text(f"{params.name} error: the arguments must be a JSON object", True)
        seconds = service.limits.call_seconds
        future = pool.submit(_within, seconds, service.call, session, params.name, arguments)
        try:
            result = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), seconds)
        except (TimeoutError, DeadlineExceededError):
            # The worker's own deadline can fire before this wait's timeout is handled (a loaded
            # machine): the same time limit, so the same answer, never an internal error.
            if future.cancel():  # still queued: it never ran
                return _text(
                    f"{params.name} error: the server is busy ({service.limits.workers} calls "
                    "running) and this call waited "
                    f"{seconds:g} s for its turn; try again",
                    True,
                )
            return _text(
                f"{params.name} error: the call took longer than {seconds:g} s (this "
                "server's limit per call) and was abandoned; narrow the query (fewer "
                "frequent words, fewer NEAR or prefix terms) or read fewer sections",
                True,
            )
        return _text(result.text, not result.ok)

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=MANUAL_URI.format(name=name),
                    name=f"{name} manual",
                    mime_type="text/markdown",
                    description=(
                        f"How to search and read the index {name!r}: query language, cards, fetch"
                    ),
                )
                for name in service.indexes
            ]
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        for name in service.indexes:
            if uri == MANUAL_URI.format(name=name):
                text = service.manual(name, sessions.keeps_listing(ctx))
                content = types.TextResourceContents(uri=uri, mime_type="text/markdown", text=text)
                return types.ReadResourceResult(contents=[content])
        known = ", ".join(MANUAL_URI.format(name=n) for n in service.indexes)
        # An MCPError is the client's mistake: a JSON-RPC
        # error with its code, and no traceback in the log.
        raise MCPError(
            RESOURCE_NOT_FOUND, f"no resource {uri!r}; this server has {known}", {"uri": uri}
        )

    return Server(
        "sieve",
        version=version,
        instructions=service.instructions(),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _bad_id(message: Any) -> bool:
    """JSON-RPC ids are strings, integers or null; a float, object, list or boolean is not one."""
    if not isinstance(message, dict) or "id" not in message:
        return False
    rid = message["id"]
    return not (
        rid is None or isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))
    )


async def _send_all(send: Any, messages: list[dict[str, Any]]) -> None:
    for m in messages:
        await send(m)


def checked_ids(app: Any, max_bytes: int = ServeLimits.max_request_bytes) -> Any:
    """ASGI middleware: a POST whose JSON-RPC message has an invalid id gets a JSON-RPC "Invalid
    Request" error (HTTP 400) instead of the SDK's silent 202, which would leave a client waiting
    for a reply that never comes; a body over `max_bytes` gets 413 as soon as it is seen to be (it
    is read here, before the SDK's own limit). Everything else passes through unchanged."""
    too_big = _reply(
        413,
        INVALID_REQUEST,
        f"invalid request: the body is larger than this server's limit of {max_bytes:,} bytes",
    )

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            return await app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > max_bytes:
            return await _send_all(send, too_big)
        chunks, size, more = [], 0, True
        while more:
            event = await receive()
            if event["type"] != "http.request":
                return await app(scope, receive, send)  # the client went away: let the SDK see it
            chunks.append(event.get("body", b""))
            size += len(chunks[-1])
            if size > max_bytes:
                return await _send_all(send, too_big)
            more = event.get("more_body", False)
        body = b"".join(chunks)
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            message = None  # not our concern: the SDK answers a parse error
        if any(_bad_id(m) for m in (message if isinstance(message, list) else [message])):
            return await _send_all(
                send,
                _reply(
                    400,
                    INVALID_REQUEST,
                    "invalid request: a JSON-RPC id must be a string, an integer or null",
                ),
            )
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await app(scope, replay, send)

    return wrapped


async def serve_stdio(service: Service, version: str = "") -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(service, version)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def explained_full(app: Any, limits: ServeLimits) -> Any:
    """ASGI middleware: the SDK's refusal of a session beyond `max_sessions` (its only 503, and
    only to a request that opens a session) says what the limit is and how room is made."""
    message = (
        f"this server is full: {limits.max_sessions} sessions are open, its limit "
        "(--max-sessions); try again when one "
        "closes (a client that ends sends DELETE; a session with no request for "
        f"{limits.session_idle_seconds:g} s is closed)"
    )
    full = _reply(503, INTERNAL_ERROR, message, ((b"retry-after", b"5"),))

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or any(
            k.lower() == b"mcp-session-id" for k, _ in scope.get("headers") or []
        ):
            return await app(scope, receive, send)
        refused = False

        async def told(event: dict[str, Any]) -> None:
            nonlocal refused
            if event["type"] == "http.response.start" and event["status"] == 503:
                refused = True
                return await _send_all(send, full)
            if not refused:
                await send(event)

        await app(scope, receive, told)

    return wrapped


def http_app(
    service: Service, host: str = "127.0.0.1", version: str = "", hosts: HostPolicy | None = None
) -> Any:
    """The ASGI app of streamable HTTP at /mcp (run its lifespan: uvicorn does), answering only
    `hosts`' names (default: the loopback names and `host`)."""
    from mcp.server.transport_security import TransportSecuritySettings

    limits = service.limits
    sdk = build_server(service, version).streamable_http_app(
        host=host,
        json_response=True,
        session_idle_timeout=limits.session_idle_seconds,
        max_sessions=limits.max_sessions,
        max_request_body_size=limits.max_request_bytes,
        # Host and Origin are checked before the SDK sees a request, with messages, for any --host.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return guarded(
        checked_ids(explained_full(sdk, limits), limits.max_request_bytes),
        hosts or HostPolicy.of(host),
        json_rpc_page,
    )


def serve_http(
    service: Service,
    host: str,
    port: int,
    version: str = "",
    ready: Callable[[], None] = lambda: None,
    hosts: HostPolicy | None = None,
) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp until interrupted; `ready` runs once the port is
    bound."""
    import socket

    import uvicorn

    app = http_app(service, host, version, hosts)
    # Try the address first, so that a port in use is an OSError naming it (exit 1), not uvicorn's
    # exit 3; then let uvicorn bind it as it tunes its own sockets.
    with socket.socket(
        socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM
    ) as probe:
        try:
            probe.bind((host, port))
        except OSError as e:
            raise OSError(e.errno, f"cannot listen on {host}:{port}: {e.strerror}") from None
    ready()
    # its log reaches stderr through sieve.common.terminal, which shows colour codes as text
    uvicorn.run(app, host=host, port=port, log_level="warning", use_colors=False)
