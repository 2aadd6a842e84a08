"""What BQL's productions build: the syntax tree's nodes from tokens, with every check a word,
phrase, NEAR, tag or date makes (and its error), and the limits of the language. Both parsers
(`parser.BQLParser`, the grammar of record, and `descent._Descent`) build their nodes with these
functions, so a production means the same in each."""

from __future__ import annotations

import contextlib
import contextvars
import difflib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from sieve.engine.analysis.analyzers import analyze
from sieve.engine.analysis.dates import parse_date_spec
from sieve.engine.analysis.fields import DATE_TAG, FIELD_ALIASES, Field, field_names
from sieve.engine.query.bql import ast
from sieve.engine.query.bql.lexer import Tok
from sieve.errors import BQLSyntaxError

MAX_QUERY_CHARS = 10_000
MAX_DEPTH = 32  # nested parentheses
MAX_NEGATIONS = 100  # NOT / - operators in one query (keeps the tree shallow for every consumer)
MAX_CLAUSES = 1_024  # leaves (words, phrases, prefixes, NEARs, dates), as Lucene's max clause count
MAX_NEAR_DIGITS = 18  # NEAR/n: n fits an int64, so positions compare with it natively

_FIELD_NAMES = sorted(FIELD_ALIASES)
FIELD_HELP = (
    "title (ti), section (sec, heading), body (text, ab), "
    "author (au), infobox (ib), tiab, all, date"
)


@dataclass
class _Item:
    node: ast.Node
    open_run: bool  # an untagged bare word a later tag in the same run will scope


class _AndList:
    """The operands of one AND level while parsing, so a tag can scope
    the run of words before it."""

    def __init__(self, item: _Item) -> None:
        self.items = [item]

    def juxtapose(self, item: _Item, tagged_bare: ast.Fields | bool) -> None:
        if tagged_bare is not False:
            # `Fort Santiago[title]`: the tag scopes the run of bare words right before it.
            for prev in reversed(self.items):
                if not prev.open_run:
                    break
                prev.node = replace(prev.node, fields=tagged_bare)  # type: ignore[arg-type]  # replace() of a union
                prev.open_run = False
        self.items.append(item)

    def conjoin(self, item: _Item) -> None:
        for prev in self.items:  # an explicit AND ends the run
            prev.open_run = False
        self.items.append(item)

    def node(self) -> ast.Node:
        nodes = [i.node for i in self.items]
        if len(nodes) == 1:
            return nodes[0]
        flat: list[ast.Node] = []
        for n in nodes:
            flat.extend(n.children if isinstance(n, ast.And) else (n,))
        return ast.And(tuple(flat), span=_span(flat))


def _span(nodes: list[ast.Node]) -> ast.Span:
    return (nodes[0].span[0], nodes[-1].span[1])


def _tok_span(t: Tok) -> ast.Span:
    return (t.pos, t.pos + len(t.text))


# The declared text fields of the index a query is parsed for (`declared_text_fields`): tags
# that name one are valid there, and only there.
_DECLARED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "declared_text_fields", default=frozenset()
)


@contextlib.contextmanager
def declared_text_fields(names: frozenset[str]) -> Iterator[None]:
    """Parse with `names` (an index's declared text fields) accepted as field tags."""
    token = _DECLARED.set(names)
    try:
        yield
    finally:
        _DECLARED.reset(token)


def parse_fields(tag: Tok) -> frozenset[Field] | frozenset[str] | str:
    """Fields named in a tag token `[a, b]`, the name of a declared text field `[abstract]`, or
    the string "date" for a date tag."""
    known = _known_tags.get(tag.text)
    if known is not None:
        return known
    fields = _parse_fields(tag)
    # Agents tag most words the same few ways; a built-in tag means the same at any position and
    # for any index (a declared field's does not: it depends on the index).
    if len(_known_tags) < 4096 and not (
        isinstance(fields, frozenset) and any(isinstance(f, str) for f in fields)
    ):
        _known_tags[tag.text] = fields  # type: ignore[assignment]  # only built-in sets cached
    return fields


_known_tags: dict[str, frozenset[Field] | str] = {}


def _parse_fields(tag: Tok) -> frozenset[Field] | frozenset[str] | str:
    inner = tag.text[1:-1]
    names = [n.strip() for n in inner.split(",")]
    if not inner.strip():
        raise BQLSyntaxError("empty tag '[]'", tag.pos, "name a field: " + FIELD_HELP)
    declared = _DECLARED.get()
    fields: set[Field] = set()
    for written, pos in field_names(inner, tag.pos + 1):
        name = written.lower()
        if not name:
            raise BQLSyntaxError(
                "empty field name in tag", pos, "separate field names with single commas"
            )
        if name == DATE_TAG:
            if len(names) > 1:
                raise BQLSyntaxError(
                    "date cannot be combined with text fields in one tag",
                    pos,
                    "use date[...] on its own",
                )
            return DATE_TAG
        if name in declared:
            if len(names) > 1:
                raise BQLSyntaxError(
                    f"the declared field {name} cannot share a tag",
                    pos,
                    f"one declared field per tag: w[{name}] OR w[title]",
                )
            return frozenset({name})
        if name not in FIELD_ALIASES:
            close = difflib.get_close_matches(name, _FIELD_NAMES + [DATE_TAG, *declared], n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            more = (
                ", and this index's text fields: " + ", ".join(sorted(declared)) if declared else ""
            )
            raise BQLSyntaxError(
                f"unknown field {written!r}", pos, hint + "valid fields: " + FIELD_HELP + more
            )
        fields |= FIELD_ALIASES[name]
    return frozenset(fields)


def _date_node(spec: str, pos: int, span: ast.Span) -> ast.DateRange:
    try:
        lo, hi = parse_date_spec(spec)
    except ValueError as e:
        raise BQLSyntaxError(f"bad date {spec.strip()!r}", pos, str(e)) from None
    return ast.DateRange(lo, hi, span=span)


def scoped(node: ast.Node, fields: frozenset[Field], pos: int) -> ast.Node:
    """`node` with `fields` given to every leaf that has no scope of its own (inner tags win)."""
    if isinstance(node, (ast.Term, ast.Prefix, ast.Phrase, ast.Near)):
        return node if node.fields is not None else replace(node, fields=fields)
    if isinstance(node, (ast.DateRange, ast.Filter)):
        return node
    if isinstance(node, ast.Not):
        return replace(node, child=scoped(node.child, fields, pos))
    return replace(node, children=tuple(scoped(c, fields, pos) for c in node.children))


# ---------------------------------------------------------------- the productions' values


def _or(operands: list[ast.Node]) -> ast.Or:
    """OR of two or more operands, an OR operand (a group) flattened into its children."""
    kids: list[ast.Node] = []
    for node in operands:
        if isinstance(node, ast.Or):
            kids.extend(node.children)
        else:
            kids.append(node)
    return ast.Or(tuple(kids), span=(operands[0].span[0], operands[-1].span[1]))


def _negated(op: Tok, child: ast.Node) -> tuple[_Item, Any]:
    return _Item(ast.Not(child, span=(op.pos, child.span[1])), False), False


def _word_item(word: Tok, tag: Tok | None) -> tuple[_Item, Any]:
    """WORD or PREFIX, perhaps tagged: (item, the tag's fields if tagged else False)."""
    if tag is None:
        return _Item(_bare(word), True), False
    fields = parse_fields(tag)
    span = (word.pos, tag.pos + len(tag.text))
    if fields == DATE_TAG:
        if word.text.endswith("*"):
            raise BQLSyntaxError(
                f"{word.text!r} is not a date",
                word.pos,
                "a date filter is written date[2018..2023] or 2018..2023[date]",
            )
        return _Item(_date_node(word.text, word.pos, span), False), False
    return _Item(_bare(word, fields, span), False), fields  # type: ignore[arg-type]  # a tag's fields here


def _phrase_item(phrase: Tok, tag: Tok | None) -> tuple[_Item, Any]:
    if tag is None:
        return _Item(_phrase(phrase), False), False
    node = replace(
        _phrase(phrase), fields=_text_fields(tag), span=(phrase.pos, tag.pos + len(tag.text))
    )
    return _Item(node, False), False


def _near_item(near: ast.Near, tag: Tok | None) -> tuple[_Item, Any]:
    if tag is None:
        return _Item(near, False), False
    node = replace(near, fields=_text_fields(tag), span=(near.span[0], tag.pos + len(tag.text)))
    return _Item(node, False), False


def _group_item(lparen: Tok, expr: ast.Node, rparen: Tok, tag: Tok | None) -> tuple[_Item, Any]:
    if tag is None:
        return _Item(replace(expr, span=(lparen.pos, rparen.pos + 1)), False), False
    node = scoped(expr, _text_fields(tag, group=True), tag.pos)
    return _Item(replace(node, span=(lparen.pos, tag.pos + len(tag.text))), False), False


def _date_item(t: Tok) -> tuple[_Item, Any]:
    """`date[...]`, or `name[...]` on a declared field (checked against the index when planned)."""
    bracket = t.text.index("[")
    name, spec = t.text[:bracket].strip(), t.text[bracket + 1 : -1]
    if name.lower() == DATE_TAG:
        return _Item(_date_node(spec, t.pos + bracket + 1, _tok_span(t)), False), False
    stripped = spec.strip()
    if stripped.startswith("=") and not stripped.startswith("=="):
        # A keyword: `= ACL` is `=ACL`; quotes keep what they hold, other runs of spaces become one.
        inner = stripped[1:].strip()
        canonical = "=" + (inner if inner.startswith('"') else " ".join(inner.split()))
    else:
        canonical = "".join(spec.split())
    return _Item(
        ast.Filter(name.lower(), canonical, span=_tok_span(t), spec_pos=t.pos + bracket + 1), False
    ), False


def _nearcall(t: Tok) -> ast.Near:
    head, args = t.text.split("(", 1)
    inner = args[:-1]
    left_raw, right_raw = inner.split(",")
    base = t.pos + len(head) + 1
    left = Tok(left_raw.strip(), base + len(left_raw) - len(left_raw.lstrip()))
    rbase = base + len(left_raw) + 1
    right = Tok(right_raw.strip(), rbase + len(right_raw) - len(right_raw.lstrip()))
    return _near(Tok(head.strip(), t.pos), left, right, _tok_span(t))


def _text_fields(tag: Tok, group: bool = False) -> frozenset[Field]:
    fields = parse_fields(tag)
    if fields == DATE_TAG:
        what = "a group" if group else "a phrase or NEAR"
        raise BQLSyntaxError(
            f"[date] cannot scope {what}",
            tag.pos,
            "a date filter is written date[2018..2023] or 2018..2023[date]",
        )
    return fields  # type: ignore[return-value]  # narrowed by the checks above


def _bare(t: Tok, fields: ast.Fields = None, span: ast.Span | None = None) -> ast.Term | ast.Prefix:
    """The node of a WORD or PREFIX token, with a scope and a span (default: the token's)."""
    span = span or _tok_span(t)
    if t.text.endswith("*"):
        stem = t.text[:-1]
        if "*" in stem:
            raise BQLSyntaxError(
                f"'*' inside {t.text!r}",
                t.pos + stem.index("*"),
                "'*' is a wildcard only at the end of a word",
            )
        terms = analyze(stem)
        if len(terms) != 1:
            if not terms:
                raise BQLSyntaxError(
                    f"{t.text!r} has no letter or digit before '*'",
                    t.pos,
                    "write at least one letter, as in clos*",
                )
            raise BQLSyntaxError(
                f"{t.text!r} is not a single word",
                t.pos,
                f"a wildcard stem must be one term; {stem!r} splits into {' '.join(terms)}",
            )
        return ast.Prefix(stem, fields, span=span)
    if "*" in t.text:
        raise BQLSyntaxError(
            f"'*' inside {t.text!r}",
            t.pos + t.text.index("*"),
            "'*' is a wildcard only at the end of a word",
        )
    if not analyze(t.text):
        raise BQLSyntaxError(
            f"{t.text!r} has no searchable term",
            t.pos,
            "a term needs a letter or digit; quote text to search for a phrase",
        )
    return ast.Term(t.text, fields, span=span)


def _phrase(t: Tok) -> ast.Phrase:
    text = t.text[1:-1]
    if "*" in text:
        raise BQLSyntaxError(
            "'*' inside a phrase",
            t.pos + 1 + text.index("*"),
            "wildcards do not work inside quotes; use word* outside them",
        )
    if not analyze(text):
        raise BQLSyntaxError("empty phrase", t.pos, "put words between the quotes, or remove them")
    return ast.Phrase(text, span=_tok_span(t))


def _near(op: Tok, left: Tok, right: Tok, span: ast.Span) -> ast.Near:
    digits = op.text.split("/", 1)[1]
    if (
        len(digits) > MAX_NEAR_DIGITS
    ):  # int() refuses more than 4300 digits, and no unit is that long
        raise BQLSyntaxError(
            f"NEAR distance of {len(digits)} digits",
            op.pos + 5,
            f"write NEAR/n with at most {MAX_NEAR_DIGITS} digits",
        )
    distance = int(digits)
    if distance < 1:
        raise BQLSyntaxError(
            "NEAR/0 can never match", op.pos, "adjacent words are 1 apart: use NEAR/1 or a phrase"
        )
    for w in (left, right):
        if len(analyze(w.text)) != 1 or w.text.endswith("*"):
            raise BQLSyntaxError(
                f"NEAR operand {w.text!r} is not a single word",
                w.pos,
                "NEAR takes one plain word on each side",
            )
    return ast.Near(left.text, right.text, distance, span=span)
