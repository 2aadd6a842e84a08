"""Who may reach an HTTP server of sieve (`sieve serve --http`, `sieve web`): where it listens, and
which Host and Origin headers it answers.

Both servers listen on loopback unless `--allow-remote` lets `--host` name another address, and
then say on start what anyone who can reach that address gets. Loopback alone does not keep web
pages out: by DNS rebinding a page at http://evil.example:8000 can have its own name resolve to
127.0.0.1 and read this server's answers as its own, and any page can send a form to it. The
browser still names the page in the request (`Host: evil.example:8000`, `Origin:
http://evil.example:8000`), so a request is answered only when its Host is one of the server's
names (the loopback names, the address it was bound to, and each `--allow-host`), and a request
that carries an Origin only when that origin is on one of those names too (421 and 403 otherwise).
"""

from __future__ import annotations

import argparse
import contextlib
import html
import ipaddress
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
# A Host header or an --allow-host value: a DNS name or IPv4 address, or an IPv6 address in
# brackets, then an optional port.
_HOST = re.compile(
    r"(?P<name>\[[0-9a-f:.]+\]|[a-z0-9](?:[a-z0-9.-]{0,252}[a-z0-9])?)(?::(?P<port>[0-9]{1,5}))?",
    re.IGNORECASE,
)
_WILDCARDS = ("0.0.0.0", "::", "[::]", "")

Asgi = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[MutableMapping[str, Any]]],
        Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]


def is_loopback(address: str) -> bool:
    """Whether listening on `address` keeps the server to this machine."""
    if address.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False


def _split(value: str) -> tuple[str, int | None] | None:
    """(name, port) of a Host header or --allow-host value, the name lower-cased; None if
    malformed."""
    m = _HOST.fullmatch(value)
    if m is None:
        return None
    port = int(m["port"]) if m["port"] is not None else None
    if port is not None and not 0 < port < 65536:
        return None
    return m["name"].lower(), port


def allowed_host(value: str) -> str:
    """An `--allow-host` value, checked and normalised: NAME or NAME:PORT (an IPv6 address in
    brackets or bare). A usage error (argparse's, exit 2) for anything else."""
    text = value.strip()
    if text.count(":") > 1 and not text.startswith("["):
        text = f"[{text}]"  # a bare IPv6 address, written as Host headers carry it
    parsed = _split(text)
    if parsed is None:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a host name: give NAME or NAME:PORT as clients send it in the "
            "Host header (e.g. search.example.org, 192.168.1.5:8000, [fe80::1])"
        )
    name, port = parsed
    return name if port is None else f"{name}:{port}"


@dataclass(frozen=True)
class HostPolicy:
    """The Host names a server answers to; each is NAME (any port) or NAME:PORT."""

    names: tuple[str, ...] = LOOPBACK_NAMES

    @classmethod
    def of(cls, bound: str, allowed: Iterable[str] = ()) -> HostPolicy:
        """The loopback names, the address the server is bound to (unless a wildcard such as
        0.0.0.0: a page that reaches it through a name must be allowed by name), and `allowed`."""
        names = list(LOOPBACK_NAMES)
        if bound not in _WILDCARDS:
            # an address no Host header can carry (an IPv6 zone) is left out: allow its names with
            # --allow-host
            with contextlib.suppress(argparse.ArgumentTypeError):
                names.append(allowed_host(bound))
        names += [allowed_host(a) for a in allowed]
        return cls(tuple(dict.fromkeys(names)))

    def admits(self, host: str | None) -> bool:
        """Whether a request whose Host header is `host` is addressed to this server."""
        parsed = _split(host.strip()) if host else None
        if parsed is None:
            return False
        name, port = parsed
        return name in self.names or (port is not None and f"{name}:{port}" in self.names)

    def admits_origin(self, origin: str) -> bool:
        """Whether a page at `origin` (an Origin header) is one of this server's own."""
        try:
            parts = urlsplit(origin.strip())
        except ValueError:
            return False
        if (
            parts.scheme not in ("http", "https")
            or parts.path
            or parts.query
            or parts.fragment
            or "@" in parts.netloc
        ):
            return False
        return self.admits(parts.netloc)

    def refusal(self, headers: Iterable[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        """(status, message) when the request's Host or Origin is not this server's; None to serve
        it."""
        seen: dict[bytes, list[str]] = {}
        for key, value in headers:
            seen.setdefault(key.lower(), []).append(value.decode("latin-1"))
        hosts = seen.get(b"host", [])
        allowed = (
            "its loopback names (localhost, 127.0.0.1, "
            "[::1]) and the names allowed with --allow-host"
        )
        if len(hosts) != 1 or not self.admits(hosts[0]):
            got = (
                f"the host {hosts[0][:100]!r}"
                if len(hosts) == 1
                else ("no Host header" if not hosts else "several Host headers")
            )
            return 421, f"refused: this request names {got}; this server answers only to {allowed}"
        for origin in seen.get(b"origin", []):
            if not self.admits_origin(origin):
                return (
                    403,
                    f"refused: a cross-origin request from the page at {origin[:100]!r}; this "
                    f"server answers pages on {allowed} only",
                )
        return None


def guarded(app: Asgi, policy: HostPolicy, page: Callable[[int, str], tuple[str, bytes]]) -> Asgi:
    """ASGI middleware: every HTTP request whose Host or Origin `policy` refuses is answered by
    `page(status, message)` -> (content type, body), and never reaches `app`."""

    async def wrapped(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") in ("http", "websocket"):
            refused = policy.refusal(scope.get("headers") or [])
            if refused is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                ctype, body = page(*refused)
                await send(
                    {
                        "type": "http.response.start",
                        "status": refused[0],
                        "headers": [
                            (b"content-type", ctype.encode()),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return wrapped


def json_rpc_page(status: int, message: str) -> tuple[str, bytes]:
    """A refusal as MCP clients read one: a JSON-RPC error with no id."""
    return "application/json", json.dumps(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}
    ).encode()


def html_page(status: int, message: str) -> tuple[str, bytes]:
    """A refusal for a browser: the message alone (a refused page learns nothing about the
    server)."""
    body = (
        '<!doctype html><html lang="en"><head><meta '
        f'charset="utf-8"><title>{status}</title></head><body><p '
        f'id="error">{html.escape(message)}</p></body></html>'
    )
    return "text/html; charset=utf-8", body.encode()


# ----------------------------------------------------------------
# the command line, for both servers


def _address(value: str) -> str:
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    parsed = _split(value)
    if parsed is None or parsed[1] is not None:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an address to listen on: give "
            "an IP address or a host name, without a port"
        )
    return value


def _port(value: str) -> int:
    if not (value.isascii() and value.isdigit() and 0 < int(value) < 65536):
        raise argparse.ArgumentTypeError(f"{value!r} is not a port: give a number from 1 to 65535")
    return int(value)


def add_arguments(parser: argparse.ArgumentParser, port: int, note: str = "") -> None:
    """--host, --port, --allow-host and --allow-remote, the same for every server."""
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        type=_address,
        help=f"{note}address to listen on (default 127.0.0.1: this machine only; "
        "an address other than loopback needs --allow-remote)",
    )
    parser.add_argument("--port", type=_port, default=port, help=f"{note}default {port}")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        type=allowed_host,
        metavar="NAME",
        help=f"{note}also answer requests addressed to NAME or NAME:PORT (the "
        "Host header clients send); repeatable. Other names than localhost, "
        "127.0.0.1, [::1] and the --host address are refused (421), and so "
        "are pages from other origins (403): a web page cannot use the server",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help=f"{note}let --host be an address other than loopback: anyone who can reach it "
        "can use the server, with no password (use a firewall or a proxy that authenticates)",
    )


def bind_problem(host: str, allow_remote: bool) -> str | None:
    """Why the server may not listen on `host` (a usage error), or None."""
    if is_loopback(host) or allow_remote:
        return None
    return (
        f"--host {host} is not a loopback address: anyone who can reach "
        "it could use this server; add --allow-remote to listen there "
        "anyway (and --allow-host NAME for each name clients will use)"
    )


def exposure(host: str, port: int, what: str, policy: HostPolicy) -> str | None:
    """The line a server prints on start when it listens beyond this machine; None on loopback."""
    if is_loopback(host):
        return None
    where = "every network interface of this machine" if host in _WILDCARDS else host
    return (
        f"exposed: listening on {host}:{port} ({where}); anyone who can reach it can "
        f"{what}, with no password. It answers to the Host names {', '.join(policy.names)}"
    )
