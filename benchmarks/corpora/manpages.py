#!/usr/bin/env python3
"""Build two benchmark corpora for sieve from the man pages installed on this machine.

Outputs (JSON Lines, sieve's corpus format, one document per line):

* ``man-pages.jsonl``    -- one document per English man page under /usr/share/man/man*/
* ``man-sections.jsonl`` -- one document per section of each page (NAME, SYNOPSIS, ...);
  when the pages yield fewer than ``--target`` sections, long sections are split at
  paragraph boundaries into "HEADING (part k)" documents to get close to the target.

Pages are rendered with ``mandoc -T utf8 -O width=1000 FILE`` (install with
``apt-get install -y mandoc``; see benchmarks/README.md for the extra page packages).
Inputs are sorted and results kept in input order, so the output is deterministic for a
given set of installed packages.  Standard library only.

Usage: python benchmarks/corpora/manpages.py [--out DIR] [--limit N] [--jobs 2]
"""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from multiprocessing import Pool
from pathlib import Path

MAN_ROOT = "/usr/share/man"  # only man1..man9 directly under it: /usr/share/man/<lang>/ is skipped
DPKG_INFO = "/var/lib/dpkg/info"
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "data"
# Not from Debian: the base image's Google Cloud CLI ships ~16,600 generated, near-identical
# gcloud_*.1 pages that would swamp everything else (and may be absent on other machines).
DEFAULT_EXCLUDE = ["google-cloud-cli"]

MONTHS = {m: i for i, m in enumerate(
    "january february march april may june july august september october november december".split(), 1)}
MONTHS.update({name[:3]: i for name, i in list(MONTHS.items())})
MONTHS["sept"] = 9


def find_pages() -> list[list[str]]:
    """The pages as groups of paths to one file, sorted: symlinked aliases collapse onto
    their target (realpath), hard-linked ones (freebsd-manpages has ~470) by inode."""
    by_inode: dict[tuple[int, int], set[str]] = {}
    for path in glob.glob(f"{MAN_ROOT}/man[1-9]*/*"):
        real = os.path.realpath(path)
        if os.path.isfile(real) and real.startswith(MAN_ROOT + "/man"):
            st = os.stat(real)
            by_inode.setdefault((st.st_dev, st.st_ino), set()).add(real)
    return sorted(sorted(paths) for paths in by_inode.values())


def package_map() -> dict[str, str]:
    """Map each man page path to its Debian package by reading dpkg's file lists once
    (calling ``dpkg -S`` per page would take minutes for thousands of pages)."""
    owners: dict[str, str] = {}
    for lst in sorted(glob.glob(f"{DPKG_INFO}/*.list")):
        pkg = os.path.basename(lst)[: -len(".list")].split(":")[0]  # drop ":amd64"
        with open(lst, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(MAN_ROOT + "/man"):
                    owners[line.rstrip("\n")] = pkg
    return owners


def parse_date(raw: str) -> str | None:
    """Turn a .TH/.Dd date into YYYY-MM-DD, YYYY-MM or YYYY; None if it isn't a date
    (Tcl and Erlang pages put version strings like "7.4" or "kernel 8.5.3" there)."""
    s = re.sub(r"\$Mdocdate:\s*(.*?)\s*\$", r"\1", raw).strip().lower().replace(",", " ")
    def iso(year: str, month: int | None = None, day: str | None = None) -> str | None:
        try:
            if day:
                return dt.date(int(year), month or 0, int(day)).isoformat()
            if month:
                return dt.date(int(year), month, 1).isoformat()[:7]
            return year
        except ValueError:  # month 13, February 30, ...
            return None
    if m := re.fullmatch(r"((?:19|20)\d\d)(?:[-/](\d\d?)(?:[-/](\d\d?))?)?", s):
        return iso(m[1], int(m[2]) if m[2] else None, m[3])
    words = s.split()
    if not words or not re.fullmatch(r"(19|20)\d\d", words[-1]):
        return None
    rest, year = words[:-1], words[-1]
    mons = [MONTHS[w.rstrip(".")] for w in rest if w.rstrip(".") in MONTHS]
    days = [w for w in rest if w.isdigit()]
    if len(mons) != 1 or len(rest) != len(days) + 1 or len(days) > 1:
        return None  # "Month YYYY", "Month D YYYY", "D Month YYYY" only
    return iso(year, mons[0], days[0] if days else None)


def source_info(path: str) -> tuple[bool, str | None]:
    """(is a .so stub, raw date from the .TH/.Dd line) read from the roff source."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        src = f.read()
    code = [ln for ln in src.splitlines() if ln.strip() and not re.match(r"^['.]\s*\\\"", ln)]
    is_stub = bool(code) and code[0].startswith(".so ") and len(code) <= 2
    date = None
    if m := re.search(r"^\.TH[ \t]+(.*)$", src, re.M):
        try:
            args = shlex.split(m[1].replace("\\", ""))
        except ValueError:
            args = m[1].split()
        date = args[2] if len(args) > 2 else None
    elif m := re.search(r"^\.Dd[ \t]+(.*)$", src, re.M):
        date = m[1]
    return is_stub, date


def render(path: str) -> str:
    """mandoc's terminal rendering of a page, still with its backspace overstrikes
    ("c\\bc" is bold); mandoc's warnings and non-zero exit codes are ignored."""
    mandoc = subprocess.run(["mandoc", "-T", "utf8", "-O", "width=1000", path],
                            capture_output=True, timeout=120)
    return mandoc.stdout.decode("utf-8", errors="replace")


def plain(line: str) -> str:
    """Drop overstrikes and tabs: the same text as `col -bx` (checked on a sample of 400
    pages), without a second process per page.  Then squeeze the long runs of spaces and
    rules with which tables stretched or centred in the 1000-column width (ragged but
    readable)."""
    line = re.sub(r"^ {64,}", " " * 16, re.sub(r".\x08", "", line).expandtabs())
    line = re.sub(r"([─━═])\1{15,}", r"\1\1\1", line)
    return re.sub(r"(?<=\S) {16,}(?=\S)", "   ", line)


def is_heading(line: str) -> bool:
    """Section headings (.SH/.Sh) are unindented and all bold.  Checking the bold keeps out
    the odd unindented body line, e.g. the /proc/buddyinfo table in proc(5)."""
    return bool(line) and not line[0].isspace() and "\x08" in line \
        and not re.sub(r"(.)\x08\1", "", line).strip()


def dedent(lines: list[str]) -> str:
    """Remove the body indentation, keeping line breaks and the relative indentation of
    option lists and examples; squeeze runs of blank lines.  mandoc indents a section's
    body by 7 columns and its subsection headings by 3: those go flush left too."""
    lines = [ln.rstrip() for ln in lines]
    indents = {len(ln) - len(ln.lstrip()) for ln in lines if ln}
    base = min({i for i in indents if i > 3} or indents, default=0)
    text = "\n".join(ln[min(base, len(ln) - len(ln.lstrip())):] for ln in lines)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def split_sections(text: str) -> list[tuple[str, str]]:
    """Cut rendered text into (heading, body).  The first and last non-blank lines are
    mandoc's page header ("LS(1) ... LS(1)") and footer ("GNU coreutils 9.1 ...")."""
    lines = text.splitlines()
    nonblank = [i for i, ln in enumerate(lines) if ln.strip()]
    if len(nonblank) < 3:
        return []
    lines = lines[nonblank[0] + 1: nonblank[-1]]
    sections: list[tuple[str, list[str]]] = []
    for raw in lines:
        ln = plain(raw)
        if re.fullmatch(r"\s*_{10,}\s*", ln):  # Tcl/Tk pages draw rules of underscores
            ln = ""
        if is_heading(raw):
            sections.append((ln.strip(), []))
        elif sections:
            sections[-1][1].append(ln)
        elif ln.strip():
            sections.append(("(intro)", [ln]))
    return [(h, dedent(body)) for h, body in sections]


def first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def short_author(text: str) -> str | None:
    """A short author string from the first line of an AUTHOR(S) section, or None:
    "The foo driver was written by A <a@x> under ..." gives "A <a@x>"."""
    s = first_line(text)
    s = re.split(r"(?:(?<=[a-z]{3})|(?<=[)>]))\.(?:\s|$)", s)[0]  # first sentence, not "Wm."
    if m := re.search(r"\bby:?\s+(.*)", s, flags=re.I):
        s = m[1]
    s = re.split(r",? (?:under|for|as|with|from|during|and is|who) ", s)[0].strip(" .,;:")
    s = re.sub(r"\s+and$", "", s)  # the line broke inside a list of names
    return s if 0 < len(s) <= 120 else None


def build_page(args: tuple[list[str], str | None]) -> dict | None:
    """Render one page (given all its hard-linked paths) into a sieve document; None for
    .so stubs and empty renders."""
    paths, package = args
    is_stub, raw_date = source_info(paths[0])
    if is_stub:
        return None
    sections = split_sections(render(paths[0]))
    if not sections:
        return None
    # NAME is "name, alias, ... - description" (mdoc uses an en dash)
    names_line = next((first_line(b) for h, b in sections if h.upper() == "NAME"), "")
    m = re.match(r"(.*?)\s[-–—]\s+(.*)", names_line)
    listed, description = ([n.strip() for n in m[1].split(",")], m[2]) if m else ([], "")
    # of hard links, take the one named first in NAME: chflags.2, not chflagsat.2
    path = min(paths, key=lambda p: (listed.index(page_name(p)[0])
                                     if page_name(p)[0] in listed else len(listed), p))
    name, section = page_name(path)
    base = f"{name}.{section}"
    infobox = {"name": name, "section": section}
    if package:
        infobox["package"] = package
    if description.strip():
        infobox["description"] = description.strip()
    doc: dict = {"id": base, "title": f"{name}({section})",
                 "sections": [{"heading": h, "text": t} for h, t in sections]}
    if date := parse_date(raw_date or ""):
        doc["date"] = date
    for heading, body in sections:
        if heading.upper() in ("AUTHOR", "AUTHORS") and (author := short_author(body)):
            doc["author"] = author
            break
    doc["infobox"] = infobox
    doc.update(manual_section=section[:1], path=path)
    if package:
        doc["package"] = package
    if len(paths) > 1:
        doc["links"] = [page_name(p)[0] for p in paths if p != path]
    return doc


def page_name(path: str) -> tuple[str, str]:
    """("ls", "1") for .../man1/ls.1.gz; the section keeps its suffix ("3ssl", "2freebsd")."""
    base = os.path.basename(path)
    name, _, section = (base[:-3] if base.endswith(".gz") else base).rpartition(".")
    return name, section


def paragraph_chunks(text: str, max_chars: int) -> list[str]:
    """Greedily pack blank-line-separated paragraphs into chunks of at most ~max_chars;
    a paragraph longer than that (a long table or list) is cut between its lines."""
    chunks: list[str] = []
    for para in text.split("\n\n"):
        units = [("\n\n", para)] if len(para) <= max_chars else \
            [("\n" if j else "\n\n", line) for j, line in enumerate(para.split("\n"))]
        for sep, unit in units:
            if chunks and len(chunks[-1]) + len(sep) + len(unit) <= max_chars:
                chunks[-1] += sep + unit
            else:
                chunks.append(unit)
    return chunks


def section_docs(pages: list[dict], target: int) -> tuple[list[dict], int | None]:
    """One document per non-empty section; if that is fewer than `target`, split long
    sections with the largest chunk size that reaches the target (found by bisection, so
    the result depends only on the pages)."""
    secs = [(p, i, s) for p in pages for i, s in enumerate(p["sections"], 1) if s["text"].strip()]
    def count(max_chars: int) -> int:
        return sum(len(paragraph_chunks(s["text"], max_chars)) for _, _, s in secs)
    max_chars = None
    if len(secs) < target:
        lo, hi = 500, max(len(s["text"]) for _, _, s in secs) + 1
        while lo < hi:  # largest max_chars with count(max_chars) >= target (or lo=500)
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if count(mid) >= target else (lo, mid - 1)
        max_chars = lo
    docs = []
    for page, n, sec in secs:
        parts = paragraph_chunks(sec["text"], max_chars) if max_chars else [sec["text"]]
        for k, part in enumerate(parts, 1):
            heading = sec["heading"] if len(parts) == 1 else f"{sec['heading']} (part {k})"
            doc = {"id": page["id"] + f"#{n}" + (f".{k}" if len(parts) > 1 else ""),
                   "title": f"{page['title']} {heading}",
                   "sections": [{"heading": heading, "text": part}]}
            doc.update({k2: v for k2, v in page.items() if k2 not in ("id", "title", "sections")})
            doc["page"] = page["id"]
            docs.append(doc)
    return docs, max_chars


def write_jsonl(path: Path, docs: list[dict]) -> float:
    """Write documents one per line; returns the file size in MB."""
    with open(path, "w", encoding="utf-8") as f:
        for doc in docs:
            f.write(json.dumps(doc, ensure_ascii=False) + "\n")
    return path.stat().st_size / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    ap.add_argument("--limit", type=int,
                    help="only the first N pages (quick tries; pair with a smaller --target)")
    ap.add_argument("--jobs", type=int, default=2, help="mandoc worker processes")
    ap.add_argument("--target", type=int, default=100_000,
                    help="minimum man-sections size: long sections are split to reach it")
    ap.add_argument("--exclude-package", action="append", metavar="PKG",
                    help=f"skip pages of this Debian package (default: {DEFAULT_EXCLUDE}; "
                         "pass '' to keep all)")
    opts = ap.parse_args()
    if not shutil.which("mandoc"):
        sys.exit("mandoc not found: apt-get install -y mandoc")
    start = time.time()
    owners = package_map()
    excluded = set(DEFAULT_EXCLUDE if opts.exclude_package is None else opts.exclude_package)
    groups = [g for g in find_pages() if owners.get(g[0]) not in excluded][:opts.limit]
    print(f"rendering {len(groups)} pages with {opts.jobs} jobs ...", file=sys.stderr)
    with Pool(opts.jobs) as pool:  # imap keeps input order: deterministic output
        results = pool.imap(build_page, [(g, owners.get(g[0])) for g in groups], chunksize=8)
        pages = []
        for i, doc in enumerate(results, 1):
            if doc:
                pages.append(doc)
            if i % 2000 == 0:
                print(f"  {i}/{len(groups)}", file=sys.stderr)
    ids: dict[str, int] = {}
    for page in pages:  # ids come from unique file names, but two man dirs could share one
        if (seen := ids.get(page["id"], 0)):
            page["id"] = f"{page['id']}~{page.get('package', seen)}"
        ids[page["id"]] = seen + 1
    sections, max_chars = section_docs(pages, opts.target)
    opts.out.mkdir(parents=True, exist_ok=True)
    mb_pages = write_jsonl(opts.out / "man-pages.jsonl", pages)
    mb_secs = write_jsonl(opts.out / "man-sections.jsonl", sections)
    print(f"man-pages:    {len(pages):>7} docs  {mb_pages:7.1f} MB  ({len(groups) - len(pages)} stubs/empty skipped)")
    split = f"sections split into parts of <= {max_chars} chars" if max_chars else "no splitting"
    print(f"man-sections: {len(sections):>7} docs  {mb_secs:7.1f} MB  ({split})")
    print(f"total {mb_pages + mb_secs:.1f} MB in {opts.out}, {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
