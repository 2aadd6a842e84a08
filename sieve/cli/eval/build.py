"""`sieve eval build` and `sieve eval convert`: a collection's twins and indexes, and a data set
converted to a collection.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def cmd_eval_build(args: argparse.Namespace) -> int:
    from sieve.eval.run import build_twins, built_note, note_build

    built = build_twins(
        Path(args.collection),
        Path(args.out),
        embed=args.embed,
        fmt=args.format,
        dates=args.dates,
        embed_models=args.embed_model or (),
        embed_unit=args.embed_unit,
    )
    for twin, index in built.items():
        print(f"{twin}: {len(index)} documents at {index.path}")
    try:
        print(
            f"eval run and eval grid on {args.collection} will use {args.out} (noted in "
            f"{note_build(Path(args.collection), Path(args.out))})"
        )
    except OSError as e:
        print(
            f"sieve: could not note the build in {args.collection} ({e.strerror or e}); give eval "
            f"run and eval grid --index-dir {args.out}",
            file=sys.stderr,
        )
    kept = built_note(Path(args.out)).get("unparsed_dates", 0)
    if kept:
        print(
            f"kept {kept:,} unparseable date{'s' if kept != 1 else ''} as metadata 'date_text' "
            "(not searchable with date[...])"
        )
    return 0


def cmd_eval_convert(args: argparse.Namespace) -> int:
    from sieve.eval.builders import convert

    built = convert(
        args.source,
        Path(args.path),
        Path(args.out),
        queries=Path(args.queries) if args.queries else None,
    )
    print(
        f"{built.documents:,} documents, {built.questions:,} questions in {built.out} (BEIR "
        f"layout: eval build {built.out} OUT)"
    )
    if built.unparsed_dates:
        print(
            f"kept {built.unparsed_dates:,} unparseable "
            f"date{'s' if built.unparsed_dates != 1 else ''} as metadata 'date_text'"
        )
    if built.without_gold:
        print(
            f"{built.without_gold:,} question{'s' if built.without_gold != 1 else ''} without a "
            "gold document: not in qrels/test.tsv, so not in the test split"
        )
    return 0
