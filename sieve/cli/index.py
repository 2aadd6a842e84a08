"""The commands that write or verify an index: `sieve index`, `add`, `delete`, `merge`, `embed`,
`check`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from sieve.cli import embed
from sieve.cli.common import plural, print_json
from sieve.cli.folders import UNREAD_WORDS, corpus_argument, print_unread
from sieve.common.progress import Progress
from sieve.errors import InvalidArgumentError, SieveError
from sieve.index.cluster import ADDRESS_HELP

ANALYZER_HELP = (
    "how text becomes terms, for the documents and every query: plain (the "
    "default: folded words), english (Snowball stemming: compressing = "
    "compress), or another Snowball language by name (french, german, ...)"
)
FIELD_HELP = (
    "repeat to declare metadata keys as filter fields: NAME:number (year[2000..2010], "
    "year[>=3]), NAME:date (published[2020-03..]), NAME:keyword (venue[=ACL]) or "
    "NAME:text (neural[abstract]); a value that does not fit its type is an error"
)
STOPWORDS_HELP = (
    "words left out of the index (their places are kept, so phrases span them): "
    "english (the 33 words Lucene and tantivy use) or a file of one word per "
    "line; default none. A query term that is only stop words is an error"
)


def build(
    corpus: Any,
    out: Path,
    force: bool,
    skip: bool,
    quiet: bool,
    jobs: int | None = None,
    memory_mb: int | None = None,
    analyzer: str | None = None,
    lenient: bool = False,
    stopwords: str | None = None,
    fields: list[str] | None = None,
    shards: int | None = None,
    ray: str | None = None,
) -> tuple[Any, dict[str, Any]]:

    from sieve.corpus.formats import CorpusReport, count_records
    from sieve.engine.analysis.analyzers import get_analyzer
    from sieve.engine.analysis.schema import declare
    from sieve.index.index import build_index

    # a wrong name, list or field fails before the progress bar is drawn
    get_analyzer(analyzer or "plain", stopwords)
    declare(fields)
    report = CorpusReport()
    # A total (the file's lines, the folder's files:
    # one quick pass) gives the bar an end and an ETA.
    bar = Progress("indexing", "docs", total=None if quiet else count_records(corpus), quiet=quiet)

    def progress(n: int, _bytes: int) -> None:
        bar.update(n - bar.n)

    t0 = time.perf_counter()
    try:
        index = build_index(
            corpus,
            out,
            force=force,
            on_error="skip" if skip else "raise",
            progress=progress,
            report=report,
            jobs=jobs,
            memory_mb=memory_mb,
            analyzer=analyzer or "plain",
            stopwords=stopwords,
            fields=fields,
            lenient=lenient,
            shards=shards,
            ray=ray,
        )
    finally:
        bar.close()
    seconds = time.perf_counter() - t0
    files = [(name.rsplit("/", 1)[-1], entry) for _, name, entry in index.snapshot.files()]
    store = sum(v["size"] for k, v in files if k.startswith("store."))
    total = sum(v["size"] for _, v in files)
    stats = index.stats
    summary = {
        "index": str(out),
        "documents": stats["documents"],
        "skipped": report.skipped,
        "kept": report.kept,
        "errors": report.errors,
        # a folder's files passed over
        "unread": {k: report.unread.get(k, 0) for k in UNREAD_WORDS},
        "unread_files": report.unread_files,
        "terms": stats["terms"],
        "tokens": stats["tokens"],
        "postings": stats["postings"],
        "seconds": round(seconds, 3),
        "docs_per_second": round(stats["documents"] / seconds, 1) if seconds else None,
        "index_mb": round((total - store) / 1e6, 3),
        "store_mb": round(store / 1e6, 3),
        "segments": stats["segments"],
        "shards": index.snapshot.shards,
        "analyzer": index.analyzer.name,
        "stopwords": len(index.analyzer.stopwords),
        "fields": dict(index.schema.fields),
    }
    return index, summary


def cmd_index(args: argparse.Namespace) -> int:
    _, s = build(
        corpus_argument(args.corpus, args.max_file_mb, args.strict),
        Path(args.out),
        args.force,
        args.skip_bad,
        args.quiet or args.json,
        args.jobs,
        args.memory_mb,
        args.analyzer,
        args.lenient,
        args.stopwords,
        args.field,
        args.shards,
        args.ray,
    )
    if args.json:
        print_json(s)
        return 0
    print(
        f"indexed {plural(s['documents'], 'document')} in {s['seconds']} s ({s['docs_per_second']} "
        f"docs/s) into {s['index']}"
    )
    analysis = (
        s["analyzer"]
        + " analyzer"
        + (f", {s['stopwords']} stop words not indexed" if s["stopwords"] else "")
    )
    print(
        f"  {s['terms']} terms ({analysis}), {s['tokens']} tokens, {s['postings']} postings; index "
        f"{s['index_mb']} MB, document store {s['store_mb']} MB"
        + (f"; {s['shards']} shards, {s['segments']} segments" if s["shards"] else "")
        + (
            f"; {s['segments']} segments (past half the memory budget, a build starts a new one)"
            if s["segments"] > 1 and not s["shards"]
            else ""
        )
    )
    if s["fields"]:
        print("  filter fields: " + ", ".join(f"{n} ({t})" for n, t in s["fields"].items()))
    if s["kept"]:
        print(
            f"  kept the text under unknown keys of {plural(s['kept'], 'document')} as metadata "
            "(not searchable; --lenient)",
            file=sys.stderr,
        )
    if s["skipped"]:
        print(f"  skipped {s['skipped']} bad records; first ones:", file=sys.stderr)
        for e in s["errors"]:
            print(f"    {e}", file=sys.stderr)
    print_unread(s)
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    from sieve.corpus.formats import CorpusReport
    from sieve.engine.analysis.analyzers import get_analyzer
    from sieve.engine.analysis.schema import declare
    from sieve.index.index import open_index

    path = Path(args.index)
    corpus = corpus_argument(args.corpus, args.max_file_mb, args.strict)
    if not (path / "CURRENT").exists():  # `add` into nothing is a build
        _, built = build(
            corpus,
            path,
            False,
            args.skip_bad,
            True,
            None,
            args.memory_mb,
            args.analyzer,
            args.lenient,
            args.stopwords,
            args.field,
        )
        s = {
            "added": built["documents"],
            "replaced": 0,
            "deleted": 0,
            "not_found": [],
            "skipped": built["skipped"],
            "kept": built["kept"],
            "documents": built["documents"],
            "unread": built["unread"],
            "unread_files": built["unread_files"],
        }
    else:
        report = CorpusReport()
        index = open_index(path)
        if args.analyzer is not None and get_analyzer(args.analyzer) != get_analyzer(
            index.analyzer.name
        ):
            raise InvalidArgumentError(
                f"{path} uses the {index.analyzer.name} analyzer, not "
                f"{args.analyzer}: changing an index's analyzer means rebuilding "
                f"it (sieve index CORPUS {path} --analyzer {args.analyzer} --force)"
            )
        if (
            args.stopwords is not None
            and get_analyzer(index.analyzer.name, args.stopwords) != index.analyzer
        ):
            have = (
                f"{len(index.analyzer.stopwords)} other stop words"
                if index.analyzer.stopwords
                else "no stop words"
            )
            raise InvalidArgumentError(
                f"{path} has {have}, not the list {args.stopwords!r}: "
                "changing an index's stop words means rebuilding it (sieve "
                f"index CORPUS {path} --stopwords {args.stopwords} --force)"
            )
        if args.field is not None and declare(args.field) != index.schema:
            raise InvalidArgumentError(
                f"{path} declares {index.schema.listing()}, not "
                f"{', '.join(args.field)}: changing an index's fields means "
                f"rebuilding it (sieve index CORPUS {path} --field ... --force)"
            )
        with index.writer(replace=not args.no_replace, memory_mb=args.memory_mb) as w:
            w.add_from(
                corpus,
                on_error="skip" if args.skip_bad else "raise",
                report=report,
                lenient=args.lenient,
            )
        s = w.summary.to_dict()
        s.update(
            unread={k: report.unread.get(k, 0) for k in UNREAD_WORDS},
            unread_files=report.unread_files,
        )
    if args.json:
        print_json(s)
    else:
        print(
            f"added {s['added']:,} and replaced {plural(s['replaced'], 'document')}; {path} now "
            f"holds {s['documents']:,}"
            + (f" (skipped {s['skipped']:,} bad records)" if s["skipped"] else "")
            + (
                f" (kept text under unknown keys of {s['kept']:,} as metadata, not searchable)"
                if s["kept"]
                else ""
            )
        )
        print_unread(s)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from sieve.common.files import MAX_LIST_BYTES, read_lines
    from sieve.index.index import open_index

    ids = list(args.ids)
    if args.ids_file:
        ids.extend(
            line.strip()
            for _, line in read_lines(args.ids_file, MAX_LIST_BYTES, "the ids file")
            if line.strip()
        )
    if not ids:
        raise SieveError("no ids to delete: give them as arguments or with --ids-file")
    with open_index(args.index).writer() as w:
        for i in ids:
            w.delete(i)
    s = w.summary.to_dict()
    if args.json:
        print_json(s)
    else:
        print(
            f"deleted {plural(s['deleted'], 'document')}; {args.index} now holds {s['documents']:,}"
        )
        if s["not_found"]:
            shown = ", ".join(repr(i) for i in s["not_found"][:10]) + (
                " ..." if len(s["not_found"]) > 10 else ""
            )
            n = len(s["not_found"])
            print(f"  {plural(n, 'id')} {'was' if n == 1 else 'were'} not in the index: {shown}")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from sieve.index.merges import merge_index

    s = merge_index(args.index, max_segments=args.max_segments, memory_mb=args.memory_mb)
    if args.json:
        print_json(s)
    elif s["before"] == s["after"] and s["generation"]:
        print(
            f"{args.index}: {s['after']} segment{'s' if s['after'] != 1 else ''}, nothing to merge"
        )
    else:
        print(
            f"merged {plural(s['before'], 'segment')} into {s['after']}; {args.index} holds "
            f"{plural(s['documents'], 'document')}"
        )
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index

    index = open_index(args.index)
    names = index.check()
    if args.json:
        print_json({"index": args.index, "ok": True, "files": len(names)})
    else:
        print(f"{args.index}: ok ({len(names)} files verified, every byte)")
    return 0


def _folder_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--max-file-mb",
        type=float,
        metavar="MB",
        help="a folder of documents: files larger than this are not read "
        "(skipped and counted; default 32)",
    )
    s.add_argument(
        "--strict",
        action="store_true",
        help="a folder of documents: a file passed over (a symbolic link out of the folder, "
        "a FIFO, socket or device, a file over --max-file-mb, one that cannot be read) is an error "
        "instead of being skipped and counted",
    )


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`index`, `add`, `delete`, `merge`, `embed` and `check`."""
    s = sub.add_parser(
        "index",
        help="build an index from a JSONL corpus, a BEIR "
        "folder or a folder of Markdown, HTML and text files",
    )
    s.add_argument(
        "corpus",
        help="a JSON Lines file (one document per line), a BEIR folder "
        "(corpus.jsonl), or a folder of Markdown, HTML and text files",
    )
    s.add_argument("out", help="the index folder to write (an existing index only with --force)")
    s.add_argument("--force", action="store_true", help="replace an existing index (atomically)")
    s.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip and count bad records instead of stopping at the first",
    )
    s.add_argument(
        "--jobs",
        type=int,
        help="worker processes for a large JSONL file (default: CPU count, at most 4)",
    )
    s.add_argument(
        "--memory-mb",
        type=int,
        help="memory the build may use to sort the token "
        "stream before it sorts in runs on disk (default 1024)",
    )
    s.add_argument("--analyzer", help=ANALYZER_HELP)
    s.add_argument("--stopwords", metavar="LIST", help=STOPWORDS_HELP)
    s.add_argument("--field", action="append", metavar="NAME:TYPE", help=FIELD_HELP)
    s.add_argument(
        "--lenient",
        action="store_true",
        help="keep text under keys the corpus format does not know (Title, a section's "
        "body) as metadata, counted in the summary, instead of stopping with an error",
    )
    _folder_options(s)
    s.add_argument(
        "--shards",
        type=int,
        help="split the documents into N shards by a hash of their "
        "ids, built in parallel (--jobs processes, or Ray tasks with "
        "--ray); the index answers as an unsharded one (docs/scale.md)",
    )
    s.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="build the shards as tasks on this Ray cluster; "
        f"OUT must be a path every node sees. {ADDRESS_HELP}",
    )
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_index)

    s = sub.add_parser(
        "add",
        help="add documents to an index; a known id replaces "
        "its document (creates the index if it is missing)",
    )
    s.add_argument("index", help="an index folder (created if missing)")
    s.add_argument("corpus", help="documents, in any form `sieve index` reads")
    s.add_argument(
        "--no-replace",
        action="store_true",
        help="a document whose id is already in the index is an error",
    )
    s.add_argument(
        "--analyzer",
        help="for a new index, as `sieve index --analyzer`; an existing index keeps its own (a "
        "different one is an error)",
    )
    s.add_argument(
        "--stopwords",
        metavar="LIST",
        help="for a new index, as `sieve index --stopwords`; an existing index keeps its own (a "
        "different list is an error)",
    )
    s.add_argument(
        "--field",
        action="append",
        metavar="NAME:TYPE",
        help="for a new index, as `sieve index --field`; an "
        "existing index keeps its own (other fields are an error)",
    )
    s.add_argument("--lenient", action="store_true", help="as `sieve index --lenient`")
    _folder_options(s)
    s.add_argument(
        "--memory-mb",
        type=int,
        default=None,
        help="memory budget (default 1,024): past half of "
        "it, added documents are written as a segment",
    )
    s.add_argument(
        "--skip-bad",
        action="store_true",
        help="skip malformed records (counted) instead of stopping",
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_add)

    s = sub.add_parser(
        "delete", help="delete documents by id (ids not in the index are reported, not errors)"
    )
    s.add_argument("index")
    s.add_argument("ids", nargs="*", help="document ids")
    s.add_argument("--ids-file", help="a file of ids, one per line")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_delete)

    s = sub.add_parser(
        "merge", help="merge an index's segments (and drop deleted documents from those rewritten)"
    )
    s.add_argument("index")
    s.add_argument(
        "--max-segments",
        type=int,
        default=1,
        help="merge down to at most this many segments (default 1)",
    )
    s.add_argument(
        "--memory-mb",
        type=int,
        default=None,
        help="memory budget of each merge's sort, as for `sieve index`",
    )
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_merge)

    embed.add_command(sub)

    s = sub.add_parser("check", help="verify every byte of an index against its checksums")
    s.add_argument("index")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_check)
