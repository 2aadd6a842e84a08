"""A control group for one shell call, where this machine lets sieve make one.

A cgroup caps the call's tasks (`pids.max`: a fork bomb stops growing) and memory (the kernel's
OOM killer acts inside the group only), and lists its members exactly, so nothing that re-parents
or starts a new session escapes the kill. Two layouts are used: cgroup v2 with a delegated parent
(a sibling of sieve's own group, as systemd's `Delegate=yes` gives a user service), and cgroup v1's
`pids` and `memory` hierarchies (writable by root). Elsewhere `CallGroup.make` returns None and the
sandbox's watchdog, which sums the tree's memory and counts its processes, enforces the limits
alone. A group is named `sieve-shell-PID-N`; groups left by a sieve process that died are removed
the next time one is made.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_PREFIX = "sieve-shell-"
_counter = itertools.count()


@dataclass(frozen=True)
class CallGroup:
    version: int  # 1 or 2
    dirs: tuple[Path, ...]  # v2: one; v1: the pids group, then the memory group

    @staticmethod
    def make(tasks: int, memory_bytes: int) -> CallGroup | None:
        """A fresh group capped at `tasks` tasks and `memory_bytes` bytes, or None where none can be
        made."""
        parents = _parents()
        if parents is None:
            return None
        version, dirs = parents
        name = f"{_PREFIX}{os.getpid()}-{next(_counter)}"
        made: list[Path] = []
        try:
            for parent in dirs:
                _prune(parent)
                (parent / name).mkdir()
                made.append(parent / name)
            if version == 2:
                (made[0] / "pids.max").write_text(str(tasks))
                (made[0] / "memory.max").write_text(str(memory_bytes))
                if (made[0] / "memory.swap.max").exists():
                    (made[0] / "memory.swap.max").write_text("0")
            else:
                (made[0] / "pids.max").write_text(str(tasks))
                (made[1] / "memory.limit_in_bytes").write_text(str(memory_bytes))
        except OSError:
            for d in made:
                _rmdir(d)
            return None
        return CallGroup(version, tuple(made))

    def enter(self) -> None:
        """Move the calling process into the group (in the child, before exec)."""
        for d in self.dirs:
            with open(d / "cgroup.procs", "w") as f:
                f.write("0")

    def members(self) -> set[int]:
        try:
            return {int(p) for p in (self.dirs[0] / "cgroup.procs").read_text().split()}
        except (OSError, ValueError):
            return set()

    def oom_killed(self) -> bool:
        """Whether the kernel killed a member for the group's memory cap."""
        path = (
            self.dirs[0] / "memory.events"
            if self.version == 2
            else self.dirs[1] / "memory.oom_control"
        )
        try:
            for line in path.read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def kill(self, wait: float = 5.0) -> bool:
        """Kill every member (stopped first, so none forks meanwhile) and wait until the group is
        empty; False if it is not empty after `wait` seconds."""
        kill_file = self.dirs[0] / "cgroup.kill"
        if self.version == 2 and kill_file.exists():
            with contextlib.suppress(OSError):
                kill_file.write_text("1")
        until = time.monotonic() + wait
        stopped: set[int] = set()
        while time.monotonic() < until:
            left = self.members()
            if not left:
                return True
            for sig in (signal.SIGSTOP, signal.SIGKILL) if left - stopped else (signal.SIGKILL,):
                for pid in left:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, sig)
            stopped |= left
            time.sleep(0.002)
        return not self.members()

    def remove(self) -> None:
        for d in reversed(self.dirs):
            _rmdir(d)


def _rmdir(d: Path) -> None:
    for _ in range(50):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # busy for a moment after its last member died
            time.sleep(0.002)


def _prune(parent: Path) -> None:
    """Remove groups made by sieve processes that are gone."""
    try:
        entries = [e for e in os.scandir(parent) if e.name.startswith(_PREFIX) and e.is_dir()]
    except OSError:
        return
    for e in entries:
        pid = e.name[len(_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not os.path.exists(f"/proc/{pid}"):
            _rmdir(Path(e.path))


@functools.cache
def _parents() -> tuple[int, tuple[Path, ...]] | None:
    """Where this process may make groups: (2, (parent,)) or (1, (pids parent, memory parent))."""
    try:
        own = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
        mounts = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    except OSError:
        return None
    for fields in mounts:  # cgroup v2, a delegated parent with both controllers handed down
        sep = fields.index("-")
        if fields[sep + 1] != "cgroup2":
            continue
        path = next((p for h, c, p in own if h == "0" and c == ""), None)
        if path is None:
            continue
        parent = Path(fields[4] + _relative(path, fields[3])).parent
        try:
            handed = set((parent / "cgroup.subtree_control").read_text().split())
        except OSError:
            continue
        if (
            {"pids", "memory"} <= handed
            and os.access(parent, os.W_OK)
            and os.access(parent / "cgroup.procs", os.W_OK)
        ):
            return 2, (parent,)
    found: dict[str, Path] = {}
    for controller in ("pids", "memory"):  # cgroup v1: groups under this process's own
        path = next((p for h, c, p in own if controller in c.split(",")), None)
        for fields in mounts:
            sep = fields.index("-")
            if (
                path is not None
                and fields[sep + 1] == "cgroup"
                and controller in fields[sep + 3].split(",")
            ):
                d = Path(fields[4] + _relative(path, fields[3]))
                if os.access(d, os.W_OK):
                    found[controller] = d
                break
    if len(found) == 2:
        return 1, (found["pids"], found["memory"])
    return None


def _relative(path: str, root: str) -> str:
    """A group's path below the mount's root (a container's mount shows only its own subtree)."""
    if root != "/" and path.startswith(root):
        path = path[len(root) :]
    return path if path.startswith("/") or not path else "/" + path
