"""The values an explanation is made of (`Place`, `Explanation`) and what an operator may ask of
the judge that builds one (`Judge`): shared by `decision` and the operators in `ops`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from sieve.common.terminal import visible
from sieve.engine.segment.reader import SegmentReader


@dataclass(frozen=True)
class Place:
    """Where a leaf matched: a field, the section heading (body and headings only), the word
    number in that unit."""

    field: str
    section: str | None
    word: int

    def __str__(self) -> str:
        # A heading is document text: on one line, and nothing in it acts on a terminal.
        where = f"{self.field}" + (
            f' § "{visible(self.section, one_line=True)}"' if self.section is not None else ""
        )
        return f"{where} word {self.word}"


@dataclass(frozen=True)
class Explanation:
    """One node of the query, judged for one document."""

    query: str  # the node, as canonical BQL
    kind: str  # and, or, not, term, phrase, prefix, near, date
    admits: bool  # whether the document satisfies this node
    reason: str  # in words: where it matched, or why not
    places: tuple[Place, ...] = ()  # leaves: where it matched (at most MAX_PLACES)
    matches: int = 0  # leaves: how many places in all
    children: tuple[Explanation, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "query": self.query,
            "kind": self.kind,
            "admits": self.admits,
            "reason": self.reason,
        }
        if self.kind not in ("and", "or", "not"):
            out["matches"] = self.matches
            out["places"] = [
                {"field": p.field, "section": p.section, "word": p.word} for p in self.places
            ]
        else:
            out["children"] = [c.to_dict() for c in self.children]
        return out

    def render(self, indent: int = 0) -> str:
        """An indented tree, one node per line: `yes`/`no`, the node, and the reason."""
        mark = "yes" if self.admits else "no "
        line = f"{'  ' * indent}{mark}  {self.query}" + (
            f"  ({self.reason})" if self.reason else ""
        )
        return "\n".join([line] + [c.render(indent + 1) for c in self.children])


class Judge(Protocol):
    """What an operator's `explain` reads from the explainer of one plan (`decision.Decider`)."""

    r: SegmentReader

    def node(self, node: Any, d: int, one: np.ndarray) -> Explanation:
        """The explanation of a child node."""

    def truth(self, leaf: Any, d: int, one: np.ndarray) -> bool:
        """Whether the leaf admits document d, by the evaluator."""

    def places(self, pos: np.ndarray, d: int, mask: int) -> tuple[list[Place], int, set[int]]:
        """Places of positions inside the fields of `mask`, their count, and the fields of all."""

    def missing_words(self, leaf: Any) -> list[str]:
        """The leaf's words no document of the index has (to be named instead of places)."""
