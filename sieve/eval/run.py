"""`sieve eval build` and `sieve eval run`: indexes for a collection's twins, then episodes ->
summary.json."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sieve.agent.episode import Budgets, Episode
from sieve.agent.llm import DEADLINE_S, ChatClient
from sieve.agent.loop import Agent
from sieve.agent.runner import Question, run_all
from sieve.common.progress import Progress
from sieve.engine.rank.rankers import DENSE_RANKERS
from sieve.errors import InvalidArgumentError
from sieve.eval.collections import Collection, corpus_records, flat_twin, load_collection
from sieve.eval.report.summary import score, summarize
from sieve.index.index import Index, build_index, open_index
from sieve.tools.conditions import condition as find_condition
from sieve.tools.paper_manual import paper_collection
from sieve.tools.shell.episode import make_tools
from sieve.tools.shell.sandbox import choose as choose_sandbox
from sieve.tools.shell.sandbox import warn_unconfined
from sieve.tools.toolset import ToolConfig

TWINS = ("structured", "flat")


def twin_index(
    collection: Collection,
    root: Path,
    twin: str,
    embed: bool = False,
    embed_models: Sequence[str] = (),
    embed_unit: str | None = None,
) -> Index:
    """Open (or build once) the index of one twin of a collection under `root/<twin>`; with `embed`,
    embeddings of each of `embed_models` (default the bundled MiniLM), side by side, in
    `embed_unit` (default `sieve embed`'s)."""
    if twin not in TWINS:
        raise ValueError(f"twin must be one of {', '.join(TWINS)}")
    path = root / twin
    if (path / "CURRENT").exists():
        index = open_index(path)
    else:
        records = corpus_records(collection)
        index = build_index(records if twin == "structured" else flat_twin(records), path)
        # What the build kept that a strict build would have refused, for every later run's summary.
        note = {
            "format": collection.meta.get("format"),
            "dates": collection.meta.get("dates", "strict"),
            "unparsed_dates": collection.meta.get("unparsed_dates", 0),
            "documents": len(index),
        }
        (root / "collection.json").write_text(json.dumps(note, indent=1))
    if embed:
        from sieve.dense.encoder import DEFAULT_MODEL
        from sieve.dense.store import embed as embed_index

        for model in embed_models or (DEFAULT_MODEL,):
            if embed_unit is None:
                embed_index(index, model)
            else:
                embed_index(index, model, unit=embed_unit)
    return index


def default_index_dir(collection: Path) -> Path:
    """Where a collection's twins live unless told: inside a BEIR folder, beside a single file."""
    collection = Path(collection)
    return (
        collection / "sieve-index"
        if collection.is_dir()
        else collection.parent / f"{collection.stem}.sieve-index"
    )


def build_note_path(collection: Path) -> Path:
    """Where `eval build` notes the folder it built a collection's twins in: `sieve-built.json`
    inside a BEIR folder, `NAME.sieve-built.json` beside a single file."""
    collection = Path(collection)
    return (
        collection / "sieve-built.json"
        if collection.is_dir()
        else collection.parent / f"{collection.stem}.sieve-built.json"
    )


def note_build(collection: Path, out: Path) -> Path:
    """Note in the collection that its twins were built in `out`, so `eval run` and `eval grid`
    use `out` without `--index-dir`. Returns the note's path; raises OSError where the collection
    cannot be written (the caller says to pass `--index-dir`)."""
    path = build_note_path(collection)
    path.write_text(
        json.dumps({"index_dir": str(Path(out).resolve())}, indent=1) + "\n", encoding="utf-8"
    )
    return path


def index_root(collection: Path, index_dir: Path | None = None) -> Path:
    """Where a run finds a collection's twins: `index_dir` when given, else the folder `eval build`
    noted in the collection (`build_note_path`), else `default_index_dir`. A note naming a folder
    that is gone is an error, not a silent rebuild elsewhere."""
    if index_dir:
        return Path(index_dir)
    note = build_note_path(collection)
    if not note.is_file():
        return default_index_dir(collection)
    try:
        built = Path(json.loads(note.read_text(encoding="utf-8"))["index_dir"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InvalidArgumentError(
            f"{note}: cannot read the folder `sieve eval build` noted ({type(e).__name__}: {e}); "
            "delete the note, or give --index-dir"
        ) from None
    if not built.is_dir():
        raise InvalidArgumentError(
            f"{note} says the twins were built in {built}, which does not exist; run `sieve eval "
            f"build {collection} OUT` "
            "again, give --index-dir, or delete the note to build under the default folder"
        )
    return built


def build_twins(
    collection_dir: Path,
    out: Path,
    embed: bool = False,
    fmt: str = "beir",
    dates: str = "strict",
    embed_models: Sequence[str] = (),
    embed_unit: str | None = None,
) -> dict[str, Index]:
    """Both twins' indexes under `out` (and embeddings with `embed`: of each of `embed_models`,
    default the bundled MiniLM, in `embed_unit`, default `sieve embed`'s); `dates="keep"` keeps
    unreadable dates as metadata (counted in `out/collection.json`, see `built_note`)."""
    c = load_collection(collection_dir, fmt, dates)
    wanted = embed or bool(embed_models) or embed_unit is not None
    return {t: twin_index(c, out, t, wanted, embed_models, embed_unit) for t in TWINS}


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
    diagnose: bool | None = None,
    k_max: int | None = None,
    ray: str | None = None,
    shell_sandbox: str = "auto",
    llm_deadline: float = DEADLINE_S,
    embed_model: str | None = None,
    dense_search: str = "exact",
    fields: bool = True,
    manual: str | None = None,
) -> dict[str, Any]:
    """Run one condition over a collection. As the paper: `k` results per search is also the most an
    agent may ask for, and a read stops at `read_cap` tokens per document read (`read_parts=True`:
    numbered parts). The condition runs as the paper's (`make_tools(as_paper=True)`: for `sieve`,
    no diagnosis, a BM25 fallback, the paper's manual); `diagnose` and `manual` (MANUALS: "paper"
    picks the collection's by its fields, "paper-wikipedia", "paper-browsecomp", "generated")
    override the condition's. Ablations: `fallback=False` (strict Boolean search),
    `snippet` ("none": cards without snippets; "lead"/"query": what a card quotes), `fields=False`
    (cards without the matched fields), `twin="flat"`. `ray`: the address of a Ray cluster to spread
    the episodes over (sieve.eval.distributed), `workers` of them at once (default: one per CPU of
    the cluster; locally 1); the records and the summary are those of a local run. `shell_sandbox`:
    the DCI conditions' sandbox (auto, bwrap, landlock, none), chosen once here and recorded in the
    summary; without one a DCI run fails before any episode. `llm_deadline`: the longest
    one model call may take, retries included (sieve.agent.llm). Dense rankers use the embeddings
    of `embed_model` (default: the index's only model, else the bundled MiniLM; one the index has
    no embeddings of is refused), searched exactly as the paper (`dense_search="approximate"`:
    HNSW over admitted sets above 8,000 documents); the encoder is recorded in the summary."""
    if ray:
        from sieve.eval.distributed import join

        join(ray)  # an unreachable cluster fails before any work
    cond = find_condition(condition)
    box = None if cond.retriever else choose_sandbox(shell_sandbox)
    if box is not None:
        warn_unconfined(box)
    c = load_collection(collection_dir, fmt, dates)
    root = index_root(Path(collection_dir), index_dir)
    index = twin_index(c, root, twin, embed=False)
    ranker = ranker if cond.retriever else ("bm25" if cond.corpus == "bounded" else "none")
    encoder = None
    if ranker in DENSE_RANKERS:
        index.use_dense(model=embed_model, search=dense_search)
        dense: Any = index.searcher.dense  # a DenseIndex: use_dense just set it
        _ = dense.encoder  # loaded and checked against the embeddings before any episode
        encoder = dense.identity
    questions = c.questions[:limit] if limit else c.questions
    gold = {q.id: list(q.answers) for q in questions}
    # a malformed URL fails here, before any episode
    clients = [ChatClient(u, model, api_key=api_key, deadline=llm_deadline) for u in urls]
    out_dir.mkdir(parents=True, exist_ok=True)
    traj = out_dir / "trajectories.jsonl"
    on_episode = _progress(len(questions), gold) if progress else None

    options: dict[str, Any] = {
        "ranker": ranker if ranker != "none" else "bm25",
        "k": k,
        "read_cap": read_cap,
        "k_max": k_max or k,
        "read_parts": read_parts,
        "fallback": fallback,
        "snippet": snippet,
        "diagnose": diagnose,
        "files": root / "dci",
        "shell_sandbox": box.mechanism if box is not None else shell_sandbox,
        "as_paper": True,
        "fields": fields,
        "manual": manual,
    }

    def tools() -> Any:
        return make_tools(index, condition, **options)

    probe = tools()  # stages the DCI files once, before the workers start
    asked = [Question(q.id, q.question) for q in questions]
    # each worker builds its agents (the servers may answer the cluster only) and opens the index
    if ray:
        from sieve.eval.distributed import EpisodeSetup, run_all_ray

        # Absolute paths: a worker's working directory is not the driver's.
        setup = EpisodeSetup(
            model,
            str(Path(index.path).resolve()),
            condition,
            {**options, "files": (root / "dci").resolve()},
            {"native_tools": native, "budgets": budgets, "ranker": ranker},
            api_key,
            dense=ranker in DENSE_RANKERS,
            llm_deadline=llm_deadline,
            embed_model=encoder["model"] if encoder else None,
            dense_search=dense_search,
        )
        records = run_all_ray(asked, urls, setup, traj, ray, workers=workers, on_episode=on_episode)
    else:
        agents = [
            Agent(c, native_tools=native, budgets=budgets, condition=condition, ranker=ranker)
            for c in clients
        ]
        records = run_all(asked, agents, tools, traj, workers=workers or 1, on_episode=on_episode)
    about = {
        "name": out_dir.name,
        "condition": cond.name,
        "family": cond.family,
        "ranker": ranker,
        "twin": twin,
        "model": model,
        "collection": str(collection_dir),
        "format": fmt,
        "k": k,
        "k_max": k_max or k,
        "read_cap": read_cap,
        "read_parts": read_parts,
        "max_steps": budgets.max_steps,
        "fallback": fallback,
        "snippet": snippet or cond.snippet,
        **_tool_settings(probe),
        "unparsed_dates": built_note(root).get("unparsed_dates", 0),
        "shell_sandbox": box.record() if box is not None else None,
        "encoder": encoder,
    }
    summary = write_summary(out_dir, records, c, questions, about)
    return summary


def _tool_settings(tools: Any) -> dict[str, Any]:
    """What a run's tools were set to, for its summary: diagnosis, fallback ranker, manual (the
    paper's names its collection), matched fields on cards, and what the read ceiling bounds."""
    config = getattr(tools, "config", None)
    if not isinstance(config, ToolConfig):
        return {
            "diagnose": None,
            "fallback_ranker": None,
            "manual": None,
            "fields": None,
            "cap_scope": "document",
        }
    manual = config.manual
    if "search" not in tools.tools:
        # the paper's manual is for BQL `search`; other tools keep the generated one
        manual = "generated"
    elif manual == "paper":
        manual = f"paper-{paper_collection(tools.index)}"
    return {
        "diagnose": config.diagnose,
        "fallback_ranker": config.fallback_ranker or config.ranker,
        "manual": manual,
        "fields": config.cards.fields,
        "cap_scope": config.cap_scope,
    }


def write_summary(
    out_dir: Path,
    records: dict[str, dict[str, Any]],
    c: Collection,
    questions: list[Any],
    about: dict[str, Any],
) -> dict[str, Any]:
    gold = {q.id: list(q.answers) for q in questions}
    docs = {q.id: list(q.gold_docs) for q in questions}
    recs = [records[q.id] for q in questions if q.id in records]
    summary = {
        **about,
        **summarize(recs, gold, docs),
        "per_question": {r["question_id"]: score(r, gold[r["question_id"]]) for r in recs},
    }
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
