"""Running many episodes: resumable JSON Lines of trajectories, several at once, none lost or
doubled.

Each finished episode is appended as one line (written whole, then fsynced) under a lock. On start,
the ids already recorded are skipped, except episodes that failed on a model-server fault or were
ended by an exception inside sieve (`crashed`: they are run again, and the later line wins); a last
line cut short by a crash is dropped first.
"""

from __future__ import annotations

import json
import os
import threading
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sieve.agent.episode import Episode, dump
from sieve.agent.loop import Agent, AgentTools


@dataclass(frozen=True)
class Question:
    id: str
    text: str


def recorded(path: Path) -> dict[str, dict[str, Any]]:
    """Episodes already in a trajectory file, by question id (a torn last line is removed)."""
    if not path.exists():
        return {}
    raw = path.read_bytes()
    good_end = raw.rfind(b"\n") + 1
    if good_end < len(raw):  # a crash mid-write: keep only whole lines
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    out: dict[str, dict[str, Any]] = {}
    for line in raw[:good_end].splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        out[rec["question_id"]] = rec
    return out


class TrajectoryWriter:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()

    def write(self, ep: Episode) -> None:
        line = (dump(ep) + "\n").encode()
        with self._lock, open(self.path, "ab") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def pending(questions: Iterable[Question], done: dict[str, dict[str, Any]]) -> list[Question]:
    """The questions a run still has to do: not recorded, or recorded with a server fault or a
    crash (redone; the new line supersedes the old one)."""
    return [
        q
        for q in questions
        if q.id not in done or done[q.id].get("server_fault") or done[q.id].get("crashed")
    ]


def run_all(
    questions: Iterable[Question],
    agents: list[Agent],
    make_tools: Callable[[], AgentTools],
    out: Path,
    workers: int = 1,
    on_episode: Callable[[Episode], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run every question not yet in `out`; `agents` (one per server URL) are used round-robin."""
    todo = pending(questions, recorded(out))
    writer = TrajectoryWriter(out)

    def one(i: int, q: Question) -> Episode:
        agent = agents[i % len(agents)]
        tools = make_tools()  # session state is per episode
        try:
            ep = agent.run(q.text, tools, q.id)
        except Exception as e:  # recorded, never lost: the run goes on, and says so at the end
            where = traceback.extract_tb(e.__traceback__)[-1]
            ep = Episode(
                q.id,
                q.text,
                {"model": agent.client.model, "condition": agent.condition},
                outcome="failed",
                reason=f"{type(e).__name__}: {e} (at {Path(where.filename).name}:{where.lineno})",
                crashed=True,
            )
        finally:
            close = getattr(tools, "close", None)  # a bounded DCI episode's own folder
            if close is not None:
                close()
        writer.write(ep)
        return ep

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(one, i, q) for i, q in enumerate(todo)]
        for f in as_completed(futures):
            ep = f.result()
            if on_episode is not None:
                on_episode(ep)
    return recorded(out)
