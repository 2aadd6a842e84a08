"""Metrics against hand-worked cases; statistics against scipy and textbook tables."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from sieve.eval.metrics import exact_match, f1, normalize
from sieve.eval.stats import bonferroni, mcnemar_exact, paired_t


@pytest.mark.parametrize(
    "text, norm",
    [("The Eiffel Tower!", "eiffel tower"), ("  an   apple,  a pear ", "apple pear"), ("U.S.A.", "usa"), ("Théâtre", "théâtre"), ("theory", "theory"), ("A", "")],
)
def test_normalize(text: str, norm: str) -> None:
    assert normalize(text) == norm


def test_exact_match_uses_every_alias() -> None:
    assert exact_match("the Big Apple", ["New York City", "Big Apple"]) == 1.0
    assert exact_match("New York", ["New York City"]) == 0.0


def test_f1_by_hand() -> None:
    # prediction "new york" vs gold "new york city": precision 1, recall 2/3 -> F1 0.8
    assert f1("New York", ["New York City"]) == pytest.approx(0.8)
    assert f1("New York", ["Big Apple", "New York City"]) == pytest.approx(0.8)
    assert f1("paris paris", ["paris"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert f1("nothing here", ["Paris"]) == 0.0
    assert f1("", ["Paris"]) == 0.0


def test_yes_no_is_all_or_nothing() -> None:
    assert f1("no", ["no"]) == 1.0
    assert f1("no way", ["no"]) == 0.0
    assert f1("yes", ["no"]) == 0.0
    assert exact_match("Yes.", ["yes"]) == 1.0


def test_mcnemar_exact_against_the_binomial() -> None:
    # 10 questions: A alone right on 6, B alone right on 1, both right on 3.
    a = [True] * 6 + [False] + [True] * 3
    b = [False] * 6 + [True] + [True] * 3
    t = mcnemar_exact(a, b)
    assert t.statistic == 6 and t.n == 10
    expected = 2 * sum(math.comb(7, k) for k in range(0, 2)) / 2**7  # two-sided, min(6, 1) = 1 of 7
    assert t.p == pytest.approx(expected) and t.p == pytest.approx(0.125)
    assert mcnemar_exact([True, False], [True, False]).p == 1.0


def test_paired_t_against_scipy() -> None:
    a = [120.0, 80, 95, 130, 60, 77]
    b = [100.0, 70, 99, 90, 61, 50]
    t = paired_t(a, b)
    ref = stats.ttest_rel(a, b)
    assert t.statistic == pytest.approx(ref.statistic) and t.p == pytest.approx(ref.pvalue)
    assert paired_t([1, 2, 3], [1, 2, 3]).p == 1.0


def test_bonferroni() -> None:
    assert bonferroni(0.01, 3) == pytest.approx(0.03)
    assert bonferroni(0.5, 3) == 1.0
