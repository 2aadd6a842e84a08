"""What a toolset is configured with (`ToolConfig`): default and largest k, the ranker and its
fallback, the manual, and the read and card settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from sieve.engine.query.bql.parser import MAX_QUERY_CHARS
from sieve.errors import InvalidArgumentError
from sieve.tools.cards import CardConfig
from sieve.tools.conditions import MANUALS
from sieve.tools.fetch.reading import ReadConfig

CAP_SCOPES = ("call", "document")


@dataclass(frozen=True)
class ToolConfig:
    k: int = 5  # results when the agent does not say
    k_max: int = 50
    max_sections: int = 8  # (doc, section) pairs per fetch
    # a server may accept less than the language does (and the index: the lower wins)
    max_query_chars: int = MAX_QUERY_CHARS
    ranker: str = "bm25"
    fallback: bool = True  # zero-hit recovery for `search`
    fallback_ranker: str | None = (
        None  # what ranks the zero-hit fallback; None: `ranker` ("bm25" is the paper's)
    )
    diagnose: bool = (
        True  # a zero-hit `search` names the one-step relaxations that would admit documents
    )
    # the manual of `search`: generated from the index, or the paper's for the collection (MANUALS)
    manual: str = "generated"
    # The read ceiling bounds what one `fetch` returns ("call", sieve's default: an agent's context
    # grows by at most the cap per call), or each document's text in it ("document", the paper's).
    cap_scope: str = "call"
    autoread: bool = False  # `ranked_search` results carry each document's text, up to the read cap
    read: ReadConfig = field(default_factory=ReadConfig)
    cards: CardConfig = field(default_factory=CardConfig)
    # `ranked_search` shows full cards when the agent can fetch sections (it needs their names),
    # and title + snippet otherwise; None decides by whether `fetch` is among the tools.
    ranked_cards: bool | None = None

    def __post_init__(self) -> None:
        from sieve.engine.rank.rankers import check_fallback_ranker

        check_fallback_ranker(self.fallback_ranker)
        if self.manual not in MANUALS:
            raise InvalidArgumentError(
                f"manual must be one of {', '.join(MANUALS)}, not {self.manual!r}"
            )
        if self.cap_scope not in CAP_SCOPES:
            raise InvalidArgumentError(
                f"cap_scope must be one of {', '.join(CAP_SCOPES)}, not {self.cap_scope!r}"
            )
