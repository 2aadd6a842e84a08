"""An episode's budgets (`Budgets`) and its record (`Episode`, written by `dump`), with the token
figures the record carries.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from sieve.common.terminal import json_text
from sieve.errors import InvalidArgumentError

TRAJECTORY_FORMAT = 1


@dataclass(frozen=True)
class Budgets:
    """Defaults from the paper. `max_steps` bounds every model call of an episode, the final-answer
    request and its recovery included: the loop stops FINAL_CALLS short of it (never below one
    call)."""

    max_steps: int = 100
    context_window: int = 131_072
    early_stop: float = 0.9
    max_tokens: int = 4096
    temperature: float | None = 0.6
    seed: int | None = 42

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InvalidArgumentError(f"{name} must be a positive integer, got {v!r}")
        if (
            isinstance(self.context_window, bool)
            or not isinstance(self.context_window, int)
            or self.context_window < 0
        ):
            raise InvalidArgumentError(
                f"context_window must be a whole number of tokens, got {self.context_window!r}"
            )
        if not isinstance(self.early_stop, (int, float)) or not 0 < self.early_stop <= 1:
            raise InvalidArgumentError(
                f"early_stop must be a share of the window in (0, 1], got {self.early_stop!r}"
            )


def step_summed_tokens(calls: list[dict[str, Any]]) -> int:
    """The prompt and completion tokens of every call: each call's prompt counted again."""
    return sum(c["prompt_tokens"] + c["completion_tokens"] for c in calls)


def largest_prompt(calls: list[dict[str, Any]]) -> int:
    return max((c["prompt_tokens"] for c in calls), default=0)


def distinct_tokens(calls: list[dict[str, Any]]) -> int:
    """Each piece of context once, as the paper's reference implementation counts it: the largest
    prompt of the episode plus every completion (reasoning included, as the server's usage counts
    it). Never below the largest prompt, whatever a final-answer request cut from the history."""
    return largest_prompt(calls) + sum(c["completion_tokens"] for c in calls)


def final_context_tokens(calls: list[dict[str, Any]]) -> int:
    """The last call's prompt plus its completion: sieve's earlier "distinct" figure, kept in the
    records under this name. It misses reasoning the history does not carry, and shrinks when the
    final request cuts results to fit the window."""
    return calls[-1]["prompt_tokens"] + calls[-1]["completion_tokens"] if calls else 0


@dataclass
class Episode:
    question_id: str
    question: str
    config: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)  # one per LLM call
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    answer: str | None = None
    outcome: str = "failed"  # answered | recovered | failed
    reason: str = ""
    # failed because the model server kept failing: a resumed run redoes it
    server_fault: bool = False
    crashed: bool = False  # ended by an exception inside sieve (a bug): a resumed run redoes it
    seconds: float = 0.0
    surfaced: list[str] = field(default_factory=list)
    opened: list[str] = field(default_factory=list)

    @property
    def step_summed_tokens(self) -> int:
        return step_summed_tokens(self.calls)

    @property
    def distinct_tokens(self) -> int:
        return distinct_tokens(self.calls)

    def record(self) -> dict[str, Any]:
        out = asdict(self)
        by_kind: dict[str, int] = {}
        for t in self.tool_calls:
            by_kind[t["name"]] = by_kind.get(t["name"], 0) + 1
        out.update(
            format=TRAJECTORY_FORMAT,
            tokens={
                "step_summed": self.step_summed_tokens,
                "distinct": self.distinct_tokens,
                "final_context": final_context_tokens(self.calls),
                "largest_prompt": largest_prompt(self.calls),
            },
            llm_calls=len(self.calls),
            tool_calls_by_kind=by_kind,
        )
        return out


def dump(ep: Episode) -> str:
    """The episode's record as one line of JSON, safe to print (`sieve.common.terminal.json_text`):
    the trajectories file is a log people read with `tail` and `less`."""
    return json_text(ep.record())
