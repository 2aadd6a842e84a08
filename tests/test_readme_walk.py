"""The README walked as a new user walks it: every command of "The command line" and the Python of
"The Python API" and "Tools for agents" run as written (only /tmp/stdlib becomes a temporary folder,
and the corpus the examples name is written first), so no step of the front door fails or needs a
guess. The MCP walk-through has its own test (tests/serve/test_readme_walkthrough.py)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")

# The corpus the examples name (`corpus.jsonl`): the document docs/corpus.md shows, made real, and
# one more so that a query can leave something out.
CORPUS = [
    {"id": "d1", "title": "Heatwave of 2022", "author": "A. Writer", "date": "2022-07",
     "infobox": {"country": "France"},
     "sections": [{"heading": "(intro)", "text": "A heatwave struck Paris in July."},
                  {"heading": "School closures", "text": "The school closure lasted a week."}]},
    {"id": "d2", "title": "Winter storms", "date": "2019-01",
     "sections": [{"heading": "Damage", "text": "Snow closed roads and a school."}]},
]


def block(heading: str, lang: str, n: int = 0) -> str:
    """The n-th fenced `lang` block under the README's `## heading`."""
    section = README.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(rf"```{lang}\n(.*?)```", section, flags=re.S)
    assert len(blocks) > n, f"README section {heading!r} has no {lang} block {n}"
    return blocks[n]


@pytest.fixture(scope="module")
def walk_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("walk")
    (d / "corpus.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in CORPUS), encoding="utf-8")
    return d


def test_every_command_line_example_runs(walk_dir: Path) -> None:
    lines = [ln.split("  #", 1)[0].strip() for ln in block("The command line", "bash").splitlines()]
    commands = [ln for ln in lines if ln.startswith("sieve ")]
    assert len(commands) >= 5, commands
    stdlib = walk_dir / "stdlib"
    for cmd in commands:
        argv = [a.replace("/tmp/stdlib", str(stdlib)) for a in shlex.split(cmd)]
        p = subprocess.run([sys.executable, "-m", "sieve", *argv[1:]], cwd=walk_dir, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, f"README command failed: {cmd}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
        assert p.stdout.strip(), f"README command printed nothing: {cmd}"
        if argv[1] == "match":
            assert re.search(r"\b\d+ documents?\b|\bmatch", p.stdout), p.stdout[:500]
        if argv[1] == "fetch":
            assert "TarFile" in p.stdout, p.stdout[:500]
        if argv[1] == "explain":
            assert "admitted" in p.stdout.lower(), p.stdout[:500]
    assert (walk_dir / "my-index" / "CURRENT").is_file()  # `sieve index corpus.jsonl my-index` built it


def test_the_python_examples_run_as_written(walk_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    api = block("The Python API", "python")
    tools = block("Tools for agents, and the research agent", "python")
    work = tmp_path / "py"
    work.mkdir()
    (work / "corpus.jsonl").write_bytes((walk_dir / "corpus.jsonl").read_bytes())
    monkeypatch.chdir(work)
    printed: list[str] = []
    space: dict[str, object] = {"print": lambda *a, **k: printed.append(" ".join(map(str, a)))}
    exec(compile(api, "README.md (The Python API)", "exec"), space)
    exec(compile(tools, "README.md (Tools for agents)", "exec"), space)
    m = space["m"]
    assert m.count == 1 and m.ids == ["d1"]  # type: ignore[attr-defined]
    assert space["doc"].id == "d1"  # type: ignore[attr-defined]
    explanation, cards, section = printed
    assert explanation.startswith("yes") and "date[2020-01-01..]" in explanation
    assert "Heatwave of 2022" in cards
    assert "school closure lasted a week" in section
