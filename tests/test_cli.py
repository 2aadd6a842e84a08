"""The command line: outputs, --json, exit codes (0 ok, 1 user error, 2 usage error)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sieve.cli.main import main
from sieve.errors import extra_hint


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "c.jsonl"
    recs = [
        {"id": "a", "title": "Heatwave in Paris", "sections": [{"heading": "School closure", "text": "Schools closed."}], "date": "2020-07"},
        {"id": "b", "title": "Cold snap", "text": "Snow in Zürich."},
    ]
    path.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_match_search_check(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = str(tmp_path / "idx")
    code, out, _ = run(capsys, "index", str(corpus), idx, "--quiet")
    assert code == 0 and out.startswith("indexed 2 documents in ")
    code, out, _ = run(capsys, "index", str(corpus), idx, "--quiet")
    assert code == 1
    code, out, _ = run(capsys, "match", idx, "zurich OR heatwave[title]", "--json")
    assert code == 0 and json.loads(out)["ids"] == ["a", "b"] and json.loads(out)["query"] == "zurich OR heatwave[title]"
    code, out, _ = run(capsys, "match", idx, "heatwave")
    assert out.splitlines()[0].startswith("1 document matches heatwave") and out.splitlines()[1] == "a"
    code, out, _ = run(capsys, "search", idx, "heatwave school", "--json")
    data = json.loads(out)
    assert code == 0 and data["hits"][0]["id"] == "a" and data["hits"][0]["sections"] == ["School closure"]
    code, out, _ = run(capsys, "search", idx, "nothing[title] snow")
    assert code == 0 and out.splitlines()[:3] == ["0 exact matches for nothing[title] AND snow; no document has nothing[title].",
                                                  "One change would admit documents: 1 without nothing[title].",
                                                  "Ranked by the query's terms instead (bm25):"]
    code, out, _ = run(capsys, "check", idx)
    assert code == 0 and "ok" in out


def test_user_errors_exit_1_with_the_message(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = str(tmp_path / "idx")
    run(capsys, "index", str(corpus), idx, "--quiet")
    code, out, err = run(capsys, "match", idx, "(a OR b")
    assert code == 1 and out == ""
    assert err == ("sieve: expected a closing ')' at 7 (the '(' at 0 is never closed)\n"
                   "  (a OR b\n         ^\n")
    code, _, err = run(capsys, "match", str(tmp_path / "none"), "x")
    assert code == 1 and err.startswith("sieve: ") and "no such index directory" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n{"id": "x"}\n')
    code, _, err = run(capsys, "index", str(bad), str(tmp_path / "i2"), "--quiet")
    assert code == 1 and err == f"sieve: {bad}:2: duplicate id 'x' (first seen at line 1)\n"
    code, out, err = run(capsys, "index", str(bad), str(tmp_path / "i3"), "--quiet", "--skip-bad", "--json")
    assert code == 0 and json.loads(out)["skipped"] == 1 and json.loads(out)["documents"] == 1


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["search"])
    assert info.value.code == 2
    with pytest.raises(SystemExit) as info:
        main(["search", "idx", "q", "--ranker", "bm99"])
    assert info.value.code == 2
    assert "usage error" in capsys.readouterr().err


def test_demo_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "demo", "--json")
    data = json.loads(out)
    assert code == 0 and data["build"]["documents"] > 500
    by_query = {q["query"]: q for q in data["queries"]}
    assert by_query["json"]["ids"][0] == "json"
    assert all(q["count"] > 0 for q in data["queries"])
    assert data["search"]["cards"].startswith("3 documents match") and "[1] " in data["search"]["cards"]
    top = data["search"]["cards"].splitlines()[1].split()[1]  # `[1] ID — title`
    assert data["fetch"]["id"] == top and data["fetch"]["text"] and data["fetch"]["section"] in data["search"]["cards"]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    import sieve

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"sieve {sieve.__version__}"


def test_json_errors_are_json(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "index", str(corpus), str(tmp_path / "ix"), "--quiet")
    rc, out, err = run(capsys, "match", str(tmp_path / "ix"), "a AND (", "--json")
    assert rc == 1 and out == ""
    e = json.loads(err)
    assert e["error"] == "BQLSyntaxError" and e["pos"] == 7 and "never closed" in e["hint"]
    rc, out, err = run(capsys, "match", str(tmp_path / "missing"), "a", "--json")
    assert rc == 1 and json.loads(err)["error"] == "IndexNotFoundError"
    rc, out, err = run(capsys, "match", str(tmp_path / "missing"), "a")
    assert rc == 1 and err.startswith("sieve: ") and not err.lstrip().startswith("{")


def test_package_metadata_has_one_version_and_a_licence() -> None:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in the standard library from Python 3.11")

    import sieve

    root = Path(__file__).resolve().parents[1]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert meta["project"]["dynamic"] == ["version"] and meta["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sieve.__version__"}
    assert meta["project"]["license"] == "MIT" and "MIT License" in (root / "LICENSE").read_text()
    assert (root / "sieve" / "py.typed").is_file() and "py.typed" in meta["tool"]["setuptools"]["package-data"]["sieve"]
    assert sieve.__version__ in (root / "CHANGELOG.md").read_text()


def test_search_topics_write_a_trec_run(tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import sieve

    run(capsys, "index", str(corpus), str(tmp_path / "ix"), "--quiet")
    topics = tmp_path / "topics.jsonl"
    topics.write_text(json.dumps({"_id": "t1", "text": "closed OR snow"}) + "\n\n" + json.dumps({"id": "t2", "query": "paris[title]"}) + "\n")
    rc, out, err = run(capsys, "search", str(tmp_path / "ix"), "--topics", str(topics), "--run", str(tmp_path / "r.run"), "-k", "10")
    assert rc == 0 and out.startswith("wrote 3 results for 2 topics"), err
    ix = sieve.open_index(tmp_path / "ix")
    want = [f"{q} Q0 {h.doc_id} {h.rank} {h.score:.6f} sieve-bm25" for q, text in (("t1", "closed OR snow"), ("t2", "paris[title]"))
            for h in ix.search(text, k=10).hits]
    assert (tmp_path / "r.run").read_text().splitlines() == want
    tsv = tmp_path / "topics.tsv"
    tsv.write_text("t1\tclosed snow\n")
    rc, out, _ = run(capsys, "search", str(tmp_path / "ix"), "--topics", str(tsv), "--run", str(tmp_path / "p.run"), "--ranked")
    assert rc == 0 and [ln.split()[2] for ln in (tmp_path / "p.run").read_text().splitlines()] == [h.doc_id for h in ix.ranked_search("closed snow").hits]
    tsv.write_text("t1\tok\nt2\tbroken AND (\n")
    rc, _, err = run(capsys, "search", str(tmp_path / "ix"), "--topics", str(tsv), "--run", str(tmp_path / "x.run"))
    assert rc == 1 and "topics.tsv:2: topic 't2': expected a closing ')'" in err
    rc, _, err = run(capsys, "search", str(tmp_path / "ix"), "--topics", str(tsv))
    assert rc == 1 and "--topics FILE and --run OUT go together" in err
    rc, _, err = run(capsys, "search", str(tmp_path / "ix"))
    assert rc == 1 and "give a QUERY" in err


def test_help_shows_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["embed", "--help"])
    out = capsys.readouterr().out
    assert "(default: 32)" in out and "(default: 5)" not in out


def test_syntax_errors_show_the_query_with_a_caret(tmp_path: Path, corpus: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """match, search, explain, test and search --topics print the query and a caret under the
    place; --json keeps the position as a number and no picture."""
    idx = str(tmp_path / "idx")
    run(capsys, "index", str(corpus), idx, "--quiet")
    query = "paris AND OR snow"
    pointer = "  paris AND OR snow\n            ^\n"
    for argv in (["match", idx, query], ["search", idx, query], ["explain", idx, query, "a"]):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == "", err
        assert err.startswith("sieve: unexpected 'OR' after 'AND' at 10"), err
        assert err.endswith(pointer), err
    code, _, err = run(capsys, "search", idx, query, "--json")
    assert code == 1 and json.loads(err)["pos"] == 10 and "^" not in err
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"query": query, "admits": ["a"]}) + "\n")
    code, out, _ = run(capsys, "test", str(cases), idx)
    assert code == 1 and "at 10 (" in out, out
    assert "\n    paris AND OR snow\n              ^\n" in out, out
    topics = tmp_path / "topics.tsv"
    topics.write_text(f"t1\t{query}\n")
    code, _, err = run(capsys, "search", idx, "--topics", str(topics), "--run", str(tmp_path / "r"))
    assert code == 1 and err.startswith(f"sieve: {topics}:1: topic 't1': unexpected 'OR'"), err
    assert err.endswith(pointer), err


def _errors_module(folder: Path) -> Any:
    """sieve/errors.py as it runs from `folder`/sieve (a checkout's or site-packages' copy)."""
    (folder / "sieve").mkdir(parents=True)
    source = Path(__file__).resolve().parents[1] / "sieve" / "errors.py"
    if not source.exists():  # the wheel job runs these tests against the installed package
        import sieve.errors

        source = Path(sieve.errors.__file__)
    copy = folder / "sieve" / "errors.py"
    copy.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"errors_in_{folder.name}", copy)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_extra_hint_names_the_checkout_or_the_installed_package(tmp_path: Path) -> None:
    checkout = tmp_path / "my clone"
    checkout.mkdir()
    (checkout / "pyproject.toml").write_text('[project]\nname = "sieve-search"\n')
    assert _errors_module(checkout).extra_hint("web") == f"pip install -e '{checkout}[web]'"
    wheel = _errors_module(tmp_path / "site-packages").extra_hint("llama-index")
    assert wheel == ("pip install 'sieve-search[llama-index]' "
                     "(or, from a clone of the repository: pip install -e '.[llama-index]')")
    other = tmp_path / "their project"  # sieve copied into another project is no checkout of sieve
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "theirs"\n')
    assert _errors_module(other).extra_hint("ray").startswith("pip install 'sieve-search[ray]' ")


def _without(tmp_path: Path, *modules: str) -> dict[str, str]:
    """The environment of a process where importing each of `modules` fails as a missing
    package does."""
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name in modules:
        message = f"No module named {name!r}"
        (stubs / f"{name}.py").write_text(f"raise ModuleNotFoundError({message!r}, name={name!r})\n")
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(stubs) + (os.pathsep + path if path else "")}


def _sieve(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    # Run from the stubs' folder, not the checkout: `python -m` puts the working directory first on
    # the path, and the child must import the sieve this process imported (an installed wheel in
    # CI's wheel job), whose install hint the assertions compute.
    stubs = env["PYTHONPATH"].split(os.pathsep)[0]
    return subprocess.run([sys.executable, "-m", "sieve", *argv], check=False, env=env,
                          stdin=subprocess.DEVNULL, cwd=stubs,
                          capture_output=True, text=True, timeout=120)


def test_web_without_its_extra_says_how_to_install_it_before_any_address(
        tmp_path: Path, corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = str(tmp_path / "idx")
    run(capsys, "index", str(corpus), idx, "--quiet")
    done = _sieve(_without(tmp_path, "starlette"), "web", idx)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    hint = extra_hint("web")
    assert done.stderr == f"sieve: sieve web needs the web extra (starlette is missing): {hint}\n"
    assert "http://" not in done.stderr  # it used to announce an address where nothing would answer


def test_serve_without_its_extra_says_how_to_install_it(tmp_path: Path, corpus: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    idx = str(tmp_path / "idx")
    run(capsys, "index", str(corpus), idx, "--quiet")
    done = _sieve(_without(tmp_path, "mcp", "mcp_types"), "serve", idx)
    assert done.returncode == 1 and done.stdout == "", done.stderr
    assert done.stderr.startswith("sieve: sieve serve needs the serve extra (the MCP SDK; mcp")
    assert done.stderr.endswith(f" is missing): {extra_hint('serve')}\n"), done.stderr
    assert "over stdio" not in done.stderr


def test_every_argument_of_every_command_says_what_it_is() -> None:
    """A new user reads `sieve COMMAND -h`: no positional or option is a bare name or only its
    default."""
    import argparse

    from sieve.cli.main import make_parser

    bare = []

    def walk(parser: argparse.ArgumentParser, name: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    walk(subparser, f"{name} {sub}")
            elif not action.help or action.help.startswith("(default"):
                bare.append(f"{name} {'/'.join(action.option_strings) or action.dest}")

    walk(make_parser(), "sieve")
    assert not bare, bare


def test_the_overview_lists_commands_and_says_where_to_start(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: sieve [-h] [--version] COMMAND ...\n")
    assert "`sieve demo`" in out and "{index," not in out
