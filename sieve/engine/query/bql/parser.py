"""BQL grammar (sly, LALR) and `parse(text) -> Node`.

Precedence, loosest first: OR, then AND (explicit or by juxtaposition), then NOT / `-`, then infix
NEAR. It is written into the grammar's layers (or_expr > and_expr > not_expr > primary) rather
than a precedence table, because NOT is both prefix (`NOT a`) and, by juxtaposition, binary
(`a NOT b` = a AND NOT b), which a single precedence level cannot express.
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
from dataclasses import dataclass, replace
from typing import Any, Iterator

from sly import Parser

from sieve.engine.analysis.analyzers import analyze
from sieve.engine.query.bql import ast
from sieve.engine.query.bql.dates import parse_date_spec
from sieve.engine.query.bql.lexer import BAD_CHAR, BQLLexer, Tok, scan, tokenize
from sieve.engine.analysis.fields import DATE_TAG, FIELD_ALIASES, Field, field_names
from sieve.errors import BQLLimitError, BQLSyntaxError

MAX_QUERY_CHARS = 10_000
MAX_DEPTH = 32  # nested parentheses
MAX_NEGATIONS = 100  # NOT / - operators in one query (keeps the tree shallow for every consumer)
MAX_CLAUSES = 1_024  # leaves (words, phrases, prefixes, NEARs, dates), as Lucene's max clause count
MAX_NEAR_DIGITS = 18  # NEAR/n: n fits an int64, so positions compare with it natively

_FIELD_NAMES = sorted(FIELD_ALIASES)
FIELD_HELP = "title (ti), section (sec, heading), body (text, ab), author (au), infobox (ib), tiab, all, date"


@dataclass
class _Item:
    node: ast.Node
    open_run: bool  # an untagged bare word a later tag in the same run will scope


class _AndList:
    """The operands of one AND level while parsing, so a tag can scope the run of words before it."""

    def __init__(self, item: _Item) -> None:
        self.items = [item]

    def juxtapose(self, item: _Item, tagged_bare: ast.Fields | bool) -> None:
        if tagged_bare is not False:
            # `Fort Santiago[title]`: the tag scopes the run of bare words right before it.
            for prev in reversed(self.items):
                if not prev.open_run:
                    break
                prev.node = replace(prev.node, fields=tagged_bare)  # type: ignore[type-var]
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
_DECLARED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("declared_text_fields", default=frozenset())


@contextlib.contextmanager
def declared_text_fields(names: frozenset[str]) -> Iterator[None]:
    """Parse with `names` (an index's declared text fields) accepted as field tags."""
    token = _DECLARED.set(names)
    try:
        yield
    finally:
        _DECLARED.reset(token)


def parse_for(text: str, names: frozenset[str]) -> ast.Node:
    """`parse` with `names` (an index's declared text fields) accepted as field tags."""
    if not names and not _DECLARED.get():  # most indexes declare none: nothing to set (a context manager costs 2 us)
        return parse(text)
    with declared_text_fields(names):
        return parse(text)


def parse_fields(tag: Tok) -> frozenset[Field] | frozenset[str] | str:
    """Fields named in a tag token `[a, b]`, the name of a declared text field `[abstract]`, or
    the string "date" for a date tag."""
    known = _known_tags.get(tag.text)
    if known is not None:
        return known
    fields = _parse_fields(tag)
    # Agents tag most words the same few ways; a built-in tag means the same at any position and
    # for any index (a declared field's does not: it depends on the index).
    if len(_known_tags) < 4096 and not (isinstance(fields, frozenset) and any(isinstance(f, str) for f in fields)):
        _known_tags[tag.text] = fields  # type: ignore[assignment]
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
            raise BQLSyntaxError("empty field name in tag", pos, "separate field names with single commas")
        if name == DATE_TAG:
            if len(names) > 1:
                raise BQLSyntaxError("date cannot be combined with text fields in one tag", pos, "use date[...] on its own")
            return DATE_TAG
        if name in declared:
            if len(names) > 1:
                raise BQLSyntaxError(f"the declared field {name} cannot share a tag", pos, f"one declared field per tag: w[{name}] OR w[title]")
            return frozenset({name})
        if name not in FIELD_ALIASES:
            close = difflib.get_close_matches(name, _FIELD_NAMES + [DATE_TAG, *declared], n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            more = ", and this index's text fields: " + ", ".join(sorted(declared)) if declared else ""
            raise BQLSyntaxError(f"unknown field {written!r}", pos, hint + "valid fields: " + FIELD_HELP + more)
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
    return replace(node, children=tuple(scoped(c, fields, pos) for c in node.children))  # type: ignore[union-attr]


# ---------------------------------------------------------------- the productions' values
# Both parsers below build their nodes with these, so a production means the same in each.


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
            raise BQLSyntaxError(f"{word.text!r} is not a date", word.pos, "a date filter is written date[2018..2023] or 2018..2023[date]")
        return _Item(_date_node(word.text, word.pos, span), False), False
    return _Item(_bare(word, fields, span), False), fields  # type: ignore[arg-type]


def _phrase_item(phrase: Tok, tag: Tok | None) -> tuple[_Item, Any]:
    if tag is None:
        return _Item(_phrase(phrase), False), False
    node = replace(_phrase(phrase), fields=_text_fields(tag), span=(phrase.pos, tag.pos + len(tag.text)))
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
    return _Item(ast.Filter(name.lower(), canonical, span=_tok_span(t), spec_pos=t.pos + bracket + 1), False), False


def _nearcall(t: Tok) -> ast.Near:
    head, args = t.text.split("(", 1)
    inner = args[:-1]
    left_raw, right_raw = inner.split(",")
    base = t.pos + len(head) + 1
    left = Tok(left_raw.strip(), base + len(left_raw) - len(left_raw.lstrip()))
    rbase = base + len(left_raw) + 1
    right = Tok(right_raw.strip(), rbase + len(right_raw) - len(right_raw.lstrip()))
    return _near(Tok(head.strip(), t.pos), left, right, _tok_span(t))


class BQLParser(Parser):
    """The grammar of record: its tables prove BQL unambiguous (no conflicts), and every error
    message comes from here. `_Descent` takes the same productions faster."""

    tokens = BQLLexer.tokens
    track_positions = False  # nodes carry their own spans

    @_("or_expr OR and_expr")  # type: ignore[name-defined]  # noqa: F821
    def or_expr(self, p: Any) -> ast.Node:
        return _or([p.or_expr, p.and_expr.node()])

    @_("and_expr")  # type: ignore[name-defined]  # noqa: F821
    def or_expr(self, p: Any) -> ast.Node:  # noqa: F811
        return p.and_expr.node()

    @_("and_expr AND not_expr")  # type: ignore[name-defined]  # noqa: F821
    def and_expr(self, p: Any) -> _AndList:
        p.and_expr.conjoin(p.not_expr[0])
        return p.and_expr

    @_("and_expr not_expr")  # type: ignore[name-defined]  # noqa: F821
    def and_expr(self, p: Any) -> _AndList:  # noqa: F811
        item, tagged = p.not_expr
        p.and_expr.juxtapose(item, tagged)
        return p.and_expr

    @_("not_expr")  # type: ignore[name-defined]  # noqa: F821
    def and_expr(self, p: Any) -> _AndList:  # noqa: F811
        return _AndList(p.not_expr[0])

    # not_expr values are (item, tag fields if the item is a tagged bare word else False).
    @_("NOT not_expr", "MINUS not_expr")  # type: ignore[name-defined]  # noqa: F821
    def not_expr(self, p: Any) -> tuple[_Item, Any]:
        return _negated(p[0], p.not_expr[0].node)

    @_("primary")  # type: ignore[name-defined]  # noqa: F821
    def not_expr(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return p.primary

    @_("WORD", "PREFIX")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:
        return _word_item(p[0], None)

    @_("WORD TAG", "PREFIX TAG")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _word_item(p[0], p.TAG)

    @_("PHRASE")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _phrase_item(p.PHRASE, None)

    @_("PHRASE TAG")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _phrase_item(p.PHRASE, p.TAG)

    @_("near")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _near_item(p.near, None)

    @_("near TAG")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _near_item(p.near, p.TAG)

    @_("LPAREN or_expr RPAREN")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _group_item(p.LPAREN, p.or_expr, p.RPAREN, None)

    @_("LPAREN or_expr RPAREN TAG")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _group_item(p.LPAREN, p.or_expr, p.RPAREN, p.TAG)

    @_("DATE")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _date_item(p.DATE)

    @_("WORD NEAR WORD")  # type: ignore[name-defined]  # noqa: F821
    def near(self, p: Any) -> ast.Near:
        return _near(p.NEAR, p.WORD0, p.WORD1, (p.WORD0.pos, p.WORD1.pos + len(p.WORD1.text)))

    @_("NEARCALL")  # type: ignore[name-defined]  # noqa: F821
    def near(self, p: Any) -> ast.Near:  # noqa: F811
        return _nearcall(p.NEARCALL)

    def error(self, t: Any) -> None:
        raise _error_for(self._text, self._toks, t)


def _text_fields(tag: Tok, group: bool = False) -> frozenset[Field]:
    fields = parse_fields(tag)
    if fields == DATE_TAG:
        what = "a group" if group else "a phrase or NEAR"
        raise BQLSyntaxError(f"[date] cannot scope {what}", tag.pos, "a date filter is written date[2018..2023] or 2018..2023[date]")
    return fields  # type: ignore[return-value]


def _bare(t: Tok, fields: ast.Fields = None, span: ast.Span | None = None) -> ast.Term | ast.Prefix:
    """The node of a WORD or PREFIX token, with a scope and a span (default: the token's)."""
    span = span or _tok_span(t)
    if t.text.endswith("*"):
        stem = t.text[:-1]
        if "*" in stem:
            raise BQLSyntaxError(f"'*' inside {t.text!r}", t.pos + stem.index("*"), "'*' is a wildcard only at the end of a word")
        terms = analyze(stem)
        if len(terms) != 1:
            if not terms:
                raise BQLSyntaxError(f"{t.text!r} has no letter or digit before '*'", t.pos, "write at least one letter, as in clos*")
            raise BQLSyntaxError(f"{t.text!r} is not a single word", t.pos, f"a wildcard stem must be one term; {stem!r} splits into {' '.join(terms)}")
        return ast.Prefix(stem, fields, span=span)
    if "*" in t.text:
        raise BQLSyntaxError(f"'*' inside {t.text!r}", t.pos + t.text.index("*"), "'*' is a wildcard only at the end of a word")
    if not analyze(t.text):
        raise BQLSyntaxError(f"{t.text!r} has no searchable term", t.pos, "a term needs a letter or digit; quote text to search for a phrase")
    return ast.Term(t.text, fields, span=span)


def _phrase(t: Tok) -> ast.Phrase:
    text = t.text[1:-1]
    if "*" in text:
        raise BQLSyntaxError("'*' inside a phrase", t.pos + 1 + text.index("*"), "wildcards do not work inside quotes; use word* outside them")
    if not analyze(text):
        raise BQLSyntaxError("empty phrase", t.pos, "put words between the quotes, or remove them")
    return ast.Phrase(text, span=_tok_span(t))


def _near(op: Tok, left: Tok, right: Tok, span: ast.Span) -> ast.Near:
    digits = op.text.split("/", 1)[1]
    if len(digits) > MAX_NEAR_DIGITS:  # int() refuses more than 4300 digits, and no unit is that long
        raise BQLSyntaxError(f"NEAR distance of {len(digits)} digits", op.pos + 5, f"write NEAR/n with at most {MAX_NEAR_DIGITS} digits")
    distance = int(digits)
    if distance < 1:
        raise BQLSyntaxError("NEAR/0 can never match", op.pos, "adjacent words are 1 apart: use NEAR/1 or a phrase")
    for w in (left, right):
        if len(analyze(w.text)) != 1 or w.text.endswith("*"):
            raise BQLSyntaxError(f"NEAR operand {w.text!r} is not a single word", w.pos, "NEAR takes one plain word on each side")
    return ast.Near(left.text, right.text, distance, span=span)


_DESCRIBE = {"AND": "AND", "OR": "OR", "NOT": "NOT", "MINUS": "-", "NEAR": "NEAR"}


def _error_for(text: str, toks: list[Any], t: Any) -> BQLSyntaxError:
    """The message for a token the grammar cannot take (None at the end of the query)."""
    if t is None:
        last = toks[-1] if toks else None
        depth = sum(1 if k.type == "LPAREN" else -1 if k.type == "RPAREN" else 0 for k in toks)
        if depth > 0:
            opener = [k for k in toks if k.type == "LPAREN"][-1]
            return BQLSyntaxError("expected a closing ')'", len(text), f"the '(' at {opener.value.pos} is never closed")
        if last is not None and last.type in _DESCRIBE:
            return BQLSyntaxError(f"expected a term after {last.value.text!r}", len(text), "a query cannot end with an operator")
        return BQLSyntaxError("unexpected end of query", len(text), "")
    i = next(i for i, k in enumerate(toks) if k is t)
    prev = toks[i - 1] if i else None
    v: Tok = t.value
    if t.type == "RPAREN":
        if prev is not None and prev.type == "LPAREN":
            return BQLSyntaxError("empty parentheses", prev.value.pos, "put a query inside them, or remove them")
        depth = sum(1 if k.type == "LPAREN" else -1 if k.type == "RPAREN" else 0 for k in toks[:i])
        if depth <= 0:
            return BQLSyntaxError("unmatched ')'", v.pos, "remove it or add a '(' before it")
        return BQLSyntaxError(f"expected a term after {prev.value.text!r}", v.pos, "an operator needs a term on each side")
    if t.type in ("AND", "OR"):
        if prev is None:
            return BQLSyntaxError(f"query starts with {v.text!r}", v.pos, f"{v.text.upper()} needs a term on each side")
        return BQLSyntaxError(f"unexpected {v.text!r} after {prev.value.text!r}", v.pos, f"{v.text.upper()} needs a term on each side; to search for the word, quote it: \"{v.text}\"")
    if t.type == "NEAR":
        return BQLSyntaxError(f"unexpected {v.text!r}", v.pos, "NEAR joins two plain words: a NEAR/3 b or NEAR/3(a, b)")
    if t.type == "TAG":
        return BQLSyntaxError(f"unexpected tag {v.text!r}", v.pos, "a tag follows the word, phrase or group it scopes, as in word[title]")
    return BQLSyntaxError(f"unexpected {v.text!r}", v.pos, "")


def _prescan(toks: Iterator[Any]) -> Iterator[Any]:
    """The tokens, checked against the limits as they are lexed, so `(` * 10000 stops at the 33rd."""
    depth = negations = clauses = 0
    for k in toks:
        if k.type == "LPAREN":
            depth += 1
            if depth > MAX_DEPTH:
                raise BQLLimitError("nesting depth", depth, MAX_DEPTH, "too many nested parentheses", pos=k.value.pos)
        elif k.type == "RPAREN":
            depth -= 1
        elif k.type in ("NOT", "MINUS"):
            negations += 1
            if negations > MAX_NEGATIONS:
                raise BQLLimitError("negations", negations, MAX_NEGATIONS, "too many NOT operators", pos=k.value.pos)
        elif k.type in ("WORD", "PREFIX", "PHRASE", "DATE", "NEARCALL"):
            clauses += 1
            if clauses > MAX_CLAUSES:
                raise BQLLimitError("clauses", clauses, MAX_CLAUSES, "too many words, phrases and filters", pos=k.value.pos)
        yield k


CANONICAL_GROWTH = 64  # a bound on len(canonical) / len(text): shorter texts need no check
_STARTS = frozenset({"NOT", "MINUS", "WORD", "PREFIX", "PHRASE", "NEARCALL", "LPAREN", "DATE"})  # what can begin a not_expr
_CLAUSES = frozenset({"WORD", "PREFIX", "PHRASE", "DATE", "NEARCALL"})


class _Fail(Exception):
    """Not a query `_Descent` takes: the grammar decides (and words the error)."""


class _Descent:
    """The grammar's productions as recursive descent over `scan`'s tokens, building each node
    with the same functions as `BQLParser`'s actions. sly's LALR driver costs 100-400 us a query
    in Python; this, a few. It takes a query only if the grammar gives it this very tree
    (tests/engine/test_bql_parser.py checks that against generated queries) and otherwise fails,
    so errors, limits and their messages stay the grammar's."""

    def __init__(self, toks: list[tuple[str, Tok]]) -> None:
        self.toks = toks
        self.kinds = [k for k, _ in toks] + [None]  # None: the end
        self.i = 0

    def peek(self) -> str | None:
        return self.kinds[self.i]

    def take(self, kind: str | None = None) -> Tok:
        i = self.i
        if self.kinds[i] is None or (kind is not None and self.kinds[i] != kind):
            raise _Fail
        self.i = i + 1
        return self.toks[i][1]

    def tag(self) -> Tok | None:
        return self.take() if self.peek() == "TAG" else None

    def query(self) -> ast.Node:
        node = self.or_expr()
        if self.i != len(self.toks):
            raise _Fail
        return node

    def or_expr(self) -> ast.Node:
        operands = [self.and_expr().node()]
        while self.kinds[self.i] == "OR":
            self.i += 1
            operands.append(self.and_expr().node())
        return operands[0] if len(operands) == 1 else _or(operands)

    def and_expr(self) -> _AndList:
        run = _AndList(self.not_expr()[0])
        while True:
            kind = self.peek()
            if kind == "AND":
                self.i += 1
                run.conjoin(self.not_expr()[0])
            elif kind in _STARTS:
                run.juxtapose(*self.not_expr())
            else:
                return run

    def not_expr(self) -> tuple[_Item, Any]:
        if self.peek() in ("NOT", "MINUS"):
            op = self.take()
            return _negated(op, self.not_expr()[0].node)
        return self.primary()

    def primary(self) -> tuple[_Item, Any]:
        kind = self.peek()
        t = self.take()
        if kind == "WORD" and self.peek() == "NEAR":
            op = self.take()
            right = self.take("WORD")
            return _near_item(_near(op, t, right, (t.pos, right.pos + len(right.text))), self.tag())
        if kind in ("WORD", "PREFIX"):
            return _word_item(t, self.tag())
        if kind == "PHRASE":
            return _phrase_item(t, self.tag())
        if kind == "NEARCALL":
            return _near_item(_nearcall(t), self.tag())
        if kind == "LPAREN":
            expr = self.or_expr()
            return _group_item(t, expr, self.take("RPAREN"), self.tag())
        if kind == "DATE":
            return _date_item(t)
        raise _Fail


def parse_fast(text: str) -> ast.Node | None:
    """The grammar's tree of `text` by recursive descent, or None where the grammar must speak:
    a syntax error, a limit, a control character (`parse_lalr` then raises the error)."""
    if len(text) > MAX_QUERY_CHARS or BAD_CHAR.search(text):
        return None
    toks = scan(text)
    if not toks:
        return None
    depth = negations = clauses = 0
    for kind, _ in toks:  # the limits `_prescan` enforces: over any of them, the grammar reports it
        if kind == "LPAREN":
            depth += 1
            if depth > MAX_DEPTH:
                return None
        elif kind == "RPAREN":
            depth -= 1
        elif kind in ("NOT", "MINUS"):
            negations += 1
        elif kind in _CLAUSES:
            clauses += 1
    if negations > MAX_NEGATIONS or clauses > MAX_CLAUSES:
        return None
    try:
        return _Descent(toks).query()
    except (_Fail, BQLSyntaxError, RecursionError):
        return None


def parse(text: str) -> ast.Node:
    """Parse a BQL query; raises BQLSyntaxError (with `pos` and `hint`) or BQLLimitError."""
    if not isinstance(text, str):
        raise BQLSyntaxError(f"a query must be a string, not {type(text).__name__}", 0, "")
    fast = parse_fast(text)
    tree = fast if fast is not None else parse_lalr(text)
    # The length limit holds for the canonical form too, so that every accepted query round-trips
    # (explicit ANDs and a tag on every word make it longer, up to ~40x for one-letter words).
    if len(text) * CANONICAL_GROWTH > MAX_QUERY_CHARS:
        canonical = len(str(tree))
        if canonical > MAX_QUERY_CHARS:
            raise BQLLimitError("query length", canonical, MAX_QUERY_CHARS, "characters once written in canonical form: AND explicit, "
                                "a field tag on every word; shorten the query", pos=min(len(text), MAX_QUERY_CHARS))
    return tree


def parse_lalr(text: str) -> ast.Node:
    """`parse` of a string through the grammar alone (no `parse_fast`)."""
    if len(text) > MAX_QUERY_CHARS:
        raise BQLLimitError("query length", len(text), MAX_QUERY_CHARS, "characters", pos=MAX_QUERY_CHARS)
    bad = BAD_CHAR.search(text)
    if bad:
        raise BQLSyntaxError(f"control character U+{ord(bad.group()):04X}", bad.start(), "remove it")
    toks = list(_prescan(tokenize(text)))
    if not toks:
        raise BQLSyntaxError("empty query", 0, 'type a word, a "phrase" or a field query such as heatwave[title]')
    parser = BQLParser()  # a fresh instance per parse: sly keeps its stacks on the instance
    parser._text, parser._toks = text, toks
    return parser.parse(iter(toks))
