"""Seeded damage to the payload of an array file, and random reads of a damaged index (shared by
test_integrity.py and benchmarks/bench_integrity.py)."""

from __future__ import annotations

import random
import traceback
from collections import Counter
from pathlib import Path
from typing import Sequence

import sieve
from sieve.engine import storage
from sieve.errors import IndexDamagedError, SieveError

KINDS = ("bit flips", "random bytes", "0xff run", "zero run", "high bytes")


def damage(data: bytearray, rng: random.Random) -> str:
    """Damage the payload only (header and footer intact, so a cheap open cannot see it)."""
    lo, hi = storage.HEADER_SIZE, len(data) - storage.FOOTER_SIZE
    kind = rng.choice(KINDS)
    for _ in range(rng.choice([1, 1, 2, 4, 16])):
        at = rng.randrange(lo, hi)
        if kind == "bit flips":
            data[at] ^= 1 << rng.randrange(8)
        elif kind == "random bytes":
            data[at] = rng.randrange(256)
        else:
            for i in range(at, min(hi, at + rng.randint(1, 16))):
                data[i] = {"0xff run": 0xFF, "zero run": 0, "high bytes": 0x7F if (i - lo) % 4 == 3 else 0xFF}[kind]
    return kind


def exercise(index: sieve.Index, rng: random.Random, n: int, queries: Sequence[str], ids: Sequence[str], damaged: str | None, unexpected: dict[str, str] | None = None) -> Counter[str]:
    """n seeded operations of every kind. Counts "ok", "sieve error", "damage named" (an
    IndexDamagedError naming `damaged`), "damage misnamed" and "UNEXPECTED" (anything else: with
    `unexpected` given, its traceback's last frame is recorded there; otherwise it propagates)."""
    out: Counter[str] = Counter()
    for _ in range(n):
        op = rng.choice(["match", "ids", "search", "search", "document", "section"])
        q = rng.choice(queries)
        try:
            if op == "match":
                index.match(q)
            elif op == "ids":
                index.match(q).ids
            elif op == "search":
                for h in index.search(q, k=rng.choice([1, 5, 50])).hits:
                    h.fields, h.sections
            elif op == "document":
                index.document(rng.choice(ids))
            else:
                index.section(rng.choice(ids), rng.randrange(3))
            out["ok"] += 1
        except IndexDamagedError as e:
            out["damage named" if e.file == damaged else "damage misnamed"] += 1
            if e.file != damaged and unexpected is not None:
                unexpected.setdefault(f"{damaged}: {op} named {e.file}", q)
        except SieveError:
            out["sieve error"] += 1
        except Exception as e:  # noqa: BLE001
            if unexpected is None:
                raise
            out["UNEXPECTED"] += 1
            tb = traceback.extract_tb(e.__traceback__)[-1]
            unexpected.setdefault(f"{damaged}: {op}: {type(e).__name__} at {Path(tb.filename).name}:{tb.lineno}: {str(e)[:100]}", q)
    return out
