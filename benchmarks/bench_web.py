"""`sieve web` page times over real HTTP on loopback: search pages on a large index, and the run
viewer's page for a 100-step trajectory.

    python -m benchmarks.bench_web [--corpus benchmarks/data/man-sections.jsonl]

The index is built once under --work (man-sections: 100,016 documents). The trajectory is a real
`eval run` on the small test collection (tests/eval/fixtures/beir) against the scripted loopback
model of the test suite (tests/support/loopback.py), told never to answer: every step searches
another word until the 100-step budget ends the episode. Each page is fetched `--rounds` times after
a warm-up; medians and p95 are printed and written to results/web.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

import sieve  # noqa: E402
from sieve.eval.run import run_collection  # noqa: E402
from sieve.web import create_app  # noqa: E402
from sieve.web.runs import load_all  # noqa: E402

QUERIES = ["socket", "socket AND bind", '"shared memory"', "file* AND NOT directory", "printf[title]", "(read OR write) AND buffer[section]",
           "NEAR/3(signal, handler)", "pthread_mutex_lock", "mmap AND date[2020..]", "zeppelin AND socket"]
WORDS = ["Fort", "Santiago", "Manila", "Intramuros", "citadel", "history", "wall", "river", "church", "gate"]


def _never_answers(body: dict[str, Any]) -> Any:
    from tests.support.loopback import Say

    step = sum(1 for m in body["messages"] if m.get("role") == "assistant")
    query = WORDS[step % len(WORDS)] + f" OR w{step}"
    return Say(json.dumps({"name": "search", "arguments": {"query": query}}).join(["<tool_call>", "</tool_call>"]))


def _serve(app: Any) -> tuple[Any, int]:
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return server, server.servers[0].sockets[0].getsockname()[1]


def _time(url: str, rounds: int) -> dict[str, float]:
    with urllib.request.urlopen(url) as r:  # warm-up (and a check that the page works)
        assert r.status == 200, url
        size = len(r.read())
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url) as r:
            r.read()
        times.append(time.perf_counter() - t0)
    times.sort()
    return {"p50_ms": round(statistics.median(times) * 1000, 2), "p95_ms": round(times[int(0.95 * (len(times) - 1))] * 1000, 2), "bytes": size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "data" / "man-sections.jsonl")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "web")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "web.json")
    args = ap.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    index_dir = args.work / "index"
    if not (index_dir / "CURRENT").exists():
        sieve.build_index(args.corpus, index_dir).close()
    run_dir = args.work / "run-100"
    if not (run_dir / "summary.json").exists():
        from tests.support.loopback import LoopbackServer

        shutil.rmtree(run_dir, ignore_errors=True)
        beir = args.work / "beir"
        shutil.rmtree(beir, ignore_errors=True)
        shutil.copytree(ROOT / "tests" / "eval" / "fixtures" / "beir", beir)
        with LoopbackServer(_never_answers) as srv:
            run_collection(beir, run_dir, "sieve", "bm25", [srv.url], "scripted", native=False, progress=False, limit=1)
    runs = load_all([str(run_dir)])
    qid, rec = next(iter(runs["run-100"].run.records.items()))
    index = sieve.open_index(index_dir)
    server, port = _serve(create_app({"man": index}, runs=runs))
    base = f"http://127.0.0.1:{port}"
    rows = []
    try:
        for q in QUERIES:
            rows.append({"page": f"search {q}", **_time(f"{base}/search?" + urllib.parse.urlencode({"index": "man", "q": q, "k": 10}), args.rounds)})
        rows.append({"page": "document, one section", **_time(f"{base}/doc?index=man&id=socket.2%232&section=0", args.rounds)})
        rows.append({"page": f"episode of {rec['llm_calls']} steps", **_time(f"{base}/episode?" + urllib.parse.urlencode({"run": "run-100", "q": qid}), args.rounds)})
    finally:
        server.should_exit = True
    result = {"documents": len(index), "trajectory_steps": rec["llm_calls"], "rounds": args.rounds, "pages": rows}
    print(f"{len(index):,} documents; a trajectory of {rec['llm_calls']} LLM calls; {args.rounds} fetches a page over loopback HTTP\n")
    print("| page | p50 ms | p95 ms | KB |\n|---|---|---|---|")
    for r in rows:
        print(f"| `{r['page']}` | {r['p50_ms']} | {r['p95_ms']} | {r['bytes'] / 1000:.0f} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
