"""MCP server benchmark: calls per second for `search` and `fetch` over streamable HTTP on the man-page
corpus, with 1 and 8 concurrent clients, beside the same calls made in-process (no protocol).

    python -m benchmarks.bench_serve                 # 1 and 8 clients, 400 calls per phase
    python -m benchmarks.bench_serve --clients 1 4 8 --calls 1000 --era auto

Builds benchmarks/work/man-pages.sieve once (as bench_reading.py does), starts a real
`sieve serve man=INDEX --http` process on loopback and drives it with the MCP SDK's own client
(handshake era, so each client has a session), and with plain JSON-RPC POSTs from stdlib threads
("raw": the server's own capacity, without the SDK client's cost). The clients share one process and the machine's
cores with the server, as an agent harness on the same box would: the numbers are the whole
loop's, client included. Queries: two or three quoted words of a random section (seeded). A fetch
reads the first listed hit's section the snippet came from, by document id. Prints a table and
writes benchmarks/results/serve.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from benchmarks.bench_reading import CORPUS, INDEX, queries

import sieve
from sieve.tools.cards import hit_snippet
from sieve.tools.fetch.sections import label
from sieve.tools.fetch.snippets import Matcher
from sieve.serve.service import Service

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "serve.json"


def fetch_calls(index: sieve.Index, qs: list[str]) -> list[dict[str, Any]]:
    """For each query, the fetch an agent makes next: the top hit's pointed section, by id."""
    out = []
    for q in qs:
        r = index.search(q, k=1)
        if not r.hits:
            continue
        h = r.hits[0]
        doc = index.document(h.doc_id)
        snip = hit_snippet(index, h, doc.headings, Matcher.of(r))
        out.append({"sections": [{"doc": h.doc_id, "section": label(doc, snip.section if snip else 0)}]})
    return out


def start_server(workers: int) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen([sys.executable, "-m", "sieve.cli.main", "serve", f"man={INDEX}", "--http", "--port", str(port), "--workers", str(workers)],
                            stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("sieve serve did not start")


async def drive(url: str, mode: str, clients: int, calls: list[tuple[str, dict[str, Any]]]) -> tuple[float, list[float], int]:
    """Spread `calls` over `clients` sessions running at once; (seconds, per-call latencies, errors)."""
    from mcp import Client

    latencies: list[float] = []
    errors = 0

    async def client(share: list[tuple[str, dict[str, Any]]]) -> None:
        nonlocal errors
        async with Client(url, mode=mode) as c:
            for name, args in share:
                t0 = time.perf_counter()
                r = await c.call_tool(name, args)
                latencies.append(time.perf_counter() - t0)
                errors += bool(r.is_error)

    shares = [calls[i::clients] for i in range(clients)]
    t0 = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for share in shares:
            tg.start_soon(client, share)
    return time.perf_counter() - t0, latencies, errors


def raw_client(url: str, clients: int, calls: list[tuple[str, dict[str, Any]]]) -> tuple[float, list[float], int]:
    """The same calls as plain JSON-RPC POSTs (stdlib urllib, one thread and session per client):
    what the server itself sustains, without the SDK client's own cost."""
    import threading
    import urllib.request

    head = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(body: dict[str, Any], sid: str | None) -> tuple[str | None, dict[str, Any] | None]:
        h = dict(head, **({"mcp-session-id": sid, "mcp-protocol-version": "2025-11-25"} if sid else {}))
        with urllib.request.urlopen(urllib.request.Request(url, json.dumps(body).encode(), h)) as r:
            raw = r.read()
            return r.headers.get("mcp-session-id"), json.loads(raw) if raw else None

    latencies: list[float] = []
    errors = [0]

    def client(share: list[tuple[str, dict[str, Any]]]) -> None:
        sid, _ = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}, None)
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid)
        for i, (name, args) in enumerate(share, 1):
            t0 = time.perf_counter()
            _, reply = post({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}}, sid)
            latencies.append(time.perf_counter() - t0)
            errors[0] += bool(reply is None or "error" in reply or reply["result"].get("isError"))

    threads = [threading.Thread(target=client, args=(calls[i::clients],)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, latencies, errors[0]


def in_process(service: Service, calls: list[tuple[str, dict[str, Any]]]) -> tuple[float, list[float]]:
    session = service.new_session()
    lat = []
    t0 = time.perf_counter()
    for name, args in calls:
        t1 = time.perf_counter()
        r = service.call(session, name, args)
        lat.append(time.perf_counter() - t1)
        assert r.ok, r.text[:200]
    return time.perf_counter() - t0, lat


def row(what: str, clients: int | str, seconds: float, lat: list[float], errors: int = 0) -> dict[str, Any]:
    a = np.asarray(lat) * 1000
    return {"tool": what, "clients": clients, "calls": len(lat), "seconds": round(seconds, 3), "calls_per_s": round(len(lat) / seconds, 1),
            "p50_ms": round(float(np.median(a)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2), "errors": errors}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--calls", type=int, default=400, help="calls per phase (default 400)")
    ap.add_argument("--workers", type=int, default=4, help="the server's worker threads (default 4)")
    ap.add_argument("--era", choices=["legacy", "auto"], default="legacy", help="legacy: sessions (2025-11-25); auto: 2026-07-28, stateless")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args()

    if not INDEX.exists():
        t0 = time.perf_counter()
        sieve.build_index(CORPUS, INDEX, force=True)
        print(f"built {INDEX} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    index = sieve.open_index(INDEX)
    qs = queries(index, args.calls, args.seed)
    phases = {"search": [("search", {"query": q, "k": 5}) for q in qs], "fetch": [("fetch", a) for a in fetch_calls(index, qs)]}

    rows = []
    service = Service({"man": index})
    for tool, calls in phases.items():
        in_process(service, calls[:50])  # warm the page cache and the parse cache alike for both
        seconds, lat = in_process(service, calls)
        rows.append(row(tool, "in-process", seconds, lat))

    proc, url = start_server(args.workers)
    try:
        for clients in args.clients:
            for tool, calls in phases.items():
                anyio.run(drive, url, args.era, 1, calls[:50])
                seconds, lat, errors = anyio.run(drive, url, args.era, clients, calls)
                rows.append(row(tool, clients, seconds, lat, errors))
                seconds, lat, errors = raw_client(url, clients, calls)
                rows.append(row(tool, f"{clients} raw", seconds, lat, errors))
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    print(f"sieve serve over streamable HTTP ({args.era} era), man-pages ({len(index):,} documents), server workers {args.workers}, "
          f"{os.cpu_count()} cores shared by server and clients")
    print(f"{'tool':8} {'clients':>10} {'calls':>6} {'calls/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'errors':>6}")
    for r in rows:
        print(f"{r['tool']:8} {r['clients']!s:>10} {r['calls']:>6} {r['calls_per_s']:>8.1f} {r['p50_ms']:>8.2f} {r['p95_ms']:>8.2f} {r['errors']:>6}")
    result = {"corpus": "man-pages", "documents": len(index), "era": args.era, "workers": args.workers, "cpus": os.cpu_count(),
              "python": platform.python_version(), "rows": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
