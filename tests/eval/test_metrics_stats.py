"""Metrics against hand-worked cases; statistics against scipy and textbook tables."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from sieve.eval.metrics import exact_match, f1, normalize
from sieve.eval.report.stats import bonferroni, mcnemar_exact, paired_t


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


@pytest.mark.parametrize("only_a, only_b, both", [(0, 5, 3), (8, 0, 0), (3, 3, 4), (12, 4, 20), (1, 0, 0)])
def test_mcnemar_exact_against_hand_binomials(only_a: int, only_b: int, both: int) -> None:
    a = [True] * only_a + [False] * only_b + [True] * both + [False] * 2
    b = [False] * only_a + [True] * only_b + [True] * both + [False] * 2
    n, k = only_a + only_b, min(only_a, only_b)
    expected = min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2**n)
    t = mcnemar_exact(a, b)
    assert t.p == pytest.approx(expected) and t.statistic == only_a and t.n == len(a)
    assert mcnemar_exact(b, a).p == pytest.approx(expected)  # two-sided: symmetric


def test_paired_tests_refuse_unpaired_lists() -> None:
    with pytest.raises(ValueError, match="same questions"):
        mcnemar_exact([True], [True, False])
    with pytest.raises(ValueError, match="same questions"):
        paired_t([1.0, 2.0], [1.0])


def test_bonferroni_edges() -> None:
    assert bonferroni(0.02, 1) == 0.02 and bonferroni(0.02, 0) == 0.02  # one comparison, or none: unchanged
    assert bonferroni(0.0125, 4) == pytest.approx(0.05) and bonferroni(0.3, 4) == 1.0


def test_without_scipy_the_tests_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import re

    from sieve.errors import SieveError, extra_hint

    monkeypatch.setitem(sys.modules, "scipy", None)
    with pytest.raises(SieveError, match="need scipy, which the eval extra installs: " + re.escape(extra_hint("eval"))):
        paired_t([1.0, 2.0, 4.0], [1.0, 1.0, 1.0])
    assert mcnemar_exact([True], [True]).p == 1.0  # nothing to test: no scipy needed


@pytest.mark.parametrize("query, features", [
    ("Fort Santiago[title]", {"field"}),
    ("a b c", {"plain"}),  # words side by side are ANDed, but no operator was written: no field, Boolean or date
    ("a AND b", {"boolean", "and"}),
    ("a and b", {"boolean", "and"}),  # operators are case-insensitive
    ('"old walls" OR moat', {"boolean", "or", "phrase"}),
    ("manila -province", {"boolean", "not"}),
    ("NOT x[ti] y", {"boolean", "not", "field"}),
    ("intram* date[1500..1600]", {"wildcard", "date"}),
    ("a NEAR/3 b", {"near", "plain"}),
    ("NEAR/2(a, b)[title]", {"near", "field"}),
    ('"a and b"', {"phrase", "plain"}),  # inside a phrase, "and" is a word
    ("bad ( query", set()),  # unparseable: counts as a call that used nothing
])
def test_bql_features(query: str, features: set[str]) -> None:
    from sieve.eval.report.summary import bql_features

    assert bql_features(query) == features


def test_summary_by_hand() -> None:
    from sieve.eval.report.summary import OPERATORS, summarize

    def rec(qid: str, answer: str, outcome: str, queries: list[str], surfaced: list[str] | None = None, opened: list[str] | None = None) -> dict[str, object]:
        return {"question_id": qid, "answer": answer, "outcome": outcome, "tokens": {"distinct": 10, "step_summed": 20}, "llm_calls": 2,
                "tool_calls": [{"name": "search", "arguments": {"query": q}, "fallback": i == 0} for i, q in enumerate(queries)],
                "surfaced": surfaced or [], "opened": opened or []}

    recs = [
        rec("q1", "Manila", "answered", ['"walled city"[title]', "intramuros OR manila"], ["d1"], ["d1"]),
        rec("q2", "Cebu", "recovered", ["cebu -island"], ["d2"]),
        rec("q3", "", "failed", []),
        rec("q4", "Davao", "recovered", ["davao"], ["d9"], ["d9"]),
    ]
    s = summarize(recs, {"q1": ["Manila"], "q2": ["Manila"], "q3": ["Manila"], "q4": ["Manila"]}, {"q1": ["d1"], "q2": ["d2"], "q3": ["d3"], "q4": ["d4"]})
    assert (s["accuracy"], s["recovered_share"], s["outcomes"]) == (0.25, 0.5, {"answered": 1, "recovered": 2, "failed": 1})
    assert s["failures"] == {"retrieval": 2, "selection": 1, "synthesis": 0} and s["gold_recall"] == 0.5
    assert s["search_calls"] == 4 and s["fallback_rate"] == 0.75  # the first search of each question fell back
    assert list(s["bql_usage"]) == list(OPERATORS)
    assert s["bql_usage"]["phrase"] == {"questions": 0.25, "calls": 0.25} and s["bql_usage"]["field"] == {"questions": 0.25, "calls": 0.25}
    assert s["bql_usage"]["boolean"] == {"questions": 0.5, "calls": 0.5} and s["bql_usage"]["or"] == {"questions": 0.25, "calls": 0.25}
    assert s["bql_usage"]["not"] == {"questions": 0.25, "calls": 0.25} and s["bql_usage"]["date"] == {"questions": 0.0, "calls": 0.0}
    assert s["bql_usage"]["plain"] == {"questions": 0.25, "calls": 0.25}  # q4's only search, "davao", used no field, Boolean or date


def test_summary_tokens_follow_the_reference_and_old_records_are_recounted() -> None:
    """distinct = the largest prompt plus every completion; a record written when "distinct" was
    the last call's figure is recounted from its calls, its old figure kept as final_context."""
    from sieve.eval.report.summary import episode_tokens, summarize

    calls = [{"prompt_tokens": 500, "completion_tokens": 50}, {"prompt_tokens": 900, "completion_tokens": 20}, {"prompt_tokens": 700, "completion_tokens": 10}]
    old = {"question_id": "q1", "answer": "x", "outcome": "answered", "llm_calls": 3, "calls": calls, "tokens": {"distinct": 710, "step_summed": 2180}}
    assert episode_tokens(old) == {"distinct": 980, "final_context": 710, "largest_prompt": 900, "step_summed": 2180}
    new = {**old, "question_id": "q2", "tokens": {"distinct": 980, "final_context": 710, "largest_prompt": 900, "step_summed": 2180}}
    assert episode_tokens(new) == new["tokens"]
    s = summarize([old, new], {"q1": ["x"], "q2": ["x"]}, {})
    assert (s["distinct_tokens"], s["final_context_tokens"], s["step_summed_tokens"]) == (980.0, 710.0, 2180.0)
