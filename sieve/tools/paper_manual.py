"""The paper's BQL manual, per collection, in our own words: what the SIEVE condition reads in
`eval`.

The paper gave its agent a fixed manual for each collection (its Table 4): Wikipedia-style
collections search `title`, `section` and `body` (with their aliases), BrowseComp-Plus adds `author`
and `date`. This text is that content, not generated from the index (`sieve.tools.manual` is sieve's
generated manual, the `sieve+manual` extension); it follows the tool settings that change what the
agent sees (fallback, diagnosis, cards, the read ceiling), and states the language as sieve parses
it where the paper's manual was wrong (side-by-side words are ANDed, not a phrase).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sieve.common.templates import load, render
from sieve.engine.analysis.fields import Field
from sieve.errors import InvalidArgumentError

if TYPE_CHECKING:
    from sieve.index.index import Index
    from sieve.tools.toolset import Toolset

PAPER_COLLECTIONS = ("wikipedia", "browsecomp")


def paper_collection(index: Index) -> str:
    """Which of the paper's manuals fits an index: `browsecomp` where documents have an author or a
    date (BrowseComp-Plus pages), else `wikipedia` (HotpotQA, MuSiQue)."""
    from sieve.tools.manual import field_counts

    dated = int(index.stats.get("dated", 0))
    return "browsecomp" if dated or field_counts(index)[Field.AUTHOR] else "wikipedia"


def render_paper_manual(toolset: Toolset, collection: str | None = None) -> str:
    """The paper's manual for `collection` (None: `paper_collection` of the toolset's index)."""
    from sieve.tools.manual import fetch_cap, longer_note

    kind = collection or paper_collection(toolset.index)
    if kind not in PAPER_COLLECTIONS:
        raise InvalidArgumentError(
            f"the paper's manual is for {' or '.join(PAPER_COLLECTIONS)} collections, not {kind!r}"
        )
    config = toolset.config
    snippet = config.cards.snippet
    flags = {
        "wikipedia": kind == "wikipedia",
        "browsecomp": kind == "browsecomp",
        "fallback": config.fallback,
        "strict": not config.fallback,
        "diagnose": config.diagnose,
        "matched": config.cards.fields,
        "snippet": snippet == "query",
        "lead": snippet == "lead",
    }
    values = {
        "k": config.k,
        "k_max": config.k_max,
        "max_sections": config.max_sections,
        "snippet_words": config.cards.snippet_words,
        "card_meta": ", then the date and the author when the page has them"
        if kind == "browsecomp"
        else "",
        "views": ", or `infobox` (its keys and values)" if kind == "wikipedia" else "",
        "fetch_cap": fetch_cap(config.read.cap, toolset.unit, config.cap_scope),
        "longer": longer_note("section", config.read.parts),
    }
    text = render(load("sieve.tools", "paper_manual.md"), flags, **values)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
