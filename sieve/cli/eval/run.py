"""`sieve eval run` and `sieve eval grid`: episodes of one condition, and the grid of conditions,
rankers and backbones.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from sieve.cli.agent import budgets
from sieve.cli.eval.report import _report
from sieve.common.terminal import json_text
from sieve.errors import InvalidArgumentError


def cmd_eval_run(args: argparse.Namespace) -> int:
    from sieve.eval.run import run_collection

    s = run_collection(
        Path(args.collection),
        Path(args.out),
        args.condition,
        args.ranker,
        args.llm_url,
        args.model,
        limit=args.limit,
        workers=args.workers,
        twin=args.twin,
        native=args.tool_style == "native",
        index_dir=Path(args.index_dir) if args.index_dir else None,
        budgets=budgets(args),
        k=args.k,
        read_cap=args.read_cap,
        api_key=args.api_key,
        read_parts=args.read_parts,
        fmt=args.format,
        dates=args.dates,
        fallback=not args.no_fallback,
        snippet="none" if args.no_snippets else args.snippet,
        diagnose=False if args.no_diagnosis else None,
        k_max=args.k_max,
        ray=args.ray,
        shell_sandbox=args.shell_sandbox,
        llm_deadline=args.llm_deadline,
        fields=not args.no_fields,
        manual=args.manual,
        embed_model=args.embed_model,
        dense_search=args.dense_search,
    )
    keep = {k: v for k, v in s.items() if k != "per_question"}
    if args.json:
        print(json_text(keep, indent=1))
    else:
        print(
            f"{s['questions']} questions: accuracy {s.get('accuracy', 0):.3f}, "
            f"{s.get('distinct_tokens', 0):.0f} distinct tokens and {s.get('llm_calls', 0):.1f} "
            f"LLM calls per question; wrote {Path(args.out) / 'summary.json'}"
        )
    return _crashes([Path(args.out)])


def _crashes(runs: list[Path]) -> int:
    """1 (and a message) when an exception inside sieve ended any episode of these runs, else 0."""
    bad = []
    for run in runs:
        n = (
            json.loads((run / "summary.json").read_text()).get("crashed", 0)
            if (run / "summary.json").exists()
            else 0
        )
        if n:
            bad.append(f"{run.name}: {n}")
    if bad:
        print(
            f"sieve: episodes ended by an error inside sieve ({'; '.join(bad)}); their "
            "reason is in trajectories.jsonl, and running the same command again redoes them",
            file=sys.stderr,
        )
        return 1
    return 0


def cmd_eval_grid(args: argparse.Namespace) -> int:
    from sieve.eval.grid import load_grid, plan, run_grid, with_encoders

    def names(text: str | None) -> list[str] | None:
        return [t.strip() for t in text.split(",") if t.strip()] if text else None

    cells = (
        load_grid(args.grid)
        if args.grid
        else plan(
            names(args.conditions),
            names(args.rankers),
            names(args.twins) or ("structured",),
            args.ablations,
            args.controls,
            args.extensions,
        )
    )
    models = args.embed_model or []
    cells = with_encoders(cells, models)
    out = Path(args.out)
    judge = None
    if args.judge_url or args.judge_model:
        from sieve.agent.llm import ChatClient

        if not (args.judge_url and args.judge_model):
            raise InvalidArgumentError("--judge-url and --judge-model go together")
        judge = ChatClient(
            args.judge_url, args.judge_model, api_key=args.judge_api_key, deadline=args.llm_deadline
        )
    elif args.no_judge:
        from sieve.eval.judge import needs_judge

        if needs_judge(Path(args.collection)):
            print(
                f"sieve: {args.collection} is graded by an LLM judge; with --no-judge its runs "
                "have exact match only and no judged accuracy",
                file=sys.stderr,
            )
    print(f"{len(cells)} runs: {', '.join(c.name for c in cells)}", file=sys.stderr)
    runs = run_grid(
        Path(args.collection),
        out,
        cells,
        args.llm_url,
        args.model,
        index_dir=Path(args.index_dir) if args.index_dir else None,
        judge=judge,
        unjudged=args.no_judge,
        fmt=args.format,
        dates=args.dates,
        on_cell=lambda c: print(f"run {c.name}", file=sys.stderr),
        limit=args.limit,
        workers=args.workers,
        native=args.tool_style == "native",
        budgets=budgets(args),
        k=args.k,
        read_cap=args.read_cap,
        api_key=args.api_key,
        read_parts=args.read_parts,
        progress=not args.json,
        k_max=args.k_max,
        ray=args.ray,
        shell_sandbox=args.shell_sandbox,
        llm_deadline=args.llm_deadline,
        embed_model=models[0] if len(models) == 1 else None,
        dense_search=args.dense_search,
    )
    for run in runs if judge is not None else []:
        block = json.loads((run / "summary.json").read_text()).get("judge") or {}
        if block.get("unjudged"):
            print(
                f"sieve: {run.name}: {block['unjudged']} of {block['questions']} answers unjudged, "
                "so no judged accuracy; running the same command again asks the grader again",
                file=sys.stderr,
            )
    if not args.no_report:
        baseline = args.baseline or next(
            (r.name for r in runs if r.name == "search-visit-bm25"), "0"
        )
        _report([str(r) for r in runs], baseline, None, out / "report", args.json)
    return _crashes(runs)
