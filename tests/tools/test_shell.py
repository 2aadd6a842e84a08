"""The DCI shell as the agent uses it: bash over a folder, in each sandbox this machine has. What
works in a terminal works here (pipes, `;`, `&&`, loops, redirection into the scratch folder); a
failing command shows its status; a limit that fires is a note in the result, never an exception.
The attacks are in tests/hardening/test_shell_escape.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandboxes import confined_params

from sieve.errors import InvalidArgumentError
from sieve.tools.shell.sandbox import Sandbox, ShellLimits, choose
from sieve.tools.shell.shell import PROGRAMS, ShellRefusal, run


@pytest.fixture(params=confined_params())
def box(request: pytest.FixtureRequest) -> Sandbox:
    return choose(request.param)


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "gzip.txt").write_text("gzip\nThe gzip module compresses files.\nSee also zlib.\n")
    (root / "docs" / "json.txt").write_text("json\nJSON stands for JavaScript Object Notation.\n")
    (root / "docs" / "csv.txt").write_text("csv\nComma separated values, read and written.\n")
    return root


WORKS = [
    ("grep -ri 'json' docs", "docs/json.txt:JSON stands for"),
    ("grep -rl gzip docs | sort", "docs/gzip.txt"),
    ("find docs -name '*.txt' | sort | head -n 2", "docs/csv.txt\ndocs/gzip.txt"),
    ("cat docs/json.txt | wc -l", "2"),
    ("sed -n '/JSON/p' docs/json.txt", "JSON stands for JavaScript Object Notation."),
    ("head -n 1 docs/csv.txt docs/gzip.txt", "==> docs/csv.txt <=="),
    ("ls docs", "gzip.txt"),
    ("grep -c e docs/csv.txt docs/json.txt | cut -d: -f2 | sort -n | uniq", "1"),
    ("cat docs/json.txt | tr a-z A-Z", "JSON STANDS FOR JAVASCRIPT"),
    ("grep -l module docs/*.txt", "docs/gzip.txt"),
    ("wc -l docs/[cj]*.txt", "4 total"),
    # What the paper's DCI agent has and the old filtered pipeline refused:
    ("cd docs && ls | wc -l", "3"),
    ("ls docs; echo done", "csv.txt\ngzip.txt\njson.txt\ndone"),
    ("grep -c zlib docs/gzip.txt || echo none", "1"),
    ("grep -c Zlib docs/gzip.txt || echo none", "0\nnone"),
    ("for f in docs/*.txt; do head -n 1 \"$f\"; done", "csv\ngzip\njson"),
    ("awk 'NR==2 {print $2}' docs/json.txt", "stands"),
    ("find docs -name '*.txt' -print0 | xargs -0 grep -l JSON", "docs/json.txt"),
    ("grep -h . docs/*.txt > $TMPDIR/all && wc -l < $TMPDIR/all", "7"),
    ("grep -oh gzip docs/*.txt | sort | uniq -c", "2 gzip"),
    ("echo $(grep -c zlib docs/gzip.txt) match", "1 match"),
]


@pytest.mark.parametrize("line, expect", WORKS)
def test_command_lines_work_as_in_a_terminal(box: Sandbox, folder: Path, line: str, expect: str) -> None:
    r = run(folder, line, sandbox=box)
    assert r.ok and expect in r.text, r.text


def test_rg_works_where_installed(box: Sandbox, folder: Path) -> None:
    if "rg" not in PROGRAMS:
        assert "grep" in PROGRAMS  # the manual lists what is there
        return
    r = run(folder, "rg -l JSON docs", sandbox=box)
    assert r.ok and r.text.strip() == "docs/json.txt"


def test_a_failing_command_shows_its_error_and_status(box: Sandbox, folder: Path) -> None:
    r = run(folder, "cat docs/missing.txt", sandbox=box)
    assert not r.ok and r.status == 1 and r.text == "cat: docs/missing.txt: No such file or directory\n[exit status 1]"
    r = run(folder, "grep nothing-matches docs/csv.txt", sandbox=box)
    assert r.ok and r.status == 1 and r.text == "(no output)\n[exit status 1]"  # grep's "nothing found" is not an error
    r = run(folder, "if then", sandbox=box)
    assert not r.ok and "syntax error" in r.text and r.text.endswith("[exit status 2]")


def test_huge_output_is_cut_with_a_note(box: Sandbox, folder: Path) -> None:
    r = run(folder, "yes 'line of text' | head -c 1000000", ShellLimits(output_bytes=10_000), box)
    assert r.truncated and r.limit == "output" and not r.ok
    assert r.text.endswith("\n[output truncated at 10,000 bytes: narrow the command, e.g. with head, grep -l or grep -m]")
    assert len(r.text.encode()) < 10_200


def test_a_slow_command_is_stopped_at_its_deadline(box: Sandbox, folder: Path) -> None:
    r = run(folder, "echo started; sleep 30", ShellLimits(wall_seconds=0.5), box)
    assert r.timed_out and r.limit == "time" and not r.ok and r.status is None
    assert r.text == "started\n[stopped after 0.5 s (all its programs together): narrow the command]"


def test_the_scratch_folder_is_private_to_each_call(box: Sandbox, folder: Path) -> None:
    assert run(folder, "echo kept > $TMPDIR/note && cat $TMPDIR/note", sandbox=box).text.strip() == "kept"
    r = run(folder, "cat $TMPDIR/note", sandbox=box)
    assert not r.ok and "No such file or directory" in r.text


def test_refused_lines_never_run(folder: Path) -> None:
    box = choose("none")  # refused before any sandbox is needed
    for line, why in (("", "an empty command"), ("   ", "an empty command"), ("ls\0x", "the command holds a NUL character"),
                      ("x" * 4001, "the command is 4,001 characters; at most 4,000")):
        with pytest.raises(ShellRefusal, match=why):
            run(folder, line, sandbox=box)


def test_limits_must_be_positive() -> None:
    with pytest.raises(InvalidArgumentError, match="shell limit wall_seconds must be positive, got 0"):
        ShellLimits(wall_seconds=0)


def test_unknown_mechanism_is_an_error() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown shell sandbox 'docker'; choose from auto, bwrap, landlock, none"):
        choose("docker")


def test_the_manual_lists_the_usual_tools_found_here() -> None:
    assert {"grep", "sed", "awk", "find", "sort", "cat", "ls"} <= set(PROGRAMS)
