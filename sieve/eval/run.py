"""`sieve eval build` and `sieve eval run`: indexes for a collection's twins, then episodes -> summary.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Callable

from sieve.tools.toolset import make_tools
from sieve.agent.llm import ChatClient
from sieve.agent.loop import Agent, Budgets, Episode
from sieve.agent.runner import Question, run_all
from sieve.eval.collections import Collection, flat_twin, load_beir
from sieve.eval.summary import score, summarize
from sieve.index import Index, build_index, open_index

TWINS = ("structured", "flat")


def twin_index(collection: Collection, root: Path, twin: str, embed: bool = False) -> Index:
    """Open (or build once) the index of one twin of a collection under `root/<twin>`."""
    if twin not in TWINS:
        raise ValueError(f"twin must be one of {', '.join(TWINS)}")
    path = root / twin
    if (path / "CURRENT").exists():
        index = open_index(path)
    else:
        source: Any = collection.corpus if twin == "structured" else flat_twin(collection.corpus)
        index = build_index(source, path)
    if embed:
        from sieve.dense.store import embed as embed_index

        embed_index(index)
    return index


def build_twins(collection_dir: Path, out: Path, embed: bool = False) -> dict[str, Index]:
    c = load_beir(collection_dir)
    return {t: twin_index(c, out, t, embed) for t in TWINS}


def run_collection(
    collection_dir: Path,
    out_dir: Path,
    condition: str,
    ranker: str,
    urls: list[str],
    model: str,
    limit: int | None = None,
    workers: int = 1,
    twin: str = "structured",
    native: bool = True,
    index_dir: Path | None = None,
    budgets: Budgets = Budgets(),
    k: int = 5,
    read_cap: int = 12_000,
    api_key: str | None = None,
    progress: bool = True,
    read_parts: bool = False,
) -> dict[str, Any]:
    """Run one condition over a collection. As the paper: `k` results per search is also the most an
    agent may ask for, and a read stops at `read_cap` tokens (`read_parts=True`: numbered parts)."""
    c = load_beir(collection_dir)
    index = twin_index(c, index_dir or collection_dir / "sieve-index", twin, embed=False)
    if ranker != "bm25":
        index.use_dense()
    questions = c.questions[:limit] if limit else c.questions
    gold = {q.id: list(q.answers) for q in questions}
    agents = [Agent(ChatClient(u, model, api_key=api_key), native_tools=native, budgets=budgets, condition=condition, ranker=ranker) for u in urls]
    out_dir.mkdir(parents=True, exist_ok=True)
    traj = out_dir / "trajectories.jsonl"
    on_episode = _progress(len(questions), gold) if progress else None
    records = run_all(
        [Question(q.id, q.question) for q in questions], agents,
        lambda: make_tools(index, condition, ranker, k=k, read_cap=read_cap, k_max=k, read_parts=read_parts), traj, workers=workers, on_episode=on_episode,
    )
    about = {"name": out_dir.name, "condition": condition, "ranker": ranker, "twin": twin, "model": model, "collection": str(collection_dir),
             "k": k, "read_cap": read_cap, "read_parts": read_parts, "max_steps": budgets.max_steps}
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
    from tqdm import tqdm

    bar = tqdm(total=total, unit=" q", desc="episodes", file=sys.stderr)
    right = {"n": 0, "done": 0}

    def on_episode(ep: Episode) -> None:
        right["done"] += 1
        right["n"] += int(score(ep.record(), gold[ep.question_id])["em"])
        bar.update(1)
        bar.set_postfix(accuracy=f"{right['n'] / right['done']:.3f}")

    return on_episode
