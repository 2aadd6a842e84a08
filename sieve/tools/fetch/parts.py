"""Cutting a long text into numbered parts that each fit a token budget, keeping line breaks.

Parts are exact slices (joined, they give the text back) and depend only on the text, the budget
and the counter, so "part 3" names the same text in every call. A cut prefers the last line break
in the second half of a part, then a space, and falls inside a word only for a word longer than
the budget.
"""

from __future__ import annotations

from sieve.tools.fetch.tokens import TokenCounter


def _soft_end(text: str, start: int, end: int) -> int:
    """Move a cut back to a line break (if one lies in the part's second half) or a space."""
    nl = text.rfind("\n", start, end)
    if nl >= 0 and nl + 1 > start + (end - start) // 2:
        return nl + 1
    if text[end - 1].isspace() or text[end].isspace():
        return end
    for i in range(end - 1, start, -1):
        if text[i].isspace():
            return i + 1
    return end  # one word longer than the budget: cut inside it


def split_parts(text: str, budget: int, counter: TokenCounter) -> list[tuple[int, int]]:
    """(start, end) character spans of the parts of `text`, each at most `budget` tokens."""
    budget = max(budget, 1)
    if counter.count(text) <= budget:
        return [(0, len(text))]
    spans: list[tuple[int, int]] = []
    start, n = 0, len(text)
    while start < n:
        end = counter.cut(text, start, budget)
        if end < n:
            end = _soft_end(text, start, max(end, start + 1))
        # Subword counters are not additive at every cut: shrink until the part really fits.
        while end - start > 1 and counter.count(text[start:end]) > budget:
            end = _soft_end(text, start, end - 1) if end - 1 > start + 1 else end - 1
        spans.append((start, end))
        start = end
    return spans
