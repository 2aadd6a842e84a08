"""The `sieve` command line. Exit codes: 0 success, 1 user error (message on stderr), 2 usage error."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from sieve.index.cluster import ADDRESS_HELP
from sieve.errors import InvalidArgumentError, SieveError
from sieve.common.progress import Progress
from sieve.common.terminal import escaping_streams, json_text
from sieve.engine.query.bql.parser import MAX_QUERY_CHARS
from sieve.engine.rank.rankers import RANKER_NAMES
from sieve.index.index import Limits

ANALYZER_HELP = ("how text becomes terms, for the documents and every query: plain (the default: folded words), english "
                 "(Snowball stemming: compressing = compress), or another Snowball language by name (french, german, ...)")
FIELD_HELP = ("repeat to declare metadata keys as filter fields: NAME:number (year[2000..2010], year[>=3]), NAME:date "
              "(published[2020-03..]), NAME:keyword (venue[=ACL]) or NAME:text (neural[abstract]); a value that does not fit its type is an error")
STOPWORDS_HELP = ("words left out of the index (their places are kept, so phrases span them): english (the 33 words Lucene and "
                  "tantivy use) or a file of one word per line; default none. A query term that is only stop words is an error")


def add_limit_options(s: argparse.ArgumentParser) -> None:
    """The caps on each query (`sieve.Limits`) as options of a command that runs queries."""
    d = Limits()
    s.add_argument("--max-query-chars", type=int, metavar="N",
                   help=f"longest query, in characters (default {d.max_query_chars:,}; at most {MAX_QUERY_CHARS:,})")
    s.add_argument("--max-phrase-words", type=int, metavar="N", help=f"most words in one phrase (default {d.max_phrase_words})")
    s.add_argument("--query-seconds", type=float, metavar="S",
                   help=f"time allowed for each query, zero-hit fallback included (default {d.seconds:g}; 0: no limit)")


def query_limits(args: argparse.Namespace, base: Limits = Limits()) -> Limits:
    """`base` with the options of `add_limit_options` that were given."""
    given = {"max_query_chars": args.max_query_chars, "max_phrase_words": args.max_phrase_words}
    changes: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
    if args.query_seconds is not None:
        changes["seconds"] = args.query_seconds or None
    return replace(base, **changes)


def _print_json(obj: Any) -> None:
    sys.stdout.write(json_text(obj, indent=1) + "\n")


def _n(count: int, word: str) -> str:
    """`1 document`, `2 documents`."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _corpus(path: str, max_file_mb: float | None, strict: bool) -> Any:
    """CORPUS as a build reads it: a folder of documents with the rules for its files asked for."""
    from sieve.corpus.folders import MAX_FILE_MB, Folder, is_document_folder

    if is_document_folder(path):
        return Folder(path, MAX_FILE_MB if max_file_mb is None else max_file_mb, strict)
    if max_file_mb is not None or strict:
        raise InvalidArgumentError(f"--max-file-mb and --strict are for a folder of documents; {path} is read as a JSONL corpus")
    return path


UNREAD_WORDS = {"links": ("symbolic link", "out of the folder or to nothing"), "special": ("special file", "(FIFO, socket, device)"),
                "oversized": ("file", "over --max-file-mb"), "unreadable": ("file", "that could not be read")}


def _print_unread(s: dict[str, Any]) -> None:
    """The files of a folder corpus passed over, on stderr."""
    if not any(s["unread"].values()):
        return
    counts = ", ".join(f"{_n(n, UNREAD_WORDS[k][0])} {UNREAD_WORDS[k][1]}" for k, n in s["unread"].items() if n)
    print(f"  not read: {counts} (--strict makes them errors); first ones:", file=sys.stderr)
    for note in s["unread_files"]:
        print(f"    {note}", file=sys.stderr)


def _build(corpus: Any, out: Path, force: bool, skip: bool, quiet: bool, jobs: int | None = None,
           memory_mb: int | None = None, analyzer: str | None = None, lenient: bool = False,
           stopwords: str | None = None, fields: list[str] | None = None, shards: int | None = None,
           ray: str | None = None) -> tuple[Any, dict[str, Any]]:

    from sieve.corpus.formats import CorpusReport, count_records
    from sieve.engine.analysis.analyzers import get_analyzer
    from sieve.engine.analysis.schema import declare
    from sieve.index.index import build_index

    get_analyzer(analyzer or "plain", stopwords)  # a wrong name, list or field fails before the progress bar is drawn
    declare(fields)
    report = CorpusReport()
    # A total (the file's lines, the folder's files: one quick pass) gives the bar an end and an ETA.
    bar = Progress("indexing", "docs", total=None if quiet else count_records(corpus), quiet=quiet)

    def progress(n: int, _bytes: int) -> None:
        bar.update(n - bar.n)

    t0 = time.perf_counter()
    try:
        index = build_index(corpus, out, force=force, on_error="skip" if skip else "raise", progress=progress, report=report, jobs=jobs,
                            memory_mb=memory_mb, analyzer=analyzer or "plain", stopwords=stopwords, fields=fields, lenient=lenient,
                            shards=shards, ray=ray)
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
        "unread": {k: report.unread.get(k, 0) for k in UNREAD_WORDS},  # a folder's files passed over
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
    _, s = _build(_corpus(args.corpus, args.max_file_mb, args.strict), Path(args.out), args.force, args.skip_bad, args.quiet or args.json, args.jobs, args.memory_mb, args.analyzer, args.lenient,
                  args.stopwords, args.field, args.shards, args.ray)
    if args.json:
        _print_json(s)
        return 0
    print(f"indexed {_n(s['documents'], 'document')} in {s['seconds']} s ({s['docs_per_second']} docs/s) into {s['index']}")
    analysis = s["analyzer"] + " analyzer" + (f", {s['stopwords']} stop words not indexed" if s["stopwords"] else "")
    print(f"  {s['terms']} terms ({analysis}), {s['tokens']} tokens, {s['postings']} postings; index {s['index_mb']} MB, document store {s['store_mb']} MB"
          + (f"; {s['shards']} shards, {s['segments']} segments" if s["shards"] else "")
          + (f"; {s['segments']} segments (past half the memory budget, a build starts a new one)" if s["segments"] > 1 and not s["shards"] else ""))
    if s["fields"]:
        print("  filter fields: " + ", ".join(f"{n} ({t})" for n, t in s["fields"].items()))
    if s["kept"]:
        print(f"  kept the text under unknown keys of {_n(s['kept'], 'document')} as metadata (not searchable; --lenient)", file=sys.stderr)
    if s["skipped"]:
        print(f"  skipped {s['skipped']} bad records; first ones:", file=sys.stderr)
        for e in s["errors"]:
            print(f"    {e}", file=sys.stderr)
    _print_unread(s)
    return 0


def cmd_add(args: argparse.Namespace) -> int:
    from sieve.corpus.formats import CorpusReport
    from sieve.engine.analysis.analyzers import get_analyzer
    from sieve.engine.analysis.schema import declare
    from sieve.index.index import open_index

    path = Path(args.index)
    corpus = _corpus(args.corpus, args.max_file_mb, args.strict)
    if not (path / "CURRENT").exists():  # `add` into nothing is a build
        _, built = _build(corpus, path, False, args.skip_bad, True, None, args.memory_mb, args.analyzer, args.lenient, args.stopwords, args.field)
        s = {"added": built["documents"], "replaced": 0, "deleted": 0, "not_found": [], "skipped": built["skipped"], "kept": built["kept"],
             "documents": built["documents"], "unread": built["unread"], "unread_files": built["unread_files"]}
    else:
        report = CorpusReport()
        index = open_index(path)
        if args.analyzer is not None and get_analyzer(args.analyzer) != get_analyzer(index.analyzer.name):
            raise InvalidArgumentError(f"{path} uses the {index.analyzer.name} analyzer, not {args.analyzer}: changing an index's analyzer "
                                       f"means rebuilding it (sieve index CORPUS {path} --analyzer {args.analyzer} --force)")
        if args.stopwords is not None and get_analyzer(index.analyzer.name, args.stopwords) != index.analyzer:
            have = f"{len(index.analyzer.stopwords)} other stop words" if index.analyzer.stopwords else "no stop words"
            raise InvalidArgumentError(f"{path} has {have}, not the list {args.stopwords!r}: changing an index's stop words "
                                       f"means rebuilding it (sieve index CORPUS {path} --stopwords {args.stopwords} --force)")
        if args.field is not None and declare(args.field) != index.schema:
            raise InvalidArgumentError(f"{path} declares {index.schema.listing()}, not {', '.join(args.field)}: changing an index's "
                                       f"fields means rebuilding it (sieve index CORPUS {path} --field ... --force)")
        with index.writer(replace=not args.no_replace, memory_mb=args.memory_mb) as w:
            w.add_from(corpus, on_error="skip" if args.skip_bad else "raise", report=report, lenient=args.lenient)
        s = w.summary.to_dict()
        s.update(unread={k: report.unread.get(k, 0) for k in UNREAD_WORDS}, unread_files=report.unread_files)
    if args.json:
        _print_json(s)
    else:
        print(f"added {s['added']:,} and replaced {_n(s['replaced'], 'document')}; {path} now holds {s['documents']:,}"
              + (f" (skipped {s['skipped']:,} bad records)" if s["skipped"] else "")
              + (f" (kept text under unknown keys of {s['kept']:,} as metadata, not searchable)" if s["kept"] else ""))
        _print_unread(s)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    from sieve.common.files import MAX_LIST_BYTES, read_lines
    from sieve.index.index import open_index

    ids = list(args.ids)
    if args.ids_file:
        ids.extend(line.strip() for _, line in read_lines(args.ids_file, MAX_LIST_BYTES, "the ids file") if line.strip())
    if not ids:
        raise SieveError("no ids to delete: give them as arguments or with --ids-file")
    with open_index(args.index).writer() as w:
        for i in ids:
            w.delete(i)
    s = w.summary.to_dict()
    if args.json:
        _print_json(s)
    else:
        print(f"deleted {_n(s['deleted'], 'document')}; {args.index} now holds {s['documents']:,}")
        if s["not_found"]:
            shown = ", ".join(repr(i) for i in s["not_found"][:10]) + (" ..." if len(s["not_found"]) > 10 else "")
            n = len(s["not_found"])
            print(f"  {_n(n, 'id')} {'was' if n == 1 else 'were'} not in the index: {shown}")
    return 0


def cmd_merge(args: argparse.Namespace) -> int:
    from sieve.index.merges import merge_index

    s = merge_index(args.index, max_segments=args.max_segments, memory_mb=args.memory_mb)
    if args.json:
        _print_json(s)
    elif s["before"] == s["after"] and s["generation"]:
        print(f"{args.index}: {s['after']} segment{'s' if s['after'] != 1 else ''}, nothing to merge")
    else:
        print(f"merged {_n(s['before'], 'segment')} into {s['after']}; {args.index} holds {_n(s['documents'], 'document')}")
    return 0


def cmd_match(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index

    index = open_index(args.index, limits=query_limits(args))
    t0 = time.perf_counter()
    m = index.match(args.query)
    ms = (time.perf_counter() - t0) * 1000
    ids = m.ids if args.limit is None else [index.reader.doc_id(int(d)) for d in m.docs[: args.limit]]
    if args.json:
        _print_json({"query": m.query, "count": m.count, "ids": ids, "ms": round(ms, 3)})
        return 0
    print(f"{_n(m.count, 'document')} match{'es' if m.count == 1 else ''} {m.query}  ({ms:.2f} ms)")
    from sieve.tools.shell.safe import inline

    for i in ids:
        print(inline(i))  # an id is document data: no escape sequence reaches the terminal
    if len(ids) < m.count:
        print(f"... {m.count - len(ids)} more (use --limit to show more)")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index

    index = open_index(args.index)
    names = index.check()
    if args.json:
        _print_json({"index": args.index, "ok": True, "files": len(names)})
    else:
        print(f"{args.index}: ok ({len(names)} files verified, every byte)")
    return 0


def cmd_embed(args: argparse.Namespace) -> int:
    from sieve.dense.encoder import DEFAULT_MODEL
    from sieve.dense.store import embed
    from sieve.index.index import open_index

    index = open_index(args.index)
    bar = Progress("embedding", "passages" if args.unit == "passage" else "docs", total=len(index), quiet=args.quiet or args.json)

    def progress(done: int, total: int) -> None:
        bar.set_total(total)
        bar.update(done - bar.n)

    t0 = time.perf_counter()
    try:
        from sieve.dense.encoder import loaded_encoder

        # Loaded here only when asked for: otherwise embed loads it only if there is work to do.
        encoder = None if args.encoder is None and args.jobs is None else loaded_encoder(
            args.model or DEFAULT_MODEL, backend=args.encoder, threads=args.jobs)
        out = embed(index, model=args.model or DEFAULT_MODEL, encoder=encoder, batch_size=args.batch_size, force=args.force,
                    progress=progress, unit=args.unit)
    finally:
        bar.close()
    from sieve.dense.store import read_meta

    rows = read_meta(out)["rows"]
    summary = {"index": args.index, "embeddings": str(out), "documents": len(index), "unit": args.unit, "vectors": rows,
               "seconds": round(time.perf_counter() - t0, 2)}
    if args.json:
        _print_json(summary)
    else:
        what = f"{_n(rows, 'passage')} of {_n(summary['documents'], 'document')}" if args.unit == "passage" else _n(summary["documents"], "document")
        print(f"embedded {what} into {out} ({summary['seconds']} s)")
    return 0


def _topics(path: str) -> list[tuple[str, str, int]]:
    """(id, query, line) of a topics file: JSON Lines, or id TAB query per line."""
    from sieve.corpus.formats import parse_line
    from sieve.errors import CorpusError
    from sieve.common.files import MAX_LIST_BYTES, read_lines

    out = []
    for n, line in read_lines(path, MAX_LIST_BYTES, "the topics file"):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            rec = parse_line(path, n, line)  # nesting too deep, a 5,000-digit number: an error at its line
            if isinstance(rec, CorpusError):
                raise rec
            qid, text = rec.get("_id", rec.get("id")), rec.get("text", rec.get("query"))
        else:
            qid, _, text = line.rstrip("\r").partition("\t")
        if qid in (None, "") or isinstance(qid, (dict, list)) or not isinstance(text, str) or not text.strip():
            raise CorpusError("a topic needs an id and a query (JSON: _id and text; TSV: id TAB query)", path, n)
        try:
            (str(qid) + text).encode("utf-8")
        except UnicodeEncodeError as e:  # JSON's "\ud800": no text a run file could hold
            raise CorpusError(f"holds a lone surrogate U+{ord(e.object[e.start]):04X} (not valid Unicode text)", path, n) from None
        out.append((str(qid), text, n))
    return out


def _search_topics(index: Any, args: argparse.Namespace) -> int:
    from sieve.errors import BQLError, DeadlineExceededError
    from sieve.eval.retrieval import write_trec

    if not (args.topics and args.run) or args.query is not None:
        raise InvalidArgumentError("--topics FILE and --run OUT go together, without a QUERY")
    run = {}
    t0 = time.perf_counter()
    for qid, text, line in _topics(args.topics):
        try:
            r = (index.ranked_search(text, k=args.k, ranker=args.ranker, explain=False) if args.ranked
                 else index.search(text, k=args.k, ranker=args.ranker, fallback=not args.strict, explain=False, diagnose=False))
        except (BQLError, DeadlineExceededError) as e:
            raise InvalidArgumentError(f"{args.topics}:{line}: topic {qid!r}: {e}") from None
        run[qid] = [(h.doc_id, h.score) for h in r.hits]
    tag = f"sieve-{args.ranker}" + ("-ranked" if args.ranked else "")
    write_trec(Path(args.run), run, tag)
    summary = {"topics": len(run), "run": args.run, "lines": sum(map(len, run.values())), "seconds": round(time.perf_counter() - t0, 3)}
    if args.json:
        _print_json(summary)
    else:
        print(f"wrote {_n(summary['lines'], 'result')} for {_n(summary['topics'], 'topic')} to {args.run} ({summary['seconds']} s)")
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index
    from sieve.tools import cards
    from sieve.tools.fetch.snippets import Matcher
    from sieve.tools.style import terminal_style

    if args.ray and (args.topics or args.run):
        raise InvalidArgumentError("--topics runs on an index opened here; drop --ray (a sharded index opens locally too)")
    if args.topics or args.run:
        from sieve.eval.retrieval import MEASURED

        limits = query_limits(args, MEASURED)  # topics are a benchmark's data, measured as written (as `sieve eval retrieval`)
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
            hits.append({"rank": h.rank, "id": h.doc_id, "score": h.score, "title": meta["title"], "fields": list(h.fields), "sections": list(h.sections),
                         "snippet": None if snip is None else {"section": meta["headings"][snip.section], "text": snip.text}})
        _print_json({"query": r.query, "count": r.count, "fallback": r.fallback, "missing": r.missing,
                     "diagnosis": None if r.diagnosis is None else r.diagnosis.to_dict(), "ranker": r.ranker, "ms": round(ms, 3), "hits": hits})
        if args.ray:
            index.close()
        return 0
    style = terminal_style(sys.stdout)
    header = cards.ranked_header(r) if args.ranked else cards.search_header(r)
    print(cards.listing(index, r, header, Matcher.of(r), style=style))
    if args.ray:
        index.close()
    return 0


def _cli_hint(index: str) -> Callable[[str, "str | None", int], str]:
    """How a person reads the next part: the command line to run."""
    import shlex

    def hint(doc_id: str, section: str | None, part: int) -> str:
        words = ["sieve", "fetch", index, doc_id, section] if section is not None else ["sieve", "visit", index, doc_id]
        return shlex.join(words + ["--part", str(part)])

    return hint


def _read_config(args: argparse.Namespace) -> Any:
    from sieve.tools.fetch.reading import ReadConfig
    from sieve.tools.fetch.tokens import make_counter

    return ReadConfig(cap=args.max_tokens, counter=make_counter(args.tokenizer), hint=_cli_hint(args.index))


def _print_read(read: Any, as_json: bool) -> None:
    if as_json:
        _print_json({"id": read.doc_id, "section": read.name or None, "part": read.part, "parts": read.parts, "text": read.body})
    else:
        print(read.text)


def cmd_fetch(args: argparse.Namespace) -> int:
    from sieve.tools.fetch.reading import read_section
    from sieve.index.index import open_index

    doc = open_index(args.index).document(args.doc_id)
    _print_read(read_section(doc, args.section, args.part, _read_config(args)), args.json)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from sieve.index.index import open_index

    index = open_index(args.index, limits=query_limits(args))
    e = index.explain(args.query, args.doc_id)
    if args.json:
        _print_json({"doc_id": args.doc_id, **e.to_dict()})
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
        _print_json({"cases": len(results), "failed": len(failed), "results": [r.to_dict() for r in results]})
    else:
        for r in failed:
            print(r.report())
        print(f"{len(results) - len(failed)} passed, {len(failed)} failed ({len(results)} cases)")
    return 1 if failed else 0


def cmd_visit(args: argparse.Namespace) -> int:
    from sieve.tools.fetch.reading import read_document
    from sieve.index.index import open_index

    doc = open_index(args.index).document(args.doc_id)
    _print_read(read_document(doc, args.part, _read_config(args)), args.json)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from sieve.tools.fetch.reading import outline_text
    from sieve.tools.style import terminal_style
    from sieve.tools.fetch.tokens import WhitespaceCounter
    from sieve.index.index import open_index

    doc = open_index(args.index).document(args.doc_id)
    words = WhitespaceCounter()
    if args.json:
        _print_json({"id": doc.id, "title": doc.title, "author": doc.author, "date": doc.date, "infobox": dict(doc.infobox),
                     "sections": [{"heading": s.heading, "words": words.count(s.text)} for s in doc.sections]})
        return 0
    first, _, rest = outline_text(doc, words).partition("\n")
    print(f"{terminal_style(sys.stdout).id(first)}\n{rest}")
    return 0


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
            print("Building an index of the Python standard library's own documentation (read from its source)...")
        index, summary = _build(stdlib_documents(), out, force=bool(args.keep), skip=False, quiet=quiet)
        results = []
        for what, q in DEMO_QUERIES:
            t0 = time.perf_counter()
            m = index.match(q)
            ms = (time.perf_counter() - t0) * 1000
            results.append({"what": what, "query": q, "canonical": m.query, "count": m.count, "ids": [index.reader.doc_id(int(d)) for d in m.docs[:8]], "ms": round(ms, 3)})
        from sieve.tools import cards
        from sieve.tools.fetch.passages import passages
        from sieve.tools.fetch.snippets import Matcher

        r = index.search(DEMO_SEARCH, k=2)
        listing = cards.listing(index, r, cards.search_header(r), Matcher.of(r))
        top = passages(index, r)[0]  # the section the top card's snippet comes from
        section = {"id": top.doc_id, "section": top.heading, "text": top.text}
        if args.json:
            _print_json({"build": summary, "queries": results, "search": {"query": DEMO_SEARCH, "cards": listing}, "fetch": section})
            return 0
        print(f"indexed {_n(summary['documents'], 'document')} in {summary['seconds']} s ({summary['docs_per_second']} docs/s); index {summary['index_mb']} MB")
        for r in results:
            print(f"\n# {r['what']}: {r['query']}")
            print(f"  read as {r['canonical']}: {_n(r['count'], 'document')} ({r['ms']:.2f} ms)")
            more = f" ... (+{r['count'] - len(r['ids'])})" if r["count"] > len(r["ids"]) else ""
            print("  " + ", ".join(r["ids"]) + more)
        print(f"\n# result cards, as an agent sees them (sieve search INDEX '{DEMO_SEARCH}' -k 2)")
        print(listing)
        lines = section["text"].splitlines()
        print(f"\n# one section, not the whole page (sieve fetch INDEX {section['id']} '{section['section']}')")
        print("\n".join(lines[:12]) + (f"\n... ({len(lines) - 12} more lines)" if len(lines) > 12 else ""))
        if args.keep:
            print(f"\nindex kept at {out}; try: sieve search {out} 'json AND decode*' or sieve fetch {out} {section['id']} '{section['section']}'")
    return 0


class _Help(argparse.HelpFormatter):
    """Help that shows every option's default, unless its text already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.option_strings and "default" not in text and action.default not in (None, False, argparse.SUPPRESS):
            text += " (default: %(default)s)"
        return text


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if action.help is None and action.option_strings and action.default not in (None, False, argparse.SUPPRESS):
            action.help = "(default: %(default)s)"
        return action

    def error(self, message: str) -> None:  # usage errors exit 2, as argparse does, with our prefix
        self.print_usage(sys.stderr)
        print(f"sieve: usage error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _folder_options(s: argparse.ArgumentParser) -> None:
    s.add_argument("--max-file-mb", type=float, metavar="MB", help="a folder of documents: files larger than this are not read "
                   "(skipped and counted; default 32)")
    s.add_argument("--strict", action="store_true", help="a folder of documents: a file passed over (a symbolic link out of the folder, "
                   "a FIFO, socket or device, a file over --max-file-mb, one that cannot be read) is an error instead of being skipped and counted")


def make_parser() -> argparse.ArgumentParser:
    from sieve import __version__

    p = _Parser(prog="sieve", description="Search, inspect, fetch: fielded Boolean search for research agents.")
    p.add_argument("--version", action="version", version=f"sieve {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    s = sub.add_parser("index", help="build an index from a JSONL corpus, a BEIR folder or a folder of Markdown, HTML and text files")
    s.add_argument("corpus")
    s.add_argument("out")
    s.add_argument("--force", action="store_true", help="replace an existing index (atomically)")
    s.add_argument("--skip-bad", action="store_true", help="skip and count bad records instead of stopping at the first")
    s.add_argument("--jobs", type=int, help="worker processes for a large JSONL file (default: CPU count, at most 4)")
    s.add_argument("--memory-mb", type=int, help="memory the build may use to sort the token stream before it sorts in runs on disk (default 1024)")
    s.add_argument("--analyzer", help=ANALYZER_HELP)
    s.add_argument("--stopwords", metavar="LIST", help=STOPWORDS_HELP)
    s.add_argument("--field", action="append", metavar="NAME:TYPE", help=FIELD_HELP)
    s.add_argument("--lenient", action="store_true", help="keep text under keys the corpus format does not know (Title, a section's body) as metadata, "
                   "counted in the summary, instead of stopping with an error")
    _folder_options(s)
    s.add_argument("--shards", type=int, help="split the documents into N shards by a hash of their ids, built in parallel (--jobs processes, "
                   "or Ray tasks with --ray); the index answers as an unsharded one (docs/scale.md)")
    s.add_argument("--ray", metavar="ADDRESS", help=f"build the shards as tasks on this Ray cluster; OUT must be a path every node sees. {ADDRESS_HELP}")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_index)

    s = sub.add_parser("add", help="add documents to an index; a known id replaces its document (creates the index if it is missing)")
    s.add_argument("index")
    s.add_argument("corpus")
    s.add_argument("--no-replace", action="store_true", help="a document whose id is already in the index is an error")
    s.add_argument("--analyzer", help="for a new index, as `sieve index --analyzer`; an existing index keeps its own (a different one is an error)")
    s.add_argument("--stopwords", metavar="LIST", help="for a new index, as `sieve index --stopwords`; an existing index keeps its own (a different list is an error)")
    s.add_argument("--field", action="append", metavar="NAME:TYPE", help="for a new index, as `sieve index --field`; an existing index keeps its own (other fields are an error)")
    s.add_argument("--lenient", action="store_true", help="as `sieve index --lenient`")
    _folder_options(s)
    s.add_argument("--memory-mb", type=int, default=None, help="memory budget (default 1,024): past half of it, added documents are written as a segment")
    s.add_argument("--skip-bad", action="store_true", help="skip malformed records (counted) instead of stopping")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_add)

    s = sub.add_parser("delete", help="delete documents by id (ids not in the index are reported, not errors)")
    s.add_argument("index")
    s.add_argument("ids", nargs="*")
    s.add_argument("--ids-file", help="a file of ids, one per line")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_delete)

    s = sub.add_parser("merge", help="merge an index's segments (and drop deleted documents from those rewritten)")
    s.add_argument("index")
    s.add_argument("--max-segments", type=int, default=1, help="merge down to at most this many segments (default 1)")
    s.add_argument("--memory-mb", type=int, default=None, help="memory budget of each merge's sort, as for `sieve index`")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_merge)

    s = sub.add_parser("match", help="the exact set of documents a BQL query admits")
    s.add_argument("index")
    s.add_argument("query")
    s.add_argument("--limit", type=int, default=20, help="ids to print (default 20)")
    s.add_argument("--all", dest="limit", action="store_const", const=None, help="print every id")
    add_limit_options(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_match)

    s = sub.add_parser("explain", help="why a document is admitted or rejected by a query, clause by clause")
    s.add_argument("index")
    s.add_argument("query")
    s.add_argument("doc_id")
    add_limit_options(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_explain)

    s = sub.add_parser("test", help="run query regression cases (JSON Lines: query, admits, rejects, top, count); exit 1 if any fails")
    s.add_argument("cases")
    s.add_argument("index")
    add_limit_options(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_test)

    s = sub.add_parser("search", help="rank the documents a BQL query admits and show their result cards")
    s.add_argument("index")
    s.add_argument("query", nargs="?", help="a BQL query (plain language with --ranked); or give --topics")
    s.add_argument("-k", type=int, default=5, help="results (default 5; per topic with --topics)")
    s.add_argument("--ranker", choices=RANKER_NAMES, default="bm25")
    s.add_argument("--strict", action="store_true", help="no zero-hit recovery: an empty match returns nothing")
    s.add_argument("--ranked", action="store_true", help="QUERY is plain language, not BQL: rank every document holding any of its words")
    s.add_argument("--topics", help="many queries, one per line: JSON Lines with _id (or id) and text (or query), or TSV of id and query; needs --run. "
                   "A benchmark's queries run as written: up to 10,000 characters, no time limit, unless the options below say otherwise")
    s.add_argument("--run", help="with --topics: write the results as a TREC run file (qid Q0 docid rank score tag)")
    s.add_argument("--ray", metavar="ADDRESS", help=f"a sharded INDEX answered by one Ray actor per shard on this cluster: the same results, "
                   f"BM25 only. {ADDRESS_HELP}")
    add_limit_options(s)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_search)

    for name, helptext, func in (("fetch", "read one section of a document (or intro, facts, infobox, contents)", cmd_fetch),
                                 ("visit", "read a whole document", cmd_visit)):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("index")
        s.add_argument("doc_id")
        if name == "fetch":
            s.add_argument("section", help="a heading (case-insensitive; a unique prefix will do), #N, intro, facts, infobox or contents")
        s.add_argument("--part", type=int, default=1, help="which part of a text longer than one read (default 1)")
        s.add_argument("--max-tokens", type=int, default=12_000, help="the cap of one read (default 12000)")
        s.add_argument("--tokenizer", help="count tokens with a tokenizer.json (path, or 'minilm' for the bundled one) instead of words")
        s.add_argument("--json", action="store_true")
        s.set_defaults(func=func)

    s = sub.add_parser("show", help="list a document's facts and sections")
    s.add_argument("index")
    s.add_argument("doc_id")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_show)

    s = sub.add_parser("embed", help="compute document embeddings for dense and hybrid ranking (resumable)")
    s.add_argument("index")
    s.add_argument("--embed-model", "--model", dest="model", metavar="NAME_OR_PATH",
                   help="sentence-transformers model: a local folder, or a name in the local Hugging Face cache (never downloaded; "
                        "default: the bundled all-MiniLM-L6-v2); each model's embeddings are kept side by side")
    s.add_argument("--batch-size", type=int, default=32)
    s.add_argument("--encoder", choices=("auto", "torch", "onnx", "onnx-int8"), default=None,
                   help="auto (default; or $SIEVE_ENCODER): ONNX Runtime for the default model where installed, else torch")
    s.add_argument("--jobs", type=int, default=None, help="encoder threads (ONNX Runtime; default: every core)")
    s.add_argument("--unit", choices=("document", "passage"), default="document",
                   help="one vector per document (its start; the default), or per passage (every section in pieces of up to 128 words; "
                        "a document scores as its best passage)")
    s.add_argument("--force", action="store_true", help="recompute even if up to date")
    s.add_argument("--quiet", action="store_true")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_embed)

    s = sub.add_parser("check", help="verify every byte of an index against its checksums")
    s.add_argument("index")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("demo", help="index the Python standard library's documentation and run example queries")
    s.add_argument("--keep", metavar="DIR", help="keep the demo index in DIR")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_demo)
    from sieve.cli.agent import add_commands
    from sieve.serve.cli import add_command as add_serve
    from sieve.web.cli import add_command as add_web

    add_commands(sub)
    add_serve(sub)
    add_web(sub)
    return p


def _report(e: Exception, as_json: bool) -> None:
    """An error on stderr: `sieve: message`, or with --json one JSON object (type, message, and
    where the error has them: position and hint of a query error, file and line of a corpus error)."""
    if not as_json:
        print(f"sieve: {e}", file=sys.stderr)
        return
    out: dict[str, Any] = {"error": type(e).__name__, "message": str(e)}
    for key in ("pos", "hint", "file", "line", "limit", "value", "maximum"):
        value = getattr(e, key, None)
        if isinstance(value, (str, int, float)) and value != "":
            out[key] = value
    print(json_text(out), file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command. Everything it prints, on stdout and stderr, passes through
    `sieve.common.terminal.EscapingStream`: no document, query or answer can act on the terminal."""
    with escaping_streams():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    args = make_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except SieveError as e:
        _report(e, getattr(args, "json", False))
        return 1
    except BrokenPipeError:  # `sieve ... | head`: the reader left; nothing more to say
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except OSError as e:  # a full disk, a file that vanished, no permission...
        _report(e, getattr(args, "json", False))
        return 1
    except KeyboardInterrupt:
        print("sieve: interrupted", file=sys.stderr)
        return 130
    except Exception:  # a bug: Python's report, escaped like every other line (its message may quote a document)
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
