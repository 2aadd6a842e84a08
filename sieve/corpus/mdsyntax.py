"""The pieces of CommonMark syntax sieve.corpus.mdblocks reads by (as markdown-it-py reads them):
what inline text is trimmed of, how HTML blocks start and end, table rows and their cells."""

from __future__ import annotations

import re

# What CommonMark trims from inline text (markdown-it-py's set: JavaScript's trim, less U+FEFF).
TRIM = "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
TRIM += "\u2028\u2029\u202f\u205f\u3000"

_BLOCK_NAMES = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|"
    "dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|h3|h4|h5|"
    "h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|"
    "option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul"
)
_ATTRIBUTE = (
    r"(?:\s+[a-zA-Z_:][a-zA-Z0-9:._-]*"
    r"(?:\s*=\s*(?:[^\"'=<>`\x00-\x20]+|'[^']*'|\"[^\"]*\"))?)"
)
_TAG = r"(?:<[A-Za-z][A-Za-z0-9\-]*" + _ATTRIBUTE + r"*\s*/?>|</[A-Za-z][A-Za-z0-9\-]*\s*>)"
# CommonMark's seven kinds of HTML block: how each starts, how it ends (None: at a blank line), and
# whether it may end a paragraph. Names match in ASCII only (a long s is no s).
HTML_BLOCKS = (
    (
        re.compile(r"<(?a:script|pre|style|textarea)(?=\s|>|$)", re.I),
        re.compile(r"</(?a:script|pre|style|textarea)>", re.I),
        True,
    ),
    (re.compile(r"<!--"), re.compile(r"-->"), True),
    (re.compile(r"<\?"), re.compile(r"\?>"), True),
    (re.compile(r"<![A-Za-z]"), re.compile(r">"), True),
    (re.compile(r"<!\[CDATA\["), re.compile(r"\]\]>"), True),
    (re.compile(r"</?(?a:" + _BLOCK_NAMES + r")(?=\s|/?>|$)", re.I), None, True),
    (re.compile(_TAG + r"\s*$"), None, False),
)
_DELIMITER_CELL = re.compile(r":?-+:?")
_DELIMITER_ROW = re.compile(r"[|\-: \t]+")
MAX_FILLED_CELLS = 0x10000  # markdown-it's bound on the empty cells it adds to short rows
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


def html_kind(rest: str) -> tuple[re.Pattern[str], re.Pattern[str] | None, bool] | None:
    """The kind of HTML block (start, end, may end a paragraph) a line's text from its indent
    starts, or None."""
    for kind in HTML_BLOCKS:
        if kind[0].match(rest):
            return kind
    return None


def delimiter_columns(row: str) -> int | None:
    """The columns of a delimiter row (`|:--|--:|`, from its indent); None where it is none."""
    if len(row) < 2 or row[0] not in "|-:" or (row[1] not in "|-: \t"):
        return None
    if (row[0] == "-" and row[1] in " \t") or not _DELIMITER_ROW.fullmatch(row):
        return None
    aligns = 0
    parts = row.split("|")
    for i, cell in enumerate(parts):
        cell = cell.strip(TRIM)
        if not cell:
            if i == 0 or i == len(parts) - 1:
                continue
            return None
        if not _DELIMITER_CELL.fullmatch(cell):
            return None
        aligns += 1
    return aligns


def cells(row: str) -> list[str]:
    """A table row's cells: split at each `|` not escaped, the escape taken out of those that are;
    an empty first and last cell (the row's outer pipes) dropped."""
    out = [c.replace("\\|", "|") for c in _UNESCAPED_PIPE.split(row)]
    if out and out[0] == "":
        out.pop(0)
    if out and out[-1] == "":
        out.pop()
    return out
