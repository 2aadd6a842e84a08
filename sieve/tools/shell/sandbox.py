"""Operating-system sandboxes for the agent's shell: the boundary is the kernel, not a filter.

A command line runs as `bash -c LINE` in a fresh process tree that sees the episode's folder
read-only, a private size-capped scratch folder (`$TMPDIR`, emptied after every call), and the
system's programs and libraries read-only; nothing else of the file system, no network, no
variable of sieve's environment. Three mechanisms, picked once per process by `choose`:

- `bwrap` (bubblewrap, the sandbox Flatpak uses): new user, PID, network, IPC and UTS namespaces,
  an empty read-only root holding only `/usr` (and its `/bin`, `/lib*` links), `/etc/alternatives`
  and the loader cache, a `/proc` of the sandbox's own processes, a minimal `/dev`, the folder at
  `/corpus` and a tmpfs at `/tmp`, run as `nobody` with no capabilities and no further user
  namespaces. Everything in the tree dies with its PID namespace.
- `landlock` (Linux 5.13+, unprivileged): `sieve/tools/shell/jail.py` confines a child with a
  Landlock ruleset and a seccomp filter, drops root's capabilities, and supervises the tree as its
  subreaper.
- `none`: no confinement (for users who run sieve inside a container of their own); the limits
  below still apply; the caller warns on every run.

Limits hold for the whole call's process tree together: wall time (the tree is frozen and killed),
resident memory (summed over the tree by a watchdog, with each program's address space capped by
RLIMIT_AS as well), number of processes, bytes of any file written and of the scratch folder, and
bytes of output. A limit that fires is reported in `Outcome.limit`, never raised.
"""

from __future__ import annotations

import contextlib
import functools
import marshal
import os
import platform
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from sieve.errors import InvalidArgumentError, SandboxError
from sieve.tools.shell.cgroup import CallGroup

MECHANISMS = ("auto", "bwrap", "landlock", "none")
CORPUS_MOUNT = "/corpus"  # where the folder appears inside bubblewrap
JAIL = Path(__file__).resolve().parent / "jail.py"
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_FILES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_PATH = "/usr/local/bin:/usr/bin:/bin"
_NOBODY = "65534"
_INSTALL = (
    "install bubblewrap (Debian and Ubuntu: `apt install bubblewrap`; Fedora: `dnf install "
    "bubblewrap`; Arch: `pacman -S bubblewrap`) "
    "or run on Linux 5.13 or newer with Landlock enabled; inside a container of your own, "
    "`--shell-sandbox none` runs commands "
    "unconfined (not recommended)"
)


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


@dataclass(frozen=True)
class Sandbox:
    """One sandbox mechanism, checked to work on this machine (`choose` makes them)."""

    mechanism: str  # bwrap, landlock or none
    # what was found, for the run's records: "bubblewrap 0.8.0", "Landlock ABI 7, seccomp x86_64"
    detail: str

    @property
    def confined(self) -> bool:
        return self.mechanism != "none"

    @property
    def folder_name(self) -> str:
        """How the folder is named to the commands: its mount point, or its real path."""
        return CORPUS_MOUNT if self.mechanism == "bwrap" else "."

    def record(self) -> dict[str, str]:
        return {"mechanism": self.mechanism, "detail": self.detail}

    def run(
        self, folder: str | os.PathLike[str], line: str, limits: ShellLimits = ShellLimits()
    ) -> Outcome:
        """Run `bash -c line` in `folder` under this sandbox and `limits`."""
        folder = Path(folder).resolve()
        if not folder.is_dir():
            raise InvalidArgumentError(f"the shell's folder {str(folder)!r} is not a folder")
        shell = _shell()
        scratch = (
            None if self.mechanism == "bwrap" else Path(tempfile.mkdtemp(prefix="sieve-scratch-"))
        )
        argv: list[str]
        env: dict[str, str]
        try:
            if self.mechanism == "bwrap":
                argv, env, cwd = (
                    _bwrap_argv(
                        folder,
                        limits,
                        [
                            shell,
                            "--noprofile",
                            "--norc",
                            "-c",
                            f"ulimit -u {limits.processes} 2>/dev/null; {line}",
                        ],
                    ),
                    {},
                    "/",
                )
            elif self.mechanism == "landlock":
                assert scratch is not None  # made above for every mechanism but bwrap
                argv, env, cwd = (
                    _jail_argv(folder, scratch, [shell, "--noprofile", "--norc", "-c", line]),
                    {},
                    "/",
                )
            else:
                argv, env, cwd = (
                    [shell, "--noprofile", "--norc", "-c", line],
                    _environment(str(scratch)),
                    str(folder),
                )
            return _supervise(argv, env, cwd, limits, scratch)
        finally:
            if scratch is not None:
                _remove(scratch)


def _shell() -> str:
    return shutil.which("bash", path=_PATH) or "/bin/sh"


def _environment(scratch: str) -> dict[str, str]:
    """Built from nothing: no variable of sieve's own environment reaches a command."""
    return {
        "PATH": _PATH,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "HOME": scratch,
        "TMPDIR": scratch,
        "TERM": "dumb",
    }


def _bwrap_argv(folder: Path, limits: ShellLimits, command: list[str]) -> list[str]:
    argv = [
        shutil.which("bwrap") or "bwrap",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--disable-userns",
        "--uid",
        _NOBODY,
        "--gid",
        _NOBODY,
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sieve",
    ]
    for top in _SYSTEM:
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for path in _SYSTEM_FILES:
        argv += ["--ro-bind-try", path, path]
    argv += [
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--remount-ro",
        "/dev",
        "--size",
        str(limits.scratch_bytes),
        "--tmpfs",
        "/tmp",
        "--ro-bind",
        str(folder),
        CORPUS_MOUNT,
        "--remount-ro",
        "/",
        "--chdir",
        CORPUS_MOUNT,
        "--clearenv",
    ]
    for key, value in _environment("/tmp").items():
        argv += ["--setenv", key, value]
    return argv + ["--", *command]


def _jail_argv(folder: Path, scratch: Path, command: list[str]) -> list[str]:
    rules = [(p, "system") for p in _SYSTEM + _SYSTEM_FILES] + [
        (str(folder), "read"),
        (str(scratch), "scratch"),
    ]
    rules += [(d, "device") for d in _DEVICES]
    config = {
        "parent": os.getpid(),
        "cwd": str(folder),
        "rules": rules,
        "argv": command,
        "env": _environment(str(scratch)),
    }
    return [sys.executable, "-I", "-S", str(JAIL), marshal.dumps(config).hex()]


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


def _remove(folder: Path) -> None:
    def writable(func: Callable[[str], object], path: str, _exc: object) -> None:
        os.chmod(os.path.dirname(path), 0o700)  # a command may have made a folder unwritable
        func(path)

    shutil.rmtree(folder, onerror=writable)


def warn_unconfined(box: Sandbox, file: TextIO | None = None) -> None:
    """Say, on every run that uses it, that `none` confines nothing."""
    if not box.confined:
        print(
            f"warning: --shell-sandbox none: {box.detail}; the agent's shell commands can read, "
            "write and run anything this user can. "
            "Use it only inside a container or machine of your own.",
            file=file or sys.stderr,
            flush=True,
        )


# ---- choosing a mechanism
# -------------------------------------------------------------------------


def choose(requested: str = "auto") -> Sandbox:
    """The sandbox to use: `auto` is bubblewrap, else Landlock, else a `SandboxError` naming what to
    install; `bwrap` or `landlock` only that one (an error if it does not work here); `none` no
    confinement. Each mechanism is checked once per process by running a command through it."""
    if requested not in MECHANISMS:
        raise InvalidArgumentError(
            f"unknown shell sandbox {requested!r}; choose from {', '.join(MECHANISMS)}"
        )
    if requested == "none":
        return Sandbox("none", f"no sandbox: commands run unconfined as user {os.getuid()}")
    problems = []
    for mechanism in ("bwrap", "landlock"):
        if requested in ("auto", mechanism):
            found = _probe(mechanism)
            if isinstance(found, Sandbox):
                return found
            problems.append(found)
    raise SandboxError(
        "the shell tool needs an operating-system sandbox and none works here "
        f"({'; '.join(problems)}): {_INSTALL}"
    )


@functools.cache
def _probe(mechanism: str) -> Sandbox | str:
    """A working Sandbox, or why this mechanism does not work here."""
    if platform.system() != "Linux":
        return f"{mechanism} needs Linux, this is {platform.system()}"
    if mechanism == "bwrap":
        exe = shutil.which("bwrap")
        if exe is None:
            return "bubblewrap (bwrap) is not installed"
        try:
            version = (
                subprocess.run(
                    [exe, "--version"], capture_output=True, text=True, timeout=10
                ).stdout.strip()
                or "bubblewrap"
            )
        except (OSError, subprocess.SubprocessError) as e:
            return f"bwrap does not run: {e}"
        candidate = Sandbox("bwrap", version)
    else:
        from sieve.tools.shell import jail

        abi = jail.landlock_abi()
        if abi < 1:
            return (
                "Landlock is not enabled in this kernel "
                "(Linux 5.13+ with landlock in the lsm= list)"
            )
        seccomp = (
            f"seccomp {platform.machine()}"
            if jail.seccomp_program(platform.machine())
            else f"no seccomp table for {platform.machine()}"
        )
        candidate = Sandbox("landlock", f"Landlock ABI {abi}, {seccomp}")
    with tempfile.TemporaryDirectory(prefix="sieve-probe-") as folder:
        Path(folder, "probe.txt").write_text("probe\n")
        try:
            got = candidate.run(folder, "cat probe.txt", ShellLimits(wall_seconds=10))
        except OSError as e:
            return f"{mechanism} does not start: {e}"
    if got.status != 0 or got.output.strip() != b"probe":
        text = got.output.decode("utf-8", "replace").strip().splitlines()
        return (
            f"{mechanism} does not work here: "
            f"{text[-1] if text else f'exit status {got.status}, limit {got.limit}'}"
        )
    return candidate
