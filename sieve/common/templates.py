"""The one template renderer, for prompts and the tool manual: text files rendered strictly.

`{name}` (lower-case letters and `_`) is a field; `<!-- if NAME -->...<!-- endif NAME -->` is a
block kept or dropped by a flag. A field without a value, a block without a flag, or a value that
names no field of the template is an error, never a blank: a typo in a prompt must not reach a
model. Other braces (JSON examples, `{ARGUMENTS}`) are plain text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources

_FIELD = re.compile(r"\{([a-z_]+)\}")
_BLOCK = re.compile(r"<!-- if (\w+) -->\n(.*?)<!-- endif \1 -->\n", re.DOTALL)


def load(package: str, *path: str) -> str:
    """A template shipped inside a package (`load("sieve.agent", "prompts", "system.md")`)."""
    return resources.files(package).joinpath(*path).read_text(encoding="utf-8")


def render(text: str, flags: Mapping[str, bool] | None = None, **values: object) -> str:
    """Keep or drop the conditional blocks, then fill the fields. Raises KeyError for a missing
    flag or value, or a value the template never names; ValueError for an unbalanced block."""
    flags = flags or {}

    def block(m: re.Match[str]) -> str:
        if m.group(1) not in flags:
            raise KeyError(f"template: no flag {m.group(1)!r}")
        return m.group(2) if flags[m.group(1)] else ""

    named = set(_FIELD.findall(text))
    out, prev = text, None
    while out != prev:  # blocks nest: resolve the innermost first, repeatedly
        prev, out = out, _BLOCK.sub(block, out)
    if "<!-- if" in out or "<!-- endif" in out:
        raise ValueError("template: unbalanced <!-- if --> block")
    missing = set(_FIELD.findall(out)) - values.keys()
    unused = values.keys() - named
    if missing or unused:
        raise KeyError(f"template fields missing {sorted(missing)}, unused {sorted(unused)}")
    return _FIELD.sub(lambda m: str(values[m.group(1)]), out)
