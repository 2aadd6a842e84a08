"""The tool manual an agent reads, generated from the index so that it never promises a field the
index does not have (the paper's reference manuals promised an infobox field that was not indexed).

The text lives in `manual.md`, rendered strictly by `sieve.common.templates` (a missing flag or
value is an error, never a blank).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from sieve.common.templates import load, render
from sieve.engine.analysis.fields import FIELD_ALIASES, Field
from sieve.engine.rank.rankers import RANKERS, SOFT_RANKERS
from sieve.index.index import Index
from sieve.tools.config import ToolConfig


class Described(Protocol):
    """What a manual is written from (a `Toolset` is one): the index, the configuration, the tools
    offered by name, and the unit reads are counted in."""

    @property
    def index(self) -> Index: ...

    @property
    def config(self) -> ToolConfig: ...

    @property
    def tools(self) -> Mapping[str, object]: ...

    @property
    def unit(self) -> str: ...

    @property
    def keeps_listing(self) -> bool: ...


_HOLDS = {
    Field.TITLE: "the title",
    Field.SECTION: "section headings",
    Field.BODY: "section texts",
    Field.AUTHOR: "author names",
    Field.INFOBOX: "infobox values (not the keys)",
}


def _stop_sentence(analyzer: Any) -> str:
    """What the agent must know of an index's stop words: which, and that they are not searchable
    alone."""
    if not analyzer.stopwords:
        return ""
    words = sorted(analyzer.stopwords)
    shown = ", ".join(f"`{w}`" for w in words[:12]) + (", ..." if len(words) > 12 else "")
    return (
        f" Stop words ({shown}; {len(words)} in all) are not indexed: a term made only "
        "of them is an error; inside a quoted phrase each stands for any one word."
    )


def field_counts(index: object) -> dict[Field, int]:
    """Documents with at least one term in each field (the index's per-field lengths)."""
    flen = index.snapshot.field_lengths()  # type: ignore[attr-defined]
    return {f: int(np.count_nonzero(flen[:, int(f)])) if len(flen) else 0 for f in Field}


def _aliases(name: str) -> str:
    target = FIELD_ALIASES[name]
    return ", ".join(f"`{a}`" for a, fs in FIELD_ALIASES.items() if fs == target and a != name)


def fields_table(counts: Mapping[Field, int]) -> str:
    rows = ["| field | also | what it holds | documents with it |", "|---|---|---|---|"]
    for f in Field:
        if counts[f]:
            rows.append(f"| `{f.label}` | {_aliases(f.label)} | {_HOLDS[f]} | {counts[f]:,} |")
    rows.append("| `tiab` | | title or section texts | |")
    rows.append("| `all` | | every field above (the same as no field) | |")
    return "\n".join(rows)


def _join(items: list[str], last: str = "and") -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {last} " + items[-1]


def render_manual(toolset: Described) -> str:
    index, config, tools = toolset.index, toolset.config, toolset.tools
    counts = field_counts(index)
    n, dated = len(index), int(index.stats.get("dated", 0))
    has = {
        "author": counts[Field.AUTHOR] > 0,
        "infobox": counts[Field.INFOBOX] > 0,
        "date": dated > 0,
    }
    extras = (
        [f"an author ({counts[Field.AUTHOR]:,})"] * has["author"]
        + [f"a date ({dated:,})"] * has["date"]
        + [f"an infobox ({counts[Field.INFOBOX]:,})"] * has["infobox"]
    )
    readers = [f"`{t}`" for t in ("fetch", "visit", "show") if t in tools]
    ranked_cards = config.ranked_cards if config.ranked_cards is not None else "fetch" in tools
    cards = (
        "search" in tools or "indri_search" in tools or ("ranked_search" in tools and ranked_cards)
    )
    flags = {
        **{
            t: t in tools
            for t in ("search", "ranked_search", "fetch", "visit", "show", "indri_search")
        },
        "dates": has["date"],
        "columns": bool(index.schema),
        "fallback": config.fallback,
        "diagnose": config.diagnose,
        "infobox": has["infobox"],
        "cards": cards,
        "snippets": "ranked_search" in tools and not ranked_cards,
        "matched": config.cards.fields,
    }
    meta = [w for w, ok in (("the date", has["date"]), ("the author", has["author"])) if ok]
    read_tools = _join(readers, "or") if readers else "the reading tools"
    values = {
        "documents": f"{n:,}",
        "extras": f"; some also have {_join(extras)}" if extras else "",
        "tools": _join([f"`{t}`" for t in tools]),
        "k": config.k,
        "k_max": config.k_max,
        "ranker": RANKERS[config.ranker],
        "rank_note": (
            " Only words outside a NOT count for the ranking; `word*` and dates only filter (a"
            " query with nothing else lists its matches in index order)."
            if config.ranker == "bm25"
            else ""
        ),
        "filter_sentence": (
            f"The query is read softly: every document is scored by {RANKERS[config.ranker]}, so"
            " documents that satisfy the whole query usually come first, but a result need not"
            " satisfy it; the first line says how many satisfy it exactly. Only a date range"
            " excludes documents."
            if config.ranker in SOFT_RANKERS
            else "The query is a filter: it decides exactly which documents are "
            f"eligible, and only those are ranked (by {RANKERS[config.ranker]}). "
            "A document the query rejects is never shown"
            + (" (except after zero hits, see below)." if config.fallback else ".")
        ),
        "stemming": (
            "Words are not stemmed: `close` does not find `closed`; write `close*`."
            if not index.analyzer.stems
            else f"Words are matched by their stem ({index.analyzer.name} stemming): `closed` also"
            " finds `close`, `closing` and `closes`, in phrases too; `clos*` finds every word whose"
            " stem starts with `clos`."
        )
        + _stop_sentence(index.analyzer),
        "anywhere": _join(
            ["title", "headings", "section texts"]
            + ["author names"] * has["author"]
            + ["infobox values"] * has["infobox"]
        ),
        "units": _join(
            ["section text", "heading", "title"]
            + ["author name"] * has["author"]
            + ["infobox value"] * has["infobox"],
            "or",
        ),
        "fields_table": fields_table(counts),
        "dated": f"{dated:,}",
        "columns_list": (
            "The index also keeps " + _join([f"`{n}` ({t})" for n, t in index.schema.fields])
            if index.schema
            else ""
        ),
        "date_canon": ", dates as day ranges" if has["date"] else "",
        **_doc_values(read_tools, toolset.keeps_listing),
        "card_meta": (
            f", then {_join(meta)} when the document has {'it' if len(meta) == 1 else 'them'}"
            if meta
            else ""
        ),
        "card_example_meta": (" · 2021-03-04" if has["date"] else "")
        + (" · by A. Writer" if has["author"] else ""),
        "card_example_ib": " ib[country·founded]" if has["infobox"] else "",
        "card_example_matched": " matched: title, body" if config.cards.fields else "",
        "fetch_cap": fetch_cap(config.read.cap, toolset.unit, config.cap_scope),
        "contents_hint": "fetch the section `contents` to list them all"
        if "fetch" in tools
        else "`visit` shows the whole document",
        "snippet_words": config.cards.snippet_words,
        "max_sections": config.max_sections,
        "cap": f"{config.read.cap:,}",
        "unit": toolset.unit,
        "facts_fields": _facts(has),
        "longer_section": longer_note("section", config.read.parts),
        "longer_document": longer_note("document", config.read.parts),
        "infobox_view": " `infobox` (its keys and values)," if has["infobox"] else "",
    }
    text = render(load("sieve.tools", "manual.md"), flags, **values)
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"


def _doc_values(read_tools: str, ranks: bool) -> dict[str, str]:
    """How the manual says to name a document: by rank or id, or (a connection that keeps no
    listing between calls, where a rank could only be a guess) by id alone."""
    if ranks:
        return {
            "doc_ref": "a rank from the last search (a number) or a document id (a string)",
            "doc_example": "2",
            "card_rank": f"`[2]` is the rank: give it as `doc` to {read_tools}.",
            "listing_ref": f"its rank (give it as `doc` to {read_tools}), the document id",
        }
    return {
        "doc_ref": "the document id a card shows (a string; this connection keeps no listing "
        "between calls, so a rank means nothing)",
        "doc_example": '"an-id"',
        "card_rank": "`[2]` is the rank in this listing only: give the document id after it "
        f"(`an-id`) as `doc` to {read_tools}.",
        "listing_ref": f"its rank, the document id (give it as `doc` to {read_tools})",
    }


def fetch_cap(cap: int, unit: str, scope: str) -> str:
    """The manual's sentence on how much one `fetch` returns (ToolConfig.cap_scope)."""
    if scope == "document":
        return f"One call returns at most {cap:,} {unit} of each document it reads."
    return f"One call returns at most {cap:,} {unit}."


def longer_note(what: str, parts: bool) -> str:
    if parts:
        return (
            f"A longer {what} comes in parts, and each part ends with the call that reads the next "
            '(`"part": 2`).'
        )
    return (
        f"A longer {what} is cut at that ceiling, and the cut is marked: there is no second part."
    )


def _facts(has: Mapping[str, bool]) -> str:
    parts = [w for w in ("author", "date", "infobox") if has[w]]
    return ", " + ", ".join(parts) if parts else ""
