"""`sieve web` page times over real HTTP on loopback: search pages on a large index, and the run
viewer's page for a 100-step trajectory.

    python -m benchmarks.bench_web [--corpus benchmarks/data/man-sections.jsonl] [--screenshots DIR]
    python -m benchmarks.bench_web --corpus stdlib --rounds 0 \
        --screenshots benchmarks/results/web-screenshots

The index is built once under --work (man-sections: 100,016 documents). The trajectory is a real
`eval run` on the small test collection (tests/eval/fixtures/beir) against the scripted loopback
model of the test suite (tests/support/loopback.py), told never to answer: every step searches
another word until the 100-step budget ends the episode. Each page is fetched `--rounds` times after
a warm-up; medians and p95 are printed and written to results/web.json. `--corpus stdlib` is the
demo's collection (the standard library's documentation, 645 documents: seconds to build).

`--screenshots DIR` also drives the pages in headless Chromium (Debian's `chromium` and
`chromium-driver`, with selenium) and saves what a reviewer should look at: cards with a long
heading list folded and unfolded, zero-hit suggestions, a syntax error's caret, a document with its
outline beside the text (and above it on a narrow screen), rendered emphasis, a run and an episode.
`--rounds 0` takes only the screenshots.
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
STDLIB_QUERIES = ["signature", "getattr AND default", '"keyword arguments"', "walk[section]",
                  "parse* AND NOT xml", "inspect[title]", "zeppelin AND json"]
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


def _browser(width: int = 1200, height: int = 900) -> Any:
    try:
        from selenium import webdriver
    except ImportError:
        raise SystemExit("--screenshots needs selenium (pip install selenium) and Debian's "
                         "chromium and chromium-driver") from None
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        raise SystemExit("--screenshots needs Debian's chromium and chromium-driver "
                         "(apt-get install chromium chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                f"--window-size={width},{height}"):
        options.add_argument(arg)
    service = webdriver.ChromeService(executable_path=driver)
    browser = webdriver.Chrome(service=service, options=options)
    browser.implicitly_wait(5)
    return browser


def _emphasised(index: Any, queries: list[str]) -> tuple[str, int] | None:
    """A (document id, section) among the queries' top hits whose text holds Markdown emphasis."""
    from sieve.web.text import rendered

    for q in queries:
        for hit in index.search(q, k=10).hits:
            for j, section in enumerate(index.document(hit.doc_id).sections):
                if "<em>" in rendered(section.text) or "<strong>" in rendered(section.text):
                    return hit.doc_id, j
    return None


def _screenshots(base: str, index: Any, queries: list[str], qid: str, out: Path) -> None:
    """Drive the pages a person would and save each as a PNG under `out`."""
    from selenium.webdriver.common.by import By

    out.mkdir(parents=True, exist_ok=True)
    browser = _browser()
    saved = []

    def shot(name: str) -> None:
        browser.save_screenshot(str(out / f"{name}.png"))
        saved.append(name)

    def search(q: str) -> None:
        browser.get(f"{base}/search?" + urllib.parse.urlencode({"index": "man", "q": q, "k": 10}))

    try:
        def sections(q: str) -> int:
            hits = index.search(q, k=1).hits
            return len(index.document(hits[0].doc_id).sections) if hits else 0

        folded = next((q for q in queries if sections(q) > 12), queries[0])  # a card with a toggle
        search(folded)
        shot("01-results")
        toggles = browser.find_elements(By.CSS_SELECTOR, "#card-1 details.more summary")
        if toggles:
            toggles[0].click()
            shot("02-results-more-open")
        matched = (browser.find_elements(By.CSS_SELECTOR, "#card-1 li.matched a")
                   or browser.find_elements(By.CSS_SELECTOR, "#card-1 ul.headings a"))
        matched[0].click()
        shot("03-document-outline-beside")
        browser.set_window_size(500, 900)
        browser.refresh()
        shot("04-document-narrow-outline-above")
        browser.set_window_size(1200, 900)
        search(next((q for q in queries if "zeppelin" in q), "zeppelin AND " + queries[0]))
        shot("05-zero-hits-suggestions")
        search(queries[0] + "[titel] AND (")
        shot("06-syntax-error-caret")
        found = _emphasised(index, queries)
        if found:
            where = {"index": "man", "id": found[0], "section": found[1]}
            browser.get(f"{base}/doc?" + urllib.parse.urlencode(where))
            shot("07-emphasis")
        browser.get(f"{base}/run?name=run-100")
        shot("08-run")
        browser.get(f"{base}/episode?" + urllib.parse.urlencode({"run": "run-100", "q": qid}))
        shot("09-episode")
    finally:
        browser.quit()
    print(f"{len(saved)} screenshots in {out}: {', '.join(saved)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=HERE / "data" / "man-sections.jsonl")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "web")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "web.json")
    ap.add_argument("--screenshots", type=Path, metavar="DIR",
                    help="save screenshots of the pages, driven in headless Chromium, here")
    args = ap.parse_args()
    stdlib = str(args.corpus) == "stdlib"
    args.work.mkdir(parents=True, exist_ok=True)
    index_dir = args.work / ("index-stdlib" if stdlib else "index")
    if not (index_dir / "CURRENT").exists():
        if stdlib:
            from sieve.corpus.demo import stdlib_documents

            sieve.build_index(stdlib_documents(), index_dir).close()
        else:
            sieve.build_index(args.corpus, index_dir).close()
    queries = STDLIB_QUERIES if stdlib else QUERIES
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
        if args.screenshots:
            _screenshots(base, index, queries, qid, args.screenshots)
        if args.rounds:
            def timed(page: str, path: str, **params: Any) -> None:
                url = f"{base}{path}?" + urllib.parse.urlencode(params)
                rows.append({"page": page, **_time(url, args.rounds)})

            for q in queries:
                timed(f"search {q}", "/search", index="man", q=q, k=10)
            doc = index.search(queries[0], k=1).hits[0].doc_id if stdlib else "socket.2#2"
            timed("document, one section", "/doc", index="man", id=doc, section=0)
            timed(f"episode of {rec['llm_calls']} steps", "/episode", run="run-100", q=qid)
    finally:
        server.should_exit = True
    if not args.rounds:
        return 0
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
