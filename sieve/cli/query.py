"""The commands that run queries: `sieve match`, `explain`, `test`, `search`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from sieve.cli.common import (
    RANKER_HELP,
    add_limit_options,
    plural,
    print_json,
    query_limits,
)
from sieve.engine.rank.rankers import RANKER_NAMES
from sieve.errors import InvalidArgumentError
from sieve.index.cluster import ADDRESS_HELP


def cmd_match(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index

    index = open_index(args.index, limits=query_limits(args))
    t0 = time.perf_counter()
    m = index.match(args.query)
    ms = (time.perf_counter() - t0) * 1000
    ids = (
        m.ids if args.limit is None else [index.reader.doc_id(int(d)) for d in m.docs[: args.limit]]
    )
    if args.json:
        print_json({"query": m.query, "count": m.count, "ids": ids, "ms": round(ms, 3)})
        return 0
    print(
        f"{plural(m.count, 'document')} "
        f"match{'es' if m.count == 1 else ''} {m.query}  ({ms:.2f} ms)"
    )
    from sieve.tools.shell.safe import inline

    for i in ids:
        print(inline(i))  # an id is document data: no escape sequence reaches the terminal
    if len(ids) < m.count:
        print(f"... {m.count - len(ids)} more (use --limit to show more)")
    return 0


def _topics(path: str) -> list[tuple[str, str, int]]:
    """(id, query, line) of a topics file: JSON Lines, or id TAB query per line."""
    from sieve.common.files import MAX_LIST_BYTES, read_lines
    from sieve.corpus.formats import parse_line
    from sieve.errors import CorpusError

    out = []
    for n, line in read_lines(path, MAX_LIST_BYTES, "the topics file"):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            # nesting too deep, a 5,000-digit number: an error at its line
            rec = parse_line(path, n, line)
            if isinstance(rec, CorpusError):
                raise rec
            qid, text = rec.get("_id", rec.get("id")), rec.get("text", rec.get("query"))
        else:
            qid, _, text = line.rstrip("\r").partition("\t")
        if (
            qid in (None, "")
            or isinstance(qid, (dict, list))
            or not isinstance(text, str)
            or not text.strip()
        ):
            raise CorpusError(
                "a topic needs an id and a query (JSON: _id and text; TSV: id TAB query)", path, n
            )
        try:
            (str(qid) + text).encode("utf-8")
        except UnicodeEncodeError as e:  # JSON's "\ud800": no text a run file could hold
            raise CorpusError(
                f"holds a lone surrogate U+{ord(e.object[e.start]):04X} (not valid Unicode text)",
                path,
                n,
            ) from None
        out.append((str(qid), text, n))
    return out


def _search_topics(index: Any, args: argparse.Namespace) -> int:
    from sieve.errors import BQLError, BQLSyntaxError, DeadlineExceededError
    from sieve.eval.retrieval import write_trec

    if not (args.topics and args.run) or args.query is not None:
        raise InvalidArgumentError("--topics FILE and --run OUT go together, without a QUERY")
    run = {}
    t0 = time.perf_counter()
    for qid, text, line in _topics(args.topics):
        try:
            r = (
                index.ranked_search(text, k=args.k, ranker=args.ranker, explain=False)
                if args.ranked
                else index.search(
                    text,
                    k=args.k,
                    ranker=args.ranker,
                    fallback=not args.strict,
                    explain=False,
                    diagnose=False,
                )
            )
        except (BQLError, DeadlineExceededError) as e:
            shown = (
                f"\n{e.pointer(text)}" if isinstance(e, BQLSyntaxError) and not args.json else ""
            )
            raise InvalidArgumentError(f"{args.topics}:{line}: topic {qid!r}: {e}{shown}") from None
        run[qid] = [(h.doc_id, h.score) for h in r.hits]
    tag = f"sieve-{args.ranker}" + ("-ranked" if args.ranked else "")
    write_trec(Path(args.run), run, tag)
    summary = {
        "topics": len(run),
        "run": args.run,
        "lines": sum(map(len, run.values())),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if args.json:
        print_json(summary)
    else:
        print(
            f"wrote {plural(summary['lines'], 'result')} for {plural(summary['topics'], 'topic')} "
            f"to {args.run} ({summary['seconds']} s)"
        )
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index
    from sieve.tools import cards
    from sieve.tools.fetch.snippets import Matcher
    from sieve.tools.style import terminal_style

    if args.ray and (args.topics or args.run):
        raise InvalidArgumentError(
            "--topics runs on an index opened here; drop --ray (a sharded index opens locally too)"
        )
    if args.topics or args.run:
        from sieve.eval.retrieval import MEASURED

        # topics are a benchmark's data, measured as written (as `sieve eval retrieval`)
        limits = query_limits(args, MEASURED)
    else:
        limits = query_limits(args)
    index = open_index(args.index, ray=args.ray, limits=limits)
    if args.topics or args.run:
        return _search_topics(index, args)
    if args.query is None:
        raise InvalidArgumentError("give a QUERY, or --topics FILE with --run OUT")
    t0 = time.perf_counter()
    if args.ranked:
        r = index.ranked_search(args.query, k=args.k, ranker=args.ranker)
    else:
        r = index.search(args.query, k=args.k, ranker=args.ranker, fallback=not args.strict)
    ms = (time.perf_counter() - t0) * 1000
    if args.json:
        matcher = Matcher.of(r)
        hits = []
        for h in r.hits:
            meta = index.reader.meta(h.doc)
            snip = cards.hit_snippet(index, h, meta["headings"], matcher)
            hits.append(
                {
                    "rank": h.rank,
                    "id": h.doc_id,
                    "score": h.score,
                    "title": meta["title"],
                    "fields": list(h.fields),
                    "sections": list(h.sections),
                    # dense and hybrid over passages: the section whose passage scored
                    "closest_passage": None
                    if h.passage_section is None
                    else meta["headings"][h.passage_section],
                    "snippet": None
                    if snip is None
                    else {"section": meta["headings"][snip.section], "text": snip.text},
                }
            )
        print_json(
            {
                "query": r.query,
                "count": r.count,
                "fallback": r.fallback,
                "missing": r.missing,
                "diagnosis": None if r.diagnosis is None else r.diagnosis.to_dict(),
                "ranker": r.ranker,
                "ms": round(ms, 3),
                "hits": hits,
            }
        )
        if args.ray:
            index.close()
        return 0
    style = terminal_style(sys.stdout)
    header = cards.ranked_header(r) if args.ranked else cards.search_header(r)
    print(cards.listing(index, r, header, Matcher.of(r), style=style))
    if args.ray:
        index.close()
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index

    index = open_index(args.index, limits=query_limits(args))
    e = index.explain(args.query, args.doc_id)
    if args.json:
        print_json({"doc_id": args.doc_id, **e.to_dict()})
    else:
        print(f"{'admitted' if e.admits else 'rejected'}: {args.doc_id}")
        print(e.render())
    return 0


def cmd_test(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index
    from sieve.testing import load_cases, run_cases

    index = open_index(args.index, limits=query_limits(args))
    results = run_cases(index, load_cases(args.cases))
    failed = [r for r in results if not r.passed]
    if args.json:
        print_json(
            {
                "cases": len(results),
                "failed": len(failed),
                "results": [r.to_dict() for r in results],
            }
        )
    else:
        for r in failed:
            print(r.report())
        print(f"{len(results) - len(failed)} passed, {len(failed)} failed ({len(results)} cases)")
    return 1 if failed else 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`match`, `explain`, `test` and `search`."""
    s = sub.add_parser("match", help="the exact set of documents a BQL query admits")
    s.add_argument("index")
    s.add_argument("query")
    s.add_argument("--limit", type=int, default=20, help="ids to print (default 20)")
    s.add_argument("--all", dest="limit", action="store_const", const=None, help="print every id")
    add_limit_options(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_match)

    s = sub.add_parser(
        "explain", help="why a document is admitted or rejected by a query, clause by clause"
    )
    s.add_argument("index")
    s.add_argument("query")
    s.add_argument("doc_id")
    add_limit_options(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_explain)

    s = sub.add_parser(
        "test",
        help="run query regression cases (JSON Lines: query, "
        "admits, rejects, top, count); exit 1 if any fails",
    )
    s.add_argument(
        "cases",
        help='a JSON Lines file of cases, such as {"query": "zlib[title]", '
        '"admits": ["zlib"]} (docs/testing.md)',
    )
    s.add_argument("index")
    add_limit_options(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_test)

    s = sub.add_parser(
        "search", help="rank the documents a BQL query admits and show their result cards"
    )
    s.add_argument("index")
    s.add_argument(
        "query", nargs="?", help="a BQL query (plain language with --ranked); or give --topics"
    )
    s.add_argument("-k", type=int, default=5, help="results (default 5; per topic with --topics)")
    s.add_argument("--ranker", choices=RANKER_NAMES, default="bm25", help=RANKER_HELP)
    s.add_argument(
        "--strict", action="store_true", help="no zero-hit recovery: an empty match returns nothing"
    )
    s.add_argument(
        "--ranked",
        action="store_true",
        help="QUERY is plain language, not BQL: rank every document holding any of its words",
    )
    s.add_argument(
        "--topics",
        metavar="FILE",
        help="many queries, one per line: JSON Lines with _id (or id) and text (or query), or TSV "
        "of id and query; needs --run. "
        "A benchmark's queries run as written: up to 10,000 characters, no time limit, unless the "
        "options below say otherwise",
    )
    s.add_argument(
        "--run",
        metavar="OUT",
        help="with --topics: write the results as a TREC run file (qid Q0 docid rank score tag)",
    )
    s.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="a sharded INDEX answered by one Ray actor per shard on "
        f"this cluster: the same results, BM25 only. {ADDRESS_HELP}",
    )
    add_limit_options(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_search)
