"""SQuAD-style answer metrics against every gold alias (as the HotpotQA and MuSiQue scripts compute
them)."""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
_SPECIAL = {"yes", "no", "noanswer"}


def normalize(text: str) -> str:
    """Lower case, drop punctuation and the articles a/an/the, collapse whitespace."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, golds: list[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold alias."""
    p = normalize(prediction)
    return float(any(p == normalize(g) for g in golds))


def _f1(prediction: str, gold: str) -> float:
    p, g = normalize(prediction), normalize(gold)
    # yes/no answers are all or nothing: a partial token overlap with "no" means nothing.
    if (p in _SPECIAL or g in _SPECIAL) and p != g:
        return 0.0
    pt, gt = p.split(), g.split()
    common = sum((Counter(pt) & Counter(gt)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pt), common / len(gt)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str, golds: list[str]) -> float:
    """Best token F1 of the prediction against any gold alias."""
    return max((_f1(prediction, g) for g in golds), default=0.0)
