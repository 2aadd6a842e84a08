"""Kill a build at a chosen moment and classify what it leaves behind (tests and bench_kill.py).

Builds run in forked children of an already warm process (numpy, sly and the analyser loaded), so
a kill costs the build alone, not an interpreter start. `fork_build` either kills the child with
SIGKILL after a delay, or lets the child SIGKILL itself just before its k-th write-side system call
(mkdir, fsync, rename, replace, rmtree, the start of an array file), which reaches every step of
the commit protocol deterministically.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import sieve
from sieve.engine.format import commits, storage

# (module, attribute) of every write-side step a build takes, in the order it meets them.
EVENTS: tuple[tuple[Any, str], ...] = ((os, "mkdir"), (os, "fsync"), (os, "rename"), (os, "replace"), (shutil, "rmtree"), (storage, "write_array"), (commits, "write_manifest"))


def _hook(on_event: Callable[[str], None]) -> None:
    """Wrap every EVENTS function so that on_event(name) runs before it (in this process only)."""
    for module, attr in EVENTS:
        real = getattr(module, attr)

        def wrapper(*args: Any, _real: Any = real, _name: str = attr, **kwargs: Any) -> Any:
            on_event(_name)
            return _real(*args, **kwargs)

        setattr(module, attr, wrapper)


def count_events(corpus: Any, target: Path, force: bool) -> list[str]:
    """The write-side steps one complete build takes (in a child, so nothing here is patched)."""
    return count_op_events(lambda: sieve.build_index(corpus, target, force=force, jobs=1))


def count_op_events(op: Callable[[], Any]) -> list[str]:
    """The write-side steps `op` (any write: add, delete, merge) takes, run in a child."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.close(r)
            seen: list[str] = []
            _hook(seen.append)
            op()
            os.write(w, ",".join(seen).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while chunk := os.read(r, 65536):
        chunks.append(chunk)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "counting run failed"
    return b"".join(chunks).decode().split(",")


def fork_build(corpus: Any, target: Path, force: bool, delay: float | None = None, kill_at: int | None = None, timeout: float = 30.0) -> str:
    """Run one build in a child and kill it: after `delay` seconds, or just before its
    `kill_at`-th write-side step. Returns "killed", "finished" or "failed" (an exception)."""
    return fork_op(lambda: sieve.build_index(corpus, target, force=force, jobs=1), delay, kill_at, timeout)


def fork_op(op: Callable[[], Any], delay: float | None = None, kill_at: int | None = None, timeout: float = 30.0) -> str:
    """Run `op` in a child and kill it as `fork_build` does."""
    pid = os.fork()
    if pid == 0:  # child
        code = 3
        try:
            if kill_at is not None:
                count = [0]

                def on_event(_name: str) -> None:
                    if count[0] == kill_at:
                        os.kill(os.getpid(), signal.SIGKILL)
                    count[0] += 1

                _hook(on_event)
            op()
            code = 0
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    if delay is not None:
        time.sleep(delay)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:  # a hung build is a failure too: kill it, report it
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hung"
        time.sleep(0.002)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL:
        return "killed"
    return "finished" if os.waitstatus_to_exitcode(status) == 0 else "failed"


PROBES = ["heatwave", "paris", "kernel[title]", '"the file"', "sock*", "NOT data", "date[2000..2010]", "NEAR/3(read, write)", "zurich OR strasse", "ann[author]"]


def answers(index: sieve.Index) -> tuple[Any, ...]:
    """What an index says: its size, its ids, and the documents of a few probes of every kind."""
    return (len(index), tuple(index.match("NOT zzzzqqq").ids), *(tuple(index.match(q).ids) for q in PROBES))


def state(target: Path, known: dict[str, tuple[Any, ...]]) -> str:
    """"absent", or the name of the known build `target` answers exactly as (verified to the last
    byte). Anything else, an index that opens wrongly or a traceback, fails."""
    if not target.exists():
        try:
            sieve.open_index(target)
        except sieve.IndexNotFoundError:
            return "absent"
        raise AssertionError(f"{target} does not exist but opens")
    index = sieve.open_index(target)
    index.check()
    got = answers(index)
    for name, expected in known.items():
        if got == expected:
            return name
    raise AssertionError(f"{target} opens as neither of {sorted(known)}")


def leftovers(target: Path) -> list[str]:
    """Temporary directories killed builds left: beside a fresh target, inside an existing one."""
    beside = [p.name for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.building-")]
    inside = [p.name for p in target.iterdir() if ".building-" in p.name or p.name == "CURRENT.tmp"] if target.is_dir() else []
    return sorted(beside + inside)


def unreferenced(target: Path) -> list[str]:
    """Generation directories CURRENT does not name, and segment directories its commit does not list."""
    if not target.is_dir():
        return []
    gen = commits.current_commit(target)
    listed = {e["name"] for e in commits.read_manifest(gen).get("segments", [])}
    return sorted(p.name for p in target.iterdir()
                  if (p.name.startswith("gen-") and p.name != gen.name) or (p.name.startswith("seg-") and p.name not in listed))


def spread(n: int, seq: Sequence[Any]) -> list[Any]:
    """n items spread evenly over seq (all of it when n >= len(seq))."""
    if n >= len(seq):
        return list(seq)
    return [seq[round(i * (len(seq) - 1) / (n - 1))] for i in range(n)] if n > 1 else [seq[0]]
