"""`eval run --ray` on a private Ray cluster of this machine, with the scripted loopback model on two
servers: each episode recorded once, the summary equal to a local run's, a killed worker's episode
redone (or, past its retries, recorded as crashed and redone by the next run), resumable, and a
clear error for a cluster that is not there."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray")

from loopback import Fault, LoopbackServer, Say  # noqa: E402
from scripted_runs import FIX, scripted  # noqa: E402

from sieve.agent.runner import Question  # noqa: E402
from sieve.cli.main import main  # noqa: E402
from sieve.errors import extra_hint  # noqa: E402
from sieve.index.cluster import connect  # noqa: E402
from sieve.eval.distributed import EpisodeSetup, run_all_ray  # noqa: E402
from sieve.eval.run import run_collection  # noqa: E402

ASKED = {"q1": "Who built Fort Santiago?", "q2": "Which city has Intramuros?", "q4": "Who built the Fort Santiago citadel?",
         "q5": "Which city holds Intramuros?", "q6": "Who really built Fort Santiago?", "q7": "Which city keeps Intramuros?"}
GOLD = {"q1": ["Miguel López de Legazpi"], "q2": ["Manila"], "q4": ["Miguel López de Legazpi"], "q5": ["Manila"], "q6": ["Someone else"],
        "q7": ["Manila"]}


@pytest.fixture(scope="module")
def cluster() -> Any:
    os.environ.setdefault("SIEVE_RAY_CPUS", "2")
    return connect("local")


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The eval fixture's corpus with six questions (the scripted model gets two right)."""
    root = tmp_path_factory.mktemp("ray") / "beir"
    root.mkdir()
    shutil.copy(FIX / "corpus.jsonl", root / "corpus.jsonl")
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t, "answers": GOLD[q]}) + "\n" for q, t in ASKED.items()))
    (root / "qrels").mkdir()
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{'d1' if 'Fort' in t else 'd2'}\t1\n" for q, t in ASKED.items()))
    return root


@pytest.fixture(scope="module")
def local_summary(collection: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A local run of the collection (threads, two servers): what every Ray run must equal."""
    with LoopbackServer(scripted) as a, LoopbackServer(scripted) as b:
        return run_collection(collection, tmp_path_factory.mktemp("local") / "run", "sieve", "bm25", [a.url, b.url], "scripted", native=False,
                              progress=False, workers=2)


def lines(run: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()]


def questions_of(srv: LoopbackServer) -> list[str]:
    """The question of each request the server got (the user message)."""
    return [str(r["messages"][1]["content"]) for r in srv.requests]


def client_pid(client_port: int, server_port: int) -> int:
    """The process holding the TCP socket 127.0.0.1:client_port -> server_port (/proc/net/tcp, then fds)."""
    inodes = set()
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = row.split()
        if int(f[1].rsplit(":", 1)[1], 16) == client_port and int(f[2].rsplit(":", 1)[1], 16) == server_port:
            inodes.add(f"socket:[{f[9]}]")
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            if os.readlink(fd) in inodes:
                return int(fd.parts[2])
        except OSError:
            continue  # a process or descriptor gone meanwhile
    raise AssertionError(f"no process holds 127.0.0.1:{client_port}")


class Killer:
    """A scripted server that, on the first request for `question`, SIGKILLs the Ray worker asking
    (found by the client's port) and drops the connection; every later request is answered as usual."""

    def __init__(self, question: str) -> None:
        self.question = question
        self.killed: list[int] = []
        self._port = threading.local()
        self.srv = LoopbackServer(self.policy)
        base, port = self.srv.httpd.RequestHandlerClass, self._port

        class Tagged(base):  # type: ignore[misc,valid-type]
            def do_POST(self) -> None:
                port.value = self.client_address[1]
                super().do_POST()

        self.srv.httpd.RequestHandlerClass = Tagged

    def policy(self, body: dict[str, Any]) -> Say | Fault:
        if body["messages"][1]["content"] != self.question or self.killed:
            return scripted(body)
        pid = client_pid(self._port.value, self.srv.httpd.server_address[1])
        assert pid != os.getpid()  # a worker, never the driver
        os.kill(pid, signal.SIGKILL)
        self.killed.append(pid)
        while alive(pid):
            time.sleep(0.01)
        return Fault(drop=True)


def alive(pid: int) -> bool:
    """The process runs (gone, or a zombie its parent has not reaped yet, is not alive)."""
    try:
        return "State:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


def test_a_ray_run_equals_a_local_run(cluster: Any, collection: Path, local_summary: dict[str, Any], tmp_path: Path) -> None:
    with LoopbackServer(scripted) as a, LoopbackServer(scripted) as b:
        s = run_collection(collection, tmp_path / "run", "sieve", "bm25", [a.url, b.url], "scripted", native=False, progress=False, ray="local")
        order = list(ASKED.values())  # the i-th episode asks the (i mod 2)-th server, as a local run does
        assert set(questions_of(a)) == set(order[0::2]) and set(questions_of(b)) == set(order[1::2])
    recs = lines(tmp_path / "run")
    assert sorted(r["question_id"] for r in recs) == sorted(ASKED) and not any(r["crashed"] for r in recs)
    assert s == local_summary and json.loads((tmp_path / "run" / "summary.json").read_text()) == local_summary
    assert s["accuracy"] == pytest.approx(2 / 6, abs=1e-4)  # q1 and q4


def test_a_killed_workers_episode_is_redone(cluster: Any, collection: Path, local_summary: dict[str, Any], tmp_path: Path) -> None:
    killer = Killer(ASKED["q4"])
    with killer.srv as a, LoopbackServer(scripted) as b:
        s = run_collection(collection, tmp_path / "run", "sieve", "bm25", [a.url, b.url], "scripted", native=False, progress=False, ray="local",
                           workers=2)
    assert len(killer.killed) == 1
    recs = lines(tmp_path / "run")
    assert sorted(r["question_id"] for r in recs) == sorted(ASKED) and not any(r["crashed"] for r in recs)
    assert s == local_summary


def setup_of(collection: Path) -> EpisodeSetup:
    """The settings run_collection gives the workers for `sieve` with BM25 and text tool calls."""
    from sieve.agent.loop import Budgets

    tools = {"ranker": "bm25", "k": 5, "read_cap": 12_000, "k_max": 5, "read_parts": False, "fallback": True, "snippet": None, "diagnose": True,
             "files": collection / "sieve-index" / "dci"}
    return EpisodeSetup("scripted", str(collection / "sieve-index" / "structured"), "sieve", tools,
                        {"native_tools": False, "budgets": Budgets(), "ranker": "bm25"})


def test_past_its_retries_an_episode_is_crashed_and_the_next_run_redoes_only_it(cluster: Any, collection: Path, local_summary: dict[str, Any],
                                                                                  tmp_path: Path) -> None:
    out = tmp_path / "trajectories.jsonl"
    asked = [Question(q, t) for q, t in ASKED.items()]
    killer = Killer(ASKED["q2"])
    seen: list[str] = []
    with killer.srv as a:
        done = run_all_ray(asked, [a.url], setup_of(collection), out, "local", workers=2, retries=0, on_episode=lambda ep: seen.append(ep.question_id))
    assert len(killer.killed) == 1 and sorted(seen) == sorted(ASKED)
    assert [q for q, r in done.items() if r["crashed"]] == ["q2"] and "WorkerCrashedError" in done["q2"]["reason"], done["q2"]["reason"]
    with LoopbackServer(scripted) as a:
        done = run_all_ray(asked, [a.url], setup_of(collection), out, "local")
        assert set(questions_of(a)) == {ASKED["q2"]}
    assert not any(r["crashed"] for r in done.values())
    assert done["q2"]["answer"] == "Quezon City" and done["q1"]["answer"] == "Miguel López de Legazpi"
    with LoopbackServer(scripted) as a:  # a finished run: nothing more to do
        again = run_all_ray(asked, [a.url], setup_of(collection), out, "local")
        assert a.requests == []
    assert again == done and len(lines(tmp_path)) == len(ASKED) + 1  # the crashed line, superseded by its redo


def test_no_more_episodes_in_flight_than_workers(cluster: Any, collection: Path, tmp_path: Path) -> None:
    """One at a time: the server sees each episode's requests together, never two episodes interleaved."""
    asked = [Question(q, t) for q, t in ASKED.items()]

    def slow(body: dict[str, Any]) -> Say | Fault:  # time for a second episode to come in, were it sent
        time.sleep(0.05)
        return scripted(body)

    with LoopbackServer(slow) as a:
        run_all_ray(asked, [a.url], setup_of(collection), tmp_path / "trajectories.jsonl", "local", workers=1)
    blocks = [q for i, q in enumerate(questions_of(a)) if i == 0 or q != questions_of(a)[i - 1]]
    assert sorted(blocks) == sorted(ASKED.values())


def test_the_cli_runs_and_grids_on_ray(cluster: Any, collection: Path, local_summary: dict[str, Any], tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer(scripted) as a, LoopbackServer(scripted) as b:
        common = ["--collection", str(collection), "--llm-url", a.url, "--llm-url", b.url, "--model", "scripted", "--tool-style", "text", "--ray", "local",
                  "--json"]
        assert main(["eval", "run", "--out", str(tmp_path / "run"), *common]) == 0
        assert main(["eval", "grid", "--out", str(tmp_path / "grid"), "--conditions", "sieve", "--rankers", "bm25", "--no-report", *common]) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == local_summary
    assert json.loads((tmp_path / "grid" / "sieve-bm25" / "summary.json").read_text()) == {**local_summary, "name": "sieve-bm25"}


def test_no_cluster_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["eval", "run", "--collection", str(tmp_path), "--out", str(tmp_path / "run"), "--llm-url", "http://127.0.0.1:9/v1", "--model", "m"]
    # A fresh process (this one may have joined a cluster): nothing listens on port 1.
    done = subprocess.run([sys.executable, "-m", "sieve", *argv, "--ray", "127.0.0.1:1"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr.startswith("sieve: cannot reach the Ray cluster at 127.0.0.1:1") and "Traceback" not in done.stderr, done.stderr
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets where the extra is not installed
    assert main([*argv, "--ray", "local"]) == 1
    assert capsys.readouterr().err == f"sieve: Ray is not installed: {extra_hint('ray')}\n"
