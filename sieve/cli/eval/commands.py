"""The `sieve eval` subcommands' options (`add_commands`); each group's handlers are in `build`,
`run` and `report`.
"""

from __future__ import annotations

import argparse

from sieve.cli.agent import API_KEY_HELP, MODEL_HELP, add_agent_options, add_deadline_option
from sieve.cli.eval.build import cmd_eval_build, cmd_eval_convert
from sieve.cli.eval.report import cmd_eval_judge, cmd_eval_report, cmd_eval_retrieval
from sieve.cli.eval.run import cmd_eval_grid, cmd_eval_run
from sieve.engine.rank.rankers import RANKER_NAMES
from sieve.eval.builders import SOURCES
from sieve.eval.collections import DATE_POLICIES, FORMATS
from sieve.index.cluster import ADDRESS_HELP
from sieve.tools.conditions import EXTENSIONS, MANUALS, PAPER_CONDITIONS, SNIPPETS


def _spread_options(s: argparse.ArgumentParser) -> None:
    """How many episodes at once, and where: threads here, or tasks on a Ray cluster."""
    s.add_argument(
        "--workers",
        type=int,
        help="episodes at once (default 1; with --ray, one per CPU of the cluster)",
    )
    s.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the episodes on a Ray cluster (the index folder "
        f"must be at the same path on every node). {ADDRESS_HELP}",
    )


ENCODER_HELP = (
    "a sentence-transformers model: a local folder, or a name in the local Hugging Face "
    "cache (never downloaded)"
)
COLLECTION_HELP = (
    "a collection folder in the BEIR layout (corpus.jsonl, "
    "queries.jsonl, qrels/), or as --format says"
)
LIMIT_HELP = "only the first N questions (default: all)"
K_HELP = "results per search, and the most an agent may ask for (default 5, as the paper)"
READ_CAP_HELP = "tokens per read; longer reads are truncated (default 12,000, as the paper)"
READ_PARTS_HELP = "continue long reads in numbered parts instead of truncating them"


def _encoder_options(s: argparse.ArgumentParser, many: bool) -> None:
    """Which embedding model dense rankers use, and how they search."""
    from sieve.dense.store import DENSE_SEARCH

    s.add_argument(
        "--embed-model",
        metavar="NAME_OR_PATH",
        action="append" if many else "store",
        help=f"the dense rankers' encoder, {ENCODER_HELP}; default: the model the index holds, "
        "else the bundled all-MiniLM-L6-v2"
        + (
            "; repeat it for several: one run per model of each cell that ranks with embeddings"
            if many
            else ""
        ),
    )
    s.add_argument(
        "--dense-search",
        default="exact",
        choices=DENSE_SEARCH,
        help="exact: every admitted set scored by exact inner product, as "
        "the paper (default); approximate: through HNSW above 8,000 documents",
    )


def _collection_options(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--format",
        default="beir",
        choices=FORMATS,
        help="the collection's layout (default beir: a "
        "folder of corpus.jsonl, queries.jsonl, qrels/)",
    )
    s.add_argument(
        "--dates",
        default="strict",
        choices=DATE_POLICIES,
        help="strict: an unparseable date stops the build; keep: "
        "it is kept as metadata date_text, counted and reported",
    )


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ev = sub.add_parser("eval", help="build collection indexes, run episodes, report comparisons")
    esub = ev.add_subparsers(dest="eval_command", required=True, parser_class=type(ev))
    b = esub.add_parser(
        "build", help="index both twins (structured and flat) of a BEIR-layout collection"
    )
    b.add_argument("collection", help=COLLECTION_HELP)
    b.add_argument(
        "out",
        help="a folder for the two indexes (noted in the "
        "collection, where eval run and eval grid find it)",
    )
    b.add_argument("--embed", action="store_true", help="also compute embeddings (dense extra)")
    b.add_argument(
        "--embed-model",
        metavar="NAME_OR_PATH",
        action="append",
        help=f"embed with this model, {ENCODER_HELP}; repeat "
        "it for several, kept side by side (implies --embed)",
    )
    b.add_argument(
        "--embed-unit",
        choices=("document", "passage"),
        default=None,
        help="embed each document or each passage, as `sieve embed --unit` (implies --embed; "
        "default document); with passages, dense and hybrid cards name the closest passage's "
        "section",
    )
    _collection_options(b)
    b.set_defaults(func=cmd_eval_build)
    c = esub.add_parser(
        "convert",
        help="write a paper collection from its public files in the BEIR "
        "layout: HotpotQA and MuSiQue (one document per Wikipedia title), "
        "BrowseComp-Plus as BCP-S (title, sections, author, date, infobox)",
    )
    c.add_argument("source", choices=SOURCES, help="the dataset the public files come from")
    c.add_argument(
        "path",
        help="HotpotQA JSON, MuSiQue JSON Lines, or the "
        "BrowseComp-Plus corpus (JSON Lines of docid, text, url)",
    )
    c.add_argument("out", help="a new folder for corpus.jsonl, queries.jsonl and qrels/test.tsv")
    c.add_argument(
        "--queries",
        help="browsecomp-plus: the decrypted queries (JSON Lines: query_id, query, answer, "
        "evidence_docs, gold_docs)",
    )
    c.set_defaults(func=cmd_eval_convert)
    r = esub.add_parser("run", help="run episodes of one condition (resumable)")
    r.add_argument("--collection", required=True, help=COLLECTION_HELP)
    r.add_argument(
        "--out",
        required=True,
        help="the run folder: trajectories.jsonl and "
        "summary.json (run again, it goes on where it stopped)",
    )
    r.add_argument("--limit", type=int, help=LIMIT_HELP)
    _spread_options(r)
    r.add_argument(
        "--twin",
        default="structured",
        choices=["structured", "flat"],
        help="which of eval build's indexes to search: structured (titles, sections, "
        "fields) or flat (one text each)",
    )
    r.add_argument(
        "--index-dir",
        help="where the twins' indexes live (default: where `eval build` "
        "built them, as noted in the collection; else COLLECTION/sieve-index, "
        "or NAME.sieve-index beside a single-file collection)",
    )
    r.add_argument("-k", type=int, default=5, help=K_HELP)
    r.add_argument(
        "--k-max", type=int, help="the most results an agent may ask a search for (default: k)"
    )
    r.add_argument("--read-cap", type=int, default=12_000, help=READ_CAP_HELP)
    r.add_argument("--read-parts", action="store_true", help=READ_PARTS_HELP)
    _collection_options(r)
    r.add_argument(
        "--no-fallback",
        action="store_true",
        help="ablation: strict Boolean search, no zero-hit fallback",
    )
    r.add_argument(
        "--no-snippets", action="store_true", help="ablation: result cards without snippets"
    )
    r.add_argument(
        "--no-diagnosis",
        action="store_true",
        help="a zero-hit search does not name the relaxations that would admit documents "
        "(the paper's SIEVE has none; sieve+diagnose and sieve+all do)",
    )
    r.add_argument(
        "--no-fields",
        action="store_true",
        help="ablation: result cards without the matched fields (no field exposure)",
    )
    r.add_argument(
        "--manual",
        choices=MANUALS,
        help="the manual of BQL search: the paper's for the collection "
        "(paper: BrowseComp-Plus's where documents have an author or a date, "
        "else the Wikipedia one; or name it), or generated from the index "
        "(default: the condition's; sieve: paper, sieve+manual: generated)",
    )
    r.add_argument(
        "--snippet",
        choices=SNIPPETS,
        help=(
            "what a result card quotes (default: the condition's; search-visit: the opening words)"
        ),
    )
    _encoder_options(r, many=False)
    add_agent_options(r)
    r.set_defaults(func=cmd_eval_run)
    g = esub.add_parser(
        "grid",
        help="the paper's grid in one command: conditions x "
        "rankers x twins (resumable), then the report",
    )
    g.add_argument("--collection", required=True, help=COLLECTION_HELP)
    g.add_argument("--out", required=True, help="one run folder per cell under it, and report/")
    g.add_argument(
        "--grid",
        help="a grid file (JSON: cells, or "
        "conditions/rankers/twins/ablations); overrides the next four",
    )
    g.add_argument(
        "--conditions",
        help=f"comma-separated (default the paper's: {', '.join(PAPER_CONDITIONS)}; sieve's "
        f"extensions: {', '.join(EXTENSIONS)})",
    )
    g.add_argument(
        "--rankers",
        help="comma-separated among bm25,dense,hybrid (default all; each condition runs with the "
        "paper's rankers among these)",
    )
    g.add_argument("--twins", help="comma-separated among structured,flat (default structured)")
    g.add_argument(
        "--ablations",
        action="store_true",
        help="add the paper's ablations of SIEVE on BM25+dense: strict Boolean "
        "(no fallback), no snippets, no matched fields on cards, the flat twin, "
        "and with the zero-hit diagnosis; and Search-Visit on the flat twin",
    )
    g.add_argument(
        "--extensions",
        action="store_true",
        help=f"add sieve's extensions of SIEVE as extra rows: {', '.join(EXTENSIONS)}",
    )
    g.add_argument(
        "--controls",
        action="store_true",
        help="add the paper's Table 6: the indri-control condition (Indri's query language) with "
        "the Indri-style rankers (indri, indri+dense)",
    )
    g.add_argument(
        "--baseline",
        help="the run the report tests against (default "
        "search-visit-bm25 when in the grid, else the first)",
    )
    g.add_argument(
        "--no-report",
        action="store_true",
        help="no report after the runs (eval report writes it later)",
    )
    g.add_argument("--limit", type=int, help=LIMIT_HELP)
    _spread_options(g)
    g.add_argument(
        "--index-dir",
        help="where the twins' indexes and the DCI files live "
        "(as eval run: default where `eval build` built them)",
    )
    g.add_argument(
        "--judge-url",
        help="grade every cell's answers with this LLM judge "
        "(OpenAI-compatible base URL including /v1), as eval judge",
    )
    g.add_argument("--judge-model", help="the judge's model (with --judge-url)")
    g.add_argument("--judge-api-key", help=f"the judge's key: {API_KEY_HELP}")
    g.add_argument(
        "--no-judge",
        action="store_true",
        help="run a collection the paper grades with a judge (its sieve-collection.json says "
        '"accuracy": "judge") without one: '
        "exact match only, no judged accuracy",
    )
    g.add_argument("-k", type=int, default=5, help=K_HELP)
    g.add_argument(
        "--k-max", type=int, help="the most results an agent may ask a search for (default: k)"
    )
    g.add_argument("--read-cap", type=int, default=12_000, help=READ_CAP_HELP)
    g.add_argument("--read-parts", action="store_true", help=READ_PARTS_HELP)
    _encoder_options(g, many=True)
    _collection_options(g)
    add_agent_options(g)
    g.set_defaults(func=cmd_eval_grid)
    p = esub.add_parser(
        "report",
        help="the paper's tables and figures for runs: Markdown (or JSON) on stdout, "
        "report.md/report.json and PNGs in --out",
    )
    p.add_argument("runs", nargs="+", help="run folders, as eval run and eval grid write them")
    p.add_argument(
        "--baseline",
        help="the run the others are tested against: a run name (one per collection "
        "and backbone, as the grid names cells) or one run's position among RUNS "
        "(from 0); default BM25 Search-Visit, else each collection's first run",
    )
    p.add_argument(
        "--backbone",
        help="the backbone (model) of Table 1 and the "
        "single-backbone tables (default the one with most runs)",
    )
    p.add_argument(
        "--out", help="folder for report.md, report.json and the figures (default FIRST_RUN/report)"
    )
    p.add_argument(
        "--json", action="store_true", help="print the report as JSON instead of Markdown"
    )
    p.set_defaults(func=cmd_eval_report)
    q = esub.add_parser(
        "retrieval",
        help="ranking quality on a BEIR-layout collection "
        "with qrels: TREC runs; nDCG@10, MRR@10, recall@100",
    )
    q.add_argument(
        "--collection",
        required=True,
        help="a folder with corpus.jsonl, queries.jsonl and qrels/<split>.tsv",
    )
    q.add_argument(
        "--out",
        help="indexes, TREC run files and retrieval.json (default: COLLECTION/sieve-retrieval)",
    )
    q.add_argument(
        "--ranker", action="append", choices=RANKER_NAMES, help="repeat for several (default bm25)"
    )
    q.add_argument(
        "--analyzer", action="append", help="repeat for several (default plain); one index each"
    )
    q.add_argument(
        "--stopwords",
        action="append",
        metavar="LIST",
        help="stop list of the indexes (as `sieve index --stopwords`; `none` for none), "
        "repeat for several (default none); one index per analyzer and list",
    )
    q.add_argument(
        "--bm25",
        action="append",
        metavar="K1,B",
        help="BM25 parameters, repeat for several (default 0.9,0.4)",
    )
    q.add_argument(
        "--dense-unit",
        action="append",
        choices=("document", "passage"),
        help="embedding unit of dense rankers, repeat for both (default document)",
    )
    q.add_argument(
        "--split", default="test", help="the qrels file to score against: qrels/SPLIT.tsv"
    )
    q.add_argument("--quiet", action="store_true", help="no progress messages on stderr")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=cmd_eval_retrieval)
    j = esub.add_parser(
        "judge",
        help=(
            "grade a run's answers with an LLM (BrowseComp-style "
            "grader, cached); adds 'judged' to summary.json"
        ),
    )
    j.add_argument("run_dir", help="a run folder, as eval run writes it")
    j.add_argument(
        "--collection",
        required=True,
        help="the collection the run answered (its questions and reference answers)",
    )
    j.add_argument(
        "--format",
        default="beir",
        choices=FORMATS,
        help="the collection's layout (default beir: a "
        "folder of corpus.jsonl, queries.jsonl, qrels/)",
    )
    j.add_argument("--llm-url", required=True, help="OpenAI-compatible base URL including /v1")
    j.add_argument("--model", required=True, help=MODEL_HELP)
    j.add_argument("--api-key", help=API_KEY_HELP)
    add_deadline_option(j)
    j.add_argument(
        "--max-tokens",
        type=int,
        default=512,
        help="most tokens per grade (default 512; raise it for models that think first)",
    )
    j.add_argument("--cache", help="grade cache, JSON Lines (default RUN_DIR/judge-cache.jsonl)")
    j.set_defaults(func=cmd_eval_judge)
