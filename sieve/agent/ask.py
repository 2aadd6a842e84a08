"""`sieve ask`: one question, the trace printed live, then the answer and a step/token summary."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from sieve.agent.episode import Budgets, Episode
from sieve.agent.llm import DEADLINE_S, ChatClient
from sieve.agent.loop import Agent
from sieve.index.index import Index
from sieve.tools.shell.episode import make_tools
from sieve.tools.shell.files import FileTools
from sieve.tools.shell.sandbox import warn_unconfined


def _short(text: str, width: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def printer(out: TextIO) -> Any:
    step = {"n": 0}

    def on_event(kind: str, data: dict[str, Any]) -> None:
        if kind == "llm":
            step["n"] += 1
            said = _short(data.get("content") or "", 120)
            print(
                f"step {step['n']}: model ({data['prompt_tokens']} prompt + "
                f"{data['completion_tokens']} output tokens){': ' + said if said else ''}",
                file=out,
                flush=True,
            )
        else:
            print(
                f"  -> {data['name']}({json.dumps(data['arguments'], ensure_ascii=False)}) = "
                f"{data['result_tokens']} tokens: {_short(data['result'])}",
                file=out,
                flush=True,
            )

    return on_event


def ask(
    index: Index,
    question: str,
    url: str,
    model: str,
    condition: str = "sieve",
    ranker: str = "bm25",
    native: bool = True,
    budgets: Budgets = Budgets(),
    api_key: str | None = None,
    out: TextIO = sys.stdout,
    shell_sandbox: str = "auto",
    llm_deadline: float = DEADLINE_S,
) -> Episode:
    # a DCI condition without a sandbox fails here, first
    tools = make_tools(index, condition, ranker, shell_sandbox=shell_sandbox)
    if isinstance(tools, FileTools):
        warn_unconfined(tools.sandbox)
    client = ChatClient(url, model, api_key=api_key, deadline=llm_deadline)
    agent = Agent(
        client,
        native_tools=native,
        budgets=budgets,
        condition=condition,
        ranker=ranker,
        on_event=printer(out),
    )
    ep = agent.run(question, tools)
    rec = ep.record()
    print(
        "\nanswer "
        f"({ep.outcome}{', ' + ep.reason if ep.reason and ep.reason != 'answer' else ''}): "
        f"{ep.answer if ep.answer is not None else '(none)'}",
        file=out,
    )
    print(
        f"{rec['llm_calls']} LLM calls, {len(ep.tool_calls)} tool calls "
        f"{rec['tool_calls_by_kind']}, "
        f"tokens: {rec['tokens']['distinct']} distinct, {rec['tokens']['step_summed']} "
        f"step-summed; {ep.seconds} s",
        file=out,
    )
    return ep
