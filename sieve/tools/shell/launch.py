"""How each mechanism starts a command: bubblewrap's command line (`_bwrap_argv`), the Landlock
jail's (`_jail_argv`, run by `jail.py`), and the environment built from nothing that every
command gets.
"""

from __future__ import annotations

import marshal
import os
import shutil
import sys
from pathlib import Path

from sieve.tools.shell.watchdog import ShellLimits

CORPUS_MOUNT = "/corpus"  # where the folder appears inside bubblewrap
JAIL = Path(__file__).resolve().parent / "jail.py"
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_SYSTEM_FILES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime")
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
_PATH = "/usr/local/bin:/usr/bin:/bin"
_NOBODY = "65534"


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
