"""The README's set-up commands and .ci/run must not drift apart."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALL = "pip install -e . && sieve demo"
TESTS = "pip install torch==2.13.0 && pip install -e '.[dev,dense,serve]' && python -m pytest -q"


def _commands(text: str) -> list[str]:
    """The lines of a README's bash blocks, and the lines of a shell script, in order."""
    blocks = re.findall(r"```bash\n(.*?)```", text, re.DOTALL)
    lines = "\n".join(blocks).splitlines() if blocks else text.splitlines()
    return [ln.strip() for ln in lines if "pip install" in ln and not ln.strip().startswith("#")]


def test_ci_runs_the_readme_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    ci_lines = [ln.strip() for ln in (ROOT / ".ci/run").read_text().splitlines()]
    assert INSTALL in readme and INSTALL in ci_lines
    assert TESTS in readme and TESTS in ci_lines


def test_the_first_command_installs_the_core_alone() -> None:
    """A new user's first command is the README's first install line, and it names no extra: the
    demo runs on the core dependencies (issue 50: the `dev` extra took minutes to install)."""
    readme, ci = (ROOT / "README.md").read_text(), (ROOT / ".ci/run").read_text()
    assert _commands(readme)[0] == INSTALL
    first_ci = next(c for c in _commands(ci) if c.startswith("pip install -e"))
    assert first_ci == INSTALL
    assert "[" not in INSTALL.split("&&")[0]
