"""How a build reads its corpus and writes its segments (`BuildOptions`): one value passed from
`build_index` to the builders (`sieve.index.build`, `sieve.index.shards`) and made by the writes
and merges that rebuild segments."""

from __future__ import annotations

from dataclasses import dataclass

from sieve.corpus.formats import OnError
from sieve.engine.analysis.analyzers import PLAIN, Analyzer
from sieve.engine.analysis.schema import NO_FIELDS, Schema


@dataclass(frozen=True)
class BuildOptions:
    """`on_error`: a bad record raises, or is skipped and counted. `jobs`: worker processes that
    analyse a large JSONL file (None: the CPU count, at most 4). `memory_mb`: the memory budget of
    the token stream's sort (None: 1,024). `segment_bytes`: per-document tables past which a new
    segment starts (None: half the budget). `analyzer` and `schema`: how text becomes terms and
    which metadata keys are filter columns, resolved (`get_analyzer`, `declare`). `lenient`: text
    under keys the corpus format does not know is kept as metadata instead of an error."""

    on_error: OnError = "raise"
    jobs: int | None = None
    memory_mb: int | None = None
    segment_bytes: int | None = None
    analyzer: Analyzer = PLAIN
    schema: Schema = NO_FIELDS
    lenient: bool = False
