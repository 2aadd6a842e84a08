"""`sieve embed`: document embeddings for dense and hybrid ranking (the `dense` extra)."""

from __future__ import annotations

import argparse
import time

from sieve.cli.common import plural, print_json
from sieve.common.progress import Progress


def cmd_embed(args: argparse.Namespace) -> int:
    from sieve.dense.encoder import DEFAULT_MODEL
    from sieve.dense.models import static_name
    from sieve.dense.store import embed
    from sieve.index.index import open_index

    index = open_index(args.index)
    bar = Progress(
        "embedding",
        "passages" if args.unit == "passage" else "docs",
        total=len(index),
        quiet=args.quiet or args.json,
    )

    def progress(done: int, total: int) -> None:
        bar.set_total(total)
        bar.update(done - bar.n)

    # the static model is a model of its own: its embeddings are kept and recorded under its name
    model = static_name(args.model) if args.encoder == "static" else args.model or DEFAULT_MODEL
    t0 = time.perf_counter()
    try:
        from sieve.dense.encoder import loaded_encoder

        # Loaded here only when asked for: otherwise embed loads it only if there is work to do.
        encoder = None
        if args.encoder is not None or args.jobs is not None:
            encoder = loaded_encoder(model, backend=args.encoder, threads=args.jobs)
        out = embed(
            index,
            model=model,
            encoder=encoder,
            batch_size=args.batch_size,
            force=args.force,
            progress=progress,
            unit=args.unit,
            dtype=args.dtype,
        )
    finally:
        bar.close()
    from sieve.dense.store import read_meta

    rows = read_meta(out)["rows"]
    summary = {
        "index": args.index,
        "embeddings": str(out),
        "model": model,
        "documents": len(index),
        "unit": args.unit,
        "vectors": rows,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if args.json:
        print_json(summary)
    else:
        what = (
            f"{plural(rows, 'passage')} of {plural(summary['documents'], 'document')}"
            if args.unit == "passage"
            else plural(summary["documents"], "document")
        )
        print(f"embedded {what} into {out} ({summary['seconds']} s)")
    return 0


def add_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`embed`, listed among the index commands (after `merge`)."""
    from sieve.dense.units import DEFAULT_UNIT

    s = sub.add_parser(
        "embed", help="compute document embeddings for dense and hybrid ranking (resumable)"
    )
    s.add_argument("index")
    s.add_argument(
        "--embed-model",
        "--model",
        dest="model",
        metavar="NAME_OR_PATH",
        help="sentence-transformers model: a local folder, or a name in the local Hugging Face "
        "cache (never downloaded; "
        "default: the bundled all-MiniLM-L6-v2); each model's embeddings are kept side by side",
    )
    s.add_argument("--batch-size", type=int, default=32, help="texts the model encodes at once")
    s.add_argument(
        "--encoder",
        choices=("auto", "torch", "onnx", "onnx-int8", "static"),
        default=None,
        help="auto (default; or $SIEVE_ENCODER): ONNX Runtime for the default model where "
        "installed, else torch; onnx-int8 is faster and approximate; static: the static model "
        "distilled from the default (static:<model>, kept beside it), far faster, less accurate",
    )
    s.add_argument(
        "--jobs", type=int, default=None, help="encoder threads (ONNX Runtime; default: every core)"
    )
    s.add_argument(
        "--unit",
        choices=("document", "passage"),
        default=DEFAULT_UNIT,
        help=f"one vector per document (its start) or per passage (every section in pieces of up "
        f"to 128 words; a document scores as its best passage, a card names its section; about "
        f"18 times the vectors); default {DEFAULT_UNIT}",
    )
    s.add_argument(
        "--dtype",
        choices=("int8", "float16", "float32"),
        default="int8",
        help="how vectors are stored: int8 with a scale per row (default; a quarter of "
        "float32's bytes), float16 or float32",
    )
    s.add_argument("--force", action="store_true", help="recompute even if up to date")
    s.add_argument("--quiet", action="store_true")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_embed)
