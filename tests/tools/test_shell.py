"""The DCI sandbox: read-only pipelines inside one folder. Every escape attempt is refused (or
capped), and nothing outside the folder is ever read: a secret beside the folder never appears."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sieve.tools.shell import PROGRAMS, ShellLimits, ShellRefusal, run

SECRET = "TOPSECRET-7f3a9"


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "gzip.txt").write_text("gzip\nThe gzip module compresses files.\nSee also zlib.\n")
    (root / "docs" / "json.txt").write_text("json\nJSON stands for JavaScript Object Notation.\n")
    (root / "docs" / "csv.txt").write_text("csv\nComma separated values, read and written.\n")
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    os.symlink(tmp_path / "secret.txt", root / "docs" / "link.txt")  # a link that leaves the folder
    os.symlink(tmp_path, root / "up")
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
    ("grep -l module docs/*.txt", "docs/gzip.txt"),  # wildcards expand inside the folder
    ("wc -l docs/[cj]*.txt", "4 total"),
]


@pytest.mark.parametrize("line, expect", WORKS)
def test_read_only_pipelines_work(folder: Path, line: str, expect: str) -> None:
    r = run(folder, line)
    assert r.ok and expect in r.text, r.text


ESCAPES = [
    ("cat docs/json.txt > docs/out.txt", "redirection ('>')"),
    ("cat < /etc/passwd", "redirection ('<')"),
    ("ls; cat ../secret.txt", "';'"),
    ("ls && cat ../secret.txt", "'&' and '&&'"),
    ("ls || cat x", "'||' is not allowed"),
    ("ls &", "'&' and '&&'"),
    ("cat $(echo ../secret.txt)", "substitution"),
    ("cat ${HOME}/x", "substitution"),
    ("cat `echo x`", "backticks"),
    ("ls\ncat ../secret.txt", "a line break"),
    ("cat /etc/passwd", "absolute and home paths are not allowed"),
    ("cat ~/.ssh/id_rsa", "absolute and home paths are not allowed"),
    ("cat ../secret.txt", "'..' is not allowed"),
    ("cat docs/../../secret.txt", "'..' is not allowed"),
    ("grep -r x ..", "'..' is not allowed"),
    ("cat docs/link.txt", "outside the folder"),
    ("cat up/secret.txt", "outside the folder"),
    ("grep -R TOPSECRET .", "following links"),
    ("grep -rR TOPSECRET .", "following links"),
    ("find . -exec cat {} +", "-exec"),
    ("find . -name x -delete", "-delete"),
    ("find -L . -name secret.txt", "following links"),
    ("find . -fprint out", "-fprint"),
    ("find . -newer up/secret.txt", "outside the folder"),
    ("sed -i s/a/b/ docs/csv.txt", "sed -i"),
    ("sed -ni p docs/csv.txt", "sed -ni"),
    ("sort -o docs/x docs/csv.txt", "sort -o"),
    ("sort --compress-program=sh docs/csv.txt", "--compress-program"),
    ("uniq docs/csv.txt docs/out.txt", "a second would be written"),
    ("tail -f docs/csv.txt", "following a file never ends"),
    ("wc --files0-from=list", "reads a list of files"),
    ("python3 -c 'print(1)'", "'python3' is not available"),
    ("/bin/cat docs/csv.txt", "'/bin/cat' is not available"),
    ("bash -c ls", "'bash' is not available"),
    ("awk '{print}' docs/csv.txt", "'awk' is not available"),
    ("ls | ", "an empty command"),
    ("grep 'unclosed docs", "unterminated ' quote"),
    ("", "an empty command"),
]


@pytest.mark.parametrize("line, why", ESCAPES)
def test_escapes_are_refused_before_anything_runs(folder: Path, line: str, why: str) -> None:
    with pytest.raises(ShellRefusal) as info:
        run(folder, line)
    assert why in str(info.value), str(info.value)
    assert not (folder / "docs" / "out.txt").exists() and not (folder / "docs" / "x").exists()


def test_sed_runs_sandboxed_and_nothing_can_write(folder: Path) -> None:
    """sed's own write and execute commands are refused by --sandbox; the file-size limit stops
    any write that slips through."""
    for script in ("w docs/out.txt", "s/a/b/w docs/out.txt", "e cat ../secret.txt", "r up/secret.txt"):
        r = run(folder, f"sed '{script}' docs/csv.txt")
        assert not r.ok and SECRET not in r.text, (script, r.text)
    assert not (folder / "docs" / "out.txt").exists()


def test_nothing_outside_the_folder_is_ever_read(folder: Path) -> None:
    seen = []
    for line in ("grep -r TOPSECRET .", "grep -r TOPSECRET docs", "find . -type f", "find . -name '*secret*'", "ls -la docs up",
                 "cat docs/*", "cat docs/l*", "grep -h . docs/*", "head -c 100 docs/gzip.txt", "grep -rl . ."):
        try:
            seen.append(run(folder, line).text)
        except ShellRefusal as e:
            seen.append(str(e))
    assert all(SECRET not in text for text in seen), seen


def test_huge_output_is_capped(folder: Path) -> None:
    (folder / "big.txt").write_text("line of text\n" * 200_000)
    r = run(folder, "cat big.txt", ShellLimits(output_bytes=10_000))
    assert r.truncated and len(r.text) < 10_200 and "[output truncated at 10,000 bytes" in r.text


def test_a_slow_pipeline_is_stopped_at_its_deadline(folder: Path) -> None:
    (folder / "big.txt").write_text("".join(f"{i * 7919 % 100003} words\n" for i in range(1_000_000)))
    r = run(folder, "sort big.txt | uniq -c | sort -rn | head -n 3", ShellLimits(wall_seconds=0.05))
    assert r.timed_out and not r.ok and "[stopped after 0.05 s" in r.text


def test_errors_are_results_not_exceptions(folder: Path) -> None:
    r = run(folder, "cat docs/missing.txt")
    assert not r.ok and "No such file" in r.text
    r = run(folder, "grep nothing-matches docs/csv.txt")
    assert r.ok and r.text == "(no output)"  # grep's "nothing found" is not an error


def test_the_program_list_is_what_the_docstring_documents() -> None:
    import sieve.tools.shell as shell

    for name in PROGRAMS:
        assert f"`{name}`" in (shell.__doc__ or ""), name
