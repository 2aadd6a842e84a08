"""The `sieve` command line: the parser, assembled from the command groups, and the one place that
runs a command and turns its errors into exit codes: 0 success, 1 user error (message on stderr),
2 usage error."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from sieve.cli import agent, demo, index, query, read, serve, web
from sieve.cli.eval import commands as evaluation
from sieve.common.terminal import escaping_streams, json_text
from sieve.errors import BQLSyntaxError, SieveError


class _Help(argparse.HelpFormatter):
    """Help that shows every option's default, unless its text already says it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            action.option_strings
            and "default" not in text
            and action.default not in (None, False, argparse.SUPPRESS)
        ):
            text += " (default: %(default)s)"
        return text


# What an argument means in every command that has it, unless the command says more.
COMMON_HELP = {
    "index": "an index folder (as `sieve index` writes it)",
    "doc_id": "a document id (as `sieve match` and `sieve search` print it)",
    "query": "a BQL query, such as 'zlib[title] AND compress*' (the language: docs/bql.md)",
    "--json": "print the result as JSON (and an error as one JSON object on stderr)",
    "--quiet": "no progress bar",
}


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if action.help is None:
            name = action.option_strings[0] if action.option_strings else action.dest
            action.help = COMMON_HELP.get(name)
        if (
            action.help is None
            and action.option_strings
            and action.default not in (None, False, argparse.SUPPRESS)
        ):
            action.help = "(default: %(default)s)"
        return action

    # usage errors exit 2, as argparse does, with our prefix
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"sieve: usage error: {message}", file=sys.stderr)
        raise SystemExit(2)


def make_parser() -> argparse.ArgumentParser:
    from sieve import __version__

    p = _Parser(
        prog="sieve",
        description="Search, inspect, fetch: fielded Boolean search for research agents.",
        epilog="New here? `sieve demo` builds an index of the Python documentation and runs "
        "example queries. `sieve COMMAND -h` lists a command's options.",
    )
    p.add_argument("--version", action="version", version=f"sieve {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for group in (index, query, read, demo, agent, evaluation, serve, web):
        group.add_commands(sub)
    return p


def _report(e: Exception, as_json: bool, query: str | None = None) -> None:
    """An error on stderr: `sieve: message` (a syntax error in `query`, the command's QUERY, with
    the query and a caret under the place), or with --json one JSON object (type, message, and
    where the error has them: position and hint of a query error, file and line of a corpus
    error)."""
    if not as_json:
        print(f"sieve: {e}", file=sys.stderr)
        if isinstance(e, BQLSyntaxError) and isinstance(query, str):
            print(e.pointer(query), file=sys.stderr)
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
        _report(e, getattr(args, "json", False), getattr(args, "query", None))
        return 1
    except BrokenPipeError:  # `sieve ... | head`: the reader left; nothing more to say
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115  # stdout from now until exit
        return 0
    except OSError as e:  # a full disk, a file that vanished, no permission...
        _report(e, getattr(args, "json", False))
        return 1
    except KeyboardInterrupt:
        print("sieve: interrupted", file=sys.stderr)
        return 130
    # a bug: Python's report, escaped like every other line (its message may quote a document)
    except Exception:
        traceback.print_exc()
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
