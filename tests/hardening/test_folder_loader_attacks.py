"""A hostile folder of documents: nothing outside the folder is read, nothing is read without a
bound, nothing waits forever, and every bad file is a CorpusError naming the file and the line
(or, for files passed over, a count in the summary), never a traceback."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import sieve
from sieve.common import files
from sieve.cli.main import main
from sieve.corpus.formats import CorpusReport
from sieve.errors import CorpusError
from sieve.corpus.folders import Folder, records

from .deadline import within

SECRET = "zebracodeword"  # a word no document of the folder has
CAP_MB = 0.01  # 10,485 bytes


@pytest.fixture()
def hostile(tmp_path: Path) -> Path:
    """A folder with one good file, a link to it, and every kind of file that must not be read."""
    (tmp_path / "secret.md").write_text(f"# secret\n\n{SECRET}\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# good\n\nhello world\n")
    (docs / "alias.md").symlink_to("good.md")  # inside the folder: read, under its own name
    (docs / "leak.md").symlink_to("../secret.md")
    (docs / "env.txt").symlink_to("/proc/self/environ")
    (docs / "zero.txt").symlink_to("/dev/zero")
    (docs / "etc").symlink_to("/etc")
    (docs / "dangling.md").symlink_to("nowhere.md")
    (docs / "loop1.md").symlink_to("loop2.md")
    (docs / "loop2.md").symlink_to("loop1.md")
    os.mkfifo(docs / "pipe.md")
    (docs / "topipe.md").symlink_to("pipe.md")
    (docs / "big.txt").write_text("word " * 4000)  # 20,000 bytes
    return docs


def unread_notes(docs: Path) -> list[str]:
    return [
        f"{docs}/big.txt: is 20,000 bytes, over the 10,485-byte cap (--max-file-mb)",
        f"{docs}/dangling.md: is a symbolic link to 'nowhere.md', which does not exist",
        f"{docs}/env.txt: is a symbolic link to '/proc/self/environ', outside the folder",
        f"{docs}/etc: is a symbolic link to '/etc', a folder outside the folder",
        f"{docs}/leak.md: is a symbolic link to '../secret.md', outside the folder",
        f"{docs}/loop1.md: is a symbolic link to 'loop2.md', a loop of links",
        f"{docs}/loop2.md: is a symbolic link to 'loop1.md', a loop of links",
        f"{docs}/pipe.md: is a FIFO (named pipe), never opened",
        f"{docs}/topipe.md: is a FIFO (named pipe), never opened",
        f"{docs}/zero.txt: is a symbolic link to '/dev/zero', outside the folder",
    ]


def assert_unlocked(out: Path) -> None:
    """No build holds or left anything at `out`: the lock file is gone and a new build may start."""
    assert not os.path.lexists(out.parent / f".{out.name}.lock")
    assert not [p.name for p in out.parent.iterdir() if ".building-" in p.name]


@pytest.mark.parametrize("shards", [None, 2], ids=["one", "sharded"])
def test_only_regular_files_inside_the_folder_are_read(hostile: Path, tmp_path: Path, shards: int | None) -> None:
    report = CorpusReport()
    with within(30, "a build of the hostile folder"):
        ix = sieve.build_index(Folder(hostile, max_file_mb=CAP_MB), tmp_path / "ix", report=report, shards=shards, jobs=1)
    assert sorted(ix.match("hello").ids) == ["alias.md", "good.md"] and len(ix) == 2
    assert ix.match(SECRET).count == 0  # the file a link led to
    assert ix.match("usr OR bin OR home OR path").count == 0  # the environment /proc/self/environ holds
    assert report.unread == {"links": 7, "special": 2, "oversized": 1}
    assert report.unread_files == unread_notes(hostile)
    assert_unlocked(tmp_path / "ix")


def test_strict_makes_the_first_file_passed_over_an_error_and_lets_the_lock_go(hostile: Path, tmp_path: Path) -> None:
    with within(20), pytest.raises(CorpusError) as e:
        sieve.build_index(Folder(hostile, max_file_mb=CAP_MB, strict=True), tmp_path / "ix")
    assert str(e.value) == f"{hostile}/big.txt: is 20,000 bytes, over the 10,485-byte cap (--max-file-mb); not read (--strict)"
    assert (e.value.file, e.value.line) == (f"{hostile}/big.txt", None)  # a file not read has no line
    assert_unlocked(tmp_path / "ix")
    (hostile / "big.txt").unlink()
    with pytest.raises(CorpusError, match=f"^{hostile}/dangling.md: is a symbolic link to 'nowhere.md', which does not exist; not read \\(--strict\\)$"):
        sieve.build_index(Folder(hostile, strict=True), tmp_path / "ix")
    for name in ("dangling.md", "env.txt", "etc", "loop1.md", "loop2.md", "pipe.md", "topipe.md", "zero.txt"):
        (hostile / name).unlink()
    with pytest.raises(CorpusError, match=f"^{hostile}/leak.md: is a symbolic link to '../secret.md', outside the folder; not read"):
        sieve.build_index(Folder(hostile, strict=True), tmp_path / "ix")
    (hostile / "leak.md").unlink()
    assert sorted(sieve.build_index(Folder(hostile, strict=True), tmp_path / "ix").match("hello").ids) == ["alias.md", "good.md"]


def test_a_fifo_neither_hangs_the_build_nor_keeps_its_lock(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# a\n\nalpha\n")
    for name in ("b.md", "c.html", "d.txt"):
        os.mkfifo(docs / name)
    with within(20, "a build of a folder with FIFOs"):
        ix = sieve.build_index(docs, tmp_path / "ix")
        assert ix.match("alpha").ids == ["a.md"]
        assert_unlocked(tmp_path / "ix")
        sieve.build_index(docs, tmp_path / "ix", force=True)  # the lock is free
        with pytest.raises(CorpusError, match="is a FIFO \\(named pipe\\), never opened; not read \\(--strict\\)"):
            sieve.build_index(Folder(docs, strict=True), tmp_path / "ix", force=True)
        assert_unlocked(tmp_path / "ix")


def test_files_changed_after_the_walk_are_judged_again_when_read(tmp_path: Path) -> None:
    """Between the walk and the read, a file may be replaced: by a FIFO, a link out, a hard link to
    a file outside, or grow past the cap. Each is passed over, never read or waited on."""
    (tmp_path / "secret.md").write_text(f"{SECRET}\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md", "c.md", "d.md", "e.md", "f.md"):
        (docs / name).write_text(f"# {name}\n\nplain text\n")
    notes: list[str] = []
    got = records(Folder(docs, max_file_mb=CAP_MB), lambda why, note: notes.append(f"{why}: {note}"))
    with within(20, "reading swapped files"):
        first = next(got)  # the walk is done: every file was a small regular file
        (docs / "b.md").unlink()
        os.mkfifo(docs / "b.md")
        (docs / "c.md").unlink()
        (docs / "c.md").symlink_to(tmp_path / "secret.md")
        (docs / "d.md").unlink()
        os.link(tmp_path / "secret.md", docs / "d.md")  # a regular file, but another one
        (docs / "e.md").write_text("word " * 4000)
        rest = list(got)
    assert [r[0] for r in [first, *rest]] == [f"{docs}/a.md", f"{docs}/f.md"]
    assert all(SECRET not in json.dumps(rec) for _, _, rec in [first, *rest])
    assert notes == [
        f"special: {docs}/b.md: is a FIFO (named pipe), not a regular file",
        f"links: {docs}/c.md: is a symbolic link, not a regular file",
        f"special: {docs}/d.md: is another file than the one looked at (it was replaced while being opened), not a regular file",
        f"oversized: {docs}/e.md: is larger than 10,485 bytes",
    ]


def test_a_folder_swapped_for_a_link_during_the_walk_is_not_read_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk saw `sub` as a folder; by the time it lists it, `sub` is a link to a folder outside.
    What it lists there is the outside folder's files, and each is refused when opened."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text(f"{SECRET}\n")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "good.md").write_text("# good\n\nhello\n")
    (docs / "sub" / "x.md").write_text("inner\n")
    listing = os.scandir

    def racing(path: object) -> object:  # the other process's move, made at the worst moment
        if Path(str(path)) == docs / "sub" and not os.path.islink(docs / "sub"):
            shutil.rmtree(docs / "sub")
            (docs / "sub").symlink_to(outside)
        return listing(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", racing)
    report = CorpusReport()
    ix = sieve.build_index(docs, tmp_path / "ix", report=report)
    assert ix.match("hello").ids == ["good.md"] and ix.match(SECRET).count == 0 and len(ix) == 1
    assert report.unread == {"links": 1}
    assert report.unread_files == [f"{docs}/sub/x.md: is reached through a symbolic link out of {docs} (a folder on its way was replaced)"]


def test_reads_are_bounded_whatever_the_size_says(tmp_path: Path) -> None:
    with pytest.raises(files.NotRegularFileError, match="is a character device, not a regular file"):
        files.read_regular("/dev/zero", 100)  # never opened, so never read without end
    with pytest.raises(files.FileTooLargeError, match="is larger than 10 bytes"):
        files.read_regular("/proc/self/status", 10)  # its size says 0
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with within(5), pytest.raises(files.NotRegularFileError, match="is a FIFO"):
        files.read_regular(fifo, 100)


def test_the_default_cap_passes_over_a_32_mib_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# a\n\nalpha\n")
    with open(docs / "huge.txt", "wb") as fh:
        fh.truncate((32 << 20) + 1)  # sparse: no disk used
    assert main(["index", str(docs), str(tmp_path / "ix"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err == (f"  not read: 1 file over --max-file-mb (--strict makes them errors); first ones:\n"
                   f"    {docs}/huge.txt: is 33,554,433 bytes, over the 33,554,432-byte cap (--max-file-mb)\n")


# ---------------------------------------------------------------------------------------------
# Front matter and HTML: bad values are CorpusErrors at their line, quickly

BOMB = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 10))

FRONT_MATTER = [
    ("billion laughs", "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + BOMB, 7,
     "front matter: its aliases repeat more than 10,000 values (an alias bomb?)"),
    ("a long text repeated", "a: &a " + "x" * 100_000 + "\nb: [" + ", ".join(["*a"] * 20) + "]\n", 4,
     "front matter: its aliases repeat more than 1,048,576 characters (an alias bomb?)"),
    ("merge keys repeated", "base: &b {k1: 1, k2: 2, k3: 3}\n" + "".join(f"m{i}: {{<<: *b}}\n" for i in range(5000)), 1432,
     "front matter: its aliases repeat more than 10,000 values (an alias bomb?)"),
    ("an alias inside itself", "a: &a [1, *a]\n", 3, "front matter: an alias refers to a value it is inside of (a structure without end)"),
    ("a date that is no date", "date: 2024-13-45\n", 3, "front matter value '2024-13-45' cannot be read as timestamp (month must be in 1..12)"),
    ("a timestamp that is no time", "date: 2024-02-30T10:00:00Z\n", 3,
     "front matter value '2024-02-30T10:00:00Z' cannot be read as timestamp (day is out of range for month)"),
    ("a date as text", "date: someday\n", 3, "front matter date: unparseable date 'someday': not an ISO date (YYYY, YYYY-MM or YYYY-MM-DD): 'someday'"),
    ("a 5,000-digit integer", "count: " + "7" * 5000 + "\n", 3,
     "front matter value '77777777777777777777'... (5,000 characters) is a number too long to read (more than 4,300 digits)"),
    ("a 5,000-digit date", "date: " + "2" * 5000 + "\n", 3,
     "front matter value '22222222222222222222'... (5,000 characters) is a number too long to read (more than 4,300 digits)"),
    ("a huge hexadecimal integer", "x: 0x" + "f" * 4000 + "\n", 3,
     "front matter value '0xffffffffffffffffff'... (4,002 characters) is a number too long to read (more than 4,300 digits)"),
    ("a base-60 integer of 100,000 places", "x: " + ":".join(["59"] * 100_000) + "\n", 3,
     "front matter value '59:59:59:59:59:59:59'... (299,999 characters) is a number too long to read (more than 4,300 digits)"),
    ("a Python object", "x: !!python/object/apply:os.system ['echo owned']\n", 3,
     "front matter is not valid YAML: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system'"),
    ("binary data", "x: !!binary aGVsbG8=\n", 3,
     "front matter value of 'x' is binary data (!!binary); a document holds text, numbers, true/false, dates, lists and mappings"),
    ("nesting without end", "x: " + "[" * 100_000 + "]" * 100_000 + "\n", 3, "front matter is not valid YAML: exceeded maximum nesting depth"),
    ("an author mapping", "author: {name: x}\n", 3, "front matter author must be text or a list of names, got a mapping"),
]


@pytest.mark.parametrize("yaml,line,message", [f[1:] for f in FRONT_MATTER], ids=[f[0] for f in FRONT_MATTER])
def test_bad_front_matter_is_a_corpus_error_at_its_line(tmp_path: Path, yaml: str, line: int, message: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# good\n\nhello\n")
    (docs / "bad.md").write_text(f"---\ntitle: t\n{yaml}---\nbody\n")
    with within(20, "reading the front matter"), pytest.raises(CorpusError) as e:
        sieve.build_index(docs, tmp_path / "ix")
    assert str(e.value) == f"{docs}/bad.md:{line}: {message}"
    assert (e.value.file, e.value.line) == (f"{docs}/bad.md", line)
    report = CorpusReport()
    with within(20, "reading the front matter"):
        ix = sieve.build_index(docs, tmp_path / "ix", on_error="skip", report=report)
    assert ix.match("hello").ids == ["good.md"] and report.errors == [str(e.value)]


HTML = [
    ("unclosed attributes", "<p>fine</p>\n" + "<a b='\n" * 30_000, 2),
    ("unclosed comments", "<p>fine</p>\n\n" + "<!--" * 100_000, 3),
    ("unclosed sections", "<p>fine</p>\n" + "<![CDATA[" * 100_000, 2),
    ("tags without their >", "<p>fine</p>\n" + "<a\n" * 30_000, 2),
    ("quoted values running to the end", "<p>fine</p>\n" + "<a b='>' " * 100_000, 2),
]


@pytest.mark.parametrize("name", ["page.html", "page.md"])
@pytest.mark.parametrize("html,line", [h[1:] for h in HTML], ids=[h[0] for h in HTML])
def test_html_whose_markup_never_closes_is_an_error_not_a_hang(tmp_path: Path, html: str, line: int, name: str) -> None:
    """Python's HTMLParser (before 3.13.5) reads such markup again from every later '<':
    quadratic, minutes for a few hundred KB. A Markdown file's HTML block is the same parser."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.txt").write_text("hello\n")
    prefix = "# page\n\n" if name.endswith(".md") else ""
    (docs / name).write_text(prefix + html)
    with within(30, "reading the page"), pytest.raises(CorpusError) as e:
        sieve.build_index(docs, tmp_path / "ix")
    where = line + prefix.count("\n")
    assert str(e.value) == (f"{docs}/{name}:{where}: HTML markup that never closes (a '<' without its '>', an unclosed comment or section), "
                            "again and again from this line on: reading it would take time without bound; not read")



@pytest.mark.parametrize("block", ["```\n", "<!-- -->\n\n", "    \n"], ids=["empty fences", "empty comments", "blank indents"])
def test_a_markdown_file_of_empty_blocks_reads_in_linear_time(tmp_path: Path, block: str) -> None:
    """A section of many empty blocks was tested whole for text after each block: quadratic
    (400,000 empty fences: about two minutes). Now each block is looked at once."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# page\n\n" + block * 400_000 + "text at last\n")
    with within(30, "reading the page"):
        index = sieve.build_index(docs, tmp_path / "ix")
    assert "text at last" in index.document("page.md").sections[-1].text

def test_html_python_cannot_parse_is_read_as_text(tmp_path: Path) -> None:
    """`<![x` made Python's parser raise an AssertionError: it is text, and the page is read."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "p.html").write_text("<title>T</title><p>before</p><![x y]><p>after</p><![if gte]><p>third</p>")
    assert sieve.build_index(docs, tmp_path / "ix").section("p.html", 0).text == "before\n\n<![x y]>\n\nafter\n\nthird"


# ---------------------------------------------------------------------------------------------
# The command line


@pytest.mark.parametrize("kind", ["FIFO", "device", "link to a FIFO"])
def test_a_jsonl_corpus_that_is_no_regular_file_is_refused_not_waited_on(tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str) -> None:
    corpus = Path("/dev/zero") if kind == "device" else tmp_path / "c.jsonl"
    if kind == "FIFO":
        os.mkfifo(corpus)
    elif kind == "link to a FIFO":
        os.mkfifo(tmp_path / "pipe")
        corpus.symlink_to(tmp_path / "pipe")
    with within(20):
        assert main(["index", str(corpus), str(tmp_path / "ix"), "--quiet"]) == 1
    what = "a character device, not a regular file" if kind == "device" else "a FIFO (named pipe), not a regular file: write the corpus to a file first"
    assert capsys.readouterr().err == f"sieve: {corpus}: the corpus is {what}\n"
    assert_unlocked(tmp_path / "ix")


def test_the_cli_names_a_bomb_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bomb.md").write_text("---\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + BOMB + "---\nbody\n")
    with within(20):
        assert main(["index", str(docs), str(tmp_path / "ix"), "--quiet"]) == 1
    captured = capsys.readouterr()
    assert captured.err == f"sieve: {docs}/bomb.md:6: front matter: its aliases repeat more than 10,000 values (an alias bomb?)\n"
    assert captured.out == ""
    assert main(["index", str(docs), str(tmp_path / "ix"), "--json"]) == 1
    assert json.loads(capsys.readouterr().err) == {"error": "CorpusError", "file": f"{docs}/bomb.md", "line": 6,
                                                   "message": f"{docs}/bomb.md:6: front matter: its aliases repeat more than 10,000 values (an alias bomb?)"}
    assert_unlocked(tmp_path / "ix")


def test_the_cli_counts_what_it_passed_over_and_strict_stops(hostile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with within(30):
        assert main(["index", str(hostile), str(tmp_path / "ix"), "--quiet", "--max-file-mb", str(CAP_MB)]) == 0
    err = capsys.readouterr().err
    assert err == ("  not read: 7 symbolic links out of the folder or to nothing, 2 special files (FIFO, socket, device), 1 file over --max-file-mb "
                   "(--strict makes them errors); first ones:\n" + "".join(f"    {n}\n" for n in unread_notes(hostile)))
    assert main(["index", str(hostile), str(tmp_path / "ix2"), "--json", "--max-file-mb", str(CAP_MB)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents"] == 2 and summary["unread"] == {"links": 7, "special": 2, "oversized": 1, "unreadable": 0}
    assert main(["index", str(hostile), str(tmp_path / "ix3"), "--strict", "--max-file-mb", str(CAP_MB)]) == 1
    assert capsys.readouterr().err == f"sieve: {hostile}/big.txt: is 20,000 bytes, over the 10,485-byte cap (--max-file-mb); not read (--strict)\n"
    assert main(["add", str(tmp_path / "ix"), str(hostile), "--strict"]) == 1  # into an existing index: the same rule
    assert capsys.readouterr().err == f"sieve: {hostile}/dangling.md: is a symbolic link to 'nowhere.md', which does not exist; not read (--strict)\n"
    assert_unlocked(tmp_path / "ix")


def test_worker_processes_keep_every_guarantee(hostile: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files read by `--jobs` workers: the same files read, the same counts and notes, the same
    first error with --strict as when this process reads them."""

    monkeypatch.setattr("sieve.index.batches.FOLDER_PARALLEL_MIN_BYTES", 0)  # the hostile folder is small
    monkeypatch.setattr("sieve.index.batches.FOLDER_BATCH_FILES", 3)  # several tasks, each worker its share
    report = CorpusReport()
    with within(30, "a build of the hostile folder by workers"):
        ix = sieve.build_index(Folder(hostile, max_file_mb=CAP_MB), tmp_path / "ix", report=report, jobs=2)
        assert sorted(ix.match("hello").ids) == ["alias.md", "good.md"] and len(ix) == 2
        assert ix.match(SECRET).count == 0 and ix.match("usr OR bin OR home OR path").count == 0
        assert report.unread == {"links": 7, "special": 2, "oversized": 1}
        assert report.unread_files == unread_notes(hostile)
        with pytest.raises(CorpusError) as e:
            sieve.build_index(Folder(hostile, max_file_mb=CAP_MB, strict=True), tmp_path / "ix2", jobs=2)
    assert str(e.value) == f"{hostile}/big.txt: is 20,000 bytes, over the 10,485-byte cap (--max-file-mb); not read (--strict)"
    assert_unlocked(tmp_path / "ix")
    assert_unlocked(tmp_path / "ix2")
