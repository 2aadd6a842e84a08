"""Faults at length: a hostile model server against the LLM client, hostile requests against `sieve serve`.

    python -m benchmarks.bench_faults                  # about a minute
    python -m benchmarks.bench_faults --rounds 20

1. Model server (--rounds per behaviour): a raw loopback server answers every chat completion with
   one broken behaviour (malformed JSON shapes, bad status lines, huge headers, cut-short bodies,
   endless and oversized bodies, a dribble slower than the deadline, 5xx) and `ChatClient.complete`
   must end in an `LLMError` with `fault=True` naming the reason, within the deadline per attempt,
   with bounded memory. Counted: attempts, outcomes, seconds, peak RSS growth.
2. MCP (`sieve serve --http` over a small index): invalid JSON-RPC ids and unknown resources, each
   must get its JSON-RPC error code (-32600 / -32002) and leave no traceback in the server's log.

Exit status 1 if any promise fails. Writes benchmarks/results/faults.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

from tests.support.loopback import RawServer, completion, http_reply  # noqa: E402

from sieve.agent.llm import ChatClient, LLMError  # noqa: E402

MSGS = [{"role": "user", "content": "hi"}]


def _endless(path: str) -> Any:
    yield b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    while True:
        yield b'{"choices": [' * 4096


GOOD = http_reply(completion({"role": "assistant", "content": "fine"}, {"prompt_tokens": 3, "completion_tokens": 1}))
BEHAVIOURS: dict[str, tuple[Any, float, str]] = {  # name: (reply, pace, reason the error must name)
    "choices not a list": (http_reply(b'{"choices": "x"}'), 0, "no choices list"),
    "content an int": (http_reply(completion({"content": 7})), 0, "content is int"),
    "deep JSON": (http_reply(b"[" * 100_000 + b"]" * 100_000), 0, "not JSON"),
    "usage 1e400": (http_reply(b'{"choices": [{"message": {"content": "a"}}], "usage": {"prompt_tokens": 1e400}}'), 0, "usage.prompt_tokens"),
    "short body": (http_reply(b"{}", length=999), 0, "cut short"),
    "bad status line": (b"HTTP/1.1 OK-ish\r\n\r\n", 0, "BadStatusLine"),
    "huge headers": (http_reply(b"{}", headers=tuple(f"X-{i}: v" for i in range(500))), 0, "more than 100 headers"),
    "closed at once": (b"", 0, "RemoteDisconnected"),
    "503": (http_reply(b"{}", status="503 Service Unavailable"), 0, "HTTP 503"),
    "200 MB reply": (http_reply(b'{"choices": "' + b"x" * (200 << 20) + b'"}'), 0, "reply larger than"),
    "endless body": (_endless, 0, "reply larger than"),
    "dribble": (None, 0.02, "no complete reply within"),
}


def model_server(rounds: int) -> tuple[dict[str, Any], list[str]]:
    table: dict[str, Any] = {}
    failures: list[str] = []
    for name, (reply, pace, reason) in BEHAVIOURS.items():
        outcomes: Counter[str] = Counter()
        worst, attempts = 0.0, 0
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(rounds):
            respond = (lambda path: (GOOD[i : i + 1] for i in range(len(GOOD)))) if reply is None else (reply if callable(reply) else (lambda path, r=reply: r))
            with RawServer(respond, pace=pace) as server:
                client = ChatClient(server.url, "m", max_retries=1, backoff=0.01, timeout=1.0, max_reply_bytes=8 << 20)
                t0 = time.monotonic()
                try:
                    client.complete(MSGS)
                    outcomes["answered (WRONG)"] += 1
                except LLMError as e:
                    ok = e.fault and reason in str(e)
                    outcomes["fault, reason named" if ok else "fault, reason WRONG"] += 1
                    if not ok:
                        failures.append(f"{name}: {e}")
                except Exception as e:  # noqa: BLE001
                    outcomes["UNEXPECTED"] += 1
                    failures.append(f"{name}: {type(e).__name__}: {e}")
                worst = max(worst, time.monotonic() - t0)
                attempts += server.requests
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
        table[name] = {"outcomes": dict(outcomes), "attempts": attempts, "worst_seconds": round(worst, 2), "rss_growth_mb": round(grown, 1)}
        if worst > 2 * 1.0 + 1.0:  # two attempts of at most 1 s each, plus backoff
            failures.append(f"{name}: a call took {worst:.1f} s")
        print(f"  {name:20} {dict(outcomes)} attempts {attempts} worst {worst:.2f} s rss +{grown:.0f} MB", file=sys.stderr)
    return table, failures


def mcp(rounds: int) -> tuple[dict[str, Any], list[str]]:
    import sieve
    from serving import start_http, stop
    from sieve.corpus.demo import stdlib_documents

    failures: list[str] = []
    outcomes: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp) / "lib"
        sieve.build_index([d for d in stdlib_documents() if d["id"] < "c"], lib)
        proc, url = start_http(f"lib={lib}")
        try:
            headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-11-25"}
            requests = [(f'{{"jsonrpc": "2.0", "id": {rid}, "method": "ping"}}', -32600) for rid in ('{"a": 1}', "1.5", "1e400", "true", "[1]")]
            for _ in range(rounds):
                for body, code in requests:
                    try:
                        with urllib.request.urlopen(urllib.request.Request(url, data=body.encode(), headers=headers), timeout=10) as resp:
                            reply = json.loads(resp.read() or b"{}")
                    except urllib.error.HTTPError as e:
                        reply = json.loads(e.read() or b"{}")
                    got = (reply.get("error") or {}).get("code")
                    outcomes["right code" if got == code else "WRONG"] += 1
                    if got != code:
                        failures.append(f"mcp: {body} -> {reply}")
            outcomes.update(_unknown_resources(url, rounds, failures))
        finally:
            stop(proc)
        log = proc.stderr.read().decode() if proc.stderr else ""
    if "Traceback" in log:
        failures.append("mcp: the server logged a traceback")
    return {"outcomes": dict(outcomes), "tracebacks_in_log": log.count("Traceback")}, failures


def _unknown_resources(url: str, rounds: int, failures: list[str]) -> Counter[str]:
    """resources/read of an unknown URI through a real MCP client session: -32002 each time."""
    import anyio
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    out: Counter[str] = Counter()

    async def main() -> None:
        async with Client(url, mode="legacy") as client:
            for _ in range(rounds):
                try:
                    await client.read_resource("sieve://nope/manual")
                    out["WRONG"] += 1
                except MCPError as e:
                    out["right code" if e.code == -32002 else "WRONG"] += 1
                    if e.code != -32002:
                        failures.append(f"mcp: unknown resource answered {e.code}: {e}")

    anyio.run(main)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "faults.json")
    args = ap.parse_args()
    print("model server:", file=sys.stderr)
    server_table, f1 = model_server(args.rounds)
    print("mcp:", file=sys.stderr)
    mcp_table, f2 = mcp(args.rounds)
    failures = f1 + f2
    print("\n| model-server behaviour | outcomes | attempts | worst s | RSS growth MB |\n|---|---|---:|---:|---:|")
    for name, row in server_table.items():
        print(f"| {name} | {row['outcomes']} | {row['attempts']} | {row['worst_seconds']} | {row['rss_growth_mb']} |")
    print(f"\nMCP: {mcp_table['outcomes']}, tracebacks in the server log: {mcp_table['tracebacks_in_log']}")
    print(f"\nfailures: {len(failures)}" + "".join(f"\n  {f}" for f in failures[:20]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"rounds": args.rounds, "model_server": server_table, "mcp": mcp_table, "failures": failures}, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
