"""The limits of one command line (`ShellLimits`) and what it did (`Outcome`), and how they are
held: rlimits set in the child, a control group where one can be made, and a watchdog that sums
the tree's memory and processes, caps scratch and output, and kills the tree (`kill_tree`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sieve.errors import InvalidArgumentError
from sieve.tools.shell.cgroup import CallGroup


@dataclass(frozen=True)
class ShellLimits:
    """What one command line may use, all its programs together."""

    wall_seconds: float = 20.0
    cpu_seconds: int = 10  # per program (RLIMIT_CPU)
    memory_bytes: int = 1 << 30  # resident, summed over the tree; also each program's address space
    processes: int = 64  # alive at once
    file_bytes: int = 16 << 20  # the largest file a program may write (RLIMIT_FSIZE)
    scratch_bytes: int = 64 << 20  # the scratch folder in all
    output_bytes: int = 64 << 10  # shown to the model; the rest is cut with a note
    max_chars: int = 4000  # of the command line
    # a control group per call where one can be made
    # (sieve.tools.shell.cgroup); else the watchdog alone
    cgroup: bool = True

    def __post_init__(self) -> None:
        for name in (
            "wall_seconds",
            "cpu_seconds",
            "memory_bytes",
            "processes",
            "file_bytes",
            "scratch_bytes",
            "output_bytes",
            "max_chars",
        ):
            if not getattr(self, name) > 0:
                raise InvalidArgumentError(
                    f"shell limit {name} must be positive, got {getattr(self, name)!r}"
                )


@dataclass(frozen=True)
class Outcome:
    """What a command did: its output (stdout and stderr as one stream), its exit status (None when
    killed), and the limit that stopped it, if one did (time, memory, processes, scratch,
    output)."""

    output: bytes
    status: int | None
    limit: str | None = None


def _child_setup(limits: ShellLimits, group: CallGroup | None) -> None:
    """In the child, before exec (inherited by the whole tree): its control group, its rlimits."""
    if group is not None:
        group.enter()
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    # one file cannot pass the scratch cap between two checks
    fsize = min(limits.file_bytes, limits.scratch_bytes)
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def _supervise(
    argv: list[str], env: dict[str, str], cwd: str, limits: ShellLimits, scratch: Path | None
) -> Outcome:
    # The group's task cap is a backstop far above the watchdog's process count (threads count as
    # tasks: rg runs one per core); its memory cap is the limit itself.
    group = (
        CallGroup.make(2 * limits.processes + 16 + (os.cpu_count() or 1), limits.memory_bytes)
        if limits.cgroup
        else None
    )
    try:
        return _watch(argv, env, cwd, limits, scratch, group)
    finally:
        if group is not None:
            group.remove()


def _watch(
    argv: list[str],
    env: dict[str, str],
    cwd: str,
    limits: ShellLimits,
    scratch: Path | None,
    group: CallGroup | None,
) -> Outcome:
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        close_fds=True,
        start_new_session=True,
        preexec_fn=functools.partial(_child_setup, limits, group),
    )
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    out = bytearray()
    limit: str | None = None
    deadline = time.monotonic() + limits.wall_seconds
    interval, next_check = 0.005, time.monotonic() + 0.005
    ended_at: float | None = None
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                limit = "time"
                break
            if ended_at is None and proc.poll() is not None:
                ended_at = now
            if ended_at is not None and now - ended_at > 0.2:
                # the command is over; a stray process holding the
                # pipe (only without a sandbox) is not waited for
                break
            if sel.select(timeout=max(0.0, min(next_check, deadline) - now)):
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    break
                out += chunk
                if len(out) > limits.output_bytes:
                    limit = "output"
                    break
            if time.monotonic() >= next_check:
                limit = _over(proc.pid, limits, scratch, group)
                if limit is not None:
                    break
                interval = min(interval * 1.5, 0.1)
                next_check = time.monotonic() + interval
    finally:
        sel.close()
        # Every process of the call is in its control group, which lists them exactly: an emptied
        # group means nothing is left, and the two scans of /proc that kill_tree makes are spared.
        if group is None or not group.kill():
            kill_tree(proc.pid, group=proc.pid)
        proc.stdout.close()
        proc.wait()
    if limit is None and group is not None and group.oom_killed():
        limit = "memory"
    status = (
        proc.returncode
        if limit is None and proc.returncode is not None and proc.returncode >= 0
        else None
    )
    return Outcome(bytes(out), status, limit)


def _over(
    root: int, limits: ShellLimits, scratch: Path | None, group: CallGroup | None
) -> str | None:
    """The limit the tree under `root` (or in `group`, exactly) is past now, if any."""
    if group is not None and group.oom_killed():
        return "memory"
    tree = _resident(group.members()) if group is not None else descendants(root, with_rss=True)
    # bwrap's monitor and init, or the jail, are not the command's
    if len(tree) > limits.processes + 2:
        return "processes"
    if sum(tree.values()) * resource.getpagesize() > limits.memory_bytes:
        return "memory"
    if scratch is not None and _size(scratch, limits) > limits.scratch_bytes:
        return "scratch"
    return None


def _size(folder: Path, limits: ShellLimits) -> int:
    total, seen, stack = 0, 0, [str(folder)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for e in entries:
                    seen += 1
                    if seen > 100_000:
                        # files by the hundred thousand: over, whatever their size
                        return limits.scratch_bytes + 1
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    else:
                        total += e.stat(follow_symlinks=False).st_blocks * 512
        except OSError:
            continue
    return total


def _processes() -> dict[int, tuple[int, int, bytes, int]]:
    """Every process now: pid -> (parent, resident pages, state, process group)."""
    found = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        found[int(name)] = (int(fields[1]), int(fields[21]), fields[0], int(fields[2]))
    return found


def _resident(pids: set[int]) -> dict[int, int]:
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != b"Z":
            out[pid] = int(fields[21])
    return out


def descendants(
    root: int, with_rss: bool = False, groups: set[int] | None = None
) -> dict[int, int]:
    """The live processes under `root` (itself included): pid -> resident pages; their process
    groups are added to `groups` when given."""
    procs = _processes()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, state, _) in procs.items():
        if state != b"Z":
            children.setdefault(ppid, []).append(pid)
    out, stack = {}, [root] if root in procs and procs[root][2] != b"Z" else []
    while stack:
        pid = stack.pop()
        out[pid] = procs[pid][1] if with_rss else 0
        stack.extend(children.get(pid, ()))
        if groups is not None:
            groups.add(procs[pid][3])
    return out


def kill_tree(root: int, group: int | None = None, wait: float = 5.0) -> None:
    """Stop every process under `root` until no new one appears, then kill them all, and wait up
    to `wait` seconds for them to be gone (a large one takes a moment to free its memory).

    A stopped process cannot fork, so a fork bomb runs out; each process group found is stopped
    with one signal, which outpaces a bomb whose thousands of runnable processes would otherwise
    starve this one; `group` is the process group the call was started in. Without a sandbox, a
    job re-parented away is still in its group. Under
    bubblewrap the tree holds the PID namespace's init, whose death makes the kernel kill what
    is left in the namespace."""
    own = os.getpgrp()
    groups: set[int] = {group} if group is not None and group != own else set()
    for g in groups:
        _signal_group(g, signal.SIGSTOP)
    stopped: set[int] = set()
    for _ in range(1000):
        found: set[int] = set()
        fresh = set(descendants(root, groups=found)) - stopped
        for group in found - groups - {own}:
            _signal_group(group, signal.SIGSTOP)
        groups |= found - {own}
        if not fresh:
            break
        _signal(fresh, signal.SIGSTOP)
        stopped |= fresh
    for group in groups:
        _signal_group(group, signal.SIGKILL)
    _signal(stopped, signal.SIGKILL)
    for _ in range(100):  # any the scans missed, now that nothing can fork
        left = set(descendants(root))
        if not left:
            break
        _signal(left, signal.SIGKILL)
        stopped |= left
        time.sleep(0.001)
    until = time.monotonic() + wait
    while stopped and time.monotonic() < until:
        stopped = {pid for pid in stopped if _running(pid)}
        if stopped:
            time.sleep(0.002)


def _signal_group(group: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def _signal(pids: set[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False
