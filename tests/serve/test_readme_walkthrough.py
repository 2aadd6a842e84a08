"""The README's one-minute MCP walk-through, run as written against a real index."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_walkthrough_runs(lib: Path) -> None:
    text = README.read_text(encoding="utf-8")
    m = re.search(r"sieve demo --keep (\S+)\npython - <<'PY'\n(.*?)\nPY\n", text, re.DOTALL)
    assert m, "the README's MCP walk-through is not where this test looks for it"
    demo_dir, code = m.group(1), m.group(2)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([sys.executable, "-"], input=code.replace(demo_dir, str(lib)), capture_output=True, text=True,
                          timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "['search', 'fetch', 'visit', 'show']" in out
    assert "1 document matches gzip[title] AND compress*" in out and "[1] gzip " in out
    assert "[gzip] gzip — Functions that read and write gzipped files. § def open" in out
