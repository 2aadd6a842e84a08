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
Table 6: SIEVE's tools with the Indri-style rankers (indri, indri+dense).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from sieve.engine.rankers import DENSE_RANKERS, RANKER_NAMES
from sieve.errors import InvalidArgumentError
from sieve.tools.conditions import ALL_RANKERS, CONDITIONS, EXTENSIONS, PAPER_CONDITIONS, SNIPPETS, condition

TWINS = ("structured", "flat")


@dataclass(frozen=True)
class Cell:
    condition: str
    ranker: str  # "none" for a condition without a retriever
    twin: str = "structured"
    fallback: bool = True
    snippet: str | None = None  # None: the condition's own
    diagnose: bool | None = None  # a zero-hit search names the relaxations that would admit documents; None: the condition's own
    fields: bool = True  # cards name the fields the query matched in; False: the "no field exposure" ablation

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
        return "-".join(parts)

    def check(self) -> "Cell":
        c = condition(self.condition)
        rankers = c.rankers or ("none",)
        if c.retriever and self.ranker not in RANKER_NAMES:
            raise InvalidArgumentError(f"grid cell {self.name}: ranker must be one of {', '.join(RANKER_NAMES)}")
        if not c.retriever and self.ranker not in rankers:
            raise InvalidArgumentError(f"grid cell {self.name}: {c.name} runs with ranker {rankers[0]!r} only")
        if self.twin not in TWINS:
            raise InvalidArgumentError(f"grid cell {self.name}: twin must be one of {', '.join(TWINS)}")
        if self.snippet is not None and self.snippet not in SNIPPETS:
            raise InvalidArgumentError(f"grid cell {self.name}: snippet must be one of {', '.join(SNIPPETS)}")
        diagnose = None if self.diagnose == c.diagnose else self.diagnose  # the condition's own needs no name of its own
        return Cell(c.name, self.ranker, self.twin, self.fallback, self.snippet, diagnose, self.fields)


def plan(conditions: Iterable[str] | None = None, rankers: Iterable[str] | None = None,
         twins: Iterable[str] = ("structured",), ablations: bool = False, controls: bool = False, extensions: bool = False) -> list[Cell]:
    """The cells: each condition (default the paper's) with each of its paper rankers that is among
    `rankers` (default all), on each twin where the twin matters (conditions that search an index),
    then (`extensions`) sieve's extensions of SIEVE with their rankers among `rankers`, then the
    ablations (on hybrid, the paper's; on the first of `rankers` when hybrid is not among them), then
    (`controls`) the paper's Table 6: SIEVE's tools with the Indri-style rankers."""
    names = [condition(n).name for n in (conditions or PAPER_CONDITIONS)]
    if extensions:
        names += [n for n in EXTENSIONS if n not in names]
    wanted = set(rankers or ALL_RANKERS)
    unknown = wanted - set(ALL_RANKERS)
    if unknown:
        raise InvalidArgumentError(f"unknown rankers {sorted(unknown)}; choose from {', '.join(ALL_RANKERS)}")
    cells: list[Cell] = []
    for n in names:
        c = CONDITIONS[n]
        for r in c.rankers or ("none",):
            if r != "none" and r not in wanted:
                continue
            for t in (twins if c.retriever else ("structured",)):
                cells.append(Cell(n, r, t))
    if ablations:
        r = "hybrid" if "hybrid" in wanted else next(x for x in ALL_RANKERS if x in wanted)
        for extra in (Cell("sieve", r, fallback=False), Cell("sieve", r, snippet="none"), Cell("sieve", r, fields=False), Cell("sieve", r, "flat"),
                      Cell("sieve+diagnose", r), Cell("search-visit", "bm25", "flat")):
            if extra.condition.split("+")[0] in names and extra not in cells:
                cells.append(extra)
    if controls and "sieve" in names:
        cells.extend(Cell("sieve", r) for r in ("indri", "indri+dense") if Cell("sieve", r) not in cells)
    return [c.check() for c in cells]


def load_grid(path: str | Path) -> list[Cell]:
    """A grid file: JSON, either {"cells": [{condition, ranker, twin?, fallback?, snippet?, diagnose?, fields?}, ...]}
    or the arguments of `plan` ({"conditions": [...], "rankers": [...], "twins": [...], "ablations": true, ...})."""
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
    allowed = {"conditions", "rankers", "twins", "ablations", "controls", "extensions"}
    extra = set(data) - allowed
    if extra:
        raise InvalidArgumentError(f"{path}: unknown keys {sorted(extra)}; a grid file has cells, or {', '.join(sorted(allowed))}")
    return plan(data.get("conditions"), data.get("rankers"), data.get("twins", ("structured",)), bool(data.get("ablations", False)),
                bool(data.get("controls", False)), bool(data.get("extensions", False)))


def run_grid(collection: Path, out: Path, cells: list[Cell], urls: list[str], model: str, index_dir: Path | None = None,
             fmt: str = "beir", dates: str = "strict", on_cell: Any = None, ray: str | None = None, **options: Any) -> list[Path]:
    """Run every cell into `out/<cell name>` (a finished cell's episodes are not run again);
    `options` go to each `run_collection`; `ray`: every cell's episodes run on that Ray cluster.
    Writes `out/grid.json` listing the cells and their runs."""
    from sieve.eval.collections import load_collection
    from sieve.eval.run import default_index_dir, run_collection, twin_index

    if ray:
        from sieve.eval.distributed import join

        join(ray)  # an unreachable cluster fails before the twins are built
    out.mkdir(parents=True, exist_ok=True)
    root = Path(index_dir) if index_dir else default_index_dir(Path(collection))
    c = load_collection(collection, fmt, dates)
    for twin in sorted({cell.twin for cell in cells}):  # build (and embed) each twin once, before any run
        twin_index(c, root, twin, embed=any(cell.ranker in DENSE_RANKERS and cell.twin == twin for cell in cells))
    (out / "grid.json").write_text(json.dumps({"collection": str(collection), "model": model, "cells": [asdict(x) | {"run": x.name} for x in cells]}, indent=1))
    runs = []
    for cell in cells:
        if on_cell is not None:
            on_cell(cell)
        run_collection(collection, out / cell.name, cell.condition, cell.ranker if cell.ranker != "none" else "bm25", urls, model,
                       twin=cell.twin, index_dir=root, fmt=fmt, dates=dates, fallback=cell.fallback, snippet=cell.snippet,
                       diagnose=cell.diagnose, fields=cell.fields, ray=ray, **options)
        runs.append(out / cell.name)
    return runs
