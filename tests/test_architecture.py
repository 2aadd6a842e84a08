"""Import directions (docs/architecture.md): every `import` of every module, those inside functions
included, goes only where its package may look."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SIEVE = Path(__file__).resolve().parents[1] / "sieve"

FOUNDATION = {"sieve.errors", "sieve.common"}
DATA = FOUNDATION | {"sieve.corpus"}
ENGINE = DATA | {"sieve.engine"}
DENSE = ENGINE | {"sieve.dense", "sieve.index"}
API = DENSE | {"sieve", "sieve.index", "sieve.testing"}
ENGINE_PUBLIC = {f"sieve.engine.{m}" for m in ("analysis.analyzers", "analysis.fields", "query.bql", "deadline", "rank.rankers", "rank.results")}
TOOLS = (API - {"sieve.engine", "sieve.dense"}) | ENGINE_PUBLIC | {"sieve.tools"}
AGENT = TOOLS | {"sieve.agent"}
SERVE = TOOLS | {"sieve.serve"}
ADAPTERS = TOOLS | {"sieve.adapters"}
EVAL = AGENT | {"sieve.eval", "sieve.dense"}
WEB = EVAL | {"sieve.serve", "sieve.web"}  # the browser view names indexes as sieve serve does, and reads eval runs

# (module prefix, what it may import); the first prefix that matches a module decides.
RULES: list[tuple[str, set[str]]] = [
    ("sieve.errors", {"sieve.errors"}),
    ("sieve.common", FOUNDATION),
    ("sieve.index.cluster", {"sieve.errors"}),
    ("sieve.corpus.demo", DATA),
    ("sieve.corpus", DATA),
    ("sieve.engine", ENGINE),
    ("sieve.dense", DENSE),
    ("sieve.index", API),
    ("sieve.testing", API),
    ("sieve.tools", TOOLS),
    ("sieve.agent", AGENT),
    ("sieve.serve", SERVE),
    ("sieve.adapters", ADAPTERS),
    ("sieve.web", WEB),
    ("sieve.eval", EVAL),
    ("sieve.cli", {"*"}),  # the command line may use everything
    ("sieve.__main__", {"*"}),
    ("sieve", API),  # sieve/__init__.py
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SIEVE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    path = SIEVE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            # `from sieve.engine import bitset` imports the module sieve.engine.format.bitset;
            # `from sieve.engine.rank.results import Results` imports sieve.engine.rank.results
            out.extend((node.lineno, f"{base}.{a.name}" if is_module(f"{base}.{a.name}") else base) for a in node.names)
    return [(line, name) for line, name in out if name == "sieve" or name.startswith("sieve.")]


def allowed(importer: str, imported: str) -> bool:
    rule = next(allow for prefix, allow in RULES if importer == prefix or importer.startswith(prefix + "."))
    # "sieve" allows the package's own __init__ (the public API), not every module below it
    return "*" in rule or any(imported == a or (a != "sieve" and imported.startswith(a + ".")) for a in rule)


MODULES = sorted(SIEVE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: module_name(p))
def test_imports_follow_the_layers(path: Path) -> None:
    me = module_name(path)
    bad = [f"{path.relative_to(SIEVE.parent)}:{line} imports {name}" for line, name in imports(path) if not allowed(me, name)]
    assert not bad, "\n".join(bad)


def test_the_rules_catch_a_wrong_direction() -> None:
    """The checker itself: an engine module importing the tools, tools importing the agent or the
    reader, and the agent importing the server are all refused."""
    assert not allowed("sieve.engine.rank.searcher", "sieve.tools.cards")
    assert not allowed("sieve.engine.rank.searcher", "sieve.index.index")
    assert not allowed("sieve.tools.cards", "sieve.agent.loop")
    assert not allowed("sieve.tools.cards", "sieve.engine.segment.reader")
    assert not allowed("sieve.agent.loop", "sieve.serve.service")
    assert not allowed("sieve.serve.service", "sieve.eval.run")
    assert allowed("sieve.tools.cards", "sieve.engine.rank.results")
    assert allowed("sieve.tools.cards", "sieve")
    assert allowed("sieve.eval.run", "sieve.agent.loop")
    assert len(MODULES) > 50
