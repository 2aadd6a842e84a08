"""Result cards: what a search shows an agent about each hit, compactly, so it can choose a section.

    [2] json — json — JSON encoder and decoder · by Bob Ippolito
        §[(intro)·*def dump*·def dumps·…] +3 more ib[module·kind·file] matched: title, body
        » def dump: …Serialize ``obj`` as a JSON formatted stream to ``fp``…

Matched fields and sections come from the engine (positions under the query's own field scopes),
never from token overlap. Matched headings are starred and always shown, however long the list.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sieve.engine import deadline
from sieve.engine.rank.rankers import SOFT_RANKERS
from sieve.engine.rank.results import Hit, Results
from sieve.errors import InvalidArgumentError
from sieve.index.index import Index
from sieve.tools.fetch.snippets import Matcher, Snippet, best_snippet
from sieve.tools.shell.safe import inline
from sieve.tools.style import PLAIN, Style


@dataclass(frozen=True)
class CardConfig:
    snippet_words: int = 25
    # A snippet reads at most this many sections of a hit, and this many characters in all (a
    # section's text past the rest of the budget is not read): a card's cost is bounded by these,
    # not by the document (one of 100,000 sections, or a 9 MB body, took seconds per card).
    snippet_sections: int = 64
    snippet_chars: int = 1 << 18
    # the reference showed 8, though half of a big collection's pages have more
    max_headings: int = 12
    max_infobox_keys: int = 12
    max_authors: int = 3
    # What a card quotes (sieve.tools.conditions.SNIPPETS): a window around the query's words
    # ("query"), the document's opening words ("lead",
    # the paper's Search-Visit baseline), or nothing.
    snippet: str = "query"
    # Whether a card names the fields the query matched in (`matched: title, body`); False is the
    # paper's "no field exposure" ablation.
    fields: bool = True

    def __post_init__(self) -> None:
        from sieve.tools.conditions import SNIPPETS

        if self.snippet not in SNIPPETS:
            raise InvalidArgumentError(
                f"snippet must be one of {', '.join(SNIPPETS)}, not {self.snippet!r}"
            )


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def shortened(items: Sequence[str], keep: set[int], limit: int, style: Style = PLAIN) -> str:
    """`[a·b·…·*x*·…] +N more`: the items in `keep` (starred) first, then the first others, `limit`
    in all, in their own order; `…` marks where items were left out."""
    n = len(items)
    chosen = sorted(keep)[:limit]
    others = [j for j in range(n) if j not in keep][: max(0, limit - len(chosen))]
    shown = sorted(set(chosen) | set(others))
    out: list[str] = []
    prev = -1
    for j in shown:
        if j != prev + 1:
            out.append("…")
        out.append(style.match(f"*{items[j]}*") if j in keep else items[j])
        prev = j
    if prev != n - 1:
        out.append("…")
    text = "[" + "·".join(out) + "]"
    if len(shown) == n:
        return text
    starred = len(keep) - len(chosen)
    return text + f" +{n - len(shown)} more" + (f" ({starred} of them matched)" if starred else "")


def _authors(author: str, limit: int) -> str:
    names = [a for a in author.split("; ") if a]
    return (
        "; ".join(names)
        if len(names) <= limit
        else "; ".join(names[:limit]) + f" +{len(names) - limit} more"
    )


def _section_name(headings: list[str], j: int) -> str:
    """Section j as fetch names it: its heading, or `#N` where another section has the same."""
    return headings[j] if headings.count(headings[j]) == 1 else f"#{j + 1}"


def _doc_number(index: Index, hit: Hit) -> int:
    return hit.doc if hit.doc >= 0 else index.reader.doc_number(hit.doc_id)


def hit_meta(index: Index, hit: Hit) -> dict[str, Any]:
    """What a card shows of a hit's document, from the stored record alone (no section text):
    id, title, headings, and author, date, infobox and metadata where it has them."""
    return index.reader.meta(_doc_number(index, hit))


def hit_snippet(
    index: Index,
    hit: Hit,
    headings: list[str],
    matcher: Matcher,
    config: CardConfig = CardConfig(),
    style: Style = PLAIN,
) -> Snippet | None:
    """The hit's best window: from the section of its closest passage (dense and hybrid over
    passages), else from the sections the query matched, else from any section."""
    near = hit.passage_section
    matched = (
        [near] if near is not None and near < len(headings) else hit.matched_sections(headings)
    )
    # The passage a dense score came from is what made the document a hit; else where the query
    # matched (its positive words under their own scopes: the other sections can only hold words
    # the query scoped elsewhere), else (a title-only or fallback match) every section: its lead
    # at worst.
    order = (matched or range(len(headings)))[: config.snippet_sections]
    d = _doc_number(index, hit)

    def texts() -> Iterator[tuple[int, str]]:
        budget = config.snippet_chars
        for j in order:
            deadline.check()  # a server's per-call time covers the cards too
            if budget <= 0:
                return
            text = index.reader.section_text(d, j)[:budget]
            budget -= len(text)
            yield j, text

    return best_snippet(
        texts(),
        matcher,
        config.snippet_words,
        style.match if style.colour else None,
        screen=not matched,
    )


def lead(index: Index, hit: Hit, words: int) -> Snippet | None:
    """The document's first `words` words, from its first sections with text."""
    d = _doc_number(index, hit)
    taken: list[str] = []
    first = None
    for j in range(len(hit_meta(index, hit)["headings"])):
        deadline.check()
        got = index.reader.section_text(d, j)[: 64 * words].split()
        if got and first is None:
            first = j
        taken.extend(got[: words - len(taken)])
        if len(taken) >= words:
            break
    if first is None:
        return None
    return Snippet(
        first, inline(" ".join(taken)) + ("…" if len(taken) >= words else ""), frozenset()
    )


MAX_VALUE_CHARS = 40  # a declared field's value on a card (a long keyword is cut)


def declared_values(
    index: Index, metadata: Mapping[str, Any], text: bool = False
) -> list[tuple[str, str]]:
    """(field, value on one line) of a document's values of the index's declared fields: number,
    date and keyword (what an agent can filter on), text fields too with `text`. A list is shown
    `a/b`."""
    out = []
    for name, kind in index.schema.fields:
        value = metadata.get(name)
        if (kind == "text" and not text) or value is None or value == "" or value == []:
            continue
        out.append(
            (name, inline("/".join(map(str, value)) if isinstance(value, list) else str(value)))
        )
    return out


def _declared_line(index: Index, meta: dict[str, Any]) -> str:
    """` · year 2005 · venue ACL/EMNLP` (a long value cut)."""
    return "".join(
        f" · {name} "
        f"{shown if len(shown) <= MAX_VALUE_CHARS else shown[: MAX_VALUE_CHARS - 1] + '…'}"
        for name, shown in declared_values(index, meta.get("metadata") or {})
    )


def card(
    index: Index,
    hit: Hit,
    matcher: Matcher,
    config: CardConfig = CardConfig(),
    style: Style = PLAIN,
    structured: bool = True,
) -> str:
    """One hit as text. `structured=False` gives the plain baseline's card: title and snippet
    only."""
    meta = hit_meta(index, hit)
    headings: list[str] = meta["headings"]
    # nothing from a document may start a line of its own
    shown_headings = [inline(h) for h in headings]
    head = f"[{hit.rank}] {style.id(inline(hit.doc_id))} — {inline(meta['title'])}"
    lines = []
    if structured:
        if meta.get("date"):
            head += f" · {inline(meta['date'])}"
        if meta.get("author"):
            head += f" · by {_authors(inline(meta['author']), config.max_authors)}"
        head += _declared_line(index, meta)
        keep = set(hit.matched_sections(headings))
        line = "§" + shortened(shown_headings, keep, config.max_headings, style)
        keys = [inline(k) for k in meta.get("infobox", {})]
        if keys:
            line += " ib" + shortened(keys, set(), config.max_infobox_keys)
        if hit.fields and config.fields:
            line += " matched: " + ", ".join(hit.fields)
        near = hit.passage_section
        if near is not None and near < len(headings):
            line += " closest passage: " + style.section(_section_name(shown_headings, near))
        lines.append(line)
    if config.snippet == "none":
        snip = None
    elif config.snippet == "lead":
        snip = lead(index, hit, config.snippet_words)
    else:
        snip = hit_snippet(index, hit, headings, matcher, config, style)
    if snip is not None:
        where = f"{style.section(shown_headings[snip.section])}: " if structured else ""
        lines.append(f"» {where}{snip.text}")
    return "\n".join([head] + ["    " + ln for ln in lines])


RELAXATIONS_SHOWN = 3


def relaxations_line(r: Results) -> str:
    """` It would admit documents: 14 without date[2020-01-01..]; 3 with "heat plan"[section] in any
    field.` (empty when there is no diagnosis or no relaxation admits anything)."""
    d = r.diagnosis
    if d is None or not d.relaxations:
        return ""
    shown = "; ".join(x.describe() for x in d.relaxations[:RELAXATIONS_SHOWN])
    return f"\nOne change would admit documents: {shown}."


def search_header(r: Results) -> str:
    """The first line of a BQL listing: canonical query, exact count, and what a fallback means;
    then a line for each hint (`title:zlib` written for zlib[title])."""
    return _search_header(r) + "".join(f"\nHint: {h}." for h in r.hints)


def _search_header(r: Results) -> str:
    missing = "; ".join(f"no document has {m}" for m in r.missing)
    relax = relaxations_line(r)
    if r.ranker in SOFT_RANKERS:
        exact = (
            f"{plural(r.count, 'document')} {'matches' if r.count == 1 else 'match'} {r.query} "
            f"exactly{';' if r.count else '.'}"
        )
        if not r.count:
            exact = exact[:-1] + (f"; {missing}." if missing else ".") + relax
        soft = (
            f"top {len(r.hits)} of the whole collection by {r.ranker} (a soft match: a result "
            "need not satisfy the query):"
        )
        return (
            exact
            + ("\n" if relax or not r.count else " ")
            + (soft[0].upper() + soft[1:] if not r.count or relax else soft)
        )
    if r.fallback:
        why = (
            f"; {missing}"
            if missing
            else " (each part matches some document, but no document matches them all)"
        )
        head = (
            f"0 exact matches for {r.query}{why}.{relax}"
            + ("\n" if relax else " ")
            + f"Ranked by the query's terms instead ({r.ranker}):"
        )
        return head if r.hits else head + "\nNo document contains any of the query's words."
    if r.count == 0:
        return f"0 documents match {r.query}" + (f"; {missing}." if missing else ".") + relax
    verb = "matches" if r.count == 1 else "match"
    if not r.ranked:
        return (
            f"{plural(r.count, 'document')} {verb} {r.query}; the first {len(r.hits)} in index "
            "order (no word to rank by):"
        )
    return f"{plural(r.count, 'document')} {verb} {r.query}; top {len(r.hits)} by {r.ranker}:"


def indri_header(r: Results) -> str:
    """The first line of an Indri-language listing: canonical query, how many documents it
    matches."""
    if not r.hits:
        return f"0 documents match {r.query}."
    verb = "matches" if r.count == 1 else "match"
    return f"{plural(r.count, 'document')} {verb} {r.query}; top {len(r.hits)} by {r.ranker}:"


def ranked_header(r: Results) -> str:
    """The first line of a plain ranked listing (no query language to show)."""
    if not r.hits:
        return "No document contains any word of the query."
    verb = "contains" if r.count == 1 else "contain"
    return (
        f"{plural(r.count, 'document')} {verb} words of the query; top {len(r.hits)} by {r.ranker}:"
    )


def listing(
    index: Index,
    r: Results,
    header: str,
    matcher: Matcher,
    config: CardConfig = CardConfig(),
    style: Style = PLAIN,
    structured: bool = True,
) -> str:
    return "\n".join(
        [header] + [card(index, h, matcher, config, style, structured) for h in r.hits]
    )
