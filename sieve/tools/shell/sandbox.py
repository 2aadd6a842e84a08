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

import functools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from sieve.errors import InvalidArgumentError, SandboxError
from sieve.tools.shell.launch import CORPUS_MOUNT, _bwrap_argv, _environment, _jail_argv, _shell
from sieve.tools.shell.watchdog import Outcome, ShellLimits, _supervise

MECHANISMS = ("auto", "bwrap", "landlock", "none")
_INSTALL = (
    "install bubblewrap (Debian and Ubuntu: `apt install bubblewrap`; Fedora: `dnf install "
    "bubblewrap`; Arch: `pacman -S bubblewrap`) "
    "or run on Linux 5.13 or newer with Landlock enabled; inside a container of your own, "
    "`--shell-sandbox none` runs commands "
    "unconfined (not recommended)"
)


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
