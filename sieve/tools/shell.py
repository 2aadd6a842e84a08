"""A read-only shell over one folder, for the direct-corpus-interaction conditions (DCI).

Built for an LLM that will try everything. A command line is a pipeline of allowlisted read-only
programs (`|` only), run without a shell, inside the folder, with CPU-time, wall-time, memory and
output caps and no right to write a file. Every refusal is a `ShellRefusal` naming what was refused
and why; nothing is ever passed to `/bin/sh`.

Refused outright: `;`, `&`, `&&`, `||`, redirection (`<`, `>`), command substitution (`$(...)`,
backticks), newlines, programs not on the list (by name only, never a path), and any word that is
an absolute path, starts with `~`, or has a `..` component. Files named on the command line must
resolve (symlinks followed) inside the folder; wildcards in file arguments are expanded inside the
folder (a match that leads out of it is dropped). Per program:

| program | refused |
|---|---|
| `ls`, `cat`, `head`, `wc`, `cut`, `nl`, `tr` | `--files0-from` (reads a list of files) |
| `tail` | following (`-f`, `-F`, `--follow`), `--files0-from` |
| `grep` | `-R`/`--dereference-recursive` (follows symlinks); `-f FILE` must be inside |
| `find` | `-exec`, `-execdir`, `-ok`, `-okdir`, `-delete`, `-fprint*`, `-fls`, following links (`-L`, `-H`, `-follow`), `-newer*`/`-samefile` outside |
| `sed` | in-place editing (`-i`); always run with `--sandbox` (no `e`, `r`, `w` commands) |
| `sort` | `-o`/`--output`, `--compress-program`, `-T`/`--temporary-directory`, `--files0-from` |
| `uniq` | a second file argument (uniq would write its output there) |

Whatever slips past these rules still cannot write: every program runs with a file-size limit of
zero (RLIMIT_FSIZE), so a write fails with EFBIG.
"""

from __future__ import annotations

import glob
import os
import resource
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sieve.errors import InvalidArgumentError

PROGRAMS = ("cat", "cut", "find", "grep", "head", "ls", "nl", "sed", "sort", "tail", "tr", "uniq", "wc")
_ALWAYS_REFUSED = ("--files0-from",)
_OPTIONS_REFUSED: dict[str, tuple[str, ...]] = {
    "tail": ("-f", "-F", "--follow", "--retry"),
    "grep": ("-R", "--dereference-recursive"),
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls", "-L", "-H", "-follow"),
    "sed": ("-i", "--in-place"),
    "sort": ("-o", "--output", "--compress-program", "-T", "--temporary-directory"),
}
# Options whose value is a file, which must be inside the folder.
_FILE_OPTIONS: dict[str, tuple[str, ...]] = {
    "grep": ("-f", "--file", "--exclude-from"),
    "sed": ("-f", "--file"),
    "find": ("-newer", "-anewer", "-cnewer", "-samefile"),
}


class ShellRefusal(InvalidArgumentError):
    """A command line the sandbox will not run; the message says what and why."""


@dataclass(frozen=True)
class ShellLimits:
    cpu_seconds: int = 10  # per program
    wall_seconds: float = 20.0  # the whole pipeline
    output_bytes: int = 64 << 10  # of the last program's output shown
    memory_bytes: int = 1 << 30  # address space per program
    max_chars: int = 2000  # of the command line


@dataclass(frozen=True)
class ShellResult:
    text: str
    ok: bool  # every program exited 0 (grep's 1, "nothing found", counts as ok)
    truncated: bool = False
    timed_out: bool = False


def _split_pipeline(line: str) -> list[str]:
    """The command line cut at unquoted `|`; raises ShellRefusal for any other shell syntax."""
    parts, cur, quote, i = [], [], "", 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"' and i + 1 < len(line):
                cur.append(ch)
                i += 1
                ch = line[i]
            cur.append(ch)
        elif ch in "'\"":
            quote = ch
            cur.append(ch)
        elif ch == "\\" and i + 1 < len(line):
            cur.append(ch + line[i + 1])
            i += 1
        elif ch == "|":
            if line[i + 1 : i + 2] == "|":
                raise ShellRefusal("'||' is not allowed: one pipeline per call, joined by '|' only")
            parts.append("".join(cur))
            cur = []
        elif ch == "$" and line[i + 1 : i + 2] in ("(", "{"):
            raise ShellRefusal("command and variable substitution ($(...), ${...}) is not allowed")
        elif ch in ";&<>`\n\r":
            what = {";": "';'", "&": "'&' and '&&'", "<": "redirection ('<')", ">": "redirection ('>')", "`": "command substitution (backticks)"}.get(ch, "a line break")
            raise ShellRefusal(f"{what} is not allowed: run one pipeline of read-only commands joined by '|'")
        else:
            cur.append(ch)
        i += 1
    if quote:
        raise ShellRefusal(f"unterminated {quote} quote")
    parts.append("".join(cur))
    return parts


def _within(root: Path, word: str) -> bool:
    target = (root / word).resolve()
    return target == root or root in target.parents


def _inside(root: Path, word: str, what: str) -> None:
    if not _within(root, word):
        raise ShellRefusal(f"{what} {word!r} is outside the folder (links are followed)")


def _check_word(word: str) -> None:
    if word.startswith("/") or word.startswith("~"):
        raise ShellRefusal(f"{word!r}: absolute and home paths are not allowed; paths are relative to the folder")
    if ".." in Path(word).parts or word.startswith("../") or "/../" in word or word == "..":
        raise ShellRefusal(f"{word!r}: '..' is not allowed; everything is inside the folder")


def check_path(root: str | os.PathLike[str], word: str) -> None:
    """Raise ShellRefusal unless `word` is a relative path inside `root` (links followed)."""
    _check_word(word)
    _inside(Path(root).resolve(), word, "path")


def _option_name(word: str) -> str:
    return word.split("=", 1)[0]


_PATTERN_OPTIONS = ("-e", "--regexp", "--expression")


def check_command(root: Path, argv: list[str]) -> list[str]:
    """The argv to run for one program of a pipeline; raises ShellRefusal."""
    if not argv:
        raise ShellRefusal("an empty command (a '|' with nothing on one side)")
    name = argv[0]
    if name not in PROGRAMS:
        raise ShellRefusal(f"{name!r} is not available; the commands are: {', '.join(PROGRAMS)}")
    refused = _ALWAYS_REFUSED + _OPTIONS_REFUSED.get(name, ())
    file_options = _FILE_OPTIONS.get(name, ())
    args = argv[1:]
    pattern_given = any(_option_name(w) in _PATTERN_OPTIONS + ("-f", "--file") or (w.startswith("-e") and not w.startswith("--"))
                        for w in args if name in ("grep", "sed"))
    positional: list[int] = []  # indices into args
    patterns: set[int] = set()  # words that are patterns, scripts or character sets, not paths
    for i, word in enumerate(args):
        opt = _option_name(word)
        if i > 0 and args[i - 1] in _PATTERN_OPTIONS:
            patterns.add(i)
            continue
        if word.startswith("-") and word != "-":
            short_cluster = not word.startswith("--") and len(word) > 2 and name != "find"
            if opt in refused or (short_cluster and any(f"-{c}" in refused for c in word[1:])) or (name == "sed" and word.startswith("-i")):
                raise ShellRefusal(f"{name} {word}: not allowed here ({_why(name, opt)})")
            if opt in _PATTERN_OPTIONS or (name in ("grep", "sed") and word.startswith("-e") and not word.startswith("--")):
                patterns.add(i)
                continue
            if opt in file_options:
                value = word.split("=", 1)[1] if "=" in word else (args[i + 1] if i + 1 < len(args) else "")
                if value:
                    _check_word(value)
                    _inside(root, value, f"{name} {opt}")
        else:
            positional.append(i)
    if name in ("grep", "sed") and not pattern_given and positional:
        patterns.add(positional[0])  # the pattern or script
    elif name == "tr":
        patterns.update(positional)  # character sets
    for i, word in enumerate(args):
        if i not in patterns:
            _check_word(word)
    if name == "find":
        files = []
        for word in args:
            if word.startswith("-") or word in ("(", ")", "!", ","):
                break
            files.append(word)
    else:
        # File arguments with wildcards are expanded here, inside the folder, as a shell would.
        out: list[str] = []
        files = []
        for i, word in enumerate(args):
            if i in positional and i not in patterns:
                matches = [m for m in sorted(glob.glob(word, root_dir=root)) if _within(root, m)] if glob.has_magic(word) else []
                for w in matches or [word]:  # a match that leads out of the folder is not one
                    out.append(w)
                    files.append(w)
            else:
                out.append(word)
        args = out
    if name == "uniq" and len(files) > 1:
        raise ShellRefusal("uniq takes one input file here (a second would be written to)")
    for f in files:
        if f != "-":
            _inside(root, f, "file")
    if name == "sed":
        return ["sed", "--sandbox", *args]
    return [name, *args]


def _why(name: str, opt: str) -> str:
    if name == "tail":
        return "following a file never ends"
    if name == "find" and opt in ("-L", "-H", "-follow"):
        return "following links could leave the folder"
    if name == "grep":
        return "following links could leave the folder; use -r"
    if opt == "--files0-from":
        return "reads a list of files from elsewhere; name the files"
    return "it writes files or runs other programs"


def _limit(limits: ShellLimits) -> None:
    """In the child, before exec: no file writes, bounded CPU and memory, its own session."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    os.setsid()


def run(root: str | os.PathLike[str], line: str, limits: ShellLimits = ShellLimits()) -> ShellResult:
    """Run one pipeline in `root`; raises ShellRefusal before running anything it refuses."""
    base = Path(root).resolve()
    if not isinstance(line, str) or not line.strip():
        raise ShellRefusal("an empty command")
    if len(line) > limits.max_chars:
        raise ShellRefusal(f"the command is {len(line):,} characters; at most {limits.max_chars:,}")
    argvs = []
    for part in _split_pipeline(line):
        try:
            argv = shlex.split(part)
        except ValueError as e:
            raise ShellRefusal(f"cannot read {part.strip()!r}: {e}") from None
        argvs.append(check_command(base, argv))
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "HOME": str(base)}
    procs: list[subprocess.Popen[bytes]] = []
    prev = subprocess.DEVNULL
    try:
        for argv in argvs:
            p = subprocess.Popen(argv, cwd=base, env=env, stdin=prev, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 preexec_fn=lambda: _limit(limits), close_fds=True)
            if prev is not subprocess.DEVNULL:
                prev.close()  # type: ignore[union-attr]
            prev = p.stdout  # type: ignore[assignment]
            procs.append(p)
        return _collect(procs, limits)
    finally:
        for p in procs:
            if p.poll() is None:
                _kill(p)
            for f in (p.stdout, p.stderr):
                if f is not None:
                    f.close()
            p.wait()


def _kill(p: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(p.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass


def _collect(procs: list[subprocess.Popen[bytes]], limits: ShellLimits) -> ShellResult:
    import selectors

    last = procs[-1]
    out = bytearray()
    truncated = timed_out = False
    deadline = time.monotonic() + limits.wall_seconds
    sel = selectors.DefaultSelector()
    assert last.stdout is not None
    sel.register(last.stdout, selectors.EVENT_READ)
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        if not sel.select(timeout=min(left, 0.5)):
            continue
        chunk = os.read(last.stdout.fileno(), 65536)
        if not chunk:
            break
        out += chunk
        if len(out) > limits.output_bytes:
            truncated = True
            del out[limits.output_bytes :]
            break
    sel.close()
    if truncated or timed_out:
        for p in procs:
            _kill(p)
    errors = []
    ok = not timed_out
    for p in procs:
        try:
            code = p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _kill(p)
            code = p.wait()
            timed_out, ok = True, False
        err = p.stderr.read(2000).decode("utf-8", "replace").strip() if p.stderr is not None else ""
        name = p.args[0] if isinstance(p.args, list) else str(p.args)
        if code not in (0, None) and not (truncated or timed_out) and not (name == "grep" and code == 1):
            ok = False
            errors.append(f"{name} exited {code}" + (f": {err}" if err else ""))
        elif err and not (truncated or timed_out):
            errors.append(f"{name}: {err}")
    text = out.decode("utf-8", "replace")
    if truncated:
        text += f"\n[output truncated at {limits.output_bytes:,} bytes: narrow the command, e.g. with head or grep -m]"
    if timed_out:
        text += f"\n[stopped after {limits.wall_seconds:g} s: narrow the command]"
    if errors:
        text += ("\n" if text else "") + "\n".join(f"[{e}]" for e in errors)
    return ShellResult(text if text else "(no output)", ok, truncated, timed_out)
