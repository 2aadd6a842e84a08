"""Seeded damage to the payload of an array file, and random reads of a damaged index (shared by
test_integrity.py and benchmarks/bench_integrity.py)."""

from __future__ import annotations

import random
import traceback
from collections import Counter
from pathlib import Path
from typing import Sequence

import sieve
from sieve.engine.format import storage
from sieve.errors import IndexDamagedError, SieveError

KINDS = ("bit flips", "random bytes", "0xff run", "zero run", "high bytes")


def payload_end(data: bytes) -> int:
    """Where an array file's payload ends and its block checksum table begins (from the header)."""
    return storage.HEADER_SIZE + int.from_bytes(data[40:48], "little")


def damage(data: bytearray, rng: random.Random) -> str:
    """Damage the payload only (header, block table and footer intact, so a cheap open cannot see it)."""
    lo, hi = storage.HEADER_SIZE, payload_end(data)
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


def _answer(index: sieve.Index, op: str, q: str, doc_id: str, j: int, k: int) -> object:
    """What one operation returns, in a form two indexes' answers can be compared by."""
    if op == "match":
        return index.match(q).count
    if op == "ids":
        return list(index.match(q).ids)
    if op == "search":
        return [(h.doc_id, round(h.score, 9), h.fields, h.sections) for h in index.search(q, k=k).hits]
    if op == "document":
        return repr(index.document(doc_id))
    return index.section(doc_id, j)


def exercise(index: sieve.Index, rng: random.Random, n: int, queries: Sequence[str], ids: Sequence[str], damaged: str | None, unexpected: dict[str, str] | None = None, truth: sieve.Index | None = None) -> Counter[str]:
    """n seeded operations of every kind. Counts "ok", "sieve error", "damage named" (an
    IndexDamagedError naming `damaged`), "damage misnamed", "WRONG ANSWER" (with `truth`, the
    undamaged index: an answer that differs from its answer) and "UNEXPECTED" (anything else:
    with `unexpected` given, its traceback's last frame is recorded there; otherwise it propagates)."""
    out: Counter[str] = Counter()
    for _ in range(n):
        op = rng.choice(["match", "ids", "search", "search", "document", "section"])
        q, doc_id, j, k = rng.choice(queries), rng.choice(ids), rng.randrange(3), rng.choice([1, 5, 50])
        try:
            got = _answer(index, op, q, doc_id, j, k)
            if truth is not None:
                try:
                    want = _answer(truth, op, q, doc_id, j, k)
                except SieveError as e:
                    want = type(e)
                if got != want:
                    out["WRONG ANSWER"] += 1
                    if unexpected is not None:
                        unexpected.setdefault(f"{damaged}: {op} answered differently", q)
                    continue
            out["ok"] += 1
        except IndexDamagedError as e:
            out["damage named" if e.file == damaged else "damage misnamed"] += 1
            if e.file != damaged and unexpected is not None:
                unexpected.setdefault(f"{damaged}: {op} named {e.file}", q)
        except SieveError as e:
            if truth is not None:
                try:
                    _answer(truth, op, q, doc_id, j, k)
                except SieveError as t:
                    if type(t) is not type(e):
                        out["WRONG ANSWER"] += 1
                        continue
                else:  # the undamaged index answers; an error other than damage is a wrong answer
                    out["WRONG ANSWER"] += 1
                    if unexpected is not None:
                        unexpected.setdefault(f"{damaged}: {op} raised {type(e).__name__}", q)
                    continue
            out["sieve error"] += 1
        except Exception as e:  # noqa: BLE001
            if unexpected is None:
                raise
            out["UNEXPECTED"] += 1
            tb = traceback.extract_tb(e.__traceback__)[-1]
            unexpected.setdefault(f"{damaged}: {op}: {type(e).__name__} at {Path(tb.filename).name}:{tb.lineno}: {str(e)[:100]}", q)
    return out
