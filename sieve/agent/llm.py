"""A client for the OpenAI chat-completions protocol (vLLM's server, or any other), on the stdlib.

Retries with exponential backoff on connection errors, timeouts, 429 and 5xx; a prompt over the
context window is its own error (`ContextLengthError`) so the loop can end the episode through the
final-answer path. Every call's server-reported token usage is kept.
"""

from __future__ import annotations

import json
import random
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from sieve.errors import SieveError

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class LLMError(SieveError):
    """The model server could not give an answer (after retries), or refused the request."""

    def __init__(self, message: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class ContextLengthError(LLMError):
    """The prompt is longer than the model's context window (HTTP 400 from the server)."""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text, as the model wrote it


@dataclass(frozen=True)
class Completion:
    content: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    attempts: int = 1
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def _is_context_error(status: int, body: str) -> bool:
    text = body.lower()
    return status == 400 and ("maximum context length" in text or "context length" in text or "too many tokens" in text)


class ChatClient:
    """`base_url` includes `/v1`, as the openai client's base_url does."""

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 600.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._rng = random.Random(0)

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
        """(decoded JSON, attempts). Retries what is worth retrying; raises LLMError otherwise."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(1, self.max_retries + 2):
            req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    raw = resp.read()
                try:
                    return json.loads(raw), attempt
                except ValueError:
                    last = f"the server sent a reply that is not JSON: {raw[:200]!r}"
            except urllib.error.HTTPError as e:
                text = e.read().decode("utf-8", "replace")
                if _is_context_error(e.code, text):
                    raise ContextLengthError(f"prompt exceeds the model's context window: {text[:300]}", e.code) from None
                if e.code not in RETRY_STATUS:
                    raise LLMError(f"HTTP {e.code} from {self.base_url}{path}: {text[:300]}", e.code) from None
                last = f"HTTP {e.code}: {text[:200]}"
            except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as e:
                reason = getattr(e, "reason", e)
                last = f"{type(e).__name__}: {reason}"
            if attempt <= self.max_retries:
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
                time.sleep(delay * (0.5 + self._rng.random() / 2))
        raise LLMError(f"no answer from {self.base_url}{path} after {self.max_retries + 1} attempts ({last})")

    def server_kind(self) -> str:
        """"vllm" when /v1/models says its models are owned by vLLM, else "openai-compatible"."""
        try:
            data, _ = self._request("GET", "/models")
        except LLMError:
            return "unknown"
        owners = {m.get("owned_by") for m in data.get("data", [])}
        return "vllm" if "vllm" in owners else "openai-compatible"

    def max_model_len(self) -> int | None:
        """The server's context window, if it reports one (vLLM does, in /v1/models)."""
        try:
            data, _ = self._request("GET", "/models")
        except LLMError:
            return None
        for m in data.get("data", []):
            if m.get("id") == self.model and isinstance(m.get("max_model_len"), int):
                return int(m["max_model_len"])
        return None

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        max_tokens: int = 4096,
        temperature: float | None = None,
        seed: int | None = None,
        extra: dict[str, Any] | None = None,
    ) -> Completion:
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": max_tokens}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if temperature is not None:
            body["temperature"] = temperature
        if seed is not None:
            body["seed"] = seed
        body.update(extra or {})
        t0 = time.perf_counter()
        data, attempts = self._request("POST", "/chat/completions", body)
        seconds = time.perf_counter() - t0
        try:
            choice = data["choices"][0]
            msg = choice.get("message") or {}
            calls = tuple(
                ToolCall(str(c.get("id", f"call_{i}")), str(c["function"]["name"]), str(c["function"].get("arguments") or "{}"))
                for i, c in enumerate(msg.get("tool_calls") or [])
            )
            usage = data.get("usage") or {}
            return Completion(
                content=msg.get("content") or "",
                tool_calls=calls,
                finish_reason=str(choice.get("finish_reason") or ""),
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                seconds=seconds,
                attempts=attempts,
                raw=data,
            )
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise LLMError(f"malformed chat completion from the server ({type(e).__name__}: {e})") from None
