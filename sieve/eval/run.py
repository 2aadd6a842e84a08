"""`sieve eval build` and `sieve eval run`: indexes for a collection's twins, then episodes -> summary.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from sieve.tools.episode import make_tools
from sieve.agent.llm import DEADLINE_S, ChatClient
from sieve.agent.loop import Agent, Budgets, Episode
from sieve.agent.runner import Question, run_all
from sieve.eval.collections import Collection, corpus_records, flat_twin, load_collection
from sieve.engine.rankers import DENSE_RANKERS
from sieve.tools.conditions import condition as find_condition
from sieve.eval.summary import score, summarize
from sieve.index import Index, build_index, open_index
from sieve.progress import Progress
from sieve.tools.sandbox import choose as choose_sandbox, warn_unconfined

TWINS = ("structured", "flat")


def twin_index(collection: Collection, root: Path, twin: str, embed: bool = False) -> Index:
    """Open (or build once) the index of one twin of a collection under `root/<twin>`."""
    if twin not in TWINS:
        raise ValueError(f"twin must be one of {', '.join(TWINS)}")
    path = root / twin
    if (path / "CURRENT").exists():
        index = open_index(path)
    else:
        records = corpus_records(collection)
        index = build_index(records if twin == "structured" else flat_twin(records), path)
        # What the build kept that a strict build would have refused, for every later run's summary.
        note = {"format": collection.meta.get("format"), "dates": collection.meta.get("dates", "strict"),
                "unparsed_dates": collection.meta.get("unparsed_dates", 0), "documents": len(index)}
        (root / "collection.json").write_text(json.dumps(note, indent=1))
    if embed:
        from sieve.dense.store import embed as embed_index

        embed_index(index)
    return index


def default_index_dir(collection: Path) -> Path:
    """Where a collection's twins live unless told: inside a BEIR folder, beside a single file."""
    collection = Path(collection)
    return collection / "sieve-index" if collection.is_dir() else collection.parent / f"{collection.stem}.sieve-index"


def build_twins(collection_dir: Path, out: Path, embed: bool = False, fmt: str = "beir", dates: str = "strict") -> dict[str, Index]:
    """Both twins' indexes under `out` (and embeddings with `embed`); `dates="keep"` keeps
    unreadable dates as metadata (counted in `out/collection.json`, see `built_note`)."""
    c = load_collection(collection_dir, fmt, dates)
    return {t: twin_index(c, out, t, embed) for t in TWINS}


def built_note(root: Path) -> dict[str, Any]:
    """What the twins' build recorded: format, date policy, unparseable dates kept, documents."""
    path = Path(root) / "collection.json"
    return json.loads(path.read_text()) if path.exists() else {}


def run_collection(
    collection_dir: Path,
    out_dir: Path,
    condition: str,
    ranker: str,
    urls: list[str],
    model: str,
    limit: int | None = None,
    workers: int | None = None,
    twin: str = "structured",
    native: bool = True,
    index_dir: Path | None = None,
    budgets: Budgets = Budgets(),
    k: int = 5,
    read_cap: int = 12_000,
    api_key: str | None = None,
    progress: bool = True,
    read_parts: bool = False,
    fmt: str = "beir",
    dates: str = "strict",
    fallback: bool = True,
    snippet: str | None = None,
    diagnose: bool = True,
    k_max: int | None = None,
    ray: str | None = None,
    shell_sandbox: str = "auto",
    llm_deadline: float = DEADLINE_S,
) -> dict[str, Any]:
    """Run one condition over a collection. As the paper: `k` results per search is also the most an
    agent may ask for, and a read stops at `read_cap` tokens (`read_parts=True`: numbered parts).
    Ablations: `fallback=False` (strict Boolean search), `diagnose=False` (zero-hit searches
    name no relaxations), `snippet` ("none": cards without snippets; "lead"/"query": what a card
    quotes), `twin="flat"`. `ray`: the address of a Ray cluster to spread the episodes over
    (sieve.eval.distributed), `workers` of them at once (default: one per CPU of the cluster;
    locally 1); the records and the summary are those of a local run. `shell_sandbox`: the DCI
    conditions' sandbox (auto, bwrap, landlock, none), chosen once here and recorded in the summary;
    without one a DCI run fails before any episode. `llm_deadline`: the longest
    one model call may take, retries included (sieve.agent.llm)."""
    if ray:
        from sieve.eval.distributed import join

        join(ray)  # an unreachable cluster fails before any work
    cond = find_condition(condition)
    box = None if cond.retriever else choose_sandbox(shell_sandbox)
    if box is not None:
        warn_unconfined(box)
    c = load_collection(collection_dir, fmt, dates)
    root = Path(index_dir) if index_dir else default_index_dir(Path(collection_dir))
    index = twin_index(c, root, twin, embed=False)
    ranker = ranker if cond.retriever else ("bm25" if cond.corpus == "bounded" else "none")
    if ranker in DENSE_RANKERS:
        index.use_dense()
    questions = c.questions[:limit] if limit else c.questions
    gold = {q.id: list(q.answers) for q in questions}
    clients = [ChatClient(u, model, api_key=api_key, deadline=llm_deadline) for u in urls]  # a malformed URL fails here, before any episode
    out_dir.mkdir(parents=True, exist_ok=True)
    traj = out_dir / "trajectories.jsonl"
    on_episode = _progress(len(questions), gold) if progress else None

    options: dict[str, Any] = dict(ranker=ranker if ranker != "none" else "bm25", k=k, read_cap=read_cap, k_max=k_max or k, read_parts=read_parts,
                                   fallback=fallback, snippet=snippet, diagnose=diagnose, files=root / "dci",
                                   shell_sandbox=box.mechanism if box is not None else shell_sandbox)

    def tools() -> Any:
        return make_tools(index, condition, **options)

    tools()  # stages the DCI files once, before the workers start
    asked = [Question(q.id, q.question) for q in questions]
    if ray:  # each worker builds its agents (the servers may answer the cluster only) and opens the index
        from sieve.eval.distributed import EpisodeSetup, run_all_ray

        # Absolute paths: a worker's working directory is not the driver's.
        setup = EpisodeSetup(model, str(Path(index.path).resolve()), condition, {**options, "files": (root / "dci").resolve()},
                             {"native_tools": native, "budgets": budgets, "ranker": ranker}, api_key, dense=ranker in DENSE_RANKERS,
                             llm_deadline=llm_deadline)
        records = run_all_ray(asked, urls, setup, traj, ray, workers=workers, on_episode=on_episode)
    else:
        agents = [Agent(c, native_tools=native, budgets=budgets, condition=condition, ranker=ranker) for c in clients]
        records = run_all(asked, agents, tools, traj, workers=workers or 1, on_episode=on_episode)
    about = {"name": out_dir.name, "condition": cond.name, "family": cond.family, "ranker": ranker, "twin": twin, "model": model,
             "collection": str(collection_dir), "format": fmt, "k": k, "k_max": k_max or k, "read_cap": read_cap, "read_parts": read_parts,
             "max_steps": budgets.max_steps, "fallback": fallback, "diagnose": diagnose, "snippet": snippet or cond.snippet,
             "unparsed_dates": built_note(root).get("unparsed_dates", 0), "shell_sandbox": box.record() if box is not None else None}
    summary = write_summary(out_dir, records, c, questions, about)
    return summary


def write_summary(out_dir: Path, records: dict[str, dict[str, Any]], c: Collection, questions: list[Any], about: dict[str, Any]) -> dict[str, Any]:
    gold = {q.id: list(q.answers) for q in questions}
    docs = {q.id: list(q.gold_docs) for q in questions}
    recs = [records[q.id] for q in questions if q.id in records]
    summary = {**about, **summarize(recs, gold, docs), "per_question": {r["question_id"]: score(r, gold[r["question_id"]]) for r in recs}}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1, ensure_ascii=False))
    return summary


def _progress(total: int, gold: dict[str, list[str]]) -> Callable[[Episode], None]:
    bar = Progress("episodes", "questions", total=total)
    right = {"n": 0, "done": 0}

    def on_episode(ep: Episode) -> None:
        right["done"] += 1
        right["n"] += int(score(ep.record(), gold[ep.question_id])["em"])
        bar.note(f"accuracy {right['n'] / right['done']:.3f}")
        bar.update(1)

    return on_episode
