"""The BQL parser under fuzzing, pathological inputs, and pathological-but-valid queries at scale.

    python -m benchmarks.bench_fuzz                         # 100,000 inputs, atheris if installed
    python -m benchmarks.bench_fuzz --engine random --inputs 300000
    python -m benchmarks.bench_fuzz --skip-man              # without the man-sections queries

1. Fuzz: every input must parse (and print back to the same tree) or raise BQLSyntaxError (with a
   position inside the query) or BQLLimitError; one in five parsed queries also runs on a small
   synthetic index, where only sieve errors may come out. `--engine atheris` (coverage-guided
   libFuzzer; the default when `pip install atheris` worked) reads each input as grammar tokens,
   raw Unicode (surrogates included) or bytes decoded with surrogateescape; `--engine random` draws
   from the same grammar pieces with `random`. Reports counts by outcome and the time per input.
2. Pathological inputs (10,000 nested parentheses, 10,000 NOTs, 1 MB queries, control characters,
   lone surrogates, ...): each must be rejected in well under 100 ms (asserted; best and worst of 5).
3. Pathological-but-valid queries on man-sections (100k documents): prefixes that cover most of
   the vocabulary, 500 and 1,024 OR clauses, NEAR and phrases over the most frequent words, many
   positional clauses. Each must finish within BOUND_S seconds or stop with a BQLLimitError.

Exit status 1 if any promise fails. Writes benchmarks/results/fuzz.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

BOUND_S = 5.0  # documented bound for one match or search on man-sections (100k documents, 11M positions)
REJECT_MS = 100.0
TOKENS: list[str] = []  # filled in by _pieces()


def _pieces() -> None:
    from tests.hardening.bql_gen import OPERATORS, SPACES, STRAY, WORDS

    TOKENS.extend(WORDS + OPERATORS + STRAY + SPACES + ["[title]", "[ti, ab]", "[titel]", "[", "]", "date[", "2023", "..", "near/", "/3", "(", ")", '"'])


class Fuzz:
    """Runs inputs through the parser property (and a sample through an index); keeps the counts."""

    def __init__(self, index: Any) -> None:
        from tests.hardening.bql_gen import outcome

        self.outcome = outcome
        self.index = index
        self.counts: Counter[str] = Counter()
        self.times: list[float] = []
        self.eval_times: list[float] = []
        self.unexpected: dict[str, str] = {}
        self.slowest: tuple[float, str] = (0.0, "")

    def one(self, q: str) -> None:
        import sieve

        t0 = time.perf_counter()
        try:
            kind = self.outcome(q).split(",")[0]
        except Exception as e:  # noqa: BLE001 - an unexpected exception is what we are counting
            kind = "UNEXPECTED"
            tb = traceback.extract_tb(e.__traceback__)[-1]
            self.unexpected.setdefault(f"{type(e).__name__} at {Path(tb.filename).name}:{tb.lineno}: {str(e)[:120]}", q[:300])
        dt = time.perf_counter() - t0
        self.times.append(dt)
        if dt > self.slowest[0]:
            self.slowest = (dt, q[:120])
        self.counts[kind] += 1
        if kind == "ok" and self.counts["ok"] % 5 == 0:
            t0 = time.perf_counter()
            try:
                self.index.match(q)
                self.index.search(q, k=3)
            except sieve.SieveError:
                pass
            except Exception as e:  # noqa: BLE001
                self.counts["UNEXPECTED in match/search"] += 1
                self.unexpected.setdefault(f"match/search: {type(e).__name__}: {str(e)[:120]}", q[:300])
            self.eval_times.append(time.perf_counter() - t0)

    def summary(self) -> dict[str, Any]:
        ts = sorted(self.times)
        ev = sorted(self.eval_times) or [0.0]
        return {
            "inputs": len(ts), "counts": dict(self.counts), "unexpected": self.unexpected,
            "parse_ms": {"p50": 1000 * ts[len(ts) // 2], "p99": 1000 * ts[int(len(ts) * 0.99)], "max": 1000 * ts[-1], "mean": 1000 * statistics.fmean(ts)},
            "slowest": {"ms": 1000 * self.slowest[0], "query": self.slowest[1]},
            "evaluated": len(self.eval_times), "eval_ms": {"p99": 1000 * ev[int(len(ev) * 0.99)], "max": 1000 * ev[-1]},
        }


def small_index(work: Path) -> Any:
    import sieve
    from tests.hardening.synth import records

    return sieve.build_index(records(300, seed=5), work / "small", jobs=1)


def query_from_bytes(data: bytes) -> str:
    """atheris input -> query: the first byte picks grammar tokens, raw Unicode or surrogateescape."""
    import atheris

    if not data:
        return ""
    mode, rest = data[0], data[1:]
    if mode < 128:
        return "".join(TOKENS[b % len(TOKENS)] + (" " if b & 0x80 else "") for b in rest)
    if mode < 192:
        return atheris.FuzzedDataProvider(rest).ConsumeUnicode(len(rest))
    return rest.decode("utf-8", "surrogateescape")


def atheris_child(n: int, out: Path) -> None:
    """Runs inside `python bench_fuzz.py --atheris-child N OUT ...libFuzzer flags`."""
    import atheris

    with atheris.instrument_imports():
        import sieve.engine.analysis.dates  # noqa: F401
        import sieve.engine.query.bql.lexer  # noqa: F401
        import sieve.engine.query.bql.parser  # noqa: F401
    _pieces()
    work = Path(tempfile.mkdtemp(prefix="sieve-fuzz-"))
    fuzz = Fuzz(small_index(work))

    def test_one_input(data: bytes) -> None:
        fuzz.one(query_from_bytes(data))
        if len(fuzz.times) >= n:
            out.write_text(json.dumps(fuzz.summary()))
            os._exit(0)  # libFuzzer would otherwise keep going (and skip Python's exit handlers)

    atheris.Setup([sys.argv[0], *sys.argv[4:]], test_one_input)
    atheris.Fuzz()


def run_fuzz(engine: str, n: int, seed: int, work: Path) -> dict[str, Any]:
    if engine == "atheris":
        out = work / "atheris.json"
        cmd = [sys.executable, "-m", "benchmarks.bench_fuzz", "--atheris-child", str(n), str(out), f"-runs={n + 1000}", f"-seed={seed}", "-max_len=2048", "-timeout=10", "-rss_limit_mb=4096"]
        log = work / "libfuzzer.log"
        with open(log, "w") as fh:
            # the child runs from `work` (libFuzzer writes there) and finds this package by PYTHONPATH
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
            proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=work, env=env)
        if not out.exists():
            tail = log.read_text(errors="replace")[-3000:]
            return {"inputs": 0, "counts": {"UNEXPECTED": 1}, "unexpected": {f"libFuzzer exited {proc.returncode}": tail}}
        return json.loads(out.read_text())
    from tests.hardening.bql_gen import random_query, random_text

    _pieces()
    rng = random.Random(seed)
    fuzz = Fuzz(small_index(work))
    for i in range(n):
        r = i % 4
        if r < 2:
            q = random_query(rng)
        elif r == 2:
            q = random_text(rng)
        else:
            q = "".join(rng.choice(TOKENS) for _ in range(rng.randint(0, 20)))
        fuzz.one(q)
    return fuzz.summary()


def run_pathological(work: Path) -> list[dict[str, Any]]:
    import sieve
    from tests.hardening.bql_gen import PATHOLOGICAL
    from sieve.engine.query.bql import parse

    index = sieve.open_index(work / "small")
    rows = []
    for what, q, error, message in PATHOLOGICAL:
        times, got = [], ""
        for fn in [parse] * 5 + [index.match] * 5:
            t0 = time.perf_counter()
            try:
                fn(q)
                got = "ACCEPTED"
            except sieve.SieveError as e:
                got = type(e).__name__ if isinstance(e, error) and message in str(e) else f"WRONG: {e!r}"[:100]
            times.append(1000 * (time.perf_counter() - t0))
        rows.append({"input": what, "chars": len(q), "outcome": got, "best_ms": min(times), "worst_ms": max(times)})
    return rows


def man_queries(index: Any) -> list[tuple[str, str]]:
    import numpy as np

    from sieve.engine.analysis.analyzers import analyze
    from sieve.engine.query.bql.lexer import OPERATORS

    r = index.reader
    freq = np.diff(np.asarray(r.pos_ptr, dtype=np.int64))
    top = []
    for t in np.argsort(-freq, kind="stable"):
        w = r.terms[int(t)].decode()
        if w.upper() not in OPERATORS and analyze(w) == [w] and not w.lower().startswith("near") and "*" not in w:
            top.append(w)
        if len(top) == 1024:
            break
    sizes = {c: r.terms.prefix_range(c.encode()) for c in "abcdefghijklmnopqrstuvwxyz0123456789"}
    widest = [c for c in sorted(sizes, key=lambda c: sizes[c][0] - sizes[c][1]) if c not in "ase"][:3]
    near_call = " OR ".join([f"NEAR/10({top[0]}, {top[2]})"] * 526)
    return [
        *[(f"{c}* ({sizes[c][1] - sizes[c][0]} terms)", f"{c}*") for c in ["a", "s", "e", *widest]],
        ("a* OR s* OR e* OR c* OR p*", "a* OR s* OR e* OR c* OR p*"),
        ("every letter and digit as a prefix, OR", " OR ".join(f"{c}*" for c in sizes)),
        ("500 OR clauses (the 500 most frequent words)", " OR ".join(top[:500])),
        ("1,024 OR clauses (the most frequent words)", " OR ".join(top[:1024])),
        ("500 words juxtaposed (AND)", " ".join(top[:500])),
        ("1,024 x the (AND)", " ".join([top[0]] * 1024)),
        ("1,024 x the (OR)", " OR ".join([top[0]] * 1024)),
        (f"{top[0]} NEAR/10 {top[2]}", f"{top[0]} NEAR/10 {top[2]}"),
        (f"{top[0]} NEAR/1 {top[1]}", f"{top[0]} NEAR/1 {top[1]}"),
        (f"NEAR/999999999({top[0]}, {top[0]})", f"NEAR/999999999({top[0]}, {top[0]})"),
        (f'"{top[4]} {top[0]}"', f'"{top[4]} {top[0]}"'),
        (f'"{top[0]} {top[2]}"', f'"{top[0]} {top[2]}"'),
        ('"the the the the"', f'"{top[0]} {top[0]} {top[0]} {top[0]}"'),
        ("phrase of 8 stop-like words", '"' + " ".join(top[:8]) + '"'),
        ("60 x the NEAR/10 a, OR (under the positions budget)", " OR ".join([f"{top[0]} NEAR/10 {top[2]}"] * 60)),
        ("526 x NEAR/10(the, a), OR (over the budget)", near_call),
        ("800 x phrase \"of the\", OR", " OR ".join([f'"{top[4]} {top[0]}"'] * 800)),
        ("100 negations of frequent words", " ".join(f"-{w}" for w in top[:100])),
        ("32 nested groups of frequent words", "(" * 32 + " OR ".join(top[:10]) + ")" * 32),
        ("every document by date", "date[..9999] OR NOT date[..9999]"),
        ("tagged groups of frequent words", "(" + " ".join(top[:200]) + ")[title,body] OR (" + " OR ".join(top[200:400]) + ")[section]"),
    ]


def run_man(path: Path) -> list[dict[str, Any]]:
    import sieve

    index = sieve.open_index(path)
    rows = []
    for what, q in man_queries(index):
        row: dict[str, Any] = {"query": what, "chars": len(q)}
        for op in ("match", "search"):
            t0 = time.perf_counter()
            try:
                res = index.match(q) if op == "match" else index.search(q, k=10)
                row[op] = f"{res.count} docs"
            except sieve.BQLLimitError as e:
                row[op] = f"BQLLimitError: {e.limit} {e.value:,} > {e.maximum:,}"
            except sieve.SieveError as e:
                row[op] = f"{type(e).__name__}: {str(e)[:80]}"
            row[op + "_s"] = time.perf_counter() - t0
        rows.append(row)
    return rows


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--atheris-child":
        atheris_child(int(sys.argv[2]), Path(sys.argv[3]))
        return 0
    try:
        import atheris  # noqa: F401

        default_engine = "atheris"
    except ImportError:
        default_engine = "random"
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=100_000)
    ap.add_argument("--engine", choices=["atheris", "random"], default=default_engine)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--index", type=Path, default=HERE / "work" / "man-sections.sieve")
    ap.add_argument("--skip-man", action="store_true")
    ap.add_argument("--json", type=Path, default=HERE / "results" / "fuzz.json")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sieve-fuzz-"))
    failed = []

    t0 = time.perf_counter()
    fz = run_fuzz(args.engine, args.inputs, args.seed, work)
    fz["engine"], fz["seconds"] = args.engine, round(time.perf_counter() - t0, 1)
    print(f"1. fuzz ({args.engine}): {fz['inputs']:,} inputs in {fz['seconds']} s")
    for k, v in sorted(fz["counts"].items()):
        print(f"   {k:28} {v:9,}")
    if fz["inputs"]:
        p = fz["parse_ms"]
        print(f"   parse + round trip per input: p50 {p['p50']:.3f} ms, p99 {p['p99']:.3f} ms, max {p['max']:.1f} ms ({fz['slowest']['query'][:60]!r})")
        print(f"   match + search on the small index ({fz['evaluated']:,} queries): p99 {fz['eval_ms']['p99']:.2f} ms, max {fz['eval_ms']['max']:.1f} ms")
    for k, v in fz["unexpected"].items():
        print(f"   UNEXPECTED {k}\n      input {v[:200]!r}")
    if fz["unexpected"] or fz["inputs"] < args.inputs:
        failed.append("fuzz")

    if not (work / "small").exists():
        small_index(work)
    rows = run_pathological(work)
    print(f"\n2. pathological inputs (parse and Index.match, 5 runs each; must be rejected in < {REJECT_MS:.0f} ms)")
    for r in rows:
        ok = not r["outcome"].startswith(("WRONG", "ACCEPTED")) and r["worst_ms"] < REJECT_MS
        print(f"   {r['input']:36} {r['chars']:9,} chars  {r['outcome']:16} best {r['best_ms']:7.3f} ms  worst {r['worst_ms']:7.3f} ms{'' if ok else '  FAIL'}")
        if not ok:
            failed.append(r["input"])

    man: list[dict[str, Any]] = []
    if not args.skip_man:
        if not (args.index / "CURRENT").exists():
            print(f"\n3. skipped: no index at {args.index} (build it with sieve.build_index('benchmarks/data/man-sections.jsonl', ...))")
        else:
            man = run_man(args.index)
            print(f"\n3. pathological-but-valid queries on {args.index.name} (bound: {BOUND_S} s each, or a BQLLimitError)")
            for r in man:
                ok = all(r[op + "_s"] < BOUND_S or r[op].startswith("BQLLimitError") for op in ("match", "search"))
                ok = ok and not any(r[op].startswith(("Index", "Sieve")) for op in ("match", "search"))
                print(f"   {r['query'][:52]:52} {r['chars']:6}  match {r['match_s']:6.3f} s {r['match'][:44]:44}  search {r['search_s']:6.3f} s{'' if ok else '  FAIL'}")
                if not ok:
                    failed.append(r["query"])

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"fuzz": fz, "pathological": rows, "man_sections": man, "bound_s": BOUND_S, "failed": failed}, indent=1, default=str))
    print(f"\n{'FAILED: ' + ', '.join(failed) if failed else 'all promises held'}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
