"""A fast reading of a Markdown file's blocks: what markdown-it-py ("commonmark" with front matter
and tables, sieve.corpus.markup's parser) gives, as the events markup makes a record of, for the
documents this scanner is sure of; `blocks` is None for any other, which markdown-it-py reads.

markdown-it-py was three quarters of a folder build's time, most of it trying each block rule on
each line of plain paragraphs. This scanner follows the same CommonMark rules (headings, setext
underlines, paragraphs, lazy lines, fenced and indented code, rules, lists, tables, HTML blocks,
quotes, tabs) but lets a line that can start no block go by in one test. It declines quotes other
than plain ones (`_Scan.quote`), link reference definitions (they change how inline links read),
lists nested deeper than a few levels, a file opening with `-` but no front matter.
tests/test_mdblocks.py holds it to markdown-it-py's tokens on real and on generated files.

An event is ("h", level, text) for a heading, ("i", text) for inline text (a paragraph, a table
cell), ("c", text) for a code block's text and ("x", text, line) for an HTML block (its first
line, 0-based); the front matter is (its YAML, its opening line, 0-based).
"""

from __future__ import annotations

import re
from itertools import repeat
from operator import sub
from typing import Any

from sieve.corpus.mdsyntax import MAX_FILLED_CELLS, TRIM, cells, delimiter_columns, html_kind

Event = tuple[Any, ...]

# A line that starts with none of these (in its first column) and holds no `|` can start no block
# that ends a paragraph, nor underline one: it is the paragraph's next line, whatever the depth.
_SPECIAL = " \t#>*-+_=`~<0123456789"
_SPECIAL_START = _SPECIAL + "["  # and a block that starts with none of these is a paragraph
MAX_DEPTH = 6  # lists nested deeper go to markdown-it-py (it stops nesting at 20 levels of tokens)


class _Declined(Exception):
    """The document holds something this scanner does not read: markdown-it-py reads it."""


def blocks(text: str) -> tuple[tuple[str, int] | None, list[Event]] | None:
    """(front matter, events) of a Markdown text as markdown-it-py's block parse gives them, or
    None where this scanner is not sure of the text."""
    if "\r" in text:
        text = re.sub(r"\r\n?", "\n", text)
    text = text.replace("\0", "\ufffd")
    lines = text.split("\n")
    # A last line of only spaces and tabs, without its line break, is no line to markdown-it.
    ended = lines[-1].strip(" \t") == "" and len(lines) > 1
    if not lines[-1].strip(" \t"):
        lines.pop()
    scan = _Scan(lines, ended, "\t" in text)
    try:
        scan.tokenize(scan.front_matter(), len(lines), 0)
    except _Declined:
        return None
    return scan.front, scan.events


class _Scan:
    def __init__(self, lines: list[str], ended: bool, tabs: bool) -> None:
        self.lines = lines
        self.n = len(lines)
        self.ended = ended  # the last line has its line break
        # Each line's indentation: characters (tShift) and columns, tabs expanded (sCount); a list
        # item's first line reads from its content (as markdown-it sets them for the item).
        lengths = list(map(len, lines))
        self.ts = list(map(sub, lengths, map(len, map(str.lstrip, lines, repeat(" \t")))))
        self.sc = self.ts[:]
        if tabs:
            for j, s in enumerate(lines):
                if "\t" in s[: self.ts[j]]:
                    col = 0
                    for ch in s[: self.ts[j]]:
                        col += 4 - col % 4 if ch == "\t" else 1
                    self.sc[j] = col
        self.events: list[Event] = []
        self.front: tuple[str, int] | None = None
        self.list_indent = -1
        self.depth = 0
        self.first = 0  # the file's line of this scanner's first (a quote's lines are read apart)

    def indent(self, j: int) -> tuple[int, int]:
        return self.ts[j], self.sc[j]

    def empty(self, j: int) -> bool:
        return self.ts[j] >= len(self.lines[j])

    def get_lines(self, begin: int, end: int, indent: int, keep_last: bool) -> str:
        """The lines [begin, end) less `indent` columns of indentation each, as markdown-it's
        getLines cuts them (a list item's first line loses its marker as indentation)."""
        if begin >= end:
            return ""
        out = []
        lines = self.lines
        for j in range(begin, end):
            s = lines[j]
            if indent:
                ts = self.indent(j)[0]
                col = k = 0
                while k < len(s) and col < indent:
                    ch = s[k]
                    if ch == "\t":
                        col += 4 - col % 4
                    elif ch == " " or k < ts:
                        col += 1
                    else:
                        break
                    k += 1
                s = " " * (col - indent) + s[k:] if col > indent else s[k:]
            out.append(s)
        joined = "\n".join(out)
        if keep_last and (end < self.n or self.ended):
            joined += "\n"
        return joined

    # --- the block loop ---

    def front_matter(self) -> int:
        """The line after the front matter (0 without one)."""
        if not self.n or not self.lines[0].startswith("-"):
            return 0
        first = self.lines[0]
        count = len(first) - len(first.lstrip("-"))
        if count < 3:
            raise _Declined  # a list item or a rule opening the file: markdown-it-py reads it
        for j in range(1, self.n):
            s = self.lines[j]
            ts, sc = self.indent(j)
            rest = s[ts:]
            if sc == 0 and s.startswith("...") and not s[3:].strip(" \t"):
                break
            if sc < 4 and rest.startswith("-"):
                dashes = len(rest) - len(rest.lstrip("-"))
                if dashes >= count and not rest[dashes:].strip(" \t"):
                    break
        else:
            raise _Declined  # never closed: then it is a rule, or a table
        self.front = ("\n".join(self.lines[1:j]), 0)
        return j + 1

    def tokenize(self, line: int, end: int, blk: int) -> int:
        """The blocks from `line` on at indentation `blk`; the line where they stop."""
        ts, sc, lines = self.ts, self.sc, self.lines
        while line < end:
            while line < end and ts[line] >= len(lines[line]):
                line += 1
            if line >= end or sc[line] < blk:
                break
            s = lines[line]
            if s[:1] not in _SPECIAL_START and "|" not in s:
                line = self.paragraph(line, end, blk)  # plain text: a paragraph (most blocks)
            else:
                line = self.block(line, end, blk)
            if line < end and ts[line] >= len(lines[line]):
                line += 1
        return line

    def block(self, j: int, end: int, blk: int) -> int:
        """The block that starts at line `j`: the line after it."""
        s = self.lines[j]
        ts, sc = self.indent(j)
        if sc - blk >= 4:
            return self.code(j, end, blk)
        if "|" in s and j + 1 < end and self.table(j, blk):
            return self.table_rows(j, end, blk)
        ch = s[ts]
        if ch in "`~" and self.fence_start(j):
            return self.fence(j, end, blk)
        if ch == ">":
            return self.quote(j, end, blk)
        if ch in "*-_" and self.rule(j):
            return j + 1
        if (ch in "*-+" or "0" <= ch <= "9") and self.list_marker(j) is not None:
            return self.list(j, end, blk)
        if ch == "[" and self.may_define(j, end):
            raise _Declined  # a link reference definition: it changes how inline links read
        if ch == "<":
            done = self.html(j, end, blk)
            if done:
                return done
        if ch == "#":
            level = self.heading_level(j)
            if level:
                self.events.append(("h", level, self.heading_text(j, level)))
                return j + 1
        return self.paragraph(j, end, blk)

    def terminates(self, j: int, blk: int, parent: str) -> bool:
        """Whether line `j` starts a block that ends a paragraph, a list or a table (`parent`)."""
        s = self.lines[j]
        ts, sc = self.indent(j)
        if ts >= len(s) or sc - blk >= 4:
            return False
        ch = s[ts]
        if parent == "paragraph" and "|" in s and j + 1 < self.n and self.table(j, blk):
            return True
        if ch in "`~" and self.fence_start(j):
            return True
        if ch == ">":
            return True  # a block quote
        if ch in "*-_" and self.rule(j):
            return True
        if parent == "list":
            return False
        if ch in "*-+" or "0" <= ch <= "9":
            marker = self.list_marker(j)
            if marker is not None and not (
                self.list_indent >= 0 and sc - self.list_indent >= 4 and sc < blk
            ):
                if parent != "paragraph" or sc < blk:
                    return True
                value, after = marker
                if (value is None or value == 1) and s[after:].strip(" \t"):
                    return True
        if ch == "<":
            found = html_kind(s[ts:])
            if found is not None and found[2]:
                return True
        return ch == "#" and self.heading_level(j) > 0

    # --- leaf blocks ---

    def paragraph(self, j: int, end: int, blk: int) -> int:
        """A paragraph from line `j`, or a setext heading where an underline ends it."""
        lines = self.lines
        k = j + 1
        level = 0
        while k < end:
            s = lines[k]
            if s[:1] not in _SPECIAL and "|" not in s:
                k += 1  # plain text: the paragraph goes on
                continue
            ts, sc = self.ts[k], self.sc[k]
            if ts >= len(s):
                break
            if sc - blk > 3:
                k += 1  # lazy: code does not interrupt a paragraph
                continue
            if sc >= blk and s[ts] in "-=":
                mark = s[ts:].rstrip(" \t")
                if not mark.strip(mark[0]):
                    level = 1 if mark[0] == "=" else 2
                    break
            if self.terminates(k, blk, "paragraph"):
                break
            k += 1
        text = ("\n".join(lines[j:k]) if not blk else self.get_lines(j, k, blk, False)).strip(TRIM)
        if level:
            self.events.append(("h", level, text))
            return k + 1
        self.events.append(("i", text))
        return k

    def may_define(self, j: int, end: int) -> bool:
        """Whether the lines from `j` to the next blank one may hold a link reference definition."""
        k = j
        while k < end and not self.empty(k):
            if "]:" in self.lines[k]:
                return True
            k += 1
        return False

    def heading_level(self, j: int) -> int:
        s = self.lines[j]
        ts = self.indent(j)[0]
        rest = s[ts : ts + 8]
        level = len(rest) - len(rest.lstrip("#"))
        if not 1 <= level <= 6 or rest[level : level + 1] not in ("", " ", "\t"):
            return 0
        return level

    def heading_text(self, j: int, level: int) -> str:
        s = self.lines[j]
        body = s[self.indent(j)[0] + level :]
        # A closing run of `#` goes where a space or tab comes before it (or it is all there is).
        trimmed = body.rstrip(" \t")
        closing = trimmed.rstrip("#")
        if len(closing) < len(trimmed) and closing and closing[-1] in " \t":
            trimmed = closing
        return trimmed.strip(TRIM)

    def rule(self, j: int) -> bool:
        s = self.lines[j]
        rest = s[self.indent(j)[0] :]
        marker = rest[0]
        return rest.count(marker) >= 3 and not rest.replace(marker, "").strip(" \t")

    def code(self, j: int, end: int, blk: int) -> int:
        last = k = j + 1
        while k < end:
            if self.empty(k):
                k += 1
                continue
            if self.indent(k)[1] - blk >= 4:
                k += 1
                last = k
                continue
            break
        self.events.append(("c", self.get_lines(j, last, 4 + blk, False) + "\n"))
        return last

    def fence_start(self, j: int) -> bool:
        rest = self.lines[j][self.indent(j)[0] :]
        if len(rest) < 3:
            return False
        marker = rest[0]
        count = len(rest) - len(rest.lstrip(marker))
        return count >= 3 and not (marker == "`" and "`" in rest[count:])

    def fence(self, j: int, end: int, blk: int) -> int:
        s = self.lines[j]
        ts, sc = self.indent(j)
        rest = s[ts:]
        marker = rest[0]
        count = len(rest) - len(rest.lstrip(marker))
        k = j + 1
        closed = False
        while k < end:
            t, c = self.indent(k)
            line = self.lines[k]
            if t < len(line) and c < blk:
                break
            body = line[t:]
            if body[:1] == marker and c - blk < 4:
                n = len(body) - len(body.lstrip(marker))
                if n >= count and not body[n:].strip(" \t"):
                    closed = True
                    break
            k += 1
        self.events.append(("c", self.get_lines(j + 1, k, sc, True)))
        return k + 1 if closed else k

    def html(self, j: int, end: int, blk: int) -> int:
        """An HTML block from line `j`: the line after it (0: none starts there)."""
        s = self.lines[j]
        ts = self.indent(j)[0]
        kind = html_kind(s[ts:])
        if kind is None:
            return 0
        closing = kind[1]
        k = j + 1
        if closing is None or not closing.search(s[ts:]):
            while k < end:
                t, c = self.indent(k)
                line = self.lines[k]
                blank = t >= len(line)
                if c < blk and (closing is None or not blank):
                    break
                if closing is None:
                    if blank:
                        break
                elif closing.search(line[t:]):
                    k += 1
                    break
                k += 1
        self.events.append(("x", self.get_lines(j, k, blk, True), self.first + j))
        return k

    def quote(self, j: int, end: int, blk: int) -> int:
        """A block quote from line `j` whose every line starts with `>` (and holds no tab), ending
        at a blank line, the end, or after a line with nothing after its `>`; its lines less their
        `>` (and a space) are read as a document of their own. Any other quote is declined: one
        in a list, or that goes on in lines without `>` (lazily) or stops at a block's start."""
        if blk or self.depth >= MAX_DEPTH:
            raise _Declined
        inner = []
        k = j
        last_empty = False
        while k < end:
            s = self.lines[k]
            t = self.ts[k]
            if t >= len(s):
                break
            if s[t] != ">":
                if last_empty:
                    break
                raise _Declined
            if "\t" in s:
                raise _Declined
            rest = s[t + 2 :] if s[t + 1 : t + 2] == " " else s[t + 1 :]
            inner.append(rest)
            last_empty = not rest.strip(" ")
            k += 1
        sub = _Scan(inner, k < self.n or self.ended, False)
        sub.events = self.events
        sub.depth = self.depth + 1
        sub.first = self.first + j
        sub.tokenize(0, len(inner), 0)
        return k

    # --- tables ---

    def table(self, j: int, blk: int) -> list[str] | None:
        """The header cells of a table whose header is line `j` (None: no table starts there)."""
        d = j + 1
        t, c = self.indent(d)
        if c < blk or c - blk >= 4:
            return None
        aligns = delimiter_columns(self.lines[d][t:])
        if aligns is None:
            return None
        ts, sc = self.indent(j)
        header = self.lines[j][ts:].strip(TRIM)
        if "|" not in header or sc - blk >= 4:
            return None
        columns = cells(header)
        if not columns or len(columns) != aligns:
            return None
        return columns

    def table_rows(self, j: int, end: int, blk: int) -> int:
        columns = self.table(j, blk)
        assert columns is not None
        width = len(columns)
        self.events.extend(("i", c.strip(TRIM)) for c in columns)
        k = j + 2
        filled = 0
        while k < end:
            t, c = self.indent(k)
            if c < blk or self.terminates(k, blk, "table"):
                break
            row = self.lines[k][t:].strip(TRIM)
            if not row or c - blk >= 4:
                break
            found = cells(row)
            filled += width - len(found)
            if filled > MAX_FILLED_CELLS:
                break
            found += [""] * (width - len(found))
            self.events.extend(("i", c.strip(TRIM)) for c in found[:width])
            k += 1
        return k

    # --- lists ---

    def list_marker(self, j: int) -> tuple[int | None, int] | None:
        """(an ordered item's number, else None; the position after the marker) of line `j`."""
        s = self.lines[j]
        ts = self.indent(j)[0]
        ch = s[ts]
        if ch in "*-+":
            after = ts + 1
            return (None, after) if s[after : after + 1] in ("", " ", "\t") else None
        k = ts
        while k < len(s) and "0" <= s[k] <= "9":
            k += 1
        if not 0 < k - ts <= 9 or k >= len(s) or s[k] not in ".)":
            return None
        if s[k + 1 : k + 2] not in ("", " ", "\t"):
            return None
        return int(s[ts:k]), k + 1

    def list(self, j: int, end: int, blk: int) -> int:
        if self.depth >= MAX_DEPTH:
            raise _Declined
        first = self.list_marker(j)
        assert first is not None
        ordered = first[0] is not None
        after = first[1]
        mark = self.lines[j][after - 1]
        self.depth += 1
        while True:
            s = self.lines[j]
            ts, sc = self.indent(j)
            start = sc + after - ts
            col = start
            k = after
            while k < len(s) and s[k] in " \t":
                col += 4 - col % 4 if s[k] == "\t" else 1
                k += 1
            gap = 1 if k >= len(s) or col - start > 4 else col - start
            inner = start + gap
            outer_list = self.list_indent
            self.list_indent = blk
            self.ts[j], self.sc[j] = k, col
            if k >= len(s) and (j + 1 >= end or self.empty(j + 1)):
                nxt = min(j + 2, end)
            else:
                nxt = self.tokenize(j, end, inner)
            self.ts[j], self.sc[j] = ts, sc
            self.list_indent = outer_list
            j = nxt
            if j >= end:
                break
            t, c = self.indent(j)
            if c < blk or c - blk >= 4 or self.terminates(j, blk, "list"):
                break
            if t >= len(self.lines[j]):
                break  # a blank line after an empty item ends the list
            marker = self.list_marker(j) if self.lines[j][t] in "*-+0123456789" else None
            if marker is None or (marker[0] is not None) != ordered:
                break
            after = marker[1]
            if self.lines[j][after - 1] != mark:
                break
        self.depth -= 1
        return j
