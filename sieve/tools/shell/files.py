"""Direct corpus interaction (the DCI conditions): the collection as plain files, and the `bash`
and `read` tools an agent gets over them instead of a retriever.

A staging folder holds one file per document (its title on the first line, a blank line, then
exactly the text a visit shows: the flat twin's text). File names are derived from document ids and
mapped back in `ids.json`, which sits beside the `files/` folder the shell sees, never inside it.
The folder is built once, atomically (a temporary folder renamed into place), and reused; its
files are read-only. A bounded folder (BM25-bounded DCI) is one episode's own: read-only copies of
a few documents' files, removed when the episode's tools are closed or dropped, so nothing an
episode does can reach another episode's view or the whole collection. The `bash` tool runs in an
operating-system sandbox (`sieve.tools.shell.sandbox`) that mounts the folder read-only.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sieve.common.templates import load, render
from sieve.errors import InvalidArgumentError, SieveError
from sieve.index.index import Index
from sieve.tools.conditions import FILE_TOOL_NAMES
from sieve.tools.fetch.reading import ReadConfig, body_text
from sieve.tools.schema import decode_arguments, describe_params
from sieve.tools.shell import shell
from sieve.tools.shell.safe import inline, shown
from sieve.tools.shell.sandbox import Sandbox, choose
from sieve.tools.tool import Tool, ToolResult

FILES = "files"
IDS = "ids.json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_NAME = 120
_NAME_IN_OUTPUT = re.compile(r"[A-Za-z0-9._~-]+\.txt")


def file_name(doc_id: str) -> str:
    """A file name for a document id: the id itself when it is a plain name, else a readable
    slug with a short hash of the id (two ids never share a name, none starts with `-` or `.`)."""
    slug = _UNSAFE.sub("_", doc_id)[:_MAX_NAME].strip("_") or "doc"
    if slug != doc_id or slug[0] in "-.":
        slug = (
            f"{slug.lstrip('-.') or 'doc'}~{hashlib.sha1(doc_id.encode('utf-8')).hexdigest()[:8]}"
        )
    return slug + ".txt"


def file_text(index: Index, doc_id: str) -> str:
    doc = shown(index.document(doc_id))
    return f"{doc.title}\n\n{body_text(doc)}\n"


@dataclass
class Staged:
    """A staged folder: `root/files` (what the shell sees) and the name -> document id map."""

    root: Path
    ids: dict[str, str]  # file name -> document id

    @property
    def files(self) -> Path:
        return self.root / FILES


def _write_stage(
    root: Path, index: Index, doc_ids: Iterable[str], copy_from: Staged | None = None
) -> Staged:
    """Build `root` atomically: into a temporary sibling, then renamed into place."""
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}.", dir=root.parent))
    try:
        (tmp / FILES).mkdir()
        ids: dict[str, str] = {}
        for doc_id in doc_ids:
            name = file_name(doc_id)
            ids[name] = doc_id
            target = tmp / FILES / name
            source = copy_from.files / name if copy_from is not None else None
            if source is not None and source.is_file():
                # a copy, never a link: nothing written here reaches the whole folder
                shutil.copyfile(source, target)
            else:
                target.write_text(file_text(index, doc_id), encoding="utf-8")
            target.chmod(0o444)
        (tmp / IDS).write_text(json.dumps(ids, ensure_ascii=False), encoding="utf-8")
        try:
            os.rename(tmp, root)
        except OSError:  # built meanwhile by another run: theirs is as good as ours
            if not (root / IDS).exists():
                raise
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return open_stage(root)


def open_stage(root: Path) -> Staged:
    return Staged(root, json.loads((root / IDS).read_text(encoding="utf-8")))


def _source(index: Index) -> str:
    return f"{index.path.resolve()}\n{index.commit_dir.name}\n{len(index)}"


def stage_collection(index: Index, root: Path) -> Staged:
    """The whole collection as files under `root`, built once per index commit point (a rebuilt
    index is staged again; an incomplete staging is never used)."""
    source = root / "source.txt"
    if (root / IDS).exists():
        if source.exists() and source.read_text(encoding="utf-8") == _source(index):
            return open_stage(root)
        shutil.rmtree(root)  # staged from another build of the collection
    staged = _write_stage(
        root, index, (index.reader.doc_id(d) for d in index.doc_numbers().tolist())
    )
    source.write_text(_source(index), encoding="utf-8")
    return staged


def stage_bounded(index: Index, whole: Staged, doc_ids: list[str]) -> Staged:
    """One episode's own folder holding only `doc_ids` (read-only copies of their files); the
    caller removes it (`remove_stage`) when the episode ends."""
    parent = whole.root.parent / "bounded"
    parent.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="episode-", dir=parent))
    root.rmdir()  # _write_stage renames its finished folder into this name
    return _write_stage(root, index, doc_ids, copy_from=whole)


def add_to_stage(staged: Staged, whole: Staged, doc_ids: Iterable[str]) -> list[str]:
    """Copy into `staged` (read-only, as `stage_bounded` does) the files of those `doc_ids` it does
    not hold yet, taken from `whole`; returns the file names added."""
    by_id = {doc_id: name for name, doc_id in whole.ids.items()}
    added = []
    for doc_id in doc_ids:
        name = by_id.get(doc_id)
        if name is None or name in staged.ids:
            continue
        target = staged.files / name
        shutil.copyfile(whole.files / name, target)  # a copy, never a link (see _write_stage)
        target.chmod(0o444)
        staged.ids[name] = doc_id
        added.append(name)
    if added:
        (staged.root / IDS).write_text(json.dumps(staged.ids, ensure_ascii=False), encoding="utf-8")
    return added


def remove_stage(staged: Staged) -> None:
    """Delete a staged folder (its files are read-only: made writable first, for users other than
    root)."""

    def writable(func: Any, path: str, _exc: Any) -> None:
        os.chmod(path, 0o700)
        func(path)

    if staged.root.exists():
        shutil.rmtree(staged.root, onerror=writable)


@dataclass(frozen=True)
class FileToolConfig:
    read: ReadConfig = field(default_factory=ReadConfig)
    limits: shell.ShellLimits = field(default_factory=shell.ShellLimits)
    sandbox: Sandbox | None = None  # None: `choose("auto")` when the tools are made


class FileTools:
    """`bash` and `read` over one staged folder, for one episode. Same surface as a Toolset."""

    def __init__(
        self,
        staged: Staged,
        config: FileToolConfig = FileToolConfig(),
        tools: tuple[str, ...] = FILE_TOOL_NAMES,
    ) -> None:
        unknown = [t for t in tools if t not in FILE_TOOL_NAMES]
        if unknown or not tools:
            raise InvalidArgumentError(
                f"file tools must be among {', '.join(FILE_TOOL_NAMES)}, got {list(tools)}"
            )
        self.staged = staged
        self.config = (
            config if config.sandbox is not None else replace(config, sandbox=choose("auto"))
        )
        self.surfaced: list[str] = []  # documents whose file name a command printed
        # documents read (with `read`, or printed whole by cat/head/sed...)
        self.opened: list[str] = []
        self.tokens = 0
        specs = {
            "bash": Tool(
                "bash",
                "Run a bash command line in the folder of document files (read-only; "
                f"pipes, ;, && and the usual tools: {', '.join(shell.PROGRAMS)}; write "
                "scratch files under $TMPDIR, emptied after each call; no network).",
                {
                    "type": "object",
                    "properties": {
                        "command": {
                            "type": "string",
                            "minLength": 1,
                            "description": (
                                "the command line, e.g. grep -il 'fort santiago' *.txt | head"
                            ),
                        }
                    },
                    "required": ["command"],
                    "additionalProperties": False,
                },
                run=lambda args, facts: self._bash(args["command"]),
                example='{"command": "grep -ril \\"fort santiago\\" . | head -20"}',
            ),
            "read": Tool(
                "read",
                "Read one document file from a given line "
                f"({config.read.cap:,} {self.unit} per call).",
                {
                    "type": "object",
                    "properties": {
                        "path": {
                            "type": "string",
                            "minLength": 1,
                            "description": "a file name in the folder, as ls or grep -l print it",
                        },
                        "line": {
                            "type": "integer",
                            "minimum": 1,
                            "description": "the first line to read (default 1)",
                        },
                    },
                    "required": ["path"],
                    "additionalProperties": False,
                },
                run=lambda args, facts: self._read(args["path"], args.get("line", 1)),
                example='{"path": "Fort_Santiago.txt"}',
            ),
        }
        self.tools = {t: specs[t] for t in tools}
        self._search_k = 0  # results per bm25_search, where a subclass offers it

    @property
    def unit(self) -> str:
        return "words" if self.config.read.counter.name == "words" else "tokens"

    def begin(self, question: str) -> list[dict[str, Any]]:
        """Nothing to prepare: the folder is the whole collection. Returns the calls made (none)."""
        return []

    def schemas(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    def describe(self) -> str:
        return "\n".join(
            f"- `{t.name}`: {t.description} Arguments: "
            f"{describe_params(t.parameters)}. Example: {t.example}"
            for t in self.tools.values()
        )

    def manual(self) -> str:
        flags = {name: name in self.tools for name in ("bash", "read", "bm25_search")}
        return (
            render(
                load("sieve.tools", "files_manual.md"),
                flags,
                documents=f"{len(self.staged.ids):,}",
                programs=", ".join(f"`{p}`" for p in shell.PROGRAMS),
                cap=f"{self.config.read.cap:,}",
                unit=self.unit,
                seconds=f"{self.config.limits.wall_seconds:g}",
                folder=self.sandbox.folder_name,
                k=str(self._search_k),
            ).strip()
            + "\n"
        )

    @property
    def sandbox(self) -> Sandbox:
        assert self.config.sandbox is not None
        return self.config.sandbox

    def close(self) -> None:
        """Release what the episode holds (a bounded episode's own folder)."""

    def call(self, name: str, arguments: str | Mapping[str, Any] | None) -> ToolResult:
        spec = self.tools.get(name)
        if spec is None:
            return self._result(
                name,
                f"error: there is no tool named {json.dumps(name)}; "
                f"the tools are {', '.join(self.tools)}",
                False,
            )
        args, problem = decode_arguments(spec.parameters, arguments, spec.example)
        if problem is not None or args is None:
            return self._result(name, f"{name} error: {problem}", False)
        try:
            text, ok = spec.run(args, {})
        except SieveError as e:  # a refusal, a missing file: the agent's to read
            text, ok = f"{name} error: {e}", False
        return self._result(name, text, ok)

    def _result(self, name: str, text: str, ok: bool) -> ToolResult:
        tokens = self.config.read.counter.count(text)
        self.tokens += tokens
        return ToolResult(name, text, tokens, ok, {})

    def _note(self, ids: list[str], into: list[str]) -> None:
        for i in ids:
            if i not in into:
                into.append(i)

    def _capped(self, text: str, what: str, more: str = "") -> tuple[str, int | None]:
        """`text` within the read ceiling: (text, None), or (whole lines that fit + a note, how
        many)."""
        counter, cap = self.config.read.counter, self.config.read.cap
        if counter.count(text) <= cap:
            return text, None
        lines = text.split("\n")
        lo, hi = 0, len(lines)
        while lo < hi:  # the most whole lines that fit, leaving room for the note
            mid = (lo + hi + 1) // 2
            if counter.count("\n".join(lines[:mid])) <= cap - 40:
                lo = mid
            else:
                hi = mid - 1
        return (
            "\n".join(lines[:lo]) + f"\n[{what} cut at the {cap:,}-{self.unit[:-1]} "
            f"ceiling of one call after line {lo:,}{more}]",
            lo,
        )

    def _bash(self, command: str) -> tuple[str, bool]:
        result = shell.run(self.staged.files, command, self.config.limits, self.sandbox)
        self._note(
            [
                self.staged.ids[n]
                for n in _NAME_IN_OUTPUT.findall(result.text)
                if n in self.staged.ids
            ],
            self.surfaced,
        )
        text, _ = self._capped(result.text, "output")
        return text, result.ok

    def _read(self, path: str, line: int) -> tuple[str, bool]:
        mount = self.sandbox.folder_name.rstrip("/") + "/"
        if mount != "./" and path.startswith(mount):
            path = path[len(mount) :]  # the name as the shell printed it (`grep -r x /corpus`)
        shell.check_path(self.staged.files, path)
        name = Path(path).name if Path(path).parent in (Path("."), Path("")) else None
        target = (self.staged.files / path).resolve()
        if not target.is_file():
            raise InvalidArgumentError(f"no file {inline(path)!r} in the folder (ls lists them)")
        lines = target.read_text(encoding="utf-8", errors="replace").split("\n")
        if line > len(lines):
            raise InvalidArgumentError(
                f"{inline(path)} has {len(lines):,} lines, so there is no line {line:,}"
            )
        text, kept = self._capped("\n".join(lines[line - 1 :]), "text")
        if kept is not None:
            text = text[:-1] + f": continue with line {line + kept:,}]"
        if name in self.staged.ids:
            self._note([self.staged.ids[name]], self.opened)
            self._note([self.staged.ids[name]], self.surfaced)
        return text, True
