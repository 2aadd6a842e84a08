"""BQL grammar (sly, LALR) and `parse(text) -> Node`.

Precedence, loosest first: OR, then AND (explicit or by juxtaposition), then NOT / `-`, then infix
NEAR. It is written into the grammar's layers (or_expr > and_expr > not_expr > primary) rather
than a precedence table, because NOT is both prefix (`NOT a`) and, by juxtaposition, binary
(`a NOT b` = a AND NOT b), which a single precedence level cannot express.
"""

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from sly import Parser

from sieve.engine.query.bql import ast
from sieve.engine.query.bql.descent import parse_fast
from sieve.engine.query.bql.lexer import BAD_CHAR, BQLLexer, Tok, tokenize
from sieve.engine.query.bql.productions import (
    _DECLARED,
    FIELD_HELP,
    MAX_CLAUSES,
    MAX_DEPTH,
    MAX_NEAR_DIGITS,
    MAX_NEGATIONS,
    MAX_QUERY_CHARS,
    _AndList,
    _date_item,
    _group_item,
    _Item,
    _near,
    _near_item,
    _nearcall,
    _negated,
    _or,
    _phrase_item,
    _word_item,
    declared_text_fields,
    parse_fields,
    scoped,
)
from sieve.errors import BQLLimitError, BQLSyntaxError

if TYPE_CHECKING:  # sly's metaclass supplies `_` in the class body at run time
    _F = TypeVar("_F", bound=Callable[..., Any])

    def _(*rules: str) -> Callable[[_F], _F]: ...


__all__ = [
    "FIELD_HELP",
    "MAX_CLAUSES",
    "MAX_DEPTH",
    "MAX_NEAR_DIGITS",
    "MAX_NEGATIONS",
    "MAX_QUERY_CHARS",
    "BQLParser",
    "declared_text_fields",
    "parse",
    "parse_fast",
    "parse_fields",
    "parse_for",
    "parse_lalr",
    "scoped",
]


class BQLParser(Parser):
    """The grammar of record: its tables prove BQL unambiguous (no conflicts), and every error
    message comes from here. `descent._Descent` takes the same productions faster."""

    tokens = BQLLexer.tokens
    track_positions = False  # nodes carry their own spans

    @_("or_expr OR and_expr")
    def or_expr(self, p: Any) -> ast.Node:
        return _or([p.or_expr, p.and_expr.node()])

    @_("and_expr")
    def or_expr(self, p: Any) -> ast.Node:  # noqa: F811
        return p.and_expr.node()

    @_("and_expr AND not_expr")
    def and_expr(self, p: Any) -> _AndList:
        p.and_expr.conjoin(p.not_expr[0])
        return p.and_expr

    @_("and_expr not_expr")
    def and_expr(self, p: Any) -> _AndList:  # noqa: F811
        item, tagged = p.not_expr
        p.and_expr.juxtapose(item, tagged)
        return p.and_expr

    @_("not_expr")
    def and_expr(self, p: Any) -> _AndList:  # noqa: F811
        return _AndList(p.not_expr[0])

    # not_expr values are (item, tag fields if the item is a tagged bare word else False).
    @_("NOT not_expr", "MINUS not_expr")
    def not_expr(self, p: Any) -> tuple[_Item, Any]:
        return _negated(p[0], p.not_expr[0].node)

    @_("primary")
    def not_expr(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return p.primary

    @_("WORD", "PREFIX")
    def primary(self, p: Any) -> tuple[_Item, Any]:
        return _word_item(p[0], None)

    @_("WORD TAG", "PREFIX TAG")
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _word_item(p[0], p.TAG)

    @_("PHRASE")
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _phrase_item(p.PHRASE, None)

    @_("PHRASE TAG")
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _phrase_item(p.PHRASE, p.TAG)

    @_("near")
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _near_item(p.near, None)

    @_("near TAG")
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _near_item(p.near, p.TAG)

    @_("LPAREN or_expr RPAREN")
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _group_item(p.LPAREN, p.or_expr, p.RPAREN, None)

    @_("LPAREN or_expr RPAREN TAG")
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _group_item(p.LPAREN, p.or_expr, p.RPAREN, p.TAG)

    @_("DATE")
    def primary(self, p: Any) -> tuple[_Item, Any]:  # noqa: F811
        return _date_item(p.DATE)

    @_("WORD NEAR WORD")
    def near(self, p: Any) -> ast.Near:
        return _near(p.NEAR, p.WORD0, p.WORD1, (p.WORD0.pos, p.WORD1.pos + len(p.WORD1.text)))

    @_("NEARCALL")
    def near(self, p: Any) -> ast.Near:  # noqa: F811
        return _nearcall(p.NEARCALL)

    def error(self, t: Any) -> None:
        raise _error_for(self._text, self._toks, t)


def parse_for(text: str, names: frozenset[str]) -> ast.Node:
    """`parse` with `names` (an index's declared text fields) accepted as field tags."""
    # most indexes declare none: nothing to set (a context manager costs 2 us)
    if not names and not _DECLARED.get():
        return parse(text)
    with declared_text_fields(names):
        return parse(text)


_DESCRIBE = {"AND": "AND", "OR": "OR", "NOT": "NOT", "MINUS": "-", "NEAR": "NEAR"}


def _error_for(text: str, toks: list[Any], t: Any) -> BQLSyntaxError:
    """The message for a token the grammar cannot take (None at the end of the query)."""
    if t is None:
        last = toks[-1] if toks else None
        depth = sum(1 if k.type == "LPAREN" else -1 if k.type == "RPAREN" else 0 for k in toks)
        if depth > 0:
            opener = [k for k in toks if k.type == "LPAREN"][-1]
            return BQLSyntaxError(
                "expected a closing ')'",
                len(text),
                f"the '(' at {opener.value.pos} is never closed",
            )
        if last is not None and last.type in _DESCRIBE:
            return BQLSyntaxError(
                f"expected a term after {last.value.text!r}",
                len(text),
                "a query cannot end with an operator",
            )
        return BQLSyntaxError("unexpected end of query", len(text), "")
    i = next(i for i, k in enumerate(toks) if k is t)
    prev = toks[i - 1] if i else None
    v: Tok = t.value
    if t.type == "RPAREN":
        if prev is not None and prev.type == "LPAREN":
            return BQLSyntaxError(
                "empty parentheses", prev.value.pos, "put a query inside them, or remove them"
            )
        depth = sum(1 if k.type == "LPAREN" else -1 if k.type == "RPAREN" else 0 for k in toks[:i])
        if depth <= 0:
            return BQLSyntaxError("unmatched ')'", v.pos, "remove it or add a '(' before it")
        assert prev is not None  # depth > 0: a token comes before this one
        return BQLSyntaxError(
            f"expected a term after {prev.value.text!r}",
            v.pos,
            "an operator needs a term on each side",
        )
    if t.type in ("AND", "OR"):
        if prev is None:
            return BQLSyntaxError(
                f"query starts with {v.text!r}",
                v.pos,
                f"{v.text.upper()} needs a term on each side",
            )
        return BQLSyntaxError(
            f"unexpected {v.text!r} after {prev.value.text!r}",
            v.pos,
            f"{v.text.upper()} needs a term on each side; to search for the word, quote it: "
            f'"{v.text}"',
        )
    if t.type == "NEAR":
        return BQLSyntaxError(
            f"unexpected {v.text!r}",
            v.pos,
            "NEAR joins two plain words: a NEAR/3 b or NEAR/3(a, b)",
        )
    if t.type == "TAG":
        return BQLSyntaxError(
            f"unexpected tag {v.text!r}",
            v.pos,
            "a tag follows the word, phrase or group it scopes, as in word[title]",
        )
    return BQLSyntaxError(f"unexpected {v.text!r}", v.pos, "")


def _prescan(toks: Iterator[Any]) -> Iterator[Any]:
    """The tokens, checked against the limits as they are lexed, so
    `(` * 10000 stops at the 33rd."""
    depth = negations = clauses = 0
    for k in toks:
        if k.type == "LPAREN":
            depth += 1
            if depth > MAX_DEPTH:
                raise BQLLimitError(
                    "nesting depth",
                    depth,
                    MAX_DEPTH,
                    "too many nested parentheses",
                    pos=k.value.pos,
                )
        elif k.type == "RPAREN":
            depth -= 1
        elif k.type in ("NOT", "MINUS"):
            negations += 1
            if negations > MAX_NEGATIONS:
                raise BQLLimitError(
                    "negations", negations, MAX_NEGATIONS, "too many NOT operators", pos=k.value.pos
                )
        elif k.type in ("WORD", "PREFIX", "PHRASE", "DATE", "NEARCALL"):
            clauses += 1
            if clauses > MAX_CLAUSES:
                raise BQLLimitError(
                    "clauses",
                    clauses,
                    MAX_CLAUSES,
                    "too many words, phrases and filters",
                    pos=k.value.pos,
                )
        yield k


CANONICAL_GROWTH = 64  # a bound on len(canonical) / len(text): shorter texts need no check


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
            raise BQLLimitError(
                "query length",
                canonical,
                MAX_QUERY_CHARS,
                "characters once written in canonical form: AND explicit, "
                "a field tag on every word; shorten the query",
                pos=min(len(text), MAX_QUERY_CHARS),
            )
    return tree


def parse_lalr(text: str) -> ast.Node:
    """`parse` of a string through the grammar alone (no `parse_fast`)."""
    if len(text) > MAX_QUERY_CHARS:
        raise BQLLimitError(
            "query length", len(text), MAX_QUERY_CHARS, "characters", pos=MAX_QUERY_CHARS
        )
    bad = BAD_CHAR.search(text)
    if bad:
        raise BQLSyntaxError(
            f"control character U+{ord(bad.group()):04X}", bad.start(), "remove it"
        )
    toks = list(_prescan(tokenize(text)))
    if not toks:
        raise BQLSyntaxError(
            "empty query", 0, 'type a word, a "phrase" or a field query such as heatwave[title]'
        )
    parser = BQLParser()  # a fresh instance per parse: sly keeps its stacks on the instance
    parser._text, parser._toks = text, toks
    return parser.parse(iter(toks))
