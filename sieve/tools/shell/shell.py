"""The DCI conditions' shell: bash over one folder, inside an operating-system sandbox.

The paper's direct-corpus-interaction agent gets a shell over the collection as files. Here a
command line is bash, as a person would type it (pipes, `;`, `&&`, redirection into the scratch
folder, the usual tools), and the boundary is `sieve.tools.shell.sandbox`: each call runs in a fresh
sandbox that sees the folder read-only, a small scratch folder (`$TMPDIR`, emptied after the
call), the system's programs, and nothing else (docs/security.md). No filter of arguments stands
between the model and the sandbox, because none can be made safe for programs with hundreds of
options; what is refused before anything runs is only what cannot be a command line (empty, too
long, a NUL byte).

A limit that fires (time, memory, processes, scratch, output) ends the call with a note the model
can read; a failing command's status is shown after its output. `PROGRAMS` lists the usual tools
the manual names, as found on this machine (`rg` where installed).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from sieve.errors import InvalidArgumentError
from sieve.tools.shell.sandbox import Sandbox, choose
from sieve.tools.shell.watchdog import ShellLimits

__all__ = [
    "PROGRAMS",
    "ShellLimits",
    "ShellRefusal",
    "ShellResult",
    "check_path",
    "programs",
    "run",
]

_USUAL = (
    "rg",
    "grep",
    "sed",
    "awk",
    "find",
    "xargs",
    "sort",
    "uniq",
    "cut",
    "head",
    "tail",
    "wc",
    "cat",
    "ls",
    "tr",
    "nl",
)
_PATH = "/usr/local/bin:/usr/bin:/bin"


def programs() -> tuple[str, ...]:
    """The usual tools installed here, in the manual's order."""
    return tuple(p for p in _USUAL if shutil.which(p, path=_PATH))


PROGRAMS = programs()

_LIMIT_NOTES = {
    "time": "stopped after {wall:g} s (all its programs together): narrow the command",
    "memory": (
        "stopped: its programs together used more than {memory} of memory: narrow the command"
    ),
    "processes": "stopped: it started more than {processes} processes at once",
    "scratch": "stopped: the scratch folder passed {scratch}",
    "output": (
        "output truncated at {output:,} bytes: narrow the "
        "command, e.g. with head, grep -l or grep -m"
    ),
}


class ShellRefusal(InvalidArgumentError):
    """A command line that cannot be run at all (empty, too long, holding a NUL byte)."""


@dataclass(frozen=True)
class ShellResult:
    text: str
    ok: bool  # exited 0 (or 1 with no output, grep's "nothing found") and no limit fired
    truncated: bool = False
    timed_out: bool = False
    limit: str | None = None  # the limit that stopped it: time, memory, processes, scratch, output
    status: int | None = None  # the exit status; None when a limit killed it


def _size(n: int) -> str:
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):g} MiB"


def run(
    root: str | os.PathLike[str],
    line: str,
    limits: ShellLimits = ShellLimits(),
    sandbox: Sandbox | None = None,
) -> ShellResult:
    """Run one command line in `root` under `sandbox` (default: `choose("auto")`, which raises
    SandboxError where no sandbox works); raises ShellRefusal only for a line that cannot be run."""
    if not isinstance(line, str) or not line.strip():
        raise ShellRefusal("an empty command")
    if len(line) > limits.max_chars:
        raise ShellRefusal(f"the command is {len(line):,} characters; at most {limits.max_chars:,}")
    if "\0" in line:
        raise ShellRefusal("the command holds a NUL character")
    box = sandbox if sandbox is not None else choose("auto")
    got = box.run(root, line, limits)
    text = got.output[: limits.output_bytes].decode("utf-8", "replace")
    notes = []
    if got.limit is not None:
        notes.append(
            _LIMIT_NOTES[got.limit].format(
                wall=limits.wall_seconds,
                memory=_size(limits.memory_bytes),
                processes=limits.processes,
                scratch=_size(limits.scratch_bytes),
                output=limits.output_bytes,
            )
        )
    elif got.status not in (0, None):
        notes.append(f"exit status {got.status}")
    ok = got.limit is None and (got.status == 0 or (got.status == 1 and not text.strip()))
    text = text or "(no output)"
    if notes:
        text = text + ("" if text.endswith("\n") else "\n") + "".join(f"[{n}]" for n in notes)
    return ShellResult(text, ok, got.limit == "output", got.limit == "time", got.limit, got.status)


def check_path(root: str | os.PathLike[str], word: str) -> None:
    """Raise ShellRefusal unless `word` is a relative path inside `root` (links followed): the
    `read` tool opens files here, in sieve's own process, so it checks what the sandbox would
    enforce."""
    if not isinstance(word, str) or not word or "\0" in word:
        raise ShellRefusal("a path must be a non-empty file name")
    if word.startswith(("/", "~")):
        raise ShellRefusal(
            f"{word!r}: absolute and home paths are not allowed; paths are relative to the folder"
        )
    if ".." in Path(word).parts:
        raise ShellRefusal(f"{word!r}: '..' is not allowed; everything is inside the folder")
    base = Path(root).resolve()
    target = (base / word).resolve()
    if target != base and base not in target.parents:
        raise ShellRefusal(f"path {word!r} is outside the folder (links are followed)")
