"""Evaluation episodes spread over a Ray cluster, with the guarantees of a local run
(runner.run_all).

Each Ray task runs ONE episode in a worker, which builds its own agent and tools from plain values
(`EpisodeSetup`: the index is opened by path, once per worker process). Only the driver writes
trajectories.jsonl, through the same TrajectoryWriter, as results come back: so each finished
episode is appended once, and a rerun skips recorded episodes and redoes `server_fault`/`crashed`
ones exactly as a local run does. A worker that dies (killed, out of memory, its node lost) has its
episode retried by Ray (`retries` times); past that, or when the episode raised inside sieve, the
episode is recorded `crashed`, so the next run redoes it. At most `workers` episodes are in flight,
so a grid of thousands of episodes is not submitted at once.

The cluster's workers need sieve installed, and the index folder (and the DCI staging folder) at
the same path on every node: a shared file system, or one machine.
"""

from __future__ import annotations

import contextlib
import math
import socket
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sieve.agent.episode import Episode
from sieve.agent.llm import DEADLINE_S, ChatClient
from sieve.agent.loop import Agent
from sieve.agent.runner import Question, TrajectoryWriter, pending, recorded
from sieve.errors import InvalidArgumentError
from sieve.index.cluster import connect
from sieve.index.index import Index, open_index
from sieve.tools.shell.episode import make_tools

RETRIES = 3  # times Ray reruns an episode whose worker died, before it is recorded as crashed


@dataclass(frozen=True)
class EpisodeSetup:
    """What a worker needs to run an episode of a run, as plain picklable values."""

    model: str
    index: str  # the index folder, opened by each worker process
    condition: str
    # make_tools keywords besides index and condition
    tools: dict[str, Any] = field(default_factory=dict)
    # Agent keywords besides the client and condition
    agent: dict[str, Any] = field(default_factory=dict)
    api_key: str | None = None
    dense: bool = False  # rank with the index's embeddings
    llm_deadline: float = DEADLINE_S  # the longest one model call may take, retries included
    # whose embeddings (None: the index's only, else the bundled MiniLM)
    embed_model: str | None = None
    dense_search: str = "exact"  # sieve.dense.store.DENSE_SEARCH


# Per worker process: a worker opens an index (and builds an agent per URL) once, not per episode.
_indexes: dict[tuple[str, bool, str | None, str], Index] = {}
_agents: dict[tuple[Any, ...], Agent] = {}


def join(address: str) -> Any:
    """Connect to the Ray cluster at `address` and return `ray` (sieve.index.cluster.connect)."""
    return connect(address)


def run_all_ray(
    questions: Iterable[Question],
    urls: list[str],
    setup: EpisodeSetup,
    out: Path,
    address: str,
    workers: int | None = None,
    retries: int = RETRIES,
    on_episode: Callable[[Episode], None] | None = None,
) -> dict[str, dict[str, Any]]:
    """Run every question not yet in `out` on the Ray cluster at `address`, the i-th with
    `urls[i % len(urls)]`; at most `workers` at once (default: one per CPU of the cluster)."""
    if not urls:
        raise InvalidArgumentError("no model server URL to run the episodes against")
    ray = join(address)
    todo = pending(questions, recorded(out))
    writer = TrajectoryWriter(out)
    cpus = float(ray.cluster_resources().get("CPU", 1.0))
    window = max(1, workers or int(cpus))
    # An episode mostly waits on the model server: more in flight than CPUs each ask for a share of
    # one (rounded down, as Ray keeps 4 decimals: `window` shares must fit in the cluster).
    share = min(1.0, math.floor(cpus / window * 10_000) / 10_000)
    task = ray.remote(_episode).options(num_cpus=share, max_retries=retries, retry_exceptions=False)
    shared = ray.put(setup)
    flying: dict[Any, Question] = {}
    upcoming = iter(enumerate(todo))
    try:
        while True:
            for i, q in upcoming:
                flying[task.remote(shared, urls[i % len(urls)], q.id, q.text)] = q
                if len(flying) >= window:
                    break
            if not flying:
                break
            ready, _ = ray.wait(list(flying), num_returns=1)
            for ref in ready:
                ep = _result(ray, ref, flying.pop(ref), setup, retries)
                writer.write(ep)
                if on_episode is not None:
                    on_episode(ep)
    finally:
        for ref in flying:  # interrupted: unrecorded episodes are redone by the next run
            with contextlib.suppress(Exception):  # never hide why the run stopped
                ray.cancel(ref)
    return recorded(out)


def _result(ray: Any, ref: Any, q: Question, setup: EpisodeSetup, retries: int) -> Episode:
    """The episode a task returned, or a crashed one when Ray could not get it back (its worker died
    more often than Ray retries, its node was lost...)."""
    try:
        ep: Episode = ray.get(ref)
        return ep
    except ray.exceptions.RayError as e:
        first = (str(e).strip().splitlines() or [""])[0]
        return crashed(
            q.id,
            q.text,
            setup,
            f"Ray: {type(e).__name__}: {first} (an episode "
            f"whose worker dies is retried {retries} times)",
        )


def crashed(question_id: str, question: str, setup: EpisodeSetup, reason: str) -> Episode:
    """An episode ended by an error, recorded as run_all records one (a rerun redoes it)."""
    return Episode(
        question_id,
        question,
        {"model": setup.model, "condition": setup.condition},
        outcome="failed",
        reason=reason,
        crashed=True,
    )


def _episode(setup: EpisodeSetup, url: str, question_id: str, question: str) -> Episode:
    """One episode, in a Ray worker; an exception is recorded as run_all records it, never raised
    (Ray retries only a worker's death)."""
    try:
        agent = _agent(setup, url)
        # session state is per episode
        tools = make_tools(
            _index(setup.index, setup.dense, setup.embed_model, setup.dense_search),
            setup.condition,
            **setup.tools,
        )
        return agent.run(question, tools, question_id)
    except Exception as e:
        where = traceback.extract_tb(e.__traceback__)[-1]
        return crashed(
            question_id,
            question,
            setup,
            f"{type(e).__name__}: {e} (at "
            f"{Path(where.filename).name}:{where.lineno}, on {socket.gethostname()})",
        )


def _index(
    path: str, dense: bool, embed_model: str | None = None, dense_search: str = "exact"
) -> Index:
    key = (path, dense, embed_model, dense_search)
    # a long-lived worker must not answer from a replaced build
    if key not in _indexes or _indexes[key].retired:
        index = open_index(path)
        if dense:
            index.use_dense(model=embed_model, search=dense_search)
        _indexes[key] = index
    return _indexes[key]


def _agent(setup: EpisodeSetup, url: str) -> Agent:
    key = (
        url,
        setup.model,
        setup.api_key,
        setup.llm_deadline,
        setup.condition,
        tuple(sorted(setup.agent.items())),
    )
    if key not in _agents:
        _agents[key] = Agent(
            ChatClient(url, setup.model, api_key=setup.api_key, deadline=setup.llm_deadline),
            condition=setup.condition,
            **setup.agent,
        )
    return _agents[key]
