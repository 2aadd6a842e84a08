"""`sieve eval report`, `sieve eval judge` and `sieve eval retrieval`: what runs are worth."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sieve.common.terminal import json_text
from sieve.errors import InvalidArgumentError


def cmd_eval_report(args: argparse.Namespace) -> int:
    out = Path(args.out) if args.out else Path(args.runs[0]) / "report"
    _report(args.runs, args.baseline, args.backbone, out, args.json)
    return 0


def _report(
    run_dirs: list[str], baseline: str | None, backbone: str | None, out: Path, as_json: bool
) -> None:
    """The report of these runs: printed (Markdown, or JSON), and written to `out` with its
    figures."""
    from sieve.eval.report.report import build, load_run, markdown, plots, write

    runs = [load_run(Path(d)) for d in run_dirs]
    report = build(runs, baseline, backbone)
    pictures = plots(report, out)
    json_path, md_path = write(report, out, pictures)
    if as_json:
        print(
            json_text(
                {
                    **report,
                    "figures_drawn": [str(p) for p in pictures]
                    if isinstance(pictures, list)
                    else pictures,
                },
                indent=1,
            )
        )
    else:
        print(markdown(report, pictures), end="")
    print(
        f"wrote {md_path}, {json_path} and each table's and figure's data beside it",
        file=sys.stderr,
    )
    print(
        pictures if isinstance(pictures, str) else "pictures: " + ", ".join(map(str, pictures)),
        file=sys.stderr,
    )


def cmd_eval_judge(args: argparse.Namespace) -> int:
    from sieve.agent.llm import ChatClient
    from sieve.eval.judge import judge_run

    run_dir = Path(args.run_dir)
    cache = Path(args.cache) if args.cache else run_dir / "judge-cache.jsonl"
    j = judge_run(
        run_dir,
        Path(args.collection),
        ChatClient(args.llm_url, args.model, api_key=args.api_key, deadline=args.llm_deadline),
        cache_path=cache,
        collection_format=args.format,
        max_tokens=args.max_tokens,
    )
    _print_judged(j, run_dir)
    return 0


def _print_judged(j: dict[str, Any], run_dir: Path) -> None:
    counts = f"by {j['model']} ({j['asked']} asked, {j['cached']} cached, {j['unjudged']} unjudged)"
    if j["accuracy"] is None:
        print(
            f"no judged accuracy {counts}: {j['unjudged']} of {j['questions']} answers are "
            "unjudged (the grader's reply had no readable "
            "verdict twice); run `sieve eval judge` again, perhaps with a larger --max-tokens; "
            f"wrote {run_dir / 'summary.json'}"
        )
    else:
        print(f"judged accuracy {j['accuracy']:.3f} {counts}; wrote {run_dir / 'summary.json'}")


def cmd_eval_retrieval(args: argparse.Namespace) -> int:
    from sieve import BM25Params
    from sieve.eval.retrieval import evaluate_retrieval, table

    params = []
    for text in args.bm25 or ["0.9,0.4"]:
        try:
            k1, b = (float(x) for x in text.split(","))
        except ValueError:
            raise InvalidArgumentError(
                f"--bm25 takes K1,B (for example 1.2,0.75), not {text!r}"
            ) from None
        params.append(BM25Params(k1, b))
    out = Path(args.out) if args.out else Path(args.collection) / "sieve-retrieval"
    quiet = args.json or args.quiet
    summary = evaluate_retrieval(
        args.collection,
        out,
        rankers=tuple(args.ranker or ["bm25"]),
        analyzers=tuple(args.analyzer or ["plain"]),
        bm25=tuple(params),
        split=args.split,
        dense_units=tuple(args.dense_unit or ["document"]),
        stopwords=tuple(None if s == "none" else s for s in args.stopwords or ["none"]),
        progress=(lambda _: None) if quiet else (lambda m: print(m, file=sys.stderr)),
    )
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(
            f"{summary['queries']} judged queries in {args.collection} "
            f"({args.split}); runs and retrieval.json in {out}"
        )
        print(table(summary))
    return 0
