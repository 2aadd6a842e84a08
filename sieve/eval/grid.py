"""`sieve eval grid`: the paper's whole comparison over one collection in one command.

A grid is a list of cells (condition x ranker x twin, and the ablation switches); each cell is one
`eval run` into `OUT/<cell name>`, resumable like any run, and the grid ends with `eval report`
over them. By default every condition of the paper's Table 1 runs with the rankers the paper ran it
with (the registry says which), on the structured twin, as the paper ran it; `--twins
structured,flat` adds the flat twin for the conditions that search an index. `--ablations` adds the
paper's ablations (Table 7, Figure 4, Table 9) on its BM25+dense ranker: strict Boolean search (no
fallback), cards without snippets, cards without matched fields, the flat twin, and the zero-hit
diagnosis added (`sieve+diagnose`); and Search-Visit on the flat twin. `--extensions` adds sieve's
extensions of SIEVE as extra rows (sieve.tools.conditions.EXTENSIONS). `--controls` adds the paper's
Table 6: SIEVE's tools with the Indri-style rankers (indri, indri+dense). Several
`--embed-model`s run every cell that ranks with embeddings once per encoder (`sieve-dense@<model>`),
each encoder's embeddings side by side in the index: the paper's Figure 5 (accuracy by encoder).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from sieve.dense.encoder import DEFAULT_MODEL, model_label, model_name
from sieve.engine.rank.rankers import DENSE_RANKERS, RANKER_NAMES
from sieve.errors import InvalidArgumentError
from sieve.tools.conditions import (
    ALL_RANKERS,
    CONDITIONS,
    EXTENSIONS,
    PAPER_CONDITIONS,
    SNIPPETS,
    condition,
)

TWINS = ("structured", "flat")


@dataclass(frozen=True)
class Cell:
    condition: str
    ranker: str  # "none" for a condition without a retriever
    twin: str = "structured"
    fallback: bool = True
    snippet: str | None = None  # None: the condition's own
    # a zero-hit search names the relaxations that would admit documents; None: the condition's own
    diagnose: bool | None = None
    # cards name the fields the query matched in; False: the "no field exposure" ablation
    fields: bool = True
    # None: the grid's encoder (its one --embed-model, else the index's)
    embed_model: str | None = None

    @property
    def name(self) -> str:
        parts = [self.condition, self.ranker]
        if self.twin != "structured":
            parts.append(self.twin)
        if not self.fallback:
            parts.append("strict")
        if self.snippet is not None:
            parts.append(f"snippet-{self.snippet}")
        if self.diagnose is not None:
            parts.append("diagnosis" if self.diagnose else "no-diagnosis")
        if not self.fields:
            parts.append("no-fields")
        return "-".join(parts) + (f"@{model_label(self.embed_model)}" if self.embed_model else "")

    def check(self) -> Cell:
        c = condition(self.condition)
        rankers = c.rankers or ("none",)
        if c.retriever and self.ranker not in RANKER_NAMES:
            raise InvalidArgumentError(
                f"grid cell {self.name}: ranker must be one of {', '.join(RANKER_NAMES)}"
            )
        if not c.retriever and self.ranker not in rankers:
            raise InvalidArgumentError(
                f"grid cell {self.name}: {c.name} runs with ranker {rankers[0]!r} only"
            )
        if self.twin not in TWINS:
            raise InvalidArgumentError(
                f"grid cell {self.name}: twin must be one of {', '.join(TWINS)}"
            )
        if self.snippet is not None and self.snippet not in SNIPPETS:
            raise InvalidArgumentError(
                f"grid cell {self.name}: snippet must be one of {', '.join(SNIPPETS)}"
            )
        if self.embed_model is not None and self.ranker not in DENSE_RANKERS:
            raise InvalidArgumentError(
                f"grid cell {self.name}: an embedding model applies to the rankers "
                f"{', '.join(DENSE_RANKERS)} only"
            )
        model = model_name(self.embed_model) if self.embed_model is not None else None
        # the condition's own needs no name of its own
        diagnose = None if self.diagnose == c.diagnose else self.diagnose
        return Cell(
            c.name,
            self.ranker,
            self.twin,
            self.fallback,
            self.snippet,
            diagnose,
            self.fields,
            model,
        )


def with_encoders(cells: list[Cell], models: Sequence[str]) -> list[Cell]:
    """With several models, each cell that ranks with embeddings (and names no model) once per
    model, in the order given; with one or none, the cells as they are (every run uses that one)."""
    names = list(dict.fromkeys(model_name(m) for m in models))
    if len(names) < 2:
        return cells
    labels = [model_label(m) for m in names]
    if len(set(labels)) < len(labels):
        raise InvalidArgumentError(
            f"embedding models {', '.join(names)}: their short names "
            f"({', '.join(labels)}) name the grid's runs and must differ"
        )
    out: list[Cell] = []
    for cell in cells:
        if cell.ranker in DENSE_RANKERS and cell.embed_model is None:
            out.extend(Cell(**{**asdict(cell), "embed_model": m}).check() for m in names)
        else:
            out.append(cell)
    return out


def plan(
    conditions: Iterable[str] | None = None,
    rankers: Iterable[str] | None = None,
    twins: Iterable[str] = ("structured",),
    ablations: bool = False,
    controls: bool = False,
    extensions: bool = False,
    embed_models: Sequence[str] = (),
) -> list[Cell]:
    """The cells: each condition (default the paper's) with each of its paper rankers that is among
    `rankers` (default all), on each twin where the twin matters (conditions that search an index),
    then (`extensions`) sieve's extensions of SIEVE with their rankers among `rankers`, then the
    ablations (on hybrid, the paper's; on the first of `rankers` when hybrid is not among them),
    then (`controls`) the paper's Table 6: the `indri-control` condition with the Indri-style
    rankers; with several `embed_models`, each cell that ranks with embeddings once per model
    (`with_encoders`)."""
    names = [condition(n).name for n in (conditions or PAPER_CONDITIONS)]
    if extensions:
        names += [n for n in EXTENSIONS if n not in names]
    wanted = set(rankers or ALL_RANKERS)
    unknown = wanted - set(ALL_RANKERS)
    if unknown:
        raise InvalidArgumentError(
            f"unknown rankers {sorted(unknown)}; choose from {', '.join(ALL_RANKERS)}"
        )
    cells: list[Cell] = []
    for n in names:
        c = CONDITIONS[n]
        # A control runs only with rankers outside the paper's three: by its rankers when named.
        control = bool(c.rankers) and not set(c.rankers) & set(ALL_RANKERS)
        if control and (conditions is None or controls):
            continue  # `controls` adds it below; a whole-grid default leaves it out
        for r in c.rankers or ("none",):
            if r != "none" and r not in wanted and not control:
                continue
            for t in twins if c.retriever else ("structured",):
                cells.append(Cell(n, r, t))
    if ablations:
        r = "hybrid" if "hybrid" in wanted else next(x for x in ALL_RANKERS if x in wanted)
        for extra in (
            Cell("sieve", r, fallback=False),
            Cell("sieve", r, snippet="none"),
            Cell("sieve", r, fields=False),
            Cell("sieve", r, "flat"),
            Cell("sieve+diagnose", r),
            Cell("search-visit", "bm25", "flat"),
        ):
            if extra.condition.split("+")[0] in names and extra not in cells:
                cells.append(extra)
    if controls:
        cells.extend(
            Cell("indri-control", r)
            for r in CONDITIONS["indri-control"].rankers
            if Cell("indri-control", r) not in cells
        )
    return with_encoders([c.check() for c in cells], embed_models)


def load_grid(path: str | Path) -> list[Cell]:
    """A grid file: JSON, either {"cells": [{condition, ranker, twin?, fallback?, snippet?,
    diagnose?, fields?}, ...]} or the arguments of `plan` ({"conditions": [...], "rankers": [...],
    "twins": [...], "ablations": true, ...})."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InvalidArgumentError(f"cannot read the grid file {path}: {e}") from None
    if not isinstance(data, dict):
        raise InvalidArgumentError(f"{path}: a grid file is a JSON object")
    if "cells" in data:
        out = []
        for i, raw in enumerate(data["cells"]):
            try:
                out.append(Cell(**raw).check())
            except TypeError as e:
                raise InvalidArgumentError(f"{path}: cell {i}: {e}") from None
        return out
    allowed = {
        "conditions",
        "rankers",
        "twins",
        "ablations",
        "controls",
        "extensions",
        "embed_models",
    }
    extra = set(data) - allowed
    if extra:
        raise InvalidArgumentError(
            f"{path}: unknown keys {sorted(extra)}; a grid file has cells, or "
            f"{', '.join(sorted(allowed))}"
        )
    return plan(
        data.get("conditions"),
        data.get("rankers"),
        data.get("twins", ("structured",)),
        bool(data.get("ablations", False)),
        bool(data.get("controls", False)),
        bool(data.get("extensions", False)),
        data.get("embed_models", ()),
    )


def run_grid(
    collection: Path,
    out: Path,
    cells: list[Cell],
    urls: list[str],
    model: str,
    index_dir: Path | None = None,
    fmt: str = "beir",
    dates: str = "strict",
    on_cell: Any = None,
    ray: str | None = None,
    embed_model: str | None = None,
    judge: Any = None,
    unjudged: bool = False,
    **options: Any,
) -> list[Path]:
    """Run every cell into `out/<cell name>` (a finished cell's episodes are not run again);
    `options` go to each `run_collection`; `ray`: every cell's episodes run on that Ray cluster.
    Each twin is embedded with every model its cells rank with: a cell's own, else `embed_model`,
    else the model the twin already holds, else the bundled MiniLM. `judge` (a ChatClient): each
    cell's answers are graded by it after the cell runs (`eval judge`, cached). A collection whose
    accuracy is a judge's (`sieve.eval.judge.needs_judge`) needs one: without it the grid refuses
    to start, unless `unjudged=True` (accuracy is then exact match only). Writes `out/grid.json`
    listing the cells and their runs."""
    from sieve.eval.collections import load_collection
    from sieve.eval.judge import collection_note, judge_run, needs_judge
    from sieve.eval.run import index_root, run_collection, twin_index

    if judge is None and not unjudged and needs_judge(collection):
        raise InvalidArgumentError(
            f"{collection} is graded by an LLM judge ({collection_note(collection)} says "
            '"accuracy": "judge"): '
            "give --judge-url URL --judge-model MODEL, or --no-judge to run it with exact match "
            "only and no judged accuracy"
        )
    if ray:
        from sieve.eval.distributed import join

        join(ray)  # an unreachable cluster fails before the twins are built
    out.mkdir(parents=True, exist_ok=True)
    root = index_root(Path(collection), index_dir)
    c = load_collection(collection, fmt, dates)
    from sieve.dense.layout import embedded_models

    # build (and embed) each twin once, before any run
    for twin in sorted({cell.twin for cell in cells}):
        wanted = {
            cell.embed_model or embed_model
            for cell in cells
            if cell.ranker in DENSE_RANKERS and cell.twin == twin
        }
        # no model named: the one a twin built by `eval build` holds, else the default
        if None in wanted:
            wanted.discard(None)
            if not embedded_models(root / twin):
                wanted.add(DEFAULT_MODEL)
        twin_index(c, root, twin, embed=bool(wanted), embed_models=sorted(m for m in wanted if m))
    (out / "grid.json").write_text(
        json.dumps(
            {
                "collection": str(collection),
                "model": model,
                "embed_model": embed_model,
                "judge": judge.model if judge is not None else None,
                "cells": [asdict(x) | {"run": x.name} for x in cells],
            },
            indent=1,
        )
    )
    runs = []
    for cell in cells:
        if on_cell is not None:
            on_cell(cell)
        run_collection(
            collection,
            out / cell.name,
            cell.condition,
            cell.ranker if cell.ranker != "none" else "bm25",
            urls,
            model,
            twin=cell.twin,
            index_dir=root,
            fmt=fmt,
            dates=dates,
            fallback=cell.fallback,
            snippet=cell.snippet,
            diagnose=cell.diagnose,
            fields=cell.fields,
            ray=ray,
            embed_model=cell.embed_model or embed_model,
            **options,
        )
        if judge is not None:
            judge_run(out / cell.name, collection, judge, collection_format=fmt)
        runs.append(out / cell.name)
    return runs
