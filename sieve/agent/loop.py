"""The ReAct loop: model output -> parsed tool call -> tool result -> next message, until an answer.

Exceptions steer it: a bad call becomes an observation for the model; budgets end the episode with
a recorded reason; a context-length refusal ends it through the final-answer path. An episode
always returns a record, whatever the model or server did.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Protocol

from sieve.agent.episode import Budgets, Episode
from sieve.agent.llm import ChatClient, Completion, ContextLengthError, LLMError
from sieve.agent.prompts import digest, render, template
from sieve.agent.protocol import Reply, parse_native, parse_text, without_thinking
from sieve.agent.window import (
    CUT_MARK,
    MESSAGE_ALLOWANCE,
    _local_size,
    _prompt_tokens_in,
    _window_in,
    fit_messages,
)
from sieve.tools.conditions import condition as find_condition
from sieve.tools.tool import ToolResult

FINAL_NUDGE = (
    "You are close to the context limit. Stop searching and give your final answer now, inside "
    "<answer></answer>."
)
NO_CALL = (
    "No tool call or answer found in your reply. Call a tool with <tool_call>{...}</tool_call>, "
    "or answer with <answer>...</answer>."
)
ANSWER_TOOL = {
    "type": "function",
    "function": {
        "name": "answer",
        "description": "Give the final answer and end the task.",
        "parameters": {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        },
    },
}


# model calls kept back from the step budget: the final-answer request and its recovery
FINAL_CALLS = 2
# one-shot calls made again after a context-length refusal, each with a smaller budget
ONE_SHOT_RETRIES = 3
FINAL_RETRIES = 3  # final-answer calls made again after a context-length refusal, each cut further


def _one_shot_prompt(texts: list[str]) -> str:
    passages = (
        "\n\n".join(f"[{j + 1}] {t}" for j, t in enumerate(texts) if t)
        or "(the search found no document)"
    )
    return render(template("one_shot.md"), passages=passages)


class AgentTools(Protocol):
    surfaced: list[str]
    opened: list[str]

    def begin(self, question: str) -> list[dict[str, Any]]: ...
    def schemas(self) -> list[dict[str, Any]]: ...
    def describe(self) -> str: ...
    def manual(self) -> str: ...
    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...


def system_prompt(tools: AgentTools, native: bool, budgets: Budgets) -> str:
    return render(
        template("system.md"),
        tool_descriptions=tools.describe(),
        tool_protocol="" if native else template("text_protocol.md"),
        manual=tools.manual(),
        max_steps=str(budgets.max_steps),
    )


def _finished(ep: Episode, tools: AgentTools, t0: float) -> Episode:
    ep.seconds = round(time.perf_counter() - t0, 3)
    ep.surfaced, ep.opened = list(tools.surfaced), list(tools.opened)
    return ep


class Agent:
    """Runs episodes of one configuration: a client, a tool style, budgets."""

    def __init__(
        self,
        client: ChatClient,
        native_tools: bool = True,
        budgets: Budgets = Budgets(),
        condition: str = "sieve",
        ranker: str = "bm25",
        vllm: bool | None = None,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.client = client
        self.on_event = on_event
        self.native = native_tools
        self.budgets = budgets
        self.condition = condition
        # an unknown name fails here, not mid-run
        self.one_shot = find_condition(condition).one_shot
        self.ranker = ranker
        self.vllm = vllm
        window = client.max_model_len() if budgets.context_window else None
        self.window = window or budgets.context_window

    def config(self, prompt: str) -> dict[str, Any]:
        return {
            "model": self.client.model,
            "condition": self.condition,
            "ranker": self.ranker,
            "tool_style": "native" if self.native else "text",
            "budgets": asdict(self.budgets),
            "context_window": self.window,
            "prompt_hash": digest(prompt),
        }

    def _complete(
        self,
        ep: Episode,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        extra: dict[str, Any] | None = None,
    ) -> Completion:
        b = self.budgets
        c = self.client.complete(
            messages,
            tools=tools,
            max_tokens=b.max_tokens,
            temperature=b.temperature,
            seed=b.seed,
            extra=extra,
        )
        ep.calls.append(
            {
                "prompt_tokens": c.prompt_tokens,
                "completion_tokens": c.completion_tokens,
                "seconds": round(c.seconds, 4),
                "attempts": c.attempts,
                "finish_reason": c.finish_reason,
                "messages": len(messages),
            }
        )
        if c.reasoning:
            ep.calls[-1]["reasoning"] = c.reasoning
        if c.counted:
            # the server reported no usage: these numbers are sieve's count
            ep.calls[-1]["counted"] = True
        if self.on_event is not None:
            self.on_event("llm", {**ep.calls[-1], "content": c.content})
        return c

    def run(self, question: str, tools: AgentTools, question_id: str = "") -> Episode:
        if self.one_shot:
            return self.run_one_shot(question, tools, question_id)
        t0 = time.perf_counter()
        # what the condition does before the agent acts (bounded DCI's retrieval)
        before = tools.begin(question)
        prompt = system_prompt(tools, self.native, self.budgets)
        ep = Episode(question_id, question, self.config(prompt))
        ep.tool_calls.extend(before)
        ep.messages = [{"role": "system", "content": prompt}, {"role": "user", "content": question}]
        try:
            self._loop(ep, tools)
        except LLMError as e:
            ep.outcome, ep.reason, ep.server_fault = "failed", f"model server: {e}", e.fault
        return _finished(ep, tools, t0)

    def run_one_shot(self, question: str, tools: AgentTools, question_id: str = "") -> Episode:
        """Retrieve once with the question as free text, put the documents' whole text in one
        answering prompt, trimmed until the tokenised prompt fits the window less the answer budget.
        Counted locally (no /tokenize), the count may fall short of the model's; a context-length
        refusal then shrinks the budget by the shortfall the server reports, and the call is made
        again (at most ONE_SHOT_RETRIES times)."""
        t0 = time.perf_counter()
        # One-shot needs the Toolset's passages and read counter, beyond the AgentTools Protocol.
        passages, facts = tools.passages(question)  # type: ignore[attr-defined]  # Toolset only
        ep = Episode(question_id, question, self.config(template("one_shot.md")))
        scale = 1.0
        try:
            for attempt in range(ONE_SHOT_RETRIES + 1):
                texts, fit = self._fit(question, [t for _, t in passages], tools, scale)
                shown = "\n\n".join(t for t in texts if t)
                tokens = tools.config.read.counter.count(shown)  # type: ignore[attr-defined]  # Toolset's
                ep.tool_calls = [
                    {
                        "name": "ranked_search",
                        "arguments": {"query": question},
                        "result_tokens": tokens,
                        "result": shown,
                        **facts,
                        "fit": {**fit, "retries": attempt},
                    }
                ]
                ep.messages = [
                    {"role": "system", "content": _one_shot_prompt(texts)},
                    {"role": "user", "content": question},
                ]
                try:
                    c = self._complete(ep, ep.messages, None)
                    break
                except ContextLengthError as e:
                    if attempt == ONE_SHOT_RETRIES or fit["counted_by"] == "server":
                        raise
                    sent = _prompt_tokens_in(str(e), self.budgets.max_tokens)
                    scale *= max(1.1, 1.05 * sent / max(1, fit["prompt_tokens"])) if sent else 1.5
            ep.messages.append({"role": "assistant", "content": c.content})
            answer = parse_text(c.content, set()).answer
            ep.answer = answer if answer is not None else without_thinking(c.content).strip()
            ep.outcome, ep.reason = (
                "answered",
                "answer" if answer is not None else "untagged answer",
            )
        except LLMError as e:
            ep.outcome, ep.reason, ep.server_fault = "failed", f"model server: {e}", e.fault
        return _finished(ep, tools, t0)

    def _fit(
        self, question: str, texts: list[str], tools: AgentTools, scale: float = 1.0
    ) -> tuple[list[str], dict[str, Any]]:
        """The fit loop: count the whole prompt (the server's /tokenize, chat template included,
        else the read counter plus a per-message allowance, times `scale`), and cut words from the
        end of the lowest-ranked text still present by the excess, until it fits or nothing is
        left."""
        limit = self.window - self.budgets.max_tokens
        counter = tools.config.read.counter  # type: ignore[attr-defined]  # the Toolset's counter
        words = [t.split(" ") for t in texts]
        kept = [len(w) for w in words]
        mark = len(CUT_MARK.split(" "))
        rounds = 0
        by = "server"
        while True:
            rounds += 1
            shown = [
                " ".join(w[:n]) + (f" {CUT_MARK}" if 0 < n < len(w) else "") if n else ""
                for w, n in zip(words, kept)
            ]
            messages = [
                {"role": "system", "content": _one_shot_prompt(shown)},
                {"role": "user", "content": question},
            ]
            n = self.client.count_prompt(messages)
            if n is None:
                by = counter.name
                n = int(
                    scale * sum(counter.count(m["content"]) + MESSAGE_ALLOWANCE for m in messages)
                )
            live = [j for j, k in enumerate(kept) if k]
            if n <= limit or not live:
                dropped = sum(len(w) for w in words) - sum(kept)
                return shown, {
                    "prompt_tokens": n,
                    "limit": limit,
                    "counted_by": by,
                    "dropped_words": dropped,
                    "rounds": rounds,
                    "scale": round(scale, 4),
                }
            j = live[-1]
            # At least the excess in words (a word is at least one token), and the cut mark's words.
            kept[j] = max(0, kept[j] - (n - limit) - mark)

    def _loop(self, ep: Episode, tools: AgentTools) -> None:
        schemas = tools.schemas() + [ANSWER_TOOL]
        known = {s["function"]["name"] for s in schemas}
        pending = 0  # tokens added since the last call (tool results), to foresee the next prompt
        for _ in range(max(1, self.budgets.max_steps - FINAL_CALLS)):
            if (
                ep.calls
                and ep.calls[-1]["prompt_tokens"] + ep.calls[-1]["completion_tokens"] + pending
                >= self.budgets.early_stop * self.window
            ):
                ep.reason = "context budget"
                break
            try:
                c = self._complete(ep, ep.messages, schemas if self.native else None)
            except ContextLengthError:
                ep.reason = "context length"
                self._drop_last_result(ep)
                break
            reply = (
                parse_native([(t.id, t.name, t.arguments) for t in c.tool_calls], known)
                if c.tool_calls
                else parse_text(c.content, known)
            )
            self._append_assistant(ep, c)
            if reply.answer is not None and not [k for k in reply.calls if k.name != "answer"]:
                ep.answer, ep.outcome, ep.reason = reply.answer, "answered", "answer"
                return
            pending = self._act(ep, tools, reply, c, known)
        else:
            ep.reason = "step budget"
        self._final_answer(ep)

    def _append_assistant(self, ep: Episode, c: Completion) -> None:
        msg: dict[str, Any] = {"role": "assistant", "content": c.content}
        if c.tool_calls:
            msg["tool_calls"] = [
                {
                    "id": t.id,
                    "type": "function",
                    "function": {"name": t.name, "arguments": t.arguments},
                }
                for t in c.tool_calls
            ]
        ep.messages.append(msg)

    def _act(
        self, ep: Episode, tools: AgentTools, reply: Reply, c: Completion, known: set[str]
    ) -> int:
        """Run the calls of one reply and append their results; returns the tokens added."""
        added = 0

        def run(name: str, arguments: dict[str, Any]) -> str:
            nonlocal added
            result = tools.call(name, arguments)
            text, n = result.text, result.tokens
            ep.tool_calls.append(
                {
                    "name": name,
                    "arguments": arguments,
                    "result_tokens": n,
                    "result": text,
                    **result.facts,
                }
            )
            if self.on_event is not None:
                self.on_event("tool", ep.tool_calls[-1])
            added += n
            return text

        if c.tool_calls:  # native: every call gets its own tool message, even one we could not read
            for t in c.tool_calls:
                one = parse_native([(t.id, t.name, t.arguments)], known)
                text = (
                    run(one.calls[0].name, one.calls[0].arguments) if one.calls else one.problems[0]
                )
                if not one.calls:
                    added += len(text.split())
                ep.messages.append({"role": "tool", "tool_call_id": t.id, "content": text})
            return added
        for call in reply.calls:
            text = run(call.name, call.arguments)
            ep.messages.append(
                {"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"}
            )
        notes = reply.problems or ([] if reply.calls else [NO_CALL])
        if notes:
            ep.messages.append({"role": "user", "content": "\n".join(notes)})
            added += sum(len(p.split()) for p in notes)
        return added

    def _drop_last_result(self, ep: Episode) -> None:
        for m in reversed(ep.messages):
            if m["role"] in ("tool", "user") and m is not ep.messages[1]:
                m["content"] = "[result removed: it did not fit in the context window]"
                return

    def _final_answer(self, ep: Episode) -> None:
        """Ask once for the answer; if none comes, one recovery call with the reply pre-opened;
        each only while the step budget has a model call left, and first cut to fit the window
        (`_complete_fitted`)."""
        if len(ep.calls) >= self.budgets.max_steps:
            ep.outcome, ep.reason = "failed", ep.reason + "; no model call left for the answer"
            return
        messages = ep.messages + [{"role": "user", "content": FINAL_NUDGE}]
        try:
            c, messages = self._complete_fitted(ep, messages)
            ep.messages = messages + [{"role": "assistant", "content": c.content}]
            answer = parse_text(c.content, set()).answer
            if answer is not None:
                ep.answer, ep.outcome = answer, "answered"
                return
            if len(ep.calls) >= self.budgets.max_steps:
                ep.outcome, ep.reason = (
                    "failed",
                    ep.reason + "; no model call left for the recovery",
                )
                return
            pre_opened = self._is_vllm()
            if pre_opened:
                opened = ep.messages + [{"role": "assistant", "content": "<answer>"}]
                c, opened = self._complete_fitted(
                    ep, opened, {"continue_final_message": True, "add_generation_prompt": False}
                )
                text = "<answer>" + c.content
                ep.messages = opened[:-1] + [{"role": "assistant", "content": text}]
            else:
                again = ep.messages + [
                    {
                        "role": "user",
                        "content": "Reply with only your final answer inside <answer></answer>.",
                    }
                ]
                c, again = self._complete_fitted(ep, again)
                text = c.content
                ep.messages = again + [{"role": "assistant", "content": text}]
            answer = parse_text(text, set(), open_answer=pre_opened).answer
            if answer is not None:
                ep.answer, ep.outcome = answer, "recovered"
            else:
                ep.outcome = "failed"
                ep.reason += "; no answer after recovery"
        except ContextLengthError:
            ep.outcome, ep.reason = "failed", ep.reason + "; context length at the final answer"

    def _complete_fitted(
        self, ep: Episode, messages: list[dict[str, Any]], extra: dict[str, Any] | None = None
    ) -> tuple[Completion, list[dict[str, Any]]]:
        """A final-answer call whose prompt fits the window less the answer budget, as the server
        counts it: tool results are cut, newest first (the last search's results are often what
        crossed the early-stop line, and the model has not read them yet), until the counted
        prompt fits. Counted by the server's /tokenize when it has one, else by words at the
        tokens-per-word rate of this episode's own last call; a context-length refusal says how far
        off that was, and the call is cut again and made again (at most FINAL_RETRIES times).
        Returns the completion and the messages sent."""
        limit = self.window - self.budgets.max_tokens
        # Scales the count to the server's: 1 for /tokenize's own, else learnt from this episode.
        rate = 1.0 if self.client.count_prompt(messages) is not None else self._token_rate(ep)
        for attempt in range(FINAL_RETRIES + 1):
            sent = fit_messages(messages, limit, functools.partial(self._prompt_size, rate=rate))
            try:
                return self._complete(ep, sent, None, extra), sent
            except ContextLengthError as e:
                if attempt == FINAL_RETRIES:
                    raise
                window = _window_in(str(e))
                if window is not None and window - self.budgets.max_tokens < limit:
                    limit = window - self.budgets.max_tokens
                real = _prompt_tokens_in(str(e), self.budgets.max_tokens)
                guess = self._prompt_size(sent, rate)
                rate *= max(1.1, 1.05 * real / max(1, guess)) if real else 1.5
        raise AssertionError("unreachable")

    def _prompt_size(self, messages: list[dict[str, Any]], rate: float) -> int:
        n = self.client.count_prompt(messages)
        return int(rate * (n if n is not None else _local_size(messages)))

    @staticmethod
    def _token_rate(ep: Episode) -> float:
        """Server tokens per locally counted unit (words plus a per-message allowance), from the
        latest call of this episode whose prompt the server measured; at least 1."""
        for c in reversed(ep.calls):
            n = c.get("messages")
            if n and not c.get("counted"):
                local = _local_size(ep.messages[:n])
                return max(1.0, c["prompt_tokens"] / local) if local else 1.0
        return 1.0

    def _is_vllm(self) -> bool:
        if self.vllm is None:
            self.vllm = self.client.server_kind() == "vllm"
        return bool(self.vllm)
