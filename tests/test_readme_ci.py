"""The README's set-up commands and .ci/run must not drift apart."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ci_runs_the_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    ci_lines = [ln.strip() for ln in (ROOT / ".ci/run").read_text().splitlines()]
    install = "pip install -e '.[dev]' && sieve demo"
    tests = "pip install torch==2.13.0 && pip install -e '.[dev,dense,serve]' && python -m pytest -q"
    assert install in readme and install in ci_lines
    assert tests in readme and tests in ci_lines
