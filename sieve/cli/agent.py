"""`sieve ask`, and the options of a command that runs the agent (`ask`, `eval run`, `eval
grid`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sieve.cli.common import RANKER_HELP, add_limit_options, query_limits
from sieve.common.terminal import json_text
from sieve.engine.rank.rankers import DENSE_RANKERS, RANKER_NAMES
from sieve.tools.conditions import CONDITION_NAMES
from sieve.tools.shell.sandbox import MECHANISMS

MODEL_HELP = "the model's name on the server (as its /v1/models lists it)"
API_KEY_HELP = "sent as a bearer token, for a server that asks for one"


def budgets(args: argparse.Namespace) -> Any:
    from sieve.agent.episode import Budgets

    return Budgets(
        max_steps=args.max_steps,
        context_window=args.context_window,
        early_stop=args.early_stop,
        max_tokens=args.max_tokens,
        temperature=args.temperature,
        seed=args.seed,
    )


def cmd_ask(args: argparse.Namespace) -> int:
    from sieve.agent.ask import ask
    from sieve.agent.llm import LLMError
    from sieve.index.index import open_index

    index = open_index(args.index, limits=query_limits(args))
    if args.ranker in DENSE_RANKERS:
        index.use_dense()
    ep = ask(
        index,
        args.question,
        args.llm_url,
        args.model,
        args.condition,
        args.ranker,
        native=args.tool_style == "native",
        budgets=budgets(args),
        api_key=args.api_key,
        out=sys.stderr if args.json else sys.stdout,
        shell_sandbox=args.shell_sandbox,
        llm_deadline=args.llm_deadline,
    )
    if args.json:
        print(json_text(ep.record(), indent=1))
    # The loop ran: exit 0 whatever the model did, unless the server could not be reached at all.
    if ep.outcome == "failed" and ep.reason.startswith("model server") and not ep.calls:
        raise LLMError(ep.reason)
    return 0


def add_agent_options(s: argparse.ArgumentParser) -> None:
    many = s.prog.endswith(("run", "grid"))
    s.add_argument(
        "--llm-url",
        required=True,
        action="append" if many else "store",
        help="OpenAI-compatible base URL including /v1"
        + ("; repeat it to spread episodes over several servers" if many else ""),
    )
    s.add_argument("--model", required=True, help=MODEL_HELP)
    s.add_argument("--api-key", help=API_KEY_HELP)
    add_deadline_option(s)
    if not s.prog.endswith("grid"):
        s.add_argument(
            "--condition",
            default="sieve",
            choices=CONDITION_NAMES,
            help="which tools the agent has and how they answer: the paper's conditions, "
            "or sieve's extensions of them (the names with a +)",
        )
        s.add_argument("--ranker", default="bm25", choices=RANKER_NAMES, help=RANKER_HELP)
    s.add_argument(
        "--tool-style",
        default="native",
        choices=["native", "text"],
        help="native tool_calls (vLLM with a tool-call parser) or <tool_call> text",
    )
    s.add_argument(
        "--max-steps",
        type=int,
        default=100,
        help="most model calls in one episode, the final answer's included",
    )
    s.add_argument(
        "--context-window",
        type=int,
        default=131_072,
        help="used when the server does not report max_model_len",
    )
    s.add_argument(
        "--early-stop",
        type=float,
        default=0.9,
        help="ask for the answer once the context is this full (default 0.9, as the paper)",
    )
    s.add_argument(
        "--max-tokens", type=int, default=4096, help="most tokens the model may write in one reply"
    )
    s.add_argument(
        "--temperature", type=float, default=0.6, help="the model's sampling temperature"
    )
    s.add_argument("--seed", type=int, default=42, help="the model's sampling seed")
    s.add_argument("--json", action="store_true")
    s.add_argument(
        "--shell-sandbox",
        default="auto",
        choices=MECHANISMS,
        help="the DCI conditions' shell sandbox: auto (bubblewrap, else Landlock, "
        "else refuse and say what to install), bwrap, landlock, or none (no "
        "confinement, for runs inside a container of your own; warns on every run)",
    )


def add_deadline_option(s: argparse.ArgumentParser) -> None:
    from sieve.agent.llm import DEADLINE_S

    s.add_argument(
        "--llm-deadline",
        type=float,
        default=DEADLINE_S,
        metavar="SECONDS",
        help="the longest one model call may take, connecting, every read, retry and backoff "
        f"included (default {DEADLINE_S:g}); "
        "when it passes, the episode ends with the reason 'llm deadline'",
    )


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = sub.add_parser(
        "ask", help="answer one question with the research agent against a model server"
    )
    s.add_argument("index")
    s.add_argument("question", help="the question, in plain language")
    add_agent_options(s)
    add_limit_options(s)
    s.set_defaults(func=cmd_ask)
