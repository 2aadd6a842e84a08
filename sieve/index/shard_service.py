"""A sharded index served by Ray actors: one actor per shard, a coordinator that merges exactly.

`open_ray_index(path, address)` starts one `ShardServer` actor per shard of a sharded index
(sieve.index.shards). Each actor opens only its shard's segments. A search is two rounds:

1. every shard plans the query, counts what it admits, and reports its positional volume and the
   live document frequency of each positive term (and, when it admits nothing, which top-level
   clauses match something);
2. the coordinator turns the sums into the collection's idf (N and the average length are summed
   once, at open) and asks every shard for its best k scored with them; the merge takes the best k
   by (score, order key): exactly the hits, scores and tie order of one index over the corpus.

The zero-hit fallback fires only when every shard admits nothing; its diagnosis sums each shard's
(sieve.engine.query.diagnose.merge_diagnoses). A shard that cannot answer
(its actor died past its restarts, or did not answer in time) is a ClusterError: an answer
from the other shards alone would be incomplete, and is never passed off as complete.

Placement: an actor asks for the custom resource `sieve_shard_<j>` when the cluster offers it,
so starting a node with `ray start --resources '{"sieve_shard_0": 1}'` keeps shard 0 on the node
whose disk holds it; otherwise actors go wherever Ray puts them (every node must then see the
index path).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from sieve.corpus.documents import Document, Section
from sieve.engine.format import commits
from sieve.engine.query.diagnose import Diagnosis, merge_diagnoses
from sieve.engine.query.plan import Limits, check_volume
from sieve.engine.rank.bm25 import BM25Params, idf
from sieve.engine.rank.rankers import check_request
from sieve.engine.rank.results import Hit, Results
from sieve.errors import ClusterError, InvalidArgumentError, SieveError, UnknownDocumentError
from sieve.index.queries import ranked_search
from sieve.index.shard_server import Prepared, ShardServer
from sieve.index.shards import shard_of

ANSWER_TIMEOUT_S = 120.0


class RemoteSnapshot:
    """What the tools' manual reads of a snapshot, gathered from the shards."""

    def __init__(self, owner: RayIndex) -> None:
        self.owner = owner

    def field_lengths(self) -> np.ndarray:
        """Tokens per field of every live document (rows shard by shard: counts and sums only)."""
        return np.concatenate(
            self.owner._get([a.field_lengths.remote() for a in self.owner.actors])
        )


class RemoteReader:
    """Document reads by the coordinator's numbers (local number * shards + shard), each sent to
    its shard's actor: what cards, snippets and fetch read from an opened index."""

    def __init__(self, owner: RayIndex) -> None:
        self.owner = owner

    def _at(self, g: int) -> tuple[Any, int]:
        n = self.owner.shards
        return self.owner.actors[g % n], g // n

    def _read(self, what: str, g: int, *args: Any) -> Any:
        actor, d = self._at(int(g))
        return self.owner._get([actor.read.remote(what, d, *args)])[0]

    def doc_id(self, g: int) -> str:
        return self._read("doc_id", g)

    def meta(self, g: int) -> dict[str, Any]:
        return self._read("meta", g)

    def headings(self, g: int) -> tuple[str, ...]:
        return self._read("headings", g)

    def section_text(self, g: int, j: int) -> str:
        return self._read("section_text", g, j)

    def section_count(self, g: int) -> int:
        return self._read("section_count", g)

    def doc_number(self, doc_id: str) -> int:
        j = shard_of(doc_id, self.owner.shards)
        d = self.owner._get([self.owner.actors[j].doc_number.remote(doc_id)])[0]
        return -1 if d < 0 else d * self.owner.shards + j


class RayMatch:
    """What a query admits over every shard: `count`, `ids` in index order, the canonical
    `query`."""

    def __init__(self, query: str, count: int, ids: list[str]) -> None:
        self.query, self.count, self.ids = query, count, ids

    def __repr__(self) -> str:
        return f"RayMatch(query={self.query!r}, count={self.count})"


class RayIndex:
    """A sharded index answered by one Ray actor per shard (see the module docstring): `match`,
    `search` (BM25), `ranked_search`, `document`, `section`, and `reader` for document reads."""

    def __init__(
        self,
        path: str | os.PathLike,
        address: str,
        restarts: int = 1,
        timeout_s: float = ANSWER_TIMEOUT_S,
        bm25: BM25Params = BM25Params(),
        limits: Limits = Limits(),
    ) -> None:
        from sieve.index.cluster import connect

        self.path = Path(path)
        self.commit_dir = commits.current_commit(self.path)
        self.manifest = commits.read_manifest(self.commit_dir)
        self.shards = int(self.manifest.get("shards") or 0)
        if not self.shards:
            raise InvalidArgumentError(
                f"{self.path} is not a sharded index: build it "
                f"with `sieve index CORPUS {self.path} --shards N`"
            )
        self.limits, self.timeout_s = limits, timeout_s
        self.ray = ray = connect(address)
        available = ray.cluster_resources()
        # A restarted actor reopens its shard; a call it was running is retried once it is back.
        server = ray.remote(ShardServer)
        self.actors = []
        for j in range(self.shards):
            where = (
                {"resources": {f"sieve_shard_{j}": 0.001}}
                if f"sieve_shard_{j}" in available
                else {}
            )
            options = dict(max_restarts=restarts, max_task_retries=restarts, num_cpus=0, **where)
            self.actors.append(
                server.options(**options).remote(
                    str(self.path), self.commit_dir.name, j, bm25, limits
                )
            )
        infos = self._get([a.info.remote() for a in self.actors])
        self.n_live = sum(i["n_live"] for i in infos)
        self.collection = (self.n_live, sum(i["total_len"] for i in infos))
        self.analyzer, self.schema = infos[0]["analyzer"], infos[0]["schema"]
        self.reader = RemoteReader(self)
        self.snapshot = RemoteSnapshot(self)

    def __len__(self) -> int:
        return self.n_live

    @property
    def stats(self) -> dict[str, int]:
        """As `Index.stats`: the commit's figures."""
        return dict(self.manifest["stats"])

    def __repr__(self) -> str:
        return f"RayIndex({str(self.path)!r}, shards={self.shards}, documents={self.n_live})"

    def close(self) -> None:
        """Stop the shards' actors."""
        for a in self.actors:
            self.ray.kill(a)
        self.actors = []

    def __enter__(self) -> RayIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get(self, refs: list[Any]) -> list[Any]:
        """Every shard's answer, or an error: a query error raised inside a shard is raised as it
        is (every shard would raise the same); a shard that is gone is a ClusterError."""
        ray = self.ray
        try:
            return ray.get(refs, timeout=self.timeout_s)
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, SieveError):
                raise cause from None
            raise ClusterError(f"a shard of {self.path} failed: {e}") from e
        except ray.exceptions.GetTimeoutError as e:
            raise ClusterError(
                f"a shard of {self.path} did not answer in "
                f"{self.timeout_s:g} s; no partial answer is given"
            ) from e
        except ray.exceptions.RayError as e:
            raise ClusterError(
                f"a shard of {self.path} is gone ({type(e).__name__}); no partial answer is given"
            ) from e

    def count(self, query: str) -> int:
        """How many documents `query` admits (`Index.match(query).count`), without their ids."""
        self.limits.check_length(query)
        return sum(
            p.count
            for p in self._get([a.prepare.remote(query, self.collection) for a in self.actors])
        )

    def match(self, query: str) -> RayMatch:
        """What `query` admits, in index order (as `Index.match`)."""
        self.limits.check_length(query)
        got = self._get([a.match.remote(query) for a in self.actors])
        keys = np.concatenate([k for _, k, _ in got])
        ids = [i for _, _, shard_ids in got for i in shard_ids]
        return RayMatch(
            got[0][0], len(ids), [ids[i] for i in np.argsort(keys, kind="stable").tolist()]
        )

    def search(
        self,
        query: str,
        k: int = 5,
        ranker: str = "bm25",
        fallback: bool = True,
        explain: bool = True,
        diagnose: bool = True,
        fallback_ranker: str | None = None,
    ) -> Results:
        """As `Index.search`, with BM25 (dense and Indri rankers need the index opened locally);
        a zero-hit search's diagnosis is merged from every shard's. Each shard's part of a call (its
        count, then its best k) runs under `limits.seconds` in its actor; `timeout_s` bounds each
        wait."""
        check_request(k, ranker)
        self.limits.check_length(query)
        return self._search(query, k, ranker, fallback, explain, diagnose, fallback_ranker)

    def _search(
        self,
        query: str,
        k: int,
        ranker: str,
        fallback: bool,
        explain: bool,
        diagnose: bool,
        fallback_ranker: str | None = None,
    ) -> Results:
        other = ranker if ranker != "bm25" else (fallback_ranker or "bm25")
        if other != "bm25":
            raise InvalidArgumentError(
                f"an index served by Ray ranks with bm25 only, not {other}; open it locally "
                f"(open_index) for {other}"
            )
        first = self._get([a.prepare.remote(query, self.collection, diagnose) for a in self.actors])
        p = first[0]
        check_volume(
            [(leaf, sum(f.volumes[i] for f in first)) for i, leaf in enumerate(p.leaves)],
            self.limits,
        )
        count = sum(f.count for f in first)
        missing: list[str] = []
        why = None
        if not count:
            missing = [
                c
                for i, c in enumerate(p.clauses)
                if not any(f.clause_hits[i] for f in first if f.clause_hits is not None)
            ]
            if diagnose:
                why = merge_diagnoses([f.diagnosis for f in first if f.diagnosis is not None])
            # as Index.search: a prefix-only query falls back (to nothing BM25 can score)
            if not fallback or not (p.terms or p.text):
                return self._results(p, [], 0, False, missing, why)
        n, _ = self.collection
        idfs = tuple(float(idf(n, sum(f.dfs[i] for f in first))) for i in range(len(p.terms)))
        tops = self._get(
            [a.top.remote(query, self.collection, idfs, k, not count, explain) for a in self.actors]
        )
        merged = sorted(
            (
                (key, score, d * self.shards + j, rest)
                for j, shard_top in enumerate(tops)
                for key, score, d, *rest in shard_top
            ),
            key=lambda t: (-t[1], t[0]),
        )[:k]
        hits = [
            Hit(
                doc_id,
                rank,
                score,
                tuple(fields),
                tuple(sections),
                doc=g,
                section_numbers=tuple(numbers),
            )
            for rank, (_, score, g, (doc_id, fields, sections, numbers)) in enumerate(merged, 1)
        ]
        return self._results(p, hits, count, not count, missing, why)

    def _results(
        self,
        p: Prepared,
        hits: list[Hit],
        count: int,
        fell_back: bool,
        missing: list[str],
        why: Diagnosis | None,
    ) -> Results:
        return Results(
            hits,
            count,
            p.query,
            fell_back,
            missing,
            "bm25",
            p.terms,
            p.stems,
            p.text,
            why,
            self.analyzer,
        )

    def ranked_search(
        self, text: str, k: int = 5, ranker: str = "bm25", explain: bool = True
    ) -> Results:
        """As `Index.ranked_search`."""
        return ranked_search(self, text, k, ranker, explain)

    def _locate(self, doc_id: str) -> tuple[Any, int]:
        j = shard_of(str(doc_id), self.shards)
        d = self._get([self.actors[j].doc_number.remote(str(doc_id))])[0]
        if d < 0:
            raise UnknownDocumentError(str(doc_id))
        return self.actors[j], d

    def document(self, doc_id: str) -> Document:
        actor, d = self._locate(doc_id)
        return self._get([actor.document.remote(d)])[0]

    def section(self, doc_id: str, j: int) -> Section:
        actor, d = self._locate(doc_id)
        headings = self._get([actor.read.remote("headings", d)])[0]
        if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < len(headings):
            raise InvalidArgumentError(
                f"document {doc_id!r} has {len(headings)} "
                f"section{'s' if len(headings) != 1 else ''}, "
                f"numbered from 0; there is no section {j!r}"
            )
        return Section(headings[j], self._get([actor.read.remote("section_text", d, j)])[0])


def open_ray_index(path: str | os.PathLike, address: str, **options: Any) -> RayIndex:
    """A sharded index served by one Ray actor per shard on the cluster at `address` (HOST:PORT,
    `auto`, or `local`); see the module docstring."""
    return RayIndex(path, address, **options)
