"""sieve's Markdown block scanner (sieve.corpus.mdblocks) against markdown-it-py, its reference:
for every document it reads, the same front matter and block events (so the same record); any
other it declines, and markdown-it-py reads it. Real files (tests/data/markdown, see its
NOTICE.txt), man pages as the folder benchmark writes them, and generated Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sieve.corpus import markup, mdblocks


def _bench_folders():  # type: ignore[no-untyped-def]
    """benchmarks/bench_folders.py by its path: CI's wheel job runs bare pytest, where the
    checkout's root (and so the benchmarks package) is not importable."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_folders.py"
    spec = importlib.util.spec_from_file_location("bench_folders_for_tests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


man_markdown = _bench_folders()._markdown

DATA = Path(__file__).parent / "data" / "markdown"
REAL = sorted(DATA.glob("*.md"))


def _same_as_markdown_it(text: str) -> bool:
    """Whether the scanner read `text` (False: it declined); an AssertionError where it read it
    otherwise than markdown-it-py."""
    fast = mdblocks.blocks(text)
    front, events, env = markup.markdown_it_blocks(text)
    if fast is None:
        return False
    assert fast == (front, events)
    assert "references" not in env  # inline links read no definitions the scanner skipped
    return True


def test_real_files_read_as_markdown_it_reads_them() -> None:
    assert len(REAL) >= 80
    read = [p.name for p in REAL if _same_as_markdown_it(p.read_text(encoding="utf-8-sig"))]
    # Most are read by the scanner; those with block quotes or link definitions are not.
    assert 0.75 * len(REAL) <= len(read) < len(REAL)


@pytest.mark.parametrize("path", REAL[::9], ids=lambda p: p.name)
def test_real_file_records(path: Path) -> None:
    """The record (title, sections, metadata) is markdown-it-py's, read fast or not."""
    text = path.read_text(encoding="utf-8-sig")
    front, events, env = markup.markdown_it_blocks(text)
    expected = markup._record(front, events, env, path.stem)
    assert markup.parse("markdown", text, path.stem) == expected


def _man_page(i: int) -> str:
    """A man page as `man -P cat` renders it (header, capital headings, indented body)."""
    body = [
        "NAME",
        f"       tool{i} - do things with <file> and foo_bar",
        "",
        "SYNOPSIS",
        f"       tool{i} [-h] [--level N] -? | -v file...",
        "       tool \\",
        "           --flag=x \\",
        "           --other",
        "",
        "DESCRIPTION",
        "       The ``~'' character and *globs* work; so does `code` and 1. numbers",
        "       2. like this, - dashes - and + pluses at the start:",
        "       - an item",
        "       * another",
        "       1) third",
        "       <b>bold</b> &amp; C:\\path\\to _under_ a\\tb",
        "",
        "OPTIONS",
        "       -h, --help",
        "              Prints help.",
        "       ---",
        "       ===",
        "       #define X 1",
        "",
        "SEE ALSO",
        "       other(1), | pipe | table |",
        "       |---|---|",
        "       a | b",
    ]
    return f"TOOL{i}(1)   General Commands   TOOL{i}(1)\n\n" + "\n".join(body) + "\n\nfooter\n"


@pytest.mark.parametrize("i", range(4))
def test_man_pages_as_the_benchmark_writes_them(i: int) -> None:
    text = man_markdown(Path(f"tool{i}.1.gz"), _man_page(i), front_matter=i % 2 == 0)
    assert _same_as_markdown_it(text)
    front, events, env = markup.markdown_it_blocks(text)
    assert markup.parse("markdown", text, "t") == markup._record(front, events, env, "t")


def test_constructs_read_and_declined() -> None:
    """Each construct the scanner reads, it reads as markdown-it-py does; a quote that goes on
    lazily, or a link reference definition, it declines, and the record is still markdown-it-py's."""
    read = [
        "---\ntitle: T\ndate: 2024-01-02\n---\n# Head #\n\ntext\nmore\n\nSub\n---\n",
        "a\n===\n\n* one\n* two\n  lazy\n\n  para\n\n1. x\n2. y\n   - nested\n     deeper\n",
        "```py\ncode\n\n```\n\n    indented\n\tcode\n\n~~~\nopen",
        "| a | b |\n|:--|--:|\n| c \\| d | e |\nf\n\n<div>\nhtml *x*\n</div>\n\n<!--\nc\n\n-->\n",
        "x\n\n- a\n-\n\n  b\n+ c\n\n***\n<b>x</b>\npara\n#no\n####### seven\n",
        "text\n<div>interrupts</div>\n1) not one\n2. \n\t- tab\n",
        "para\n> # quoted\n> text\n>> deeper\n>\nafter\n\n> - a\n>   b\n> ```\n> code",
    ]
    for text in read:
        assert _same_as_markdown_it(text), text
    for text in ("> a\nlazy\n", "- > in a list\n", "[x]: /url\n\n[x]\n", "- x\n", "---\nnever closed\n"):
        assert mdblocks.blocks(text) is None, text
        front, events, env = markup.markdown_it_blocks(text)
        assert markup.parse("markdown", text, "f") == markup._record(front, events, env, "f")


# ------------------------------------------------------------------------------------------------
# generated Markdown

_WORDS = st.sampled_from(
    [
        "foo", "Bar", "a_b", "_x_", "*em*", "**st**", "`code`", "``", "<b>", "<div>", "</p>",
        "&amp;", "[l](u)", "[a]", "]:", "\\*", "\\", "x|y", "|", "1.", "2)", "10.", "-", "+",
        "*", "#", "##", "=", "===", "--", "---", "***", "_ _ _", "```", "~~~", ">", "<!--",
        "-->", "<?", "?>", "<![CDATA[", ":--", "|--|", "--:|", "\t", "é", "\u00a0", "...",
        "<script>", "</script>", "[ ]", "  ", "\\|", "a\\\\|b",
    ]
)  # fmt: skip
_INDENT = st.sampled_from(["", "", "", " ", "  ", "   ", "    ", "     ", "\t", " \t", "  \t  "])
_TEXT = st.lists(_WORDS, min_size=1, max_size=4).map(" ".join)
_LINE = st.builds(lambda i, t: i + t, _INDENT, _TEXT) | st.sampled_from(["", " ", "\t"])


@st.composite
def _block(draw: st.DrawFn, depth: int = 0) -> str:
    text = draw(_TEXT)
    kinds = ["para", "atx", "setext", "fence", "code", "list", "table", "html", "quote"]
    kind = draw(st.sampled_from(kinds))
    if kind == "para":
        return "\n".join([text, *draw(st.lists(_LINE, max_size=3))])
    if kind == "atx":
        closing = draw(st.sampled_from(["", " #", " ## \t", "#", " \\#", "\t#", " # x"]))
        return "#" * draw(st.integers(1, 7)) + draw(st.sampled_from([" ", "", "\t"])) + text + closing
    if kind == "setext":
        return f"{text}\n{draw(_INDENT)}{draw(st.sampled_from(['=', '-', '===', '--- ', '- -']))}"
    if kind == "fence":
        fence = draw(st.sampled_from(["```", "~~~", "````", "``"]))
        close = draw(st.sampled_from([fence, "", "```", "~~~~", "    " + fence]))
        body = "\n".join(draw(st.lists(_LINE, max_size=3)))
        return f"{draw(_INDENT)}{fence}{draw(st.sampled_from(['', 'py', 'a`b']))}\n{body}\n{close}"
    if kind == "code":
        return "\n".join("    " + line for line in draw(st.lists(_LINE, min_size=1, max_size=3)))
    if kind == "table":
        rows = draw(st.lists(_TEXT, max_size=2))
        delim = draw(st.sampled_from(["--|--", "|:-|-:|", "-|", "| - |", "|--|--|--|"]))
        return "\n".join([f"{text} | {draw(_TEXT)}", delim, *rows])
    if kind == "quote":  # every line quoted, or some lazily; a quote in a quote
        inner = draw(_block(depth + 1)) if depth < 2 else text
        out = []
        for line in inner.split("\n"):
            out.append(draw(st.sampled_from(["> ", ">", " > ", "> ", ">  ", ""])) + line)
        return "\n".join(out)
    if kind == "html":
        return draw(st.sampled_from(["<div>", "<!-- c", "<b class='x'>", "</p>", "<?pi"])) + (
            "\n" + "\n".join(draw(st.lists(_LINE, max_size=2)))
        )
    items = []
    marker = draw(st.sampled_from(["-", "*", "+", "1.", "2)", "10."]))
    for _ in range(draw(st.integers(1, 3))):
        gap = draw(st.sampled_from([" ", "  ", "   ", "     ", "\t", ""]))
        pad = " " * draw(st.integers(0, 5))
        inner = draw(_block(depth + 1)) if depth < 2 and draw(st.booleans()) else draw(_TEXT)
        inner = inner.replace("\n", "\n" + pad)
        items.append(f"{draw(_INDENT)}{marker}{gap}{inner}")
    return draw(st.sampled_from(["\n", "\n\n"])).join(items)


@st.composite
def _document(draw: st.DrawFn) -> str:
    parts = []
    if draw(st.booleans()):
        parts.append(draw(st.sampled_from(["---\ntitle: x\n---", "---\n---", "---\na: 1\n...", "---"])))
    for _ in range(draw(st.integers(0, 5))):
        parts.append(draw(_block()) if draw(st.integers(0, 4)) else draw(_LINE))
    seps = st.sampled_from(["\n", "\n", "\n\n", "\n  \n", "\n\t\n"])
    text = parts[0] if parts else ""
    for part in parts[1:]:
        text += draw(seps) + part
    return text + draw(st.sampled_from(["", "\n", "\n\n", "\n  ", "\r\n"]))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_document())
def test_generated_markdown_is_declined_or_read_as_markdown_it_reads_it(text: str) -> None:
    _same_as_markdown_it(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINE, max_size=8).map("\n".join))
def test_generated_lines_are_declined_or_read_as_markdown_it_reads_them(text: str) -> None:
    _same_as_markdown_it(text)


@pytest.mark.filterwarnings("ignore::hypothesis.errors.NonInteractiveExampleWarning")
def test_generated_documents_are_mostly_read() -> None:
    """The property above holds because the scanner reads, not because it declines everything."""
    texts = [_document().example() for _ in range(150)]
    assert sum(mdblocks.blocks(t) is not None for t in texts) >= 40


_INLINE = st.lists(
    st.sampled_from(
        ["a", "b_c", "_", "*", "`", "\\", "\\\\", "\\*", "\\a", "\\\n", "\n", " \n", "  \n",
         "\n  ", "\t", " ", "&amp;", "&x", "<", "<a>", "](", "[", "]", "é", "\u00a0", "!", "~"]
    ),  # fmt: skip
    max_size=10,
).map("".join)


@settings(max_examples=800, deadline=None)
@given(_INLINE)
def test_inline_text_without_a_parse_is_the_parse(content: str) -> None:
    """Inline text read without markdown-it's parse (no markup; escapes and breaks only) is what
    the parse gives."""
    content = content.strip(mdblocks.TRIM)  # as a block's inline text always is
    assert markup._inline_text(content, {}) == markup.parsed_inline(content, {})


def test_mdblocks_trim_is_markdown_its() -> None:
    from markdown_it.common.utils import MD_TRIM_CHARS

    assert set(mdblocks.TRIM) == set(MD_TRIM_CHARS)


def test_bench_corpus_json_is_folder_records(tmp_path: Path) -> None:
    """The benchmark's JSONL holds the folder loader's records, so the two builds index the same
    documents; with the scanner, still so."""
    from sieve.corpus.folders import records

    (tmp_path / "man1").mkdir()
    for i in range(3):
        text = man_markdown(Path(f"tool{i}.1.gz"), _man_page(i), front_matter=i % 2 == 0)
        (tmp_path / "man1" / f"tool{i}.1.md").write_text(text)
    recs = [r for _, _, r in records(tmp_path)]
    assert [r["title"] for r in recs] == ["tool0(1)", "tool1(1)", "tool2(1)"]  # type: ignore[index]
    assert json.loads(json.dumps(recs)) == recs


_KEYS = st.sampled_from(["title", "Title", "manual_section", "a-b", "yes", "On", "null", "y", "x1", "_k", "1a"])
_VALUES = st.sampled_from(
    ['"CA.pl(1ssl)"', '"1ssl"', '"a \\" b"', '"x\\\\y"', '"é \u2028 x"', '"\ufeff"', '" sp "', "plain text",
     "yes", "Yes", "NO", "y", "n", "nulL", "null", "~", "1.5", "2024-01-02", "a: b", "a #c", "it's", "x  y  ",
     "[a, b]", "{a: 1}", "'q'", "-", "a-b", ".5", "0x10", "True", "tRuE", "ab", "", "*x", "&a a", "!x"]
)  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.tuples(_KEYS, st.sampled_from([": ", ":  ", ":", " : "]), _VALUES), max_size=4))
def test_simple_front_matter_is_read_as_yaml_reads_it(items: list[tuple[str, str, str]]) -> None:
    """Front matter read without YAML (`key: value` lines) is what YAML gives, errors included."""
    from sieve.corpus import frontmatter
    from sieve.errors import CorpusError

    content = "\n".join(k + sep + v for k, sep, v in items)

    def read(f: object) -> object:
        try:
            return f(content, 3)  # type: ignore[operator]
        except CorpusError as e:
            return ("error", e.message, e.line)

    assert read(frontmatter.front_matter) == read(frontmatter.yaml_front_matter)


def test_man_page_front_matter_is_read_without_yaml() -> None:
    from sieve.corpus import frontmatter

    content = 'title: "CA.pl(1ssl)"\nmanual_section: "1ssl"'
    assert frontmatter._simple(content, 2) == ({"title": "CA.pl(1ssl)", "manual_section": "1ssl"}, {"title": 2, "manual_section": 3})
    # YAML's readings are left to YAML: `yes` is true, a line separator in quotes is a line break
    for content in ("a: yes", "a: [1]", 'a: "x \u2028 y"', "a: 1", "a: b\na: c", "a: b # c"):
        assert frontmatter._simple(content, 2) is None, content
