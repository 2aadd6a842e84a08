"""`sieve demo`: index the standard library's documentation and show what sieve does with it."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from sieve.cli.common import plural, print_json
from sieve.cli.index import build

DEMO_QUERIES = [
    ("a word anywhere", "json"),
    ("a word in the title", "http*[title]"),
    ("a phrase", '"regular expression"'),
    ("fields, AND, NOT", "socket[title] AND server NOT http[title]"),
    ("a section heading", '"class Thread"[section]'),
    ("proximity", "NEAR/3(parse, arguments)"),
    ("OR inside a field group", "(zip OR tar OR gzip)[title] AND compress*"),
]

DEMO_SEARCH = "(zip OR tar OR gzip)[title] AND compress*"


def cmd_demo(args: argparse.Namespace) -> int:
    from sieve.corpus.demo import stdlib_documents

    with tempfile.TemporaryDirectory(prefix="sieve-demo-") as tmp:
        out = Path(args.keep) if args.keep else Path(tmp) / "stdlib"
        quiet = args.json
        if not quiet:
            print(
                "Building an index of the Python standard library's "
                "own documentation (read from its source)..."
            )
        index, summary = build(
            stdlib_documents(), out, force=bool(args.keep), skip=False, quiet=quiet
        )
        results = []
        for what, q in DEMO_QUERIES:
            t0 = time.perf_counter()
            m = index.match(q)
            ms = (time.perf_counter() - t0) * 1000
            results.append(
                {
                    "what": what,
                    "query": q,
                    "canonical": m.query,
                    "count": m.count,
                    "ids": [index.reader.doc_id(int(d)) for d in m.docs[:8]],
                    "ms": round(ms, 3),
                }
            )
        from sieve.tools import cards
        from sieve.tools.fetch.passages import passages
        from sieve.tools.fetch.snippets import Matcher

        r = index.search(DEMO_SEARCH, k=2)
        listing = cards.listing(index, r, cards.search_header(r), Matcher.of(r))
        top = passages(index, r)[0]  # the section the top card's snippet comes from
        section = {"id": top.doc_id, "section": top.heading, "text": top.text}
        if args.json:
            print_json(
                {
                    "build": summary,
                    "queries": results,
                    "search": {"query": DEMO_SEARCH, "cards": listing},
                    "fetch": section,
                }
            )
            return 0
        print(
            f"indexed {plural(summary['documents'], 'document')} in {summary['seconds']} s "
            f"({summary['docs_per_second']} docs/s); index {summary['index_mb']} MB"
        )
        for r in results:
            print(f"\n# {r['what']}: {r['query']}")
            print(
                f"  read as {r['canonical']}: {plural(r['count'], 'document')} ({r['ms']:.2f} ms)"
            )
            more = f" ... (+{r['count'] - len(r['ids'])})" if r["count"] > len(r["ids"]) else ""
            print("  " + ", ".join(r["ids"]) + more)
        print(f"\n# result cards, as an agent sees them (sieve search INDEX '{DEMO_SEARCH}' -k 2)")
        print(listing)
        lines = section["text"].splitlines()
        print(
            "\n# one section, not the whole page (sieve fetch "
            f"INDEX {section['id']} '{section['section']}')"
        )
        print(
            "\n".join(lines[:12])
            + (f"\n... ({len(lines) - 12} more lines)" if len(lines) > 12 else "")
        )
        if args.keep:
            print(
                f"\nindex kept at {out}; try: sieve search {out} 'json AND decode*' or sieve fetch "
                f"{out} {section['id']} '{section['section']}'"
            )
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser(
        "demo", help="index the Python standard library's documentation and run example queries"
    )
    s.add_argument("--keep", metavar="DIR", help="keep the demo index in DIR")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_demo)
