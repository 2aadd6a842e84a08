"""Paired comparisons on identical questions: exact McNemar on accuracy, paired t on tokens and calls."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass(frozen=True)
class Test:
    statistic: float
    p: float
    n: int


def mcnemar_exact(a_correct: list[bool], b_correct: list[bool]) -> Test:
    """Two-sided exact McNemar: a binomial test on the discordant pairs (statistic = pairs only A got)."""
    a, b = np.asarray(a_correct, bool), np.asarray(b_correct, bool)
    if a.shape != b.shape:
        raise ValueError("paired results must cover the same questions")
    only_a = int(np.sum(a & ~b))
    only_b = int(np.sum(~a & b))
    n = only_a + only_b
    p = 1.0 if n == 0 else float(stats.binomtest(min(only_a, only_b), n, 0.5, alternative="two-sided").pvalue)
    return Test(float(only_a), min(1.0, p), len(a))


def paired_t(a: list[float], b: list[float]) -> Test:
    """Two-sided paired t-test of a - b."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.shape != y.shape:
        raise ValueError("paired results must cover the same questions")
    if len(x) < 2 or np.all(x - y == (x - y)[0]):
        return Test(0.0, 1.0, len(x))  # no variance: no evidence of a difference
    r = stats.ttest_rel(x, y)
    return Test(float(r.statistic), float(r.pvalue), len(x))


def bonferroni(p: float, comparisons: int) -> float:
    return min(1.0, p * max(1, comparisons))
