"""`parse(text) -> Node` for the Indri query language subset sieve reads (docs in `ast.py` and the
agent's manual). Indri's syntax is prefix operators with parenthesised operands and no precedence,
so a recursive-descent reader over a small scanner is the whole grammar:

    query    := node+                       several nodes: their #combine
    node     := operator | word
    operator := '#' NAME ['[' fields ']'] '(' operands ')' ['.' restriction]
    word     := (WORD | '"' text '"') ['*'] ['.' restriction]
    restriction := FIELD | '(' FIELD (',' FIELD)* ')'

Every error is an IndriSyntaxError with the 0-based position of what is wrong and a hint.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import replace

from sieve.engine.analysis.dates import parse_date_spec
from sieve.engine.analysis.fields import DATE_TAG, FIELD_ALIASES, Field, field_names
from sieve.engine.query.bql.lexer import BAD_CHAR
from sieve.engine.query.bql.parser import (
    FIELD_HELP,
    MAX_CLAUSES,
    MAX_DEPTH,
    MAX_NEAR_DIGITS,
    MAX_QUERY_CHARS,
)
from sieve.engine.query.indriql import ast
from sieve.engine.query.indriql.ast import scoped
from sieve.errors import BQLLimitError, IndriSyntaxError

BELIEF_OPS = ("combine", "weight", "or", "not", "band", "filreq", "filrej", "syn")
DATE_OPS = ("dateafter", "datebefore", "datebetween", "dateequals")
OPERATORS = BELIEF_OPS + DATE_OPS + ("odN", "N", "uwN", "uw")
_WINDOW = re.compile(r"(od|uw)?(\d*)$")
_NAME = re.compile(r"[A-Za-z0-9]*")
# a dot followed by a digit stays inside (3.5)
_WORD = re.compile(r'[^\s()\[\]#."*]+(?:\.\d[^\s()\[\]#."*]*)*')
_FIELD_NAME = re.compile(r"[A-Za-z_]\w*")
_SPACE = re.compile(r"\s*")
EXAMPLE = "#combine(#1(school closure) heatwave.title)"


def _error(message: str, pos: int, hint: str) -> IndriSyntaxError:
    return IndriSyntaxError(message, pos, hint)


def parse(text: str) -> ast.Node:
    """The syntax tree of an Indri query. Raises IndriSyntaxError (with position and hint) for a
    malformed one, BQLLimitError for one past the size limits BQL has too."""
    if not isinstance(text, str):
        raise IndriSyntaxError(
            f"a query is text, not {type(text).__name__}",
            0,
            f"write it as a string, e.g. {EXAMPLE}",
        )
    if len(text) > MAX_QUERY_CHARS:
        raise BQLLimitError("query length", len(text), MAX_QUERY_CHARS, "shorten the query")
    bad = BAD_CHAR.search(text)
    if bad:
        raise _error(f"control character {bad.group()!r} in the query", bad.start(), "remove it")
    return _Parser(text).query()


class _Parser:
    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.depth = 0
        self.leaves = 0

    # ------------------------------------------------------------ scanning

    def skip(self) -> int:
        self.i = _SPACE.match(self.s, self.i).end()  # type: ignore[union-attr]  # matches the empty string
        return self.i

    def peek(self) -> str:
        self.skip()
        return self.s[self.i] if self.i < len(self.s) else ""

    def expect(self, ch: str, what: str, hint: str) -> int:
        at = self.skip()
        if self.s.startswith(ch, at):
            self.i = at + 1
            return at
        found = f"{self.s[at]!r}" if at < len(self.s) else "the end of the query"
        raise _error(f"expected {what}, found {found}", at, hint)

    # ------------------------------------------------------------ grammar

    def query(self) -> ast.Node:
        nodes = []
        while self.peek():
            if self.peek() == ")":
                raise _error(
                    "unexpected ')'", self.i, "every ')' closes an operator's '(': remove this one"
                )
            nodes.append(self.node())
        if not nodes:
            raise _error("empty query", 0, f"write some words, or an operator such as {EXAMPLE}")
        if len(nodes) == 1:
            return nodes[0]
        return ast.Combine(tuple(nodes), span=(nodes[0].span[0], nodes[-1].span[1]))

    def node(self) -> ast.Node:
        ch = self.peek()
        if ch == "#":
            return self.operator()
        if ch in "([]":
            raise _error(
                f"unexpected {ch!r}",
                self.i,
                "brackets follow an operator's name "
                "(#combine[title](...)); parentheses hold its operands"
                if ch != "("
                else "parentheses come after an operator's name: #combine(a b), #1(a b)",
            )
        if ch in ".*":
            raise _error(
                f"unexpected {ch!r}",
                self.i,
                "a field restriction or * follows a word directly: dog.title, dog*",
            )
        return self.word()

    def word(self) -> ast.Word | ast.Wildcard:
        start = self.skip()
        if self.s.startswith('"', start):
            end = self.s.find('"', start + 1)
            if end < 0:
                raise _error("unterminated quote", start, 'close the word with a second "')
            text = self.s[start + 1 : end]
            if not text.strip():
                raise _error(
                    "empty quoted word", start, "put a word between the quotes, or leave them out"
                )
            self.i = end + 1
        else:
            m = _WORD.match(self.s, start)
            if not m:
                raise _error(
                    f"unexpected {self.s[start]!r}", start, 'quote a word that holds it: "U.S."'
                )
            text, self.i = m.group(), m.end()
        self._count(start)
        star = self.s.startswith("*", self.i)
        if star:
            self.i += 1
        fields = self.restriction()
        span = (start, self.i)
        if star:
            return ast.Wildcard(text, fields, span)
        return ast.Word(text, fields, span)

    def restriction(self) -> ast.Fields:
        """`.field` or `.(f1,f2)` right after a word or an operator's ')' (None if absent)."""
        if not self.s.startswith(".", self.i):
            return None
        dot = self.i
        self.i += 1
        if self.s.startswith("(", self.i):
            close = self.s.find(")", self.i)
            if close < 0:
                raise _error("unterminated field list", self.i, "close it: dog.(title,body)")
            names = self.s[self.i + 1 : close]
            fields = self.fields(names, self.i + 1)
            self.i = close + 1
            return fields
        m = _FIELD_NAME.match(self.s, self.i)
        if not m:
            raise _error(
                "a '.' must be followed by a field name",
                dot,
                'write dog.title or dog.(title,body); quote a word that holds a dot: "U.S."',
            )
        self.i = m.end()
        if self.s.startswith(",", self.i):
            raise _error(
                "a word cannot be restricted to several fields at once",
                self.i,
                "fields do not nest here: write dog.(title,body) for either field",
            )
        return self.fields(m.group(), m.start(), dotted=True)

    def fields(self, names: str, pos: int, dotted: bool = False) -> frozenset[Field]:
        out: set[Field] = set()
        for written, at in field_names(names, pos):
            name = written.lower()
            if not name:
                raise _error(
                    "empty field name",
                    at,
                    "separate field names with single commas: dog.(title,body)",
                )
            if name == DATE_TAG:
                raise _error(
                    "date is not a text field",
                    at,
                    "filter dates with #dateafter(...), #datebefore(...), #datebetween(a b)",
                )
            if name not in FIELD_ALIASES:
                close = difflib.get_close_matches(name, sorted(FIELD_ALIASES), n=1)
                hint = f"did you mean {close[0]}? " if close else ""
                quote = '; a word that holds a dot is quoted: "U.S."' if dotted else ""
                raise _error(
                    f"unknown field {written!r}",
                    at,
                    hint + "valid fields: " + FIELD_HELP.replace(", date", "") + quote,
                )
            out |= FIELD_ALIASES[name]
        return frozenset(out)

    def operator(self) -> ast.Node:
        start = self.skip()
        m = _NAME.match(self.s, start + 1)
        name = m.group().lower()  # type: ignore[union-attr]  # called at '#name'
        self.i = m.end()  # type: ignore[union-attr]  # called at '#name'
        if not name:
            raise _error(
                "'#' must be followed by an operator name",
                start,
                "for example #combine(...), #band(...), #1(...)",
            )
        window = _WINDOW.match(name)
        if (
            name not in BELIEF_OPS
            and name not in DATE_OPS
            and not (window and (window.group(1) or window.group(2)))
        ):
            close = difflib.get_close_matches(name, BELIEF_OPS + DATE_OPS + ("od", "uw"), n=1)
            hint = f"did you mean #{close[0]}? " if close else ""
            raise _error(
                f"unknown operator #{name}", start, hint + "known: #" + ", #".join(OPERATORS)
            )
        extent = None
        if self.s.startswith("[", self.i):
            if name not in ("combine", "weight"):
                raise _error(
                    f"#{name} takes no [field]",
                    self.i,
                    f"restrict its words instead: #{name}(...).title, "
                    "or wrap it: #combine[title](...)",
                )
            end = self.s.find("]", self.i)
            if end < 0:
                raise _error("unterminated '['", self.i, "close it: #combine[title](...)")
            extent = self.fields(self.s[self.i + 1 : end], self.i + 1)
            self.i = end + 1
        if not self.s.startswith("(", self.i):
            raise _error(
                f"#{name} must be followed directly by '('",
                self.i,
                f"write #{name}(...) with no space before '('",
            )
        self.i += 1
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise BQLLimitError(
                "nesting depth", self.depth, MAX_DEPTH, "flatten the query", pos=start
            )
        if name in DATE_OPS:
            node: ast.Node = self.dates(name, start)
        elif window and (window.group(1) or window.group(2)):
            node = self.window(name, window.group(1) or "od", window.group(2), start)
        elif name == "weight":
            node = self.weighted(start, extent)
        else:
            node = self.belief(name, start, extent)
        self.depth -= 1
        return node

    def operands(self, name: str) -> list[ast.Node]:
        """Operands up to the closing ')', which is consumed."""
        out: list[ast.Node] = []
        while True:
            ch = self.peek()
            if ch == ")":
                self.i += 1
                return out
            if not ch:
                raise _error(
                    f"#{name}( is not closed", len(self.s), "add ')' at the end of its operands"
                )
            out.append(self.node())

    def _close_span(self, start: int) -> ast.Span:
        return (start, self.i)

    def belief(self, name: str, start: int, extent: ast.Fields) -> ast.Node:
        kids = self.operands(name)
        span = self._close_span(start)
        if not kids:
            raise _error(
                f"#{name}() has no operands", start, f"put words or operators inside: #{name}(a b)"
            )
        if name == "syn":
            return self.syn(kids, start)
        self._no_restriction(name)
        if extent is not None:
            kids = [scoped(k, extent) for k in kids]
        if name == "combine":
            return ast.Combine(tuple(kids), None, extent, span)
        if name == "or":
            return ast.Or(tuple(kids), span)
        if name == "band":
            return ast.Band(tuple(kids), span)
        if name == "not":
            if len(kids) != 1:
                raise _error(
                    f"#not takes one operand, got {len(kids)}",
                    start,
                    "wrap several in #combine: #not(#combine(a b))",
                )
            return ast.Not(kids[0], span)
        if name in ("filreq", "filrej"):
            if len(kids) != 2:
                raise _error(
                    f"#{name} takes two operands (a filter, then "
                    f"the query that ranks), got {len(kids)}",
                    start,
                    f"#{name}(#band(a b) #combine(a b c))",
                )
            return ast.Filter(name == "filreq", kids[0], kids[1], span)
        raise AssertionError(name)

    def _no_restriction(self, name: str) -> None:
        if self.s.startswith(".", self.i):
            raise _error(
                f"a field restriction cannot follow #{name}(...)",
                self.i,
                "restrict the words inside, or write #combine[title](...); "
                "only words, windows and #syn take .field",
            )

    def syn(self, kids: list[ast.Node], start: int) -> ast.Syn:
        for k in kids:
            if not isinstance(k, (ast.Word, ast.Wildcard, ast.Window)):
                raise _error(
                    "#syn takes words, wildcards and windows only",
                    k.span[0],
                    "#syn(car automobile #1(motor car))",
                )
            if k.fields is not None:
                raise _error(
                    "a field restriction inside #syn",
                    k.span[0],
                    "put it on the #syn: #syn(a b).title",
                )
        fields = self.restriction()
        kids = [replace(k, fields=fields) for k in kids]  # type: ignore[arg-type]  # replace() of a union
        return ast.Syn(tuple(kids), fields, (start, self.i))  # type: ignore[arg-type]  # kids checked above

    def weighted(self, start: int, extent: ast.Fields) -> ast.Combine:
        weights: list[float] = []
        kids: list[ast.Node] = []
        while True:
            ch = self.peek()
            if ch == ")":
                self.i += 1
                break
            if not ch:
                raise _error(
                    "#weight( is not closed", len(self.s), "add ')' at the end of its operands"
                )
            at = self.i
            m = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?").match(self.s, at)
            if not m or (m.end() < len(self.s) and not self.s[m.end()].isspace()):
                raise _error(
                    "#weight wants a weight before each operand",
                    at,
                    "#weight(2 dog 0.5 cat): a number, then what it weighs",
                )
            w = float(m.group())
            if not math.isfinite(w) or w <= 0:
                raise _error(
                    f"weight {m.group()} is not above 0", at, "weights are positive numbers"
                )
            self.i = m.end()
            if self.peek() in (")", ""):
                raise _error(
                    f"weight {m.group()} has no operand",
                    self.i,
                    "#weight(2 dog 0.5 cat): each weight is followed by what it weighs",
                )
            weights.append(w)
            kids.append(self.node())
        span = self._close_span(start)
        if not kids:
            raise _error("#weight() has no operands", start, "#weight(2 dog 0.5 cat)")
        self._no_restriction("weight")
        if extent is not None:
            kids = [scoped(k, extent) for k in kids]
        return ast.Combine(tuple(kids), tuple(weights), extent, span)

    def window(self, name: str, kind: str, digits: str, start: int) -> ast.Window:
        if kind == "od" and not digits:
            raise _error(
                "#od needs a width",
                start,
                "#od3(a b) (at most 3 positions from each word to the next); #1(a b) is the phrase",
            )
        if len(digits) > MAX_NEAR_DIGITS:
            raise _error(
                f"window width {digits} is too large",
                start,
                "use a width below 10^18, or #uw(...) for the whole field or section",
            )
        width = int(digits) if digits else None
        if width is not None and width < 1:
            raise _error(
                f"#{name}: a window is at least 1 wide",
                start,
                "#1(a b) is the phrase; #uw2(a b) either order, adjacent",
            )
        words = []
        for k in self.operands(name):
            if not isinstance(k, ast.Word):
                raise _error(
                    f"#{name} takes plain words only",
                    k.span[0],
                    "no operators, wildcards or fields inside a "
                    "window; put a field after it: #1(a b).title",
                )
            if k.fields is not None:
                raise _error(
                    f"a field restriction inside #{name}",
                    k.span[0],
                    f"put it on the window: #{name}(a b).title",
                )
            words.append(k)
        if len(words) < 2:
            raise _error(
                f"#{name} needs two or more words",
                start,
                f"#{name}(a b); a single word needs no window",
            )
        fields = self.restriction()
        return ast.Window(kind == "od", width, tuple(words), fields, (start, self.i))

    def dates(self, name: str, start: int) -> ast.Dates:
        args: list[tuple[str, int]] = []
        while True:
            at = self.skip()
            if self.s.startswith(")", at):
                self.i = at + 1
                break
            m = re.compile(r"[^\s()]+").match(self.s, at)
            if not m:
                raise _error(f"#{name}( is not closed", len(self.s), "add ')' after the dates")
            args.append((m.group(), at))
            self.i = m.end()
        op = name[4:]
        want = 2 if op == "between" else 1
        if len(args) != want:
            example = "#datebetween(2018-01 2019-06)" if want == 2 else f"#{name}(2019-06-30)"
            raise _error(
                f"#{name} takes {want} date{'s' if want > 1 else ''}, got {len(args)}",
                start,
                example,
            )
        bounds = []
        for written, at in args:
            if not re.fullmatch(r"\d{4}(?:-\d{2}(?:-\d{2})?)?", written):
                raise _error(f"bad date {written!r}", at, "a date is YYYY, YYYY-MM or YYYY-MM-DD")
            try:
                bounds.append(parse_date_spec(written))
            except ValueError as e:
                raise _error(f"bad date {written!r}", at, str(e)) from None
        self._count(start)
        if op == "between":
            lo, hi = bounds[0][0], bounds[1][1]
            if lo is not None and hi is not None and lo > hi:
                raise _error(
                    f"#datebetween({args[0][0]} {args[1][0]}) is reversed",
                    start,
                    "put the earlier date first",
                )
        elif op == "after":
            lo, hi = parse_date_spec(">" + args[0][0])
        elif op == "before":
            lo, hi = parse_date_spec("<" + args[0][0])
        else:
            lo, hi = bounds[0]
        return ast.Dates(op, lo, hi, tuple(w for w, _ in args), (start, self.i))  # type: ignore[arg-type]  # words checked above

    def _count(self, pos: int) -> None:
        self.leaves += 1
        if self.leaves > MAX_CLAUSES:
            raise BQLLimitError("clauses", self.leaves, MAX_CLAUSES, "use fewer words", pos=pos)
