"""The shell sandboxes this machine has, for tests that run commands in each of them.

`CONFINED` lists the mechanisms that work here (bubblewrap, Landlock); a test over them is
parametrized with `confined_params()`, which reports a visible skip (with the reason) only where
neither works, and then the refusal-path tests in tests/hardening/test_shell_escape.py are what
run. `without_sandboxes()` gives a child process an environment where neither mechanism works
(no bwrap on PATH, Landlock's calls refused by seccomp), so the refusal path runs everywhere.
"""

from __future__ import annotations

import ctypes
import errno
import platform
from typing import Any

import pytest

from sieve.tools.shell import jail
from sieve.tools.shell.sandbox import Sandbox, _probe

CONFINED = [m for m in ("bwrap", "landlock") if isinstance(_probe(m), Sandbox)]
MISSING = {m: _probe(m) for m in ("bwrap", "landlock") if m not in CONFINED}


def confined_params() -> list[Any]:
    if CONFINED:
        return CONFINED
    return [pytest.param(None, marks=pytest.mark.skip(reason=f"no shell sandbox works here ({MISSING}); the refusal tests run instead"))]


def _refuse_landlock() -> None:
    """In a child before exec: Landlock's three calls fail with ENOSYS, as on a kernel without it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(38, 1, 0, 0, 0)  # no-new-privileges, which an unprivileged seccomp filter needs
    program = jail.seccomp_program(platform.machine(), [444, 445, 446], errno.ENOSYS)
    assert program is not None, f"no seccomp table for {platform.machine()}"
    jail.install_seccomp(program)


def without_sandboxes(env: dict[str, str]) -> dict[str, Any]:
    """subprocess keywords for a child in which neither bwrap nor Landlock works."""
    return {"env": {**env, "PATH": "/nonexistent"}, "preexec_fn": _refuse_landlock}
