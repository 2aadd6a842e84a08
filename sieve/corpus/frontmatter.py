"""A Markdown file's YAML front matter as plain data, read safely.

Only YAML's safe types are built (no Python objects). Aliases are bounded before anything is
built: a "billion laughs" document is a few lines whose aliases repeat a list of lists a billion
times, so the values and characters its aliases would repeat are counted on the composed node
graph, in one pass over its distinct nodes, and refused past `MAX_REPEATED` values or
`MAX_REPEATED_CHARS` characters. Every value that cannot be read (a timestamp that is no date, an
integer of more than 4,300 digits in any base, binary data, nesting past the parser's limit) is
a CorpusError at its line. Dates become ISO text, as a JSON corpus writes them.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from typing import Any

from sieve.errors import CorpusError

# values the aliases of one front matter may repeat (written out, they are copies)
MAX_REPEATED = 10_000
MAX_REPEATED_CHARS = 1 << 20  # and characters
# Python reads no longer decimal integer; nor does sieve any other (0x..., 1:2:3...)
MAX_NUMBER_CHARS = 4300
_MAX_INT_BITS = 14_284  # 2**14_284 < 10**4_300: an integer JSON can still write


@functools.lru_cache(maxsize=1)
def _loader() -> Any:
    """The YAML loader class, made once (making it cost a tenth of reading a short front matter)."""
    import yaml

    # libyaml's parser limits nesting (1,000 levels) where the pure-Python one recurses.
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]  # base: libyaml's loader where built
        first = 1  # the file's line of the YAML's first line

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            try:
                if node.tag.endswith(":int") and len(str(node.value)) > MAX_NUMBER_CHARS:
                    # Before it is built: base 60 (`1:2:3`, YAML
                    # 1.1) takes time quadratic in its length.
                    raise ValueError("digits")
                value = super().construct_object(node, deep)
            except (ValueError, OverflowError) as e:  # int() past 4,300 digits, date(2024, 13, 45)
                raise CorpusError(
                    f"front matter value {_unreadable(node, e)}",
                    None,
                    self.first + node.start_mark.line,
                ) from None
            # 0x and 0b numbers are not limited
            if isinstance(value, int) and value.bit_length() > _MAX_INT_BITS:
                raise CorpusError(
                    f"front matter value {_unreadable(node, ValueError('digits'))}",
                    None,
                    self.first + node.start_mark.line,
                )
            return value

    return Loader


def _unreadable(node: Any, e: Exception) -> str:
    text = str(node.value)
    shown = repr(text) if len(text) <= 40 else f"{text[:20]!r}... ({len(text):,} characters)"
    if node.tag.endswith(":int") and "digits" in str(e):
        return f"{shown} is a number too long to read (more than 4,300 digits)"
    return f"{shown} cannot be read as {node.tag.rsplit(':', 1)[-1]} ({e})"


def _children(node: Any) -> list[Any]:
    value = node.value
    if isinstance(value, list):  # a sequence's items, or a mapping's (key, value) pairs
        return [x for item in value for x in (item if isinstance(item, tuple) else (item,))]
    return []


def _own_size(node: Any) -> tuple[int, int]:
    """(values, characters) a node is written out as, without its children."""
    return 1, len(node.value) if isinstance(node.value, str) else 1


def check_aliases(root: Any, first: int) -> None:
    """CorpusError if the aliases under `root` (a composed node) would repeat more than
    MAX_REPEATED values or MAX_REPEATED_CHARS characters (an alias of a long text is that text
    again wherever the document is written), or refer to a node they are inside of. `first`: the
    file's line of the YAML's first line. Each repeat of a node costs its size written out, which
    is known when it is met again (it was finished by then: depth-first, without recursion)."""
    # finished nodes: (values, characters), aliases written out
    size: dict[int, tuple[int, int]] = {}
    open_: set[int] = set()
    values = chars = 0  # repeated so far
    # node, its children, [next child, values, characters so far]
    stack = [(root, _children(root), [0, *_own_size(root)])]
    open_.add(id(root))
    while stack:
        node, kids, state = stack[-1]
        if state[0] == len(kids):
            stack.pop()
            open_.discard(id(node))
            size[id(node)] = (state[1], state[2])
            if stack:
                stack[-1][2][1] += state[1]
                stack[-1][2][2] += state[2]
            continue
        child = kids[state[0]]
        state[0] += 1
        line = first + node.start_mark.line
        if id(child) in open_:
            raise CorpusError(
                (
                    "front matter: an alias refers to a value it is inside of (a structure without "
                    "end)"
                ),
                None,
                line,
            )
        if id(child) in size:
            n, c = size[id(child)]
            values, chars = values + n, chars + c
            state[1] += n
            state[2] += c
            if values > MAX_REPEATED:
                raise CorpusError(
                    f"front matter: its aliases repeat more than {MAX_REPEATED:,} values (an alias "
                    "bomb?)",
                    None,
                    line,
                )
            if chars > MAX_REPEATED_CHARS:
                raise CorpusError(
                    f"front matter: its aliases repeat more than {MAX_REPEATED_CHARS:,} characters "
                    "(an alias bomb?)",
                    None,
                    line,
                )
        else:
            open_.add(id(child))
            stack.append((child, _children(child), [0, *_own_size(child)]))


def _plain(value: Any, where: str) -> Any:
    """`value` as JSON data: dates as ISO text; what JSON has no form for is an error."""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v, where) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, where) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    kinds: dict[type, str] = {bytes: "binary data (!!binary)", set: "a set (!!set)"}
    what = kinds.get(type(value), type(value).__name__)
    raise CorpusError(
        f"front matter value of {where!r} is {what}; a document holds text, numbers, true/false, "
        "dates, lists and mappings"
    )


# Front matter made of `key: value` lines only, each value a double-quoted text without escapes
# or line breaks, or a plain one YAML reads as text: read without YAML (importing and running it
# was a twentieth of a folder build of man pages). Anything else is YAML's.
_SIMPLE_LINE = re.compile(
    r"([A-Za-z][A-Za-z0-9_-]*): +"
    r"(?:\"([ !#-\[\]-~\u00a0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd]*)\""
    r"|([A-Za-z][A-Za-z0-9 _./()-]*?)) *"
)
_NOT_TEXT = {"yes", "no", "true", "false", "on", "off", "null"}  # YAML 1.1 reads these otherwise


def _simple(content: str, first: int) -> tuple[dict[str, Any], dict[str, int]] | None:
    """`front_matter` of simple front matter, without YAML; None for any other."""
    out: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for i, line in enumerate(content.split("\n")):
        m = _SIMPLE_LINE.fullmatch(line)
        if m is None:
            return None
        key, quoted, plain = m.groups()
        if key.lower() in _NOT_TEXT or key in out:
            return None
        if plain is not None and plain.lower() in _NOT_TEXT:
            return None
        out[key] = quoted if quoted is not None else plain
        lines[key] = first + i
    return out, lines


def front_matter(content: str, first: int) -> tuple[dict[str, Any], dict[str, int]]:
    """(the front matter's keys and plain values, each key's line). `content`: the YAML between
    the `---` lines; `first`: the file's line number of its first line."""
    return _simple(content, first) or yaml_front_matter(content, first)


def yaml_front_matter(content: str, first: int) -> tuple[dict[str, Any], dict[str, int]]:
    """`front_matter`, read by YAML whatever it holds."""
    import yaml

    try:
        loader = _loader()(content)
        loader.first = first
        try:
            node = loader.get_single_node()
            if node is None:
                return {}, {}
            check_aliases(node, first)
            data = loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        # Where the broken construct began (an unclosed bracket's
        # line) says more than where the parser gave up.
        mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)
        raise CorpusError(
            f"front matter is not valid YAML: {getattr(e, 'problem', None) or e}",
            None,
            first + (mark.line if mark else 0),
        ) from None
    except RecursionError:  # the pure-Python parser, without libyaml
        raise CorpusError("front matter is nested too deeply", None, first) from None
    if not isinstance(data, dict):
        raise CorpusError(
            f"front matter must be a mapping of keys to values, got {type(data).__name__}",
            None,
            first,
        )
    lines = {str(k.value): first + k.start_mark.line for k, _ in node.value}
    out = {}
    for k, v in data.items():
        try:
            out[str(k)] = _plain(v, str(k))
        except CorpusError as e:
            raise CorpusError(e.message, None, lines.get(str(k), first)) from None
        except RecursionError:
            raise CorpusError(
                f"front matter value of {str(k)!r} is nested too deeply",
                None,
                lines.get(str(k), first),
            ) from None
    return out, lines
