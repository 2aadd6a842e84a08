"""Document text as the web page shows it: Markdown emphasis rendered, everything else escaped,
query words marked; numbers at the precision a person reads.

Documents are untrusted: every character of theirs goes through `html.escape`, and the only tags
in the output are the ones made here (`em`, `strong`, `mark`), so no HTML of a document's ever
reaches the page however its asterisks are arranged.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

# `**strong**`, `*em*`, `_em_`: the delimiters hug the text (no space inside), stay on one line, and
# stand apart from words, so `2*3*4`, `snake_case_name`, `*args, **kwargs` and `*.py or *.txt` stay
# as written. `__strong__` is left out: in technical text it is nearly always a name (`__init__`).
_EMPHASIS = re.compile(
    r"(?<![\w*])\*\*(?=[^\s*])(?P<s1>.+?)(?<=[^\s*])\*\*(?![\w*])"
    r"|(?<![\w*])\*(?=[^\s*])(?P<e1>.+?)(?<=[^\s*])\*(?![\w*])"
    r"|(?<![\w_])_(?=[^\s_])(?P<e2>.+?)(?<=[^\s_])_(?![\w_])"
)
_TAG = {"s1": "strong", "e1": "em", "e2": "em"}
_SPACE = re.compile(r"(\s+)")


def _words(text: str, is_hit: Callable[[str], bool] | None) -> str:
    if not is_hit:
        return html.escape(text)
    return "".join(
        f'<mark class="hit">{html.escape(w)}</mark>' if w.strip() and is_hit(w) else html.escape(w)
        for w in _SPACE.split(text)
    )


def rendered(text: str, is_hit: Callable[[str], bool] | None = None, depth: int = 3) -> str:
    """`text` as safe HTML: emphasis as `<em>`/`<strong>` (nested to `depth` levels, `**a *b*
    c**`), each word `is_hit` accepts in a `<mark class="hit">`, every character of `text`
    escaped."""
    out = []
    at = 0
    for m in _EMPHASIS.finditer(text) if depth else ():
        group = next(g for g in _TAG if m.group(g) is not None)
        tag = _TAG[group]
        out += [
            _words(text[at : m.start()], is_hit),
            f"<{tag}>{rendered(m.group(group), is_hit, depth - 1)}</{tag}>",
        ]
        at = m.end()
    out.append(_words(text[at:], is_hit))
    return "".join(out)


def number(value: object) -> str:
    """A number as a person reads it: whole numbers with thousands separators, others to three
    significant digits (0.6667 -> 0.667, 12.3456 -> 12.3, 1234.5 -> 1,234); anything else as is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int) or (value.is_integer() and abs(value) < 1e15):
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}"
