"""BQL grammar (sly, LALR) and `parse(text) -> Node`.

Precedence, loosest first: OR, then AND (explicit or by juxtaposition), then NOT / `-`, then infix
NEAR. It is written into the grammar's layers (or_expr > and_expr > not_expr > primary) rather
than a precedence table, because NOT is both prefix (`NOT a`) and, by juxtaposition, binary
(`a NOT b` = a AND NOT b), which a single precedence level cannot express.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, replace
from typing import Any, Iterator

from sly import Parser

from sieve.engine.analysis import analyze
from sieve.engine.bql import ast
from sieve.engine.bql.dates import parse_date_spec
from sieve.engine.bql.lexer import BAD_CHAR, BQLLexer, Tok, tokenize
from sieve.engine.fields import DATE_TAG, FIELD_ALIASES, Field
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


def parse_fields(tag: Tok) -> frozenset[Field] | str:
    """Fields named in a tag token `[a, b]`, or the string "date" for a date tag."""
    inner = tag.text[1:-1]
    names = [n.strip() for n in inner.split(",")]
    if not inner.strip():
        raise BQLSyntaxError("empty tag '[]'", tag.pos, "name a field: " + FIELD_HELP)
    fields: set[Field] = set()
    offset = tag.pos + 1
    for raw in inner.split(","):
        name = raw.strip().lower()
        pos = offset + len(raw) - len(raw.lstrip())
        offset += len(raw) + 1
        if not name:
            raise BQLSyntaxError("empty field name in tag", pos, "separate field names with single commas")
        if name == DATE_TAG:
            if len(names) > 1:
                raise BQLSyntaxError("date cannot be combined with text fields in one tag", pos, "use date[...] on its own")
            return DATE_TAG
        if name not in FIELD_ALIASES:
            close = difflib.get_close_matches(name, _FIELD_NAMES + [DATE_TAG], n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise BQLSyntaxError(f"unknown field {raw.strip()!r}", pos, hint + "valid fields: " + FIELD_HELP)
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
    if isinstance(node, ast.DateRange):
        return node
    if isinstance(node, ast.Not):
        return replace(node, child=scoped(node.child, fields, pos))
    return replace(node, children=tuple(scoped(c, fields, pos) for c in node.children))  # type: ignore[union-attr]


class BQLParser(Parser):
    tokens = BQLLexer.tokens
    track_positions = False  # nodes carry their own spans

    @_("or_expr OR and_expr")  # type: ignore[name-defined]  # noqa: F821
    def or_expr(self, p: Any) -> ast.Node:
        left, right = p.or_expr, p.and_expr.node()
        kids = (left.children if isinstance(left, ast.Or) else (left,)) + (right.children if isinstance(right, ast.Or) else (right,))
        return ast.Or(kids, span=(left.span[0], right.span[1]))

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
        child = p.not_expr[0].node
        return _Item(ast.Not(child, span=(p[0].pos, child.span[1])), False), False

    @_("primary")  # type: ignore[name-defined]  # noqa: F821
    def not_expr(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return p.primary

    @_("WORD", "PREFIX")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:
        return _Item(_bare(p[0]), True), False

    @_("WORD TAG", "PREFIX TAG")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        word, tag = p[0], p.TAG
        fields = parse_fields(tag)
        span = (word.pos, tag.pos + len(tag.text))
        if fields == DATE_TAG:
            if word.text.endswith("*"):
                raise BQLSyntaxError(f"{word.text!r} is not a date", word.pos, "a date filter is written date[2018..2023] or 2018..2023[date]")
            return _Item(_date_node(word.text, word.pos, span), False), False
        node = replace(_bare(word), fields=fields, span=span)
        return _Item(node, False), fields

    @_("PHRASE")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _Item(_phrase(p.PHRASE), False), False

    @_("PHRASE TAG")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        fields = _text_fields(p.TAG)
        node = replace(_phrase(p.PHRASE), fields=fields, span=(p.PHRASE.pos, p.TAG.pos + len(p.TAG.text)))
        return _Item(node, False), False

    @_("near")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _Item(p.near, False), False

    @_("near TAG")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        node = replace(p.near, fields=_text_fields(p.TAG), span=(p.near.span[0], p.TAG.pos + len(p.TAG.text)))
        return _Item(node, False), False

    @_("LPAREN or_expr RPAREN")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _Item(replace(p.or_expr, span=(p.LPAREN.pos, p.RPAREN.pos + 1)), False), False

    @_("LPAREN or_expr RPAREN TAG")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        fields = _text_fields(p.TAG, group=True)
        node = scoped(p.or_expr, fields, p.TAG.pos)
        return _Item(replace(node, span=(p.LPAREN.pos, p.TAG.pos + len(p.TAG.text))), False), False

    @_("DATE")  # type: ignore[name-defined]  # noqa: F821
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        t = p.DATE
        spec = t.text[t.text.index("[") + 1 : -1]
        return _Item(_date_node(spec, t.pos + t.text.index("[") + 1, _tok_span(t)), False), False

    @_("WORD NEAR WORD")  # type: ignore[name-defined]  # noqa: F821
    def near(self, p: Any) -> ast.Near:
        return _near(p.NEAR, p.WORD0, p.WORD1, (p.WORD0.pos, p.WORD1.pos + len(p.WORD1.text)))

    @_("NEARCALL")  # type: ignore[name-defined]  # noqa: F821
    def near(self, p: Any) -> ast.Near:  # noqa: F811
        t = p.NEARCALL
        head, args = t.text.split("(", 1)
        inner = args[:-1]
        left_raw, right_raw = inner.split(",")
        base = t.pos + len(head) + 1
        left = Tok(left_raw.strip(), base + len(left_raw) - len(left_raw.lstrip()))
        rbase = base + len(left_raw) + 1
        right = Tok(right_raw.strip(), rbase + len(right_raw) - len(right_raw.lstrip()))
        return _near(Tok(head.strip(), t.pos), left, right, _tok_span(t))

    def error(self, t: Any) -> None:
        raise _error_for(self._text, self._toks, t)


def _text_fields(tag: Tok, group: bool = False) -> frozenset[Field]:
    fields = parse_fields(tag)
    if fields == DATE_TAG:
        what = "a group" if group else "a phrase or NEAR"
        raise BQLSyntaxError(f"[date] cannot scope {what}", tag.pos, "a date filter is written date[2018..2023] or 2018..2023[date]")
    return fields  # type: ignore[return-value]


def _bare(t: Tok) -> ast.Node:
    span = _tok_span(t)
    if t.text.endswith("*"):
        stem = t.text[:-1]
        if "*" in stem:
            raise BQLSyntaxError(f"'*' inside {t.text!r}", t.pos + stem.index("*"), "'*' is a wildcard only at the end of a word")
        terms = analyze(stem)
        if len(terms) != 1:
            if not terms:
                raise BQLSyntaxError(f"{t.text!r} has no letter or digit before '*'", t.pos, "write at least one letter, as in clos*")
            raise BQLSyntaxError(f"{t.text!r} is not a single word", t.pos, f"a wildcard stem must be one term; {stem!r} splits into {' '.join(terms)}")
        return ast.Prefix(stem, span=span)
    if "*" in t.text:
        raise BQLSyntaxError(f"'*' inside {t.text!r}", t.pos + t.text.index("*"), "'*' is a wildcard only at the end of a word")
    if not analyze(t.text):
        raise BQLSyntaxError(f"{t.text!r} has no searchable term", t.pos, "a term needs a letter or digit; quote text to search for a phrase")
    return ast.Term(t.text, span=span)


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


# A plain word or a quoted phrase of plain words with single spaces, optionally tagged with field
# names and no spaces (heat[title,body], "heat wave"[title]).
_WORD = r'(?:"[A-Za-z0-9]+(?: [A-Za-z0-9]+)*"|[A-Za-z0-9]+)(?:\[[A-Za-z]+(?:,[A-Za-z]+)*\])?'
_PLAIN = re.compile(rf"[ \t\r\n]*{_WORD}(?:[ \t\r\n]+{_WORD})*[ \t\r\n]*")  # the lexer's spaces that are not control characters
_ITEM = re.compile(r'("[A-Za-z0-9 ]+"|[A-Za-z0-9]+)(?:\[([A-Za-z,]+)\])?')
_KEYWORDS = {"AND", "OR", "NOT", "NEAR"}
PLAIN_MAX_WORDS = 64
CANONICAL_GROWTH = 64  # a bound on len(canonical) / len(text): shorter texts need no check


def parse_plain(text: str) -> ast.Node | None:
    """The tree of a query of plain ASCII words and quoted phrases of them, all bare or each tagged
    with known text fields (`heat[title,body]`, `"heat wave"[title]`), either joined by a bare OR alone or side by side, with or without AND,
    each perhaps after one NOT (`a[ti] AND NOT b[ti] c[ti]`); None for anything else (errors
    included: the grammar reports them). These are most of what agents type; the LALR parser
    takes 40-250 us for them in Python. Tested to give exactly the parser's tree
    (tests/engine/test_bql_parser.py)."""
    if len(text) > 4 * PLAIN_MAX_WORDS * 8 or not _PLAIN.fullmatch(text):
        return None
    items = list(_ITEM.finditer(text))
    if len(items) > PLAIN_MAX_WORDS:
        return None
    upper = [m.group(1).upper() for m in items]
    if any(u in _KEYWORDS and m.group(2) is not None for u, m in zip(upper, items)):
        return None  # an operator with a tag: the grammar's error
    if len(items) >= 3 and len(items) % 2 and all(u == "OR" for u in upper[1::2]):
        if any(u in _KEYWORDS for u in upper[0::2]):
            return None
        terms = _plain_terms(items[0::2])
        return None if terms is None else ast.Or(tuple(terms), span=(terms[0].span[0], terms[-1].span[1]))
    # An AND run: [NOT] word ([AND] [NOT] word)*
    words, negated, i = [], [], 0
    while i < len(items):
        if words and upper[i] == "AND":
            i += 1
        neg = i < len(items) and upper[i] == "NOT"
        i += neg
        if i >= len(items) or upper[i] in _KEYWORDS:
            return None
        words.append(items[i])
        negated.append(items[i - 1].start() if neg else -1)
        i += 1
    terms = _plain_terms(words)
    if terms is None:
        return None
    nodes = [t if at < 0 else ast.Not(t, span=(at, t.span[1])) for t, at in zip(terms, negated)]
    return nodes[0] if len(nodes) == 1 else ast.And(tuple(nodes), span=(nodes[0].span[0], nodes[-1].span[1]))


def _plain_terms(items: list[re.Match[str]]) -> list[ast.Term | ast.Phrase] | None:
    """The words as terms and phrases; None if some but not all carry a tag (a tag also scopes the bare words
    before it, `Fort Santiago[title]`: the grammar's job) or a tag names an unknown field or date."""
    tagged = sum(m.group(2) is not None for m in items)
    if tagged not in (0, len(items)):
        return None
    terms = []
    for m in items:
        fields = None
        if m.group(2) is not None:
            names = m.group(2).lower().split(",")
            if not all(n in FIELD_ALIASES for n in names):
                return None
            fields = frozenset().union(*(FIELD_ALIASES[n] for n in names))
        word = m.group(1)
        terms.append(ast.Phrase(word[1:-1], fields, span=m.span()) if word[0] == '"' else ast.Term(word, fields, span=m.span()))
    return terms


def parse(text: str) -> ast.Node:
    """Parse a BQL query; raises BQLSyntaxError (with `pos` and `hint`) or BQLLimitError."""
    if not isinstance(text, str):
        raise BQLSyntaxError(f"a query must be a string, not {type(text).__name__}", 0, "")
    plain = parse_plain(text)
    tree = plain if plain is not None else parse_lalr(text)
    # The length limit holds for the canonical form too, so that every accepted query round-trips
    # (explicit ANDs and a tag on every word make it longer, up to ~40x for one-letter words).
    if len(text) * CANONICAL_GROWTH > MAX_QUERY_CHARS:
        canonical = len(str(tree))
        if canonical > MAX_QUERY_CHARS:
            raise BQLLimitError("query length", canonical, MAX_QUERY_CHARS, "characters once written in canonical form: AND explicit, "
                                "a field tag on every word; shorten the query", pos=min(len(text), MAX_QUERY_CHARS))
    return tree


def parse_lalr(text: str) -> ast.Node:
    """`parse` of a string without the plain-words shortcut: every query through the grammar."""
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
