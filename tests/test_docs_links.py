"""Every link and every cited file in the README and docs/ points at something that exists.

Files move (the house plan moved most of them); a page that cites the old place sends a reader to
nothing. This reads the pages as a reader would: relative Markdown links (with their anchors),
repository paths written in the text (`tests/engine/test_x.py`, `sieve/agent/loop.py`), the
benchmark modules named in `python -m benchmarks.NAME` commands, and dotted `sieve.x.y` names.
"""

from __future__ import annotations

import importlib
import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(
    [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *(ROOT / "docs").glob("*.md")]
)
# Release notes name the modules of their day; only their links must still lead somewhere.
LINKED = sorted([*PAGES, ROOT / "CHANGELOG.md"])
# Folders the benchmarks create (git-ignored): their files are outputs, not citations.
GENERATED = ("benchmarks/data/", "benchmarks/work/")

LINK = re.compile(r"\]\(([^)\s]+)\)")
# A repository path: one of the top folders, then path characters, ending in a file suffix. Paths
# with placeholders (`<corpus>`, `*`, `NAME`) are not citations of one file and are not matched.
CITED = re.compile(r"(?<![\w./-])((?:sieve|tests|benchmarks|docs|\.ci)/[\w./-]*\w)")
MODULE = re.compile(r"python -m (benchmarks(?:\.[a-z_]\w*)+)")  # NAME: a placeholder
DOTTED = re.compile(r"`(sieve(?:\.\w+)+)")
SUFFIXES = (".py", ".md", ".json", ".java", ".html", ".toml", ".txt", ".jsonl")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (outside code blocks), with GitHub's -1, -2 for repeats."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} (.*)", line)):
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _rel(page: Path) -> str:
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name


def _prose(page: Path) -> str:
    """A page's text without code blocks and inline code, where `](x)` is not a link."""
    text = re.sub(
        r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL | re.MULTILINE
    )
    return re.sub(r"`[^`]*`", "", text)


def broken_links(page: Path) -> list[str]:
    """Relative links of one page whose file or anchor does not exist."""
    bad = []
    for target in LINK.findall(_prose(page)):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{_rel(page)}: link to {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{_rel(page)}: link to {target}: no heading with that anchor")
    return bad


def missing_citations(page: Path) -> list[str]:
    """Repository paths and benchmark modules a page names that do not exist."""
    text = page.read_text(encoding="utf-8")
    bad = []
    for path in sorted(set(CITED.findall(text))):
        path = path.rstrip(".")
        if (
            path.endswith(SUFFIXES)
            and not path.startswith(GENERATED)
            and not (ROOT / path).exists()
        ):
            bad.append(f"{_rel(page)}: cites {path}, which does not exist")
    for module in sorted(set(MODULE.findall(text))):
        if not (ROOT / (module.replace(".", "/") + ".py")).exists():
            bad.append(f"{_rel(page)}: runs python -m {module}, which does not exist")
    return bad


def unknown_names(page: Path) -> list[str]:
    """Dotted `sieve.x.y` names of a page that name no module or attribute."""
    bad = []
    for name in sorted(set(DOTTED.findall(page.read_text(encoding="utf-8")))):
        parts = name.split(".")
        if "__main__" in parts:  # importing it would run the command line
            continue
        for cut in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                if not hasattr(obj, attr):
                    bad.append(f"{_rel(page)}: names {name}, but {attr!r} is not in {obj!r}")
                    break
                obj = getattr(obj, attr)
            break
    return bad


@pytest.mark.parametrize("page", LINKED, ids=_rel)
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_cited_files_exist(page: Path) -> None:
    assert missing_citations(page) == []


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_dotted_names_exist(page: Path) -> None:
    assert unknown_names(page) == []


def test_the_checks_see_what_is_broken(tmp_path: Path) -> None:
    """A page with a dead link, a dead anchor, a moved file and a renamed module is caught."""
    (tmp_path / "other.md").write_text("# Real heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "# Title here\n\n[a](nothing.md) [b](other.md#no-such) [c](other.md#real-heading)"
        " [d](#title-here)\nSee `tests/test_bql_parser.py`, `tests/test_docs_links.py` and"
        " `python -m benchmarks.bench_nothing`; `sieve.engine.no_such_module`,"
        " `sieve.SieveError`.\n",
        encoding="utf-8",
    )
    assert [b.split(": ", 1)[1] for b in broken_links(page)] == [
        "link to nothing.md: no such file",
        "link to other.md#no-such: no heading with that anchor",
    ]
    assert [b.split(": ", 1)[1] for b in missing_citations(page)] == [
        "cites tests/test_bql_parser.py, which does not exist",
        "runs python -m benchmarks.bench_nothing, which does not exist",
    ]
    assert [b.split(": ", 1)[1].split(", but")[0] for b in unknown_names(page)] == [
        "names sieve.engine.no_such_module"
    ]
