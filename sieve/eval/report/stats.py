"""Paired comparisons on identical questions, as the paper tests them (two-sided, alpha 0.05):
exact McNemar on accuracy, paired t on tokens and calls, Bonferroni over the comparisons.

scipy comes with the `eval` extra and is imported when a test runs, so `import
sieve.eval.report.stats` works without it and `sieve eval report` can say which extra it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sieve.errors import SieveError, extra_hint


@dataclass(frozen=True)
class Test:
    statistic: float
    p: float
    n: int


def _scipy_stats() -> Any:
    try:
        from scipy import stats
    except ImportError:
        raise SieveError(
            "the paired tests need scipy, which the eval extra installs: " + extra_hint("eval")
        ) from None
    return stats


def mcnemar_exact(a_correct: list[bool], b_correct: list[bool]) -> Test:
    """Two-sided exact McNemar: a binomial test (p = 1/2) on the discordant pairs,
    p = min(1, 2 * P[X <= min(b, c)]) with X ~ Bin(b + c, 1/2) (statistic = pairs only A got
    right)."""
    a, b = np.asarray(a_correct, bool), np.asarray(b_correct, bool)
    if a.shape != b.shape:
        raise ValueError("paired results must cover the same questions")
    only_a = int(np.sum(a & ~b))
    only_b = int(np.sum(~a & b))
    n = only_a + only_b
    p = (
        1.0
        if n == 0
        else float(
            _scipy_stats().binomtest(min(only_a, only_b), n, 0.5, alternative="two-sided").pvalue
        )
    )
    return Test(float(only_a), min(1.0, p), len(a))


def paired_t(a: list[float], b: list[float]) -> Test:
    """Two-sided paired t-test of a - b (Student, n - 1 degrees of freedom)."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.shape != y.shape:
        raise ValueError("paired results must cover the same questions")
    if len(x) < 2 or np.all(x - y == (x - y)[0]):
        return Test(0.0, 1.0, len(x))  # no variance: no evidence of a difference
    r = _scipy_stats().ttest_rel(x, y)
    return Test(float(r.statistic), float(r.pvalue), len(x))


def bonferroni(p: float, comparisons: int) -> float:
    """The Bonferroni-corrected p-value: p times the number of comparisons, at most 1."""
    return min(1.0, p * max(1, comparisons))
