"""Agent runs lose nothing: hundreds of scripted episodes against a loopback server that injects
faults (context-length 400s, 429, 503, timeouts, dropped connections, malformed tool-call JSON).
No unhandled exception, every episode recorded exactly once with its outcome, and a run killed
mid-way resumes to the same summary as an uninterrupted one."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))  # also for the runner subprocess
from loopback import Fault, LoopbackServer, Say  # noqa: E402

import sieve  # noqa: E402
from sieve.tools.shell.episode import make_tools  # noqa: E402
from sieve.agent.llm import ChatClient  # noqa: E402
from sieve.agent.loop import FINAL_NUDGE, Agent, Budgets  # noqa: E402
from sieve.agent.runner import Question, recorded, run_all  # noqa: E402
from sieve.corpus.demo import stdlib_documents  # noqa: E402

EPISODES = 200
MODULES = ["json", "gzip", "zipfile", "csv", "smtplib", "socket", "random", "math", "uuid", "wave"]
CONTEXT_ERROR = '{"message": "This model\'s maximum context length is 4096 tokens. However, you requested 9000 tokens."}'


class FaultyResearcher:
    """Searches a module by title, fetches its intro, answers with the first word read.

    Outcome-changing faults (context length, malformed JSON, no call) depend only on the question and
    the conversation length, so they replay identically after a resume; transient faults (429, 503,
    timeouts, drops) strike at most twice in a row for one request and are retried away."""

    def __init__(self) -> None:
        self.attempts: dict[tuple[str, int], int] = {}

    def __call__(self, body: dict[str, Any]) -> Say | Fault:
        texts = [str(m.get("content") or "") for m in body["messages"]]
        q, n = texts[1], len(texts)
        rng = random.Random(f"{q}|{n}")
        a = self.attempts[(q, n)] = self.attempts.get((q, n), 0) + 1
        transient = rng.choice([None] * 6 + [Fault(status=429), Fault(status=503), Fault(drop=True), Fault(delay=0.4)])
        if transient is not None and a <= rng.randint(1, 2):
            return transient
        seen = "\n".join(texts[2:])
        module = q.split()[-1].rstrip("?")
        if FINAL_NUDGE in seen:
            return Say("<answer>unknown</answer>")
        if "§ (intro)\n" in seen:
            if rng.random() < 0.15 and "[result removed" not in seen:
                return Fault(status=400, body=CONTEXT_ERROR)
            word = seen.split("§ (intro)\n", 1)[1].split()[0]
            return Say(f"<answer>{word}</answer>")
        if "[1]" in seen and "fetch" not in texts[-2]:
            return Say('<tool_call>{"name": "fetch", "arguments": {"sections": [{"doc": 1, "section": "(intro)"}]}}</tool_call>')
        r = rng.random()
        if r < 0.1:
            return Say('<tool_call>{"name": "search", "arguments": {"query": "' + module + '[title]')  # truncated
        if r < 0.15 and n == 2:
            return Say("hmm")  # no call at all
        return Say(json.dumps({"name": "search", "arguments": {"query": f"{module}[title]"}}).join(["<tool_call>", "</tool_call>"]))


def questions() -> list[Question]:
    return [Question(f"q{i:03d}", f"Question {i}: what is the first word of the documentation of {MODULES[i % len(MODULES)]}?") for i in range(EPISODES)]


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("faults") / "idx"
    sieve.build_index([d for d in stdlib_documents() if d["id"] in MODULES], path)
    return path


def agents(url: str) -> list[Agent]:
    client = ChatClient(url, "scripted", timeout=0.25, backoff=0.01, max_backoff=0.05, max_retries=4)
    return [Agent(client, native_tools=False, budgets=Budgets(max_steps=8))]


def summary(records: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {q: (r["outcome"], r["answer"], r["tokens"], r["llm_calls"], r["tool_calls_by_kind"]) for q, r in sorted(records.items())}


RUNNER = """
import sys
sys.path.insert(0, {tests!r})
from test_agent_faults import agents, questions
import sieve
from sieve.tools.shell.episode import make_tools
from sieve.agent.runner import run_all
from pathlib import Path
index = sieve.open_index({index!r})
run_all(questions(), agents({url!r}), lambda: make_tools(index, "sieve"), Path({out!r}), workers=2)
"""


@pytest.mark.slow
def test_faults_kill_and_resume(index_path: Path, tmp_path: Path) -> None:
    index = sieve.open_index(index_path)
    with LoopbackServer(FaultyResearcher()) as srv:
        whole = run_all(questions(), agents(srv.url), lambda: make_tools(index, "sieve"), tmp_path / "whole.jsonl", workers=2)
    assert len(whole) == EPISODES
    lines = (tmp_path / "whole.jsonl").read_text().splitlines()
    assert len(lines) == EPISODES  # each exactly once
    outcomes = {r["outcome"] for r in whole.values()}
    assert outcomes <= {"answered", "recovered", "failed"}
    assert all(r["outcome"] == "answered" for r in whole.values()), {q: r["reason"] for q, r in whole.items() if r["outcome"] != "answered"}
    reasons = {r["reason"] for r in whole.values()}
    assert "context length" in reasons  # the 400s took the final-answer path
    assert any(c["attempts"] > 1 for r in whole.values() for c in r["calls"])  # retries happened, bounded

    out = tmp_path / "killed.jsonl"
    with LoopbackServer(FaultyResearcher()) as srv:
        code = RUNNER.format(tests=str(Path(__file__).parent), index=str(index_path), url=srv.url, out=str(out))
        proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
        deadline = time.time() + 60
        while time.time() < deadline and (not out.exists() or len(out.read_bytes().splitlines()) < EPISODES // 3):
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        partial = len(recorded(out))
        assert 0 < partial < EPISODES
        resumed = run_all(questions(), agents(srv.url), lambda: make_tools(index, "sieve"), out, workers=2)
    assert len(out.read_text().splitlines()) == EPISODES
    assert summary(resumed) == summary(whole)
