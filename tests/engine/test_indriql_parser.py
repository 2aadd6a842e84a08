"""The Indri query parser: canonical printing, round trips, and every error with its position and hint."""

from __future__ import annotations

import pytest

from sieve.engine.analysis.fields import Field
from sieve.engine.query.indriql import ast, parse
from sieve.errors import BQLLimitError, BQLSyntaxError, IndriSyntaxError


@pytest.mark.parametrize("text, canonical", [
    ("dog", "dog"),
    ("dog cat", "#combine(dog cat)"),
    ("#COMBINE( dog  cat )", "#combine(dog cat)"),
    ("#weight(2 dog 0.50 #1(hot dog))", "#weight(2 dog 0.5 #od1(hot dog))"),
    ("#band(a #uw8(b c d))", "#band(a #uw8(b c d))"),
    ("#3(a b)", "#od3(a b)"),
    ("#uw(a b).section", "#uw(a b).section"),
    ("#or(a #not(b))", "#or(a #not(b))"),
    ("#syn(car auto* #1(motor car)).title", "#syn(car auto* #od1(motor car)).title"),
    ("#filreq(#band(a b) #combine(a b c))", "#filreq(#band(a b) #combine(a b c))"),
    ("#filrej(a b)", "#filrej(a b)"),
    ("dog.ti cat.(title,ab)", "#combine(dog.title cat.(title,body))"),
    ("#combine[title](a b.body)", "#combine[title](a b.body)"),
    ("#datebetween(2018 2019-06) #dateafter(2020-01-31) #datebefore(2001) #dateequals(2021-03)",
     "#combine(#datebetween(2018 2019-06) #dateafter(2020-01-31) #datebefore(2001) #dateequals(2021-03))"),
    ('"U.S." 3.5 o_rdonly', '#combine("U.S." "3.5" o_rdonly)'),
])
def test_canonical_form_and_round_trip(text: str, canonical: str) -> None:
    tree = parse(text)
    assert str(tree) == canonical
    assert parse(str(tree)) == tree


def test_trees() -> None:
    """Extents and restrictions reach the words; dates become inclusive day bounds."""
    tree = parse("#combine[title](a b.body #syn(c d))")
    assert tree == ast.Combine((ast.Word("a", frozenset({Field.TITLE})), ast.Word("b", frozenset({Field.BODY})),
                                ast.Syn((ast.Word("c", frozenset({Field.TITLE})), ast.Word("d", frozenset({Field.TITLE}))), frozenset({Field.TITLE}))),
                               None, frozenset({Field.TITLE}))
    assert parse("#dateafter(2019)") == ast.Dates("after", 20200101, None, ("2019",))
    assert parse("#datebefore(2019-06)") == ast.Dates("before", None, 20190531, ("2019-06",))
    assert parse("#datebetween(2018 2019-06)") == ast.Dates("between", 20180101, 20190630, ("2018", "2019-06"))
    assert parse("#uw5(a b)") == ast.Window(False, 5, (ast.Word("a"), ast.Word("b")))
    assert parse("a*.title") == ast.Wildcard("a", frozenset({Field.TITLE}))
    assert parse("#weight(2 a 1 b)").weights == (2.0, 1.0)
    assert parse("#1(a b)").span == (0, 7)


@pytest.mark.parametrize("text, message", [
    ("#combine(a", "#combine( is not closed at 10 (add ')' at the end of its operands)"),
    ("#foo(a)", "unknown operator #foo at 0 (known: #combine, #weight, #or, #not, #band, #filreq, #filrej, #syn, #dateafter, "
                "#datebefore, #datebetween, #dateequals, #odN, #N, #uwN, #uw)"),
    ("#comb(a)", "unknown operator #comb at 0 (did you mean #combine? known: #combine, #weight, #or, #not, #band, #filreq, #filrej, "
                 "#syn, #dateafter, #datebefore, #datebetween, #dateequals, #odN, #N, #uwN, #uw)"),
    ("a b.titel", "unknown field 'titel' at 4 (did you mean title? valid fields: title (ti), section (sec, heading), body (text, ab), "
                  'author (au), infobox (ib), tiab, all; a word that holds a dot is quoted: "U.S.")'),
    ("U.S.", "unknown field 'S' at 2 (valid fields: title (ti), section (sec, heading), body (text, ab), author (au), infobox (ib), "
             'tiab, all; a word that holds a dot is quoted: "U.S.")'),
    ("x #1(a)", "#1 needs two or more words at 2 (#1(a b); a single word needs no window)"),
    ("#weight(a b)", "#weight wants a weight before each operand at 8 (#weight(2 dog 0.5 cat): a number, then what it weighs)"),
    ("#weight(0 a)", "weight 0 is not above 0 at 8 (weights are positive numbers)"),
    ("#not(a b)", "#not takes one operand, got 2 at 0 (wrap several in #combine: #not(#combine(a b)))"),
    ("", "empty query at 0 (write some words, or an operator such as #combine(#1(school closure) heatwave.title))"),
    ("a )", "unexpected ')' at 2 (every ')' closes an operator's '(': remove this one)"),
    ("#od(a b)", "#od needs a width at 0 (#od3(a b) (at most 3 positions from each word to the next); #1(a b) is the phrase)"),
    ("a.date", "date is not a text field at 2 (filter dates with #dateafter(...), #datebefore(...), #datebetween(a b))"),
    ("#1(a.title b)", "a field restriction inside #1 at 3 (put it on the window: #1(a b).title)"),
    ("#uw2(a #1(b c))", "#uw2 takes plain words only at 7 (no operators, wildcards or fields inside a window; put a field after it: #1(a b).title)"),
    ("#datebetween(2019 2018)", "#datebetween(2019 2018) is reversed at 0 (put the earlier date first)"),
    ("#dateafter(2019-13)", "bad date '2019-13' at 11 (month 13 does not exist in '2019-13')"),
    ("#combine (a)", "#combine must be followed directly by '(' at 8 (write #combine(...) with no space before '(')"),
    ("#combine(a).title", "a field restriction cannot follow #combine(...) at 11 (restrict the words inside, or write "
                          "#combine[title](...); only words, windows and #syn take .field)"),
    ("a.title,body", "a word cannot be restricted to several fields at once at 7 (fields do not nest here: write dog.(title,body) for either field)"),
    ("#syn(a.title b)", "a field restriction inside #syn at 5 (put it on the #syn: #syn(a b).title)"),
    ('"abc', 'unterminated quote at 0 (close the word with a second ")'),
    ("#band[title](a)", "#band takes no [field] at 5 (restrict its words instead: #band(...).title, or wrap it: #combine[title](...))"),
    ("a\x00", "control character '\\x00' in the query at 1 (remove it)"),
])
def test_errors_name_the_position(text: str, message: str) -> None:
    with pytest.raises(IndriSyntaxError) as e:
        parse(text)
    assert str(e.value) == message
    assert isinstance(e.value, BQLSyntaxError)  # every caller that shows a query's error shows this one


def test_limits() -> None:
    with pytest.raises(BQLLimitError, match="nesting depth"):
        parse("#combine(" * 40 + "a" + ")" * 40)
    with pytest.raises(BQLLimitError, match="clauses"):
        parse(" ".join(["a"] * 1100))
