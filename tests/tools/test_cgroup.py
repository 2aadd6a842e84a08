"""A control group per shell call, where this machine lets sieve make one (root with cgroup v1, or a
delegated cgroup v2 parent): exact membership, the task cap, the kill, and nothing left behind.
Where none can be made, `CallGroup.make` is None and the watchdog-only path (tested in
tests/hardening/test_shell_escape.py) is the one every call takes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sieve.tools.shell.cgroup import _PREFIX, CallGroup, _parents
from sieve.tools.shell.sandbox import ShellLimits, choose
from sieve.tools.shell.shell import run


def _ours() -> list[Path]:
    parents = _parents()
    return [] if parents is None else [p for d in parents[1] for p in d.glob(f"{_PREFIX}*")]


def test_a_group_holds_its_members_caps_them_and_is_removed() -> None:
    group = CallGroup.make(4, 64 << 20)
    if _parents() is None:
        assert group is None  # no writable hierarchy: the watchdog alone
        return
    assert group is not None
    assert (group.dirs[0] / "pids.max").read_text().strip() == "4"
    child = subprocess.Popen(["bash", "-c", "for i in 1 2 3 4 5 6; do sleep 30 & done; wait; echo $?"], preexec_fn=group.enter,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(200):
            if len(group.members()) >= 4:
                break
            subprocess.run(["sleep", "0.01"])
        assert child.pid in group.members() and len(group.members()) == 4  # the cap: bash and three sleeps
    finally:
        group.kill()
        child.wait()
    assert group.members() == set()
    group.remove()
    assert not any(d.exists() for d in group.dirs)


def test_groups_of_a_dead_sieve_process_are_pruned() -> None:
    parents = _parents()
    if parents is None:
        assert CallGroup.make(4, 64 << 20) is None
        return
    stale = [d / f"{_PREFIX}999999999-0" for d in parents[1]]
    for d in stale:
        d.mkdir()
    group = CallGroup.make(4, 64 << 20)
    assert group is not None and not any(d.exists() for d in stale)
    group.remove()


def test_shell_calls_leave_no_group_behind(tmp_path: Path) -> None:
    box = choose("none")  # the group is the same whatever the sandbox
    before = _ours()
    for line in ("echo hi", "sleep 5", "sleep 1 & echo bg"):
        run(tmp_path, line, ShellLimits(wall_seconds=0.3), box)
    assert _ours() == before
