"""Parser: every construct, precedence, canonical printing and round trip, every error message."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.engine.query.bql import And, DateRange, Near, Not, Or, Phrase, Prefix, Term, parse
from sieve.engine.query.bql.parser import BQLParser, parse_fast, parse_lalr
from sieve.engine.analysis.fields import Field
from sieve.errors import BQLLimitError, BQLSyntaxError

T = frozenset({Field.TITLE})
B = frozenset({Field.BODY})
S = frozenset({Field.SECTION})


def test_grammar_has_no_conflicts() -> None:
    assert BQLParser._lrtable.sr_conflicts == []
    assert BQLParser._lrtable.rr_conflicts == []


@pytest.mark.parametrize(
    "query, canonical",
    [
        ("heatwave", "heatwave"),
        ('"school closure"', '"school closure"'),
        ("clos*", "clos*"),
        ("heatwave[title]", "heatwave[title]"),
        ('"school closure"[section]', '"school closure"[section]'),
        ("clos*[ti]", "clos*[title]"),
        ("(a OR b)[title]", "a[title] OR b[title]"),
        ("x[f1]".replace("f1", "ti,ab"), "x[title,body]"),
        ("x [ ti , ab ]", "x[title,body]"),
        ("x[TITLE]", "x[title]"),
        ("x[tiab]", "x[title,body]"),
        ("x[all]", "x[all]"),
        ("x[heading] y[sec] z[text] w[au] v[ib]", "x[section] AND y[section] AND z[body] AND w[author] AND v[infobox]"),
        ("Fort Santiago[title]", "Fort[title] AND Santiago[title]"),
        ("x a b[title]", "x[title] AND a[title] AND b[title]"),
        ("a AND b c[title]", "a AND b[title] AND c[title]"),
        ('"p" a b[title]', '"p" AND a[title] AND b[title]'),
        ("-x a b[title]", "NOT x AND a[title] AND b[title]"),
        ("NOT x a b[title]", "NOT x AND a[title] AND b[title]"),
        ("a OR b[title]", "a OR b[title]"),
        ("clos* school[title]", "clos*[title] AND school[title]"),
        ("w1 w2[title,body]", "w1[title,body] AND w2[title,body]"),
        ("(a[body] b)[title]", "a[body] AND b[title]"),
        ("a b", "a AND b"),
        ("a[title] b[body]", "a[title] AND b[body]"),
        ("a OR b c", "a OR b AND c"),
        ("(a OR b) c", "(a OR b) AND c"),
        ("a AND b OR c", "a AND b OR c"),
        ("a NOT b", "a AND NOT b"),
        ("NOT a NOT b", "NOT a AND NOT b"),
        ("NOT NOT x", "NOT NOT x"),
        ("-a b", "NOT a AND b"),
        ("-\"x y\" -(a OR b)", 'NOT "x y" AND NOT (a OR b)'),
        ("a or b and not c", "a OR b AND NOT c"),
        ("X[title] OR X[body] AND Y", "X[title] OR X[body] AND Y"),
        ("a-b", "a-b"),
        ("O_RDONLY", "O_RDONLY"),
        ("NEAR/3(a, b)", "NEAR/3(a, b)"),
        ("near/3(a,b)", "NEAR/3(a, b)"),
        ("a NEAR/3 b", "NEAR/3(a, b)"),
        ("x a near/2 b y", "x AND NEAR/2(a, b) AND y"),
        ("a NEAR/3 b[title]", "NEAR/3(a, b)[title]"),
        ("NEAR/3(a, b)[sec]", "NEAR/3(a, b)[section]"),
        ("near", "near"),
        ("date[2018..2023]", "date[2018-01-01..2023-12-31]"),
        ("date[2011-01-01]", "date[2011-01-01]"),
        ("date[2023]", "date[2023-01-01..2023-12-31]"),
        ("date[2020-02]", "date[2020-02-01..2020-02-29]"),
        ("date[>=2020-06]", "date[2020-06-01..]"),
        ("date[>2023]", "date[2024-01-01..]"),
        ("date[<2023]", "date[..2022-12-31]"),
        ("date[<=2017]", "date[..2017-12-31]"),
        ("date[2018..]", "date[2018-01-01..]"),
        ("date[..2018-03]", "date[..2018-03-31]"),
        ("DATE [ 2018 .. 2019 ]", "date[2018-01-01..2019-12-31]"),
        ("2018..2023[date]", "date[2018-01-01..2023-12-31]"),
        ("2018..[date]", "date[2018-01-01..]"),
        ("..2018[date]", "date[..2018-12-31]"),
        ("hot date[2020]", "hot AND date[2020-01-01..2020-12-31]"),
        ("date[title]", "date[title]"),
        ("NOT date[2020]", "NOT date[2020-01-01..2020-12-31]"),
        ("heatwave[title] AND \"school closure\"[section] NOT workplace[title] AND date[2020..]",
         'heatwave[title] AND "school closure"[section] AND NOT workplace[title] AND date[2020-01-01..]'),
    ],
)
def test_canonical_form_and_round_trip(query: str, canonical: str) -> None:
    node = parse(query)
    assert str(node) == canonical
    assert parse(str(node)) == node


def test_trees() -> None:
    assert parse("Fort Santiago[title]") == And((Term("Fort", T), Term("Santiago", T)))
    assert parse("a OR b c") == Or((Term("a"), And((Term("b"), Term("c")))))
    assert parse("a NOT b") == And((Term("a"), Not(Term("b"))))
    assert parse("(a OR b) OR c") == Or((Term("a"), Term("b"), Term("c")))
    assert parse('"x y"[section]') == Phrase("x y", S)
    assert parse("ab*[body]") == Prefix("ab", B)
    assert parse("a NEAR/2 b") == Near("a", "b", 2)
    assert parse("date[2020]") == DateRange(20200101, 20201231)


def test_spans_point_into_the_query() -> None:
    q = 'alpha "beta gamma"[title] NOT delta'
    node = parse(q)
    assert isinstance(node, And)
    assert [q[c.span[0] : c.span[1]] for c in node.children] == ["alpha", '"beta gamma"[title]', "NOT delta"]


@pytest.mark.parametrize(
    "query, message",
    [
        ("", "empty query at 0 (type a word, a \"phrase\" or a field query such as heatwave[title])"),
        ("   ", "empty query at 0 (type a word, a \"phrase\" or a field query such as heatwave[title])"),
        ("a AND", "expected a term after 'AND' at 5 (a query cannot end with an operator)"),
        ("a OR", "expected a term after 'OR' at 4 (a query cannot end with an operator)"),
        ("NOT", "expected a term after 'NOT' at 3 (a query cannot end with an operator)"),
        ("AND a", "query starts with 'AND' at 0 (AND needs a term on each side)"),
        ("or a", "query starts with 'or' at 0 (OR needs a term on each side)"),
        ("a OR OR b", "unexpected 'OR' after 'OR' at 5 (OR needs a term on each side; to search for the word, quote it: \"OR\")"),
        ("(heatwave OR cold", "expected a closing ')' at 17 (the '(' at 0 is never closed)"),
        ("a)", "unmatched ')' at 1 (remove it or add a '(' before it)"),
        ("()", "empty parentheses at 0 (put a query inside them, or remove them)"),
        ("(a AND)", "expected a term after 'AND' at 6 (an operator needs a term on each side)"),
        ("x[titel]", "unknown field 'titel' at 2 (did you mean title? valid fields: title (ti), section (sec, heading), body (text, ab), author (au), infobox (ib), tiab, all, date)"),
        ("x[title, bdy]", "unknown field 'bdy' at 9 (did you mean body? valid fields: title (ti), section (sec, heading), body (text, ab), author (au), infobox (ib), tiab, all, date)"),
        ("x[]", "empty tag '[]' at 1 (name a field: title (ti), section (sec, heading), body (text, ab), author (au), infobox (ib), tiab, all, date)"),
        ("x[title,]", "empty field name in tag at 8 (separate field names with single commas)"),
        ("x[title,date]", "date cannot be combined with text fields in one tag at 8 (use date[...] on its own)"),
        ('""', "empty phrase at 0 (put words between the quotes, or remove them)"),
        ('" - "', "empty phrase at 0 (put words between the quotes, or remove them)"),
        ('"abc', 'unterminated quote at 0 (close the phrase with a second ")'),
        ("x[title", "unterminated '[' at 1 (close the tag with ']', as in word[title])"),
        ("x]", "unexpected ']' at 1 (a tag is written word[field])"),
        ("a - b", "'-' must be followed directly by a term at 2 (write -word or NOT word)"),
        ("date[2023-13]", "bad date '2023-13' at 5 (month 13 does not exist in '2023-13')"),
        ("date[2023-02-30]", "bad date '2023-02-30' at 5 (day 30 does not exist in '2023-02-30')"),
        ("date[2024..2020]", "bad date '2024..2020' at 5 (the range 2024..2020 is reversed)"),
        ("date[..]", "bad date '..' at 5 (a range needs at least one end, as in 2018.. or ..2023)"),
        ("x[date]", "bad date 'x' at 0 ('x' is not a date (YYYY, YYYY-MM, YYYY-MM-DD), a range a..b or a comparison such as >=2020)"),
        ("date[2020 junk]", "bad date '2020 junk' at 5 ('2020 junk' is not a date (YYYY, YYYY-MM, YYYY-MM-DD), a range a..b or a comparison such as >=2020)"),
        ("(a b)[date]", "[date] cannot scope a group at 5 (a date filter is written date[2018..2023] or 2018..2023[date])"),
        ("a*b", "'*' inside 'a*b' at 1 ('*' is a wildcard only at the end of a word)"),
        ("*", "'*' has no letter or digit before '*' at 0 (write at least one letter, as in clos*)"),
        ("o_rd*", "'o_rd*' is not a single word at 0 (a wildcard stem must be one term; 'o_rd' splits into o rd)"),
        ('"ab*"', "'*' inside a phrase at 3 (wildcards do not work inside quotes; use word* outside them)"),
        ("+++", "'+++' has no searchable term at 0 (a term needs a letter or digit; quote text to search for a phrase)"),
        ("NEAR/3(a b)", "unexpected 'NEAR/3' at 0 (NEAR joins two plain words: a NEAR/3 b or NEAR/3(a, b))"),
        ('"a b" NEAR/2 c', "unexpected 'NEAR/2' at 6 (NEAR joins two plain words: a NEAR/3 b or NEAR/3(a, b))"),
        ("a NEAR/0 b", "NEAR/0 can never match at 2 (adjacent words are 1 apart: use NEAR/1 or a phrase)"),
        ("NEAR/2(a_b, c)", "NEAR operand 'a_b' is not a single word at 7 (NEAR takes one plain word on each side)"),
        ("a NEAR/x b", "malformed 'NEAR/x' at 2 (write a NEAR/3 b or NEAR/3(a, b) with single words)"),
        ("x [title][body]", "unexpected tag '[body]' at 9 (a tag follows the word, phrase or group it scopes, as in word[title])"),
        ("a\x00b", "control character U+0000 at 1 (remove it)"),
        ("a\ud800", "control character U+D800 at 1 (remove it)"),
    ],
)
def test_error_messages(query: str, message: str) -> None:
    with pytest.raises(BQLSyntaxError) as info:
        parse(query)
    assert str(info.value) == message
    assert 0 <= info.value.pos <= len(query)


def test_error_attributes() -> None:
    with pytest.raises(BQLSyntaxError) as info:
        parse("(heatwave OR cold")
    assert info.value.pos == 17
    assert info.value.message == "expected a closing ')'"
    assert info.value.hint == "the '(' at 0 is never closed"


def test_limits() -> None:
    with pytest.raises(BQLLimitError) as info:
        parse("a " * 6000)
    assert info.value.limit == "query length" and info.value.maximum == 10_000
    with pytest.raises(BQLLimitError) as info:
        parse("(" * 10_000 + "a" + ")" * 10_000)
    assert info.value.limit == "query length"
    with pytest.raises(BQLLimitError) as info:
        parse("(" * 40 + "a" + ")" * 40)
    assert str(info.value) == "nesting depth limit exceeded: 33 > 32 (too many nested parentheses)"
    with pytest.raises(BQLLimitError) as info:
        parse("NOT " * 101 + "a")
    assert info.value.limit == "negations"
    with pytest.raises(BQLLimitError) as info:
        parse(" OR ".join(f"w{i}" for i in range(1100)))
    assert info.value.limit == "clauses"
    # Hundreds of OR clauses are fine.
    node = parse(" OR ".join(f"w{i}" for i in range(500)))
    assert isinstance(node, Or) and len(node.children) == 500


def test_deep_but_legal_nesting_prints_without_recursion_trouble() -> None:
    q = "(" * 32 + "a" + ")" * 32
    assert str(parse(q)) == "a"
    q = "NOT (" * 32 + "a" + ")" * 32
    assert parse(str(parse(q))) == parse(q)


# ---------------------------------------------------------------- the recursive-descent parser

_WORDS = st.sampled_from(["a", "heat", "Wave", "x9", "2020", "OR", "or", "Or", "AND", "and", "NOT", "not", "NEAR", "near",
                          "O_RDONLY", "ab-c", "zürich", "w*", "w**", "*", "x*y", '"p q"', "t[title]", "(", ")", "((", ")[title]", ")[date]",
                          ")[nosuch]", "-n", "-", "--n", "- n", "NEAR/2", "near/1", "NEAR/0", "NEAR/x", "NEAR/2(a, b)", "near/3( heat ,wave )",
                          "NEAR/2(a b)", "NEAR/2(w*, b)", "NEAR/1(a,b)[ti]", "heat[title,section,body]", "x9[TI]", "w[date]", "2020[date]",
                          "2019..2021[date]", "w*[date]", "date[2020]", "date[2019..2021]", "date[..2020-06]", "date[2020..]", "DATE[ >2019 ]",
                          "date[bad]", "date[2021..2019]", "OR[title]", "or[ti]", "b[nosuch]", "c[ title]", "d[title,]", "e[all]",
                          "f[tiab,au]", "g[]", "h [title]", "i[title][body]", '"heat wave"[title]', '"a  b"', '"x9 Y"[ti,body]', '"or"',
                          '"AND b"', '"w"[date]', '"p q"[nosuch]', '""', '"*"', '"unterminated', "[title]", "]", "[", ",", "a,b", "+x", "~",
                          "c++", "O'Brien", "U.S.", "\u00a0"])
_SPACES = st.sampled_from([" ", "  ", "\t", "\n", "\r\n", " \x0b ", "\x0c", "", "", "\u00a0", "\x85"])


def _spans(node: object) -> list[tuple[int, int]]:
    """Every node's span, depth first (spans do not take part in ==)."""
    kids = getattr(node, "children", None) or ((node.child,) if isinstance(node, Not) else ())
    return [node.span] + [s for k in kids for s in _spans(k)]  # type: ignore[attr-defined]


@settings(max_examples=2000, deadline=None)
@given(st.lists(st.tuples(_SPACES, _WORDS), min_size=1, max_size=9), _SPACES, st.booleans())
def test_descent_gives_the_grammars_tree(parts: list[tuple[str, str]], tail: str, lead: bool) -> None:
    text = "".join((sp if (i or lead) else "") + w for i, (sp, w) in enumerate(parts)) + tail
    fast = parse_fast(text)
    try:
        full = parse_lalr(text)
    except (BQLSyntaxError, BQLLimitError):
        assert fast is None, text  # every error, with its message, is the grammar's
        return
    # Whatever the grammar takes, the descent takes, as the same tree with the same spans.
    assert fast is not None, text
    assert fast == full and str(fast) == str(full), text
    assert _spans(fast) == _spans(full), text


_LEAVES = st.sampled_from(["a", "heat", "Wave", "x9", "O_RDONLY", "w*", '"p q"', '"heat wave"', "2020", "or", "Near", "ab-c", "zürich",
                           "2019..2021[date]", "date[2019..2021]", "date[..2020]", "NEAR/2(a, b)", "near/3( heat ,wave )", "a NEAR/2 b", "x NEAR/1 y"])
_TAGS = st.sampled_from(["", "", "", "[title]", "[ti,body]", "[all]", "[ section ]", "[date]", "[nosuch]"])
_GLUE = st.sampled_from([" ", " AND ", " and ", " OR ", " or ", " NOT ", " -", "  ", "\t"])


def _grouped(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, _GLUE, inner).map("".join),
        st.tuples(st.sampled_from(["NOT ", "-", "NOT NOT ", "not "]), inner).map("".join),
        st.tuples(st.sampled_from(["(", "( "]), inner, st.sampled_from([")", " )"]), _TAGS).map("".join),
    )


_QUERIES = st.recursive(st.tuples(_LEAVES, _TAGS).map("".join), _grouped, max_leaves=12)


@settings(max_examples=1500, deadline=None)
@given(_QUERIES)
def test_descent_gives_the_grammars_tree_for_grammatical_queries(text: str) -> None:
    fast = parse_fast(text)
    try:
        full = parse_lalr(text)
    except (BQLSyntaxError, BQLLimitError):
        assert fast is None, text
        return
    assert fast is not None, text
    assert fast == full and str(fast) == str(full) and _spans(fast) == _spans(full), text


@pytest.mark.parametrize("text", [
    "(" * 32 + "a" + ")" * 32, "(" * 33 + "a" + ")" * 33, "NOT " * 100 + "a", "NOT " * 101 + "a", "- " * 3 + "a",
    " OR ".join(f"w{i}" for i in range(1024)), " OR ".join(f"w{i}" for i in range(1025)), "a" * 10_001, "a\x00b", "",
    "   ", "a ) b", "(a OR b", "a NEAR/2 b NEAR/2 c", "NOT", "date[2020] [title]", "heat\ud800",
])
def test_descent_leaves_limits_and_errors_to_the_grammar(text: str) -> None:
    fast = parse_fast(text)
    try:
        full = parse_lalr(text)
    except (BQLSyntaxError, BQLLimitError):
        assert fast is None
        return
    assert fast is not None and fast == full and _spans(fast) == _spans(full)
