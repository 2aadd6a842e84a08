"""Built-in demo corpus: the Python standard library's own documentation.

``sieve demo`` needs a real, structured corpus that exists offline on every
machine.  The interpreter's standard library is exactly that: ~650 modules
whose docstrings are written for humans.  We read them from the *source files*
with :mod:`ast` and never import anything -- importing modules such as
``antigravity`` or ``this`` has side effects, and importing everything would
also be slow and platform-dependent.
"""

from __future__ import annotations

import ast
import os
import pathlib
import re
import sysconfig
import tokenize
import warnings
from collections.abc import Iterator

# Directory names never descended into: test suites (huge, and full of
# deliberately broken or Python-2-only files) and non-stdlib code.
_SKIP_DIRS = frozenset({"site-packages", "test", "tests", "idle_test", "__pycache__"})

_Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def stdlib_source_dir() -> pathlib.Path:
    """Return the base interpreter's stdlib directory (also correct inside a venv)."""
    return pathlib.Path(sysconfig.get_paths()["stdlib"])


def _is_public(name: str) -> bool:
    return not name.startswith("_")


def _module_name(rel: pathlib.Path) -> str | None:
    """Map ``json/decoder.py`` -> ``json.decoder``; None for private/non-importable files."""
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    # Private components (``_pydecimal``, ``__main__``) and names that are not
    # identifiers (``config-3.11-x86_64-linux-gnu``) are not public modules.
    if not parts or any(not p.isidentifier() or p.startswith("_") for p in parts):
        return None
    return ".".join(parts)


def _module_files(root: pathlib.Path) -> list[tuple[str, pathlib.Path]]:
    """All (dotted name, path) pairs of public modules under ``root``, sorted by name."""
    found: list[tuple[str, pathlib.Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        # Prune in place so os.walk never enters skipped or private directories.
        dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and _is_public(d)]
        for filename in filenames:
            if filename.endswith(".py"):
                path = pathlib.Path(dirpath, filename)
                name = _module_name(path.relative_to(root))
                if name is not None:
                    found.append((name, path))
    return sorted(found)


def _first_paragraph(doc: str) -> str:
    """First paragraph of a docstring, folded onto one line."""
    return " ".join(re.split(r"\n\s*\n", doc, maxsplit=1)[0].split())


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool = False) -> str:
    """Render ``name(args) -> ret`` from the ast; methods lose their self/cls."""
    args = node.args
    is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    if method and not is_static:
        # Copy before trimming: never mutate the tree we are still reading.
        args = ast.arguments(**{f: getattr(args, f) for f in args._fields})
        if args.posonlyargs:
            args.posonlyargs = args.posonlyargs[1:]
        elif args.args:
            args.args = args.args[1:]
    sig = f"{node.name}({ast.unparse(args)})"
    if node.returns is not None:
        sig += f" -> {ast.unparse(node.returns)}"
    return sig


def _class_text(node: ast.ClassDef) -> str:
    """Signature line(s), class docstring, then one paragraph per public method."""
    bases = ", ".join(ast.unparse(b) for b in node.bases + node.keywords)
    sig = f"class {node.name}({bases})" if bases else f"class {node.name}"
    methods: list[str] = []
    for item in node.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if item.name == "__init__":
            # The constructor call is how users meet the class: show it under the header.
            sig += "\n" + _signature(item, method=True).replace("__init__", node.name, 1)
        elif _is_public(item.name):
            doc = ast.get_docstring(item)
            line = _signature(item, method=True)
            methods.append(f"{line}: {_first_paragraph(doc)}" if doc else line)
    parts = [sig, ast.get_docstring(node) or "", "\n\n".join(methods)]
    return "\n\n".join(p for p in parts if p)


def _top_level_defs(body: list[ast.stmt]) -> Iterator[_Def]:
    """Top-level defs in source order, including those under module-level if/try
    (e.g. ``if sys.platform == "win32": def ...``)."""
    for stmt in body:
        if isinstance(stmt, _Def):
            yield stmt
        elif isinstance(stmt, ast.If):
            yield from _top_level_defs(stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.Try):
            handlers = [s for h in stmt.handlers for s in h.body]
            yield from _top_level_defs(stmt.body + handlers + stmt.orelse + stmt.finalbody)


def _public_name_count(tree: ast.Module, defs: list[_Def]) -> int:
    """len(__all__) when it is a literal list/tuple; else public defs + assignments."""
    names = {d.name for d in defs}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    if target.id == "__all__" and isinstance(stmt.value, (ast.List, ast.Tuple)):
                        return len(stmt.value.elts)
                    if _is_public(target.id):
                        names.add(target.id)
    return len(names)


def _author(tree: ast.Module) -> str | None:
    """The module-level ``__author__ = "..."`` string, if any."""
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and isinstance(stmt.value, ast.Constant)
            and any(isinstance(t, ast.Name) and t.id == "__author__" for t in stmt.targets)
        ):
            value = stmt.value.value
            return value if isinstance(value, str) and value.strip() else None
    return None


def _document(name: str, rel: str, source: str, tree: ast.Module) -> dict | None:
    """Build one corpus document, or None when there is nothing to show."""
    docstring = ast.get_docstring(tree)
    defs: list[_Def] = []
    index: dict[str, int] = {}
    for node in _top_level_defs(tree.body):
        if not _is_public(node.name):
            continue
        # Platform branches and @overload define a name more than once: keep the
        # first position, but prefer a documented definition over a bare stub.
        if node.name not in index:
            index[node.name] = len(defs)
            defs.append(node)
        elif ast.get_docstring(node) and not ast.get_docstring(defs[index[node.name]]):
            defs[index[node.name]] = node
    if not docstring and not defs:
        return None

    sections = [{"heading": "(intro)", "text": docstring}] if docstring else []
    for node in defs:
        if isinstance(node, ast.ClassDef):
            sections.append({"heading": f"class {node.name}", "text": _class_text(node)})
        else:
            keyword = "async def" if isinstance(node, ast.AsyncFunctionDef) else "def"
            fdoc = ast.get_docstring(node)
            text = _signature(node) + (f"\n\n{fdoc}" if fdoc else "")
            sections.append({"heading": f"{keyword} {node.name}", "text": text})

    title = f"{name} — {docstring.splitlines()[0].strip()}" if docstring else name
    doc: dict = {"id": name, "title": title, "sections": sections}
    if author := _author(tree):
        doc["author"] = author
    doc["infobox"] = {  # sieve infobox values are strings
        "module": name,
        "kind": "package" if rel.endswith("__init__.py") else "module",
        "file": rel,
        "lines": str(len(source.splitlines())),
        "public names": str(_public_name_count(tree, defs)),
    }
    return doc


def stdlib_documents(
    limit: int | None = None, *, failures: list[str] | None = None
) -> Iterator[dict]:
    """Yield one document per public stdlib module, sorted by dotted name.

    At most ``limit`` documents are yielded.  Files that cannot be read or
    parsed are skipped; pass a list as ``failures`` to collect their
    stdlib-relative paths.
    """
    root = stdlib_source_dir()
    yielded = 0
    for name, path in _module_files(root):
        if limit is not None and yielded >= limit:
            return
        rel = path.relative_to(root).as_posix()
        try:
            # tokenize.open honours PEP 263 encoding cookies (default UTF-8).
            with tokenize.open(path) as f:
                source = f.read()
            with warnings.catch_warnings():
                # Old docstrings with invalid escapes would warn on every run.
                warnings.simplefilter("ignore")
                tree = ast.parse(source, filename=str(path))
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
            if failures is not None:
                failures.append(rel)
            continue
        doc = _document(name, rel, source, tree)
        if doc is not None:
            yielded += 1
            yield doc
