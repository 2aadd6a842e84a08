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
DENSE = ENGINE | {"sieve.dense"}
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


# ---------------------------------------------------------------- circles and layers (issue 49)

# Import circles tolerated for now: none (issue 49 removed the last, cli.main <-> cli.agent).
KNOWN_CIRCLES: set[frozenset[str]] = set()  # none: a circle found is a failure


def import_graph() -> dict[str, set[str]]:
    """Module -> the sieve modules it imports: at the top, inside functions and under TYPE_CHECKING
    alike (`imports` walks the whole tree). A package's own `__init__` counts as a module."""
    graph: dict[str, set[str]] = {}
    for path in MODULES:
        me = module_name(path)
        graph[me] = {name for _, name in imports(path) if name != me}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each as
    one cycle through it (a path that returns to its start), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(graph, comp) for comp in sorted(out, key=sorted)]


def _cycle_in(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One cycle inside a strongly connected component, from its first module back to it."""
    start = min(comp)
    # Breadth first from start's successors back to start, inside the component.
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [*reversed(path), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


def test_no_import_circles() -> None:
    found = [c for c in circles(import_graph()) if frozenset(c) not in KNOWN_CIRCLES]
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_circle_finder_finds_one() -> None:
    """The finder itself, on a made-up graph: a -> b -> c -> a is reported as that path, and the
    edge d -> a (into the circle, not on it) leaves d out."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c", "a"]]
    assert circles({"a": {"b"}, "b": set()}) == []


# Inside the engine, each layer imports only those before it (`deadline` sits beside them all).
ENGINE_LAYERS = ["analysis", "format", "segment", "query", "rank"]
# The package's order: each may import only itself and what comes before it (`sieve.errors` is the
# foundation's; `sieve.testing` sits with the public API).
PACKAGE_LAYERS: list[set[str]] = [
    {"sieve.errors", "sieve.common"},
    {"sieve.corpus"},
    {"sieve.engine"},
    {"sieve.dense"},
    {"sieve.index"},
    {"sieve", "sieve.testing"},
    {"sieve.tools"},
    {"sieve.agent", "sieve.serve", "sieve.adapters"},
    {"sieve.eval"},
    {"sieve.web"},
    {"sieve.cli", "sieve.__main__"},
]


def package_layer(module: str) -> int:
    best = -1, -1  # (length of the matching prefix, layer)
    for layer, prefixes in enumerate(PACKAGE_LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best[0]:
                best = len(p), layer
    assert best[1] >= 0, module
    return best[1]


def engine_layer(module: str) -> int | None:
    parts = module.split(".")
    if len(parts) < 3 or parts[:2] != ["sieve", "engine"] or parts[2] not in ENGINE_LAYERS:
        return None  # sieve.engine itself, sieve.engine.deadline: anywhere
    return ENGINE_LAYERS.index(parts[2])


# Imports against the layers tolerated for now: none.
KNOWN_LAYER_EXCEPTIONS: set[tuple[str, str]] = set()


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    bad = []
    for me, targets in sorted(graph.items()):
        for it in sorted(targets):
            if (me, it) in KNOWN_LAYER_EXCEPTIONS:
                continue
            if package_layer(it) > package_layer(me):
                bad.append(f"{me} imports {it}, a later layer")
            mine, theirs = engine_layer(me), engine_layer(it)
            if mine is not None and theirs is not None and theirs > mine:
                bad.append(f"{me} imports {it}: {ENGINE_LAYERS[theirs]} comes after {ENGINE_LAYERS[mine]}")
    return bad


def test_layers_in_order() -> None:
    bad = layer_violations(import_graph())
    assert not bad, "\n".join(bad)


def test_the_layer_check_refuses_a_wrong_direction() -> None:
    assert layer_violations({"sieve.engine.format.storage": {"sieve.engine.segment.reader"}})
    assert layer_violations({"sieve.engine.rank.results": {"sieve.index.index"}})
    assert layer_violations({"sieve.dense.store": {"sieve.index.index"}})
    assert layer_violations({"sieve.tools.toolset": {"sieve.agent.loop"}})
    assert not layer_violations({"sieve.engine.rank.searcher": {"sieve.engine.query.plan", "sieve.engine.deadline"}})
    assert not layer_violations({"sieve.engine.deadline": {"sieve.errors"}})
    assert not layer_violations({"sieve.cli.main": {"sieve.web.app", "sieve"}})
