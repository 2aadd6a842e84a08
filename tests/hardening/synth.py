"""Seeded synthetic corpora and random queries for the hardening tests and benchmarks.

Everything here is a pure function of its seed, so a failing case can be replayed exactly.
"""

from __future__ import annotations

import random
from typing import Any

# A small vocabulary with a Zipf-like use: a few very frequent words, a long tail, some
# non-ASCII and joined forms (O_RDONLY, e-mail) so phrases, prefixes and folding are exercised.
COMMON = ["the", "a", "of", "and", "to", "in", "is", "file", "data", "read", "write", "open", "close"]
TAIL = [
    "heatwave", "school", "closure", "paris", "zürich", "straße", "strasse", "kernel", "socket", "buffer", "signal",
    "process", "thread", "memory", "page", "cache", "index", "search", "query", "token", "parser", "lexer",
    "grammar", "engine", "vector", "matrix", "python", "numpy", "array", "offset", "pointer", "header", "footer",
    "checksum", "crc", "damage", "truncate", "commit", "rename", "fsync", "winter", "summer", "snow", "rain",
    "naïve", "café", "résumé", "日本", "東京", "данные", "файл", "ελλάδα", "O_RDONLY", "e-mail", "3.11",
]
AUTHORS = ["Ann Lee", "Bob Stone", "Chandra Rao", "Dana Ruiz", "Émile Zola", "Jürgen Groß"]
HEADINGS = ["NAME", "SYNOPSIS", "DESCRIPTION", "ERRORS", "NOTES", "SEE ALSO", "(intro)", "Rules", "History"]
FIELDS = ["title", "ti", "section", "sec", "heading", "body", "text", "ab", "author", "au", "infobox", "ib", "tiab", "all"]
BAD_FIELDS = ["titel", "tilte", "bdy", "secton", "auhtor", "infobx", "dat", "TITLE ", "Ti", "", " ", "title,", ",body"]


def _word(rng: random.Random) -> str:
    if rng.random() < 0.45:
        return rng.choice(COMMON)
    return rng.choice(TAIL)


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(_word(rng) for _ in range(rng.randint(lo, hi)))


def records(n: int, seed: int = 0, big_tf: bool = True) -> list[dict[str, Any]]:
    """`n` records with titles, sections, authors, dates and infoboxes. With `big_tf`, document 0
    repeats one word 300 times, in two runs 256 positions apart (so its positions' block has an
    exception), and another 256 times (so the sparse side lists of large counts are not empty)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        rec: dict[str, Any] = {"id": f"doc-{i:05d}", "title": _text(rng, 1, 5)}
        rec["sections"] = [{"heading": rng.choice(HEADINGS), "text": _text(rng, 0, 40)} for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.6:
            rec["author"] = "; ".join(rng.sample(AUTHORS, rng.randint(1, 2)))
        r = rng.random()
        if r < 0.3:
            rec["date"] = f"{rng.randint(1990, 2024)}"
        elif r < 0.6:
            rec["date"] = f"{rng.randint(1990, 2024)}-{rng.randint(1, 12):02d}"
        elif r < 0.8:
            rec["date"] = f"{rng.randint(1990, 2024)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        if rng.random() < 0.4:
            rec["infobox"] = {"country": rng.choice(["France", "Schweiz", "Ελλάδα", "Japan"]), "kind": _text(rng, 1, 3)}
        out.append(rec)
    if big_tf and out:
        out[0]["sections"].append({"heading": "Repeats", "text": " ".join(["heatwave"] * 200 + ["paris"] * 256 + ["heatwave"] * 100)})
    return out


def query(rng: random.Random, depth: int = 0) -> str:
    """One random, mostly valid BQL query over the synthetic vocabulary (every construct)."""
    kind = rng.randrange(14 if depth < 3 else 8)
    w = lambda: _word(rng)  # noqa: E731
    if kind == 0:
        return w()
    if kind == 1:
        return f'"{_text(rng, 2, 3)}"'
    if kind == 2:
        return w()[: rng.randint(1, 3)] + "*"
    if kind == 3:
        return f"{w()}[{','.join(rng.sample(FIELDS, rng.randint(1, 2)))}]"
    if kind == 4:
        return f"NEAR/{rng.randint(1, 12)}({w()}, {w()})"
    if kind == 5:
        return f"{w()} near/{rng.randint(1, 5)} {w()}"
    if kind == 6:
        y = rng.randint(1990, 2024)
        return rng.choice([f"date[{y}]", f"date[{y}..{y + 3}]", f"date[>={y}-06]", f"date[<{y}]", f"{y}..[date]"])
    if kind == 7:
        return f"{w()} {w()}[{rng.choice(FIELDS)}]"
    if kind in (8, 9):
        op = rng.choice([" AND ", " OR ", " ", " and ", " or ", " NOT "])
        return query(rng, depth + 1) + op + query(rng, depth + 1)
    if kind == 10:
        return "NOT " + query(rng, depth + 1)
    if kind == 11:
        return "-" + w()
    if kind == 12:
        return f"({query(rng, depth + 1)} OR {query(rng, depth + 1)})"
    return f"({query(rng, depth + 1)})[{rng.choice(FIELDS)}]"


def queries(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [query(rng) for _ in range(n)]


class HashEncoder:
    """A cheap deterministic encoder (hashed bag of words) for embedding tests: the files it leads
    to are the real ones. Its model name is `hash-DIM`."""

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim
        self.name = f"hash-{dim}"

    def encode(self, texts: list[str], batch_size: int = 32) -> Any:
        import zlib

        import numpy as np

        from sieve.engine.analysis.analyzers import analyze

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in analyze(t):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
