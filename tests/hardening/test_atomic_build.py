"""Builds are atomic: a build killed at any moment, or failing on any write, leaves the target as
it was (absent, or the old complete index) or as the complete new index, never anything else;
leftover temporaries are never mistaken for an index; the next build succeeds.

Kills are SIGKILL, seeded: at every write-side step of the commit protocol (deterministic), at
random moments, and of the real `sieve index` command. `benchmarks/bench_kill.py` runs hundreds more.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import sieve
from sieve.engine.format import commits, storage

from .killing import answers, count_events, count_op_events, fork_build, fork_op, leftovers, spread, state, unreferenced
from .synth import records

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="kills forked builds")


def _jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Small corpora A and B (a build takes ~30 ms), large ones (~0.2 s), and what each answers."""
    root = tmp_path_factory.mktemp("corpora")
    out: dict[str, Any] = {"root": root}
    for name, n, seed in (("a", 40, 1), ("b", 40, 2), ("A", 1000, 1), ("B", 1000, 2)):
        src = _jsonl(root / f"{name}.jsonl", records(n, seed=seed))
        out[name] = src
        out[name + "?"] = answers(sieve.build_index(src, root / f"ref-{name}", jobs=1))
    assert out["a?"] != out["b?"] and out["A?"] != out["B?"]
    return out


def _other(name: str) -> str:
    return {"a": "b", "b": "a", "A": "B", "B": "A"}[name]


def _check_leftover_stages(target: Path, known: dict[str, Any]) -> int:
    """A killed fresh build's stage directory is never opened in place of the target; opened by
    its own name it is refused cleanly, or (killed after CURRENT was written in it) complete."""
    stages = [p for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.building-")]
    for stage in stages:
        try:
            index = sieve.open_index(stage)
        except (sieve.IndexNotFoundError, sieve.IndexDamagedError):
            continue
        assert answers(index) in known.values()
    return len(stages)


# ------------------------------------------------------------------ kills at every step


def _kill_points(steps: list[str]) -> list[int]:
    """Indexes of the steps to kill before: 16 spread over writing the files, and every step from
    the manifest on (the commit protocol itself)."""
    commit = steps.index("write_manifest")
    return sorted(set(spread(16, range(commit))) | set(range(commit, len(steps))))


@pytest.mark.slow
def test_kill_before_every_step_of_a_fresh_build(corpora: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "idx"
    steps = count_events(corpora["a"], tmp_path / "probe", force=False)
    assert {"fsync", "rename", "replace", "write_array", "write_manifest"} <= set(steps)
    points = _kill_points(steps)
    assert len(points) >= 20
    outcomes: Counter[str] = Counter()
    for k in points:
        assert fork_build(corpora["a"], target, force=False, kill_at=k) == "killed", k
        s = state(target, {"new": corpora["a?"]})
        outcomes[s] += 1
        if s == "new":  # killed after the rename: complete; remove it so the next kill is fresh again
            shutil.rmtree(target)
    # Only the kill before the final fsync of the parent comes after the rename.
    assert outcomes == {"absent": len(points) - 1, "new": 1}, outcomes
    # Kills before the parent's and the stage's mkdir (steps 0 and 1) leave no stage; every later
    # kill leaves its stage behind, and nothing removes it (see the report).
    no_stage = sum(k < 2 for k in points)
    assert _check_leftover_stages(target, {"new": corpora["a?"]}) == outcomes["absent"] - no_stage
    sieve.build_index(corpora["a"], target, jobs=1)  # the next build succeeds beside them
    assert state(target, {"new": corpora["a?"]}) == "new"


def _alternate_kills(corpora: dict[str, Any], target: Path, points: list[int], rebuild: Any) -> tuple[str, Counter[str]]:
    """Rebuild `target` (holding corpus "a") with the other corpus each time, killed before step k
    of each point: every kill leaves the old index or the new one. Returns the last one and counts."""
    have, outcomes = "a", Counter[str]()
    for k in points:
        want = _other(have)
        result = rebuild(want, k)
        s = state(target, {"a": corpora["a?"], "b": corpora["b?"]})
        assert s in (have, want), (k, s)
        outcomes["old" if s == have else "new"] += 1
        assert result == "killed" or s == want, (k, result)
        have = s
    return have, outcomes


@pytest.mark.slow
def test_kill_before_every_step_of_a_forced_rebuild(corpora: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "idx"
    sieve.build_index(corpora["a"], target, jobs=1)
    reader = sieve.open_index(target)  # a reader open across every kill and switch
    shutil.copytree(target, tmp_path / "probe")
    steps = count_events(corpora["b"], tmp_path / "probe", force=True)
    assert {"fsync", "rename", "replace", "rmtree"} <= set(steps)
    # The last kill points land in (or after) the removal of stale directories.
    have, outcomes = _alternate_kills(corpora, target, _kill_points(steps) + [len(steps), len(steps) + 1],
                                      lambda want, k: fork_build(corpora[want], target, force=True, kill_at=k))
    assert outcomes["old"] >= 1 and outcomes["new"] >= 1, outcomes
    assert answers(reader) == corpora["a?"]  # its memory maps outlive the removed commit point
    sieve.build_index(corpora[_other(have)], target, force=True, jobs=1)
    assert state(target, {"a": corpora["a?"], "b": corpora["b?"]}) == _other(have)
    assert leftovers(target) == [] and unreferenced(target) == []  # a successful switch tidies up


@pytest.mark.slow
def test_kill_before_every_step_of_a_sharded_rebuild(corpora: dict[str, Any], tmp_path: Path) -> None:
    """A sharded build (its shards built in this process, so every step is reached) killed at any
    step leaves the old index or the new one, never a mix; the new one answers as an unsharded
    build of its corpus (`answers` is the same for both)."""
    target = tmp_path / "idx"
    sieve.build_index(corpora["a"], target, jobs=1)

    def sharded(want: str) -> Any:
        return lambda: sieve.build_index(corpora[want], target, force=True, jobs=1, shards=3)

    shutil.copytree(target, tmp_path / "probe")
    steps = count_op_events(lambda: sieve.build_index(corpora["b"], tmp_path / "probe", force=True, jobs=1, shards=3))
    have, outcomes = _alternate_kills(corpora, target, _kill_points(steps) + [len(steps)], lambda want, k: fork_op(sharded(want), kill_at=k))
    assert outcomes["old"] >= 10 and outcomes["new"] >= 1, outcomes
    assert sieve.open_index(target).snapshot.shards == 3
    sieve.build_index(corpora[_other(have)], target, force=True, jobs=1, shards=3)
    assert state(target, {"a": corpora["a?"], "b": corpora["b?"]}) == _other(have)
    assert leftovers(target) == [] and unreferenced(target) == []


def _write(target: Path, adds: list[dict[str, Any]], deletes: list[str]) -> None:
    with sieve.open_index(target).writer() as w:
        for rec in adds:
            w.add(rec)
        for i in deletes:
            w.delete(i)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["add", "delete", "replace", "merge"])
def test_kill_before_every_step_of_a_write(corpora: dict[str, Any], tmp_path: Path, what: str) -> None:
    """add, delete, replace and merge killed before each of their write-side steps: the index is
    the last committed state or the new one, never anything else; the next write leaves no
    temporary and no unlisted segment behind."""
    base = tmp_path / "base"
    recs = records(60, seed=5)
    sieve.build_index(recs[:40], base, jobs=1)
    _write(base, recs[40:50], [recs[3]["id"]] if what == "merge" else [])  # a second segment (and a deletion) to merge
    before = answers(sieve.open_index(base))
    extra = [{**r, "id": f"x{i}"} for i, r in enumerate(recs[50:])]
    ops = {
        "add": lambda t: _write(t, extra, []),
        "delete": lambda t: _write(t, [], [r["id"] for r in recs[:5]]),
        "replace": lambda t: _write(t, [{**r, "title": "replaced " + r["title"]} for r in recs[:5]], []),
        "merge": lambda t: sieve.open_index(t).merge(),
    }
    op = ops[what]
    probe = tmp_path / "probe"
    shutil.copytree(base, probe)
    op(probe)
    after = answers(sieve.open_index(probe))
    assert after != before or what == "merge"
    shutil.rmtree(probe)
    shutil.copytree(base, probe)
    steps = count_op_events(lambda: op(probe))
    assert {"fsync", "rename", "replace"} <= set(steps), steps
    seen = Counter[str]()
    # 12 kills spread over writing the new segment's files, then every step from the commit point's manifest on.
    last = len(steps) - 1 - steps[::-1].index("write_manifest")
    for k in sorted(set(spread(12, range(last))) | set(range(last, len(steps) + 1))):
        target = tmp_path / f"k{k}"
        shutil.copytree(base, target)
        reader = sieve.open_index(target)
        result = fork_op(lambda target=target: op(target), kill_at=k)
        s = state(target, {"old": before, "new": after})
        if what == "merge":  # the same answers either way: the segments tell the states apart
            s = "new" if len(sieve.open_index(target).segments) == 1 else "old"
        seen[s] += 1
        assert result == "killed" or s == "new", (k, result, s)
        assert answers(reader) == before  # a reader open across the kill keeps its snapshot
        _write(target, [{"id": "later", "title": "a later write"}], [])  # the next write tidies up
        assert leftovers(target) == [] and unreferenced(target) == [], (k, sorted(p.name for p in target.iterdir()))
        shutil.rmtree(target)
    assert seen["old"] >= 1 and seen["new"] >= 1, seen


# ------------------------------------------------------------------ kills at random moments


def _span(build: Any) -> float:
    """The shortest of three timed runs of `build(i)` (seconds): one slow run on a busy machine
    must not stretch every delay past the end of the build."""
    spans = []
    for i in range(3):
        t0 = time.perf_counter()
        assert build(i) == "finished"
        spans.append(time.perf_counter() - t0)
    return min(spans)


def _delays(rng: random.Random, span: float, n: int = 8) -> list[float]:
    """`n` kill moments spread evenly over 0..1.2 spans, in a seeded random order: some land
    early in the build and some after it, whatever the draw."""
    fractions = [1.2 * (i + 0.5) / n for i in range(n)]
    rng.shuffle(fractions)
    return [f * span for f in fractions]


@pytest.mark.slow
def test_random_kills_of_fresh_and_forced_builds(corpora: dict[str, Any], tmp_path: Path) -> None:
    rng = random.Random(2024)
    fresh_span = _span(lambda i: fork_build(corpora["A"], tmp_path / f"timed{i}", force=False))
    forced_span = _span(lambda i: fork_build(corpora["B" if i % 2 == 0 else "A"], tmp_path / "timed0", force=True))
    known = {"A": corpora["A?"], "B": corpora["B?"]}
    outcomes: Counter[str] = Counter()
    fresh = tmp_path / "fresh" / "idx"
    fresh.parent.mkdir()
    for delay in _delays(rng, fresh_span):
        fork_build(corpora["A"], fresh, force=False, delay=delay)
        s = state(fresh, {"A": corpora["A?"]})
        outcomes["fresh " + s] += 1
        if s != "absent":
            shutil.rmtree(fresh)
    target, have = tmp_path / "forced", "A"
    sieve.build_index(corpora["A"], target, jobs=1)
    for delay in _delays(rng, forced_span):
        want = _other(have)
        fork_build(corpora[want], target, force=True, delay=delay)
        s = state(target, known)
        assert s in (have, want)
        outcomes["force " + ("old" if s == have else "new")] += 1
        have = s
    assert outcomes["fresh absent"] >= 1 and outcomes["force old"] >= 1, outcomes
    sieve.build_index(corpora["A"], fresh, jobs=1, force=fresh.exists())
    assert state(fresh, known) == "A"


@pytest.mark.slow
def test_killing_the_sieve_index_command(corpora: dict[str, Any], tmp_path: Path) -> None:
    """The real CLI in a fresh interpreter, killed at a random moment of its run (imports included)."""
    rng = random.Random(7)
    target = tmp_path / "idx"
    known = {"A": corpora["A?"], "B": corpora["B?"]}

    def cli(name: str, out: Path) -> list[str]:
        return [sys.executable, "-m", "sieve", "index", str(corpora[name]), str(out), "--quiet", "--jobs", "1"] + (["--force"] if out.exists() else [])

    t0 = time.perf_counter()
    done = subprocess.run(cli("A", target), capture_output=True, text=True)
    whole = time.perf_counter() - t0
    assert done.returncode == 0, done.stderr
    have = "A"
    for out in (target, target, tmp_path / "fresh"):
        want = _other(have) if out == target else "B"
        proc = subprocess.Popen(cli(want, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(rng.uniform(0.5, 1.05) * whole)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        s = state(out, known)
        if out == target:
            assert s in (have, want)
            have = s
        else:
            assert s in ("absent", want)
    done = subprocess.run(cli(_other(have), target), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert state(target, known) == _other(have)


# ------------------------------------------------------------------ write errors


class Injected:
    """Make the n-th call of one function raise an OSError (ENOSPC, as a full disk would)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, module: Any, attr: str, n: int, when: Any = None) -> None:
        self.calls = 0
        real = getattr(module, attr)

        def failing(*args: Any, **kwargs: Any) -> Any:
            if when is None or when(*args, **kwargs):
                self.calls += 1
                if self.calls == n:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return real(*args, **kwargs)

        monkeypatch.setattr(module, attr, failing)


def _writing(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> bool:
    return any(c in mode for c in "wax+")


# (what fails, module, attribute, which call, filter): every kind of write a build makes.
FAULTS = [
    ("open for writing, first", "builtins", "open", 1, _writing),
    ("open for writing, 12th", "builtins", "open", 12, _writing),
    ("open for writing, last", "builtins", "open", -1, _writing),
    ("write of the document store", storage.ArrayWriter, "append_bytes", 1, None),
    ("write of an array file", storage.ArrayWriter, "append", 5, None),
    ("seal of an array file", storage.ArrayWriter, "close", 20, None),
    ("fsync, first", os, "fsync", 1, None),
    ("fsync, 10th", os, "fsync", 10, None),
    ("fsync, second to last", os, "fsync", -2, None),
    ("fsync, last", os, "fsync", -1, None),
    ("manifest", commits, "write_manifest", 1, None),
    ("rename", os, "rename", 1, None),
    ("replace of CURRENT", os, "replace", 1, None),
    ("mkdir of the stage", os, "mkdir", 2, None),  # the 1st is the parent's, which exists
    ("mkdir of the commit point (fresh only)", os, "mkdir", 3, None),  # with --force the stage is the commit point
]


def _calls(corpus: Path, target: Path, force: bool, module: Any, attr: str, when: Any) -> int:
    """How many calls of module.attr (passing `when`) one successful build makes."""
    mp = pytest.MonkeyPatch()
    counter = Injected(mp, module, attr, 0, when)
    try:
        sieve.build_index(corpus, target, force=force, jobs=1)
    finally:
        mp.undo()
    return counter.calls


CASES = [(force, *f) for f in FAULTS for force in (False, True) if not (force and "fresh only" in f[0])]


@pytest.mark.parametrize("force, what, module, attr, n, when", CASES, ids=[f"{c[1]}-{'force' if c[0] else 'fresh'}" for c in CASES])
def test_a_write_error_leaves_the_old_state(corpora: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, force: bool, what: str, module: Any, attr: str, n: int, when: Any) -> None:
    module = __import__("builtins") if module == "builtins" else module
    target = tmp_path / "out" / "idx"
    target.parent.mkdir()
    if force:
        sieve.build_index(corpora["a"], target, jobs=1)
        shutil.copytree(target, tmp_path / "probe")
        total = _calls(corpora["b"], tmp_path / "probe", True, module, attr, when)
    else:
        total = _calls(corpora["b"], tmp_path / "probe", False, module, attr, when)
    if total < abs(n):
        pytest.skip(f"a build makes only {total} such calls")
    Injected(monkeypatch, module, attr, n if n > 0 else total + 1 + n, when)
    with pytest.raises(OSError) as info:
        sieve.build_index(corpora["b"], target, force=force, jobs=1)
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC and "No space left on device" in str(info.value)
    known = {"old": corpora["a?"], "new": corpora["b?"]}
    s = state(target, known)
    # Failing after the switch (the last directory fsync) leaves the new index in place.
    assert s == ("old" if force else "absent") or (s == "new" and attr == "fsync" and n == -1), s
    # The stage was removed; a CURRENT.tmp that failed to replace CURRENT stays (harmless: overwritten next time).
    assert [p for p in leftovers(target) if p != "CURRENT.tmp"] == []
    sieve.build_index(corpora["b"], target, force=target.exists(), jobs=1)  # and the next build succeeds
    assert state(target, known) == "new" and leftovers(target) == [] and unreferenced(target) == []
