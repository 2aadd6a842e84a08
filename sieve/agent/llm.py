"""A client for the OpenAI chat-completions protocol (vLLM's server, or any other), on the stdlib.

Retries with exponential backoff on server faults: connection errors, 429 and 5xx, and replies that
are cut short, too slow (`timeout` bounds a whole attempt, not just each read), too large
(`max_reply_bytes`) or malformed (not the protocol's shape). Each fault is retried and, when the
retries run out, raised as an `LLMError` with `fault=True` and its reason. `deadline` bounds a whole
call: connecting, every read, every attempt and every backoff sleep together; when it fires (or a
backoff would end past it) the call is an `LLMError` with `fault=True` whose message starts with
`llm deadline:`. A prompt over the context window is its own error (`ContextLengthError`) so the
loop can end the episode through the final-answer path. Every call's server-reported token usage
is kept; a reply's reasoning (vLLM's `reasoning_content`, or `reasoning` in newer versions) is kept
beside its content, and where the server reports no usage the call's tokens are counted here
(`/tokenize` when the server has it, else whitespace words), reasoning included.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import random
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sieve.errors import InvalidArgumentError, SieveError

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
MAX_REPLY_BYTES = 32 << 20  # a chat completion is kilobytes; anything near this is a broken server
# A call's total time, retries included: as long as one attempt may take, so every call that
# succeeds at its first attempt today still does, while a server that dribbles bytes or keeps
# failing slowly holds a call ten minutes at most, not (retries + 1) x timeout.
DEADLINE_S = 600.0
T = TypeVar("T")


class LLMError(SieveError):
    """The model server could not give an answer (after retries), or refused the request.

    `fault` is True for server faults (unreachable, 5xx/429, cut short, too slow, too large,
    malformed): worth running again later. False for refusals of the request itself (other 4xx)."""

    def __init__(self, message: str, status: int | None = None, fault: bool = False) -> None:
        self.status = status
        self.fault = fault
        super().__init__(message)


class ContextLengthError(LLMError):
    """The prompt is longer than the model's context window (HTTP 400 from the server)."""


class _Fault(Exception):
    """One attempt failed in a way worth retrying; the message is the recorded reason."""


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
    reasoning: str = ""  # the reply's reasoning field (vLLM's reasoning parser), outside `content`
    counted: bool = False  # the server reported no usage: the token numbers are sieve's own count


def _is_context_error(status: int, body: str) -> bool:
    text = body.lower()
    return status == 400 and (
        "maximum context length" in text or "context length" in text or "too many tokens" in text
    )


def _content(value: Any) -> str:
    """Message content: a string, null, or a list of parts (the OpenAI form) whose text parts are
    joined."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif not (isinstance(part, dict) and isinstance(part.get("type"), str)):
                raise _Fault(f"malformed reply: a content part is {type(part).__name__}")
        return "".join(texts)
    raise _Fault(f"malformed reply: message content is {type(value).__name__}")


def _count(usage: dict[str, Any], key: str) -> int | None:
    v = usage.get(key)
    if v is None:
        return None
    if (
        isinstance(v, bool)
        or not isinstance(v, (int, float))
        or not math.isfinite(v)
        or v < 0
        or v != int(v)
        or v > 1 << 40
    ):
        raise _Fault(f"malformed reply: usage.{key} is {str(v)[:40]}")
    return int(v)


def _reasoning(msg: dict[str, Any]) -> str:
    """The reasoning text vLLM's reasoning parsers put beside the content (`reasoning_content`,
    renamed `reasoning` in newer versions)."""
    for key in ("reasoning_content", "reasoning"):
        v = msg.get(key)
        if isinstance(v, str) and v:
            return v
    return ""


def parse_completion(
    data: Any,
) -> tuple[str, tuple[ToolCall, ...], str, int | None, int | None, str]:
    """(content, tool calls, finish reason, prompt tokens, completion tokens, reasoning) of a chat
    completion, a token number None where the server reported none; raises _Fault naming what is
    malformed."""
    if not isinstance(data, dict):
        raise _Fault(f"malformed reply: a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise _Fault("malformed reply: no choices list")
    choice = choices[0]
    msg = choice.get("message") or {}
    if not isinstance(msg, dict):
        raise _Fault("malformed reply: message is not an object")
    raw_calls = msg.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise _Fault("malformed reply: tool_calls is not a list")
    calls = []
    for i, c in enumerate(raw_calls):
        fn = c.get("function") if isinstance(c, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise _Fault(f"malformed reply: tool call {i} has no function name")
        args = fn.get("arguments")
        args = (
            args
            if isinstance(args, str) and args
            else json.dumps(args)
            if isinstance(args, dict)
            else "{}"
        )
        calls.append(ToolCall(str(c.get("id") or f"call_{i}"), fn["name"], args))
    usage = data.get("usage") or {}
    if not isinstance(usage, dict):
        raise _Fault("malformed reply: usage is not an object")
    finish = choice.get("finish_reason")
    return (
        _content(msg.get("content")),
        tuple(calls),
        finish if isinstance(finish, str) else "",
        _count(usage, "prompt_tokens"),
        _count(usage, "completion_tokens"),
        _reasoning(msg),
    )


def _words(content: Any) -> int:
    return len(_content(content).split()) if isinstance(content, (str, list)) else 0


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
        max_reply_bytes: int = MAX_REPLY_BYTES,
        deadline: float = DEADLINE_S,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        url = urllib.parse.urlsplit(self.base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise LLMError(f"model server URL must be http(s)://host[:port]/v1, not {base_url!r}")
        self._url = url
        self.model = model
        self.api_key = api_key
        self.timeout = timeout  # the longest one attempt may take, reply included
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_reply_bytes = max_reply_bytes
        if (
            isinstance(deadline, bool)
            or not isinstance(deadline, (int, float))
            or not 0 < deadline < math.inf
        ):
            raise InvalidArgumentError(
                f"the model call's deadline is a number of seconds above 0, not {deadline!r}"
            )
        # the longest one call may take: all attempts, reads and backoff sleeps
        self.deadline = float(deadline)
        self._rng = random.Random(0)
        self._no_tokenize = False

    def _exchange(
        self, method: str, path: str, data: bytes | None, headers: dict[str, str], limit: float
    ) -> tuple[int, bytes]:
        """One HTTP exchange: (status, body). A watchdog shuts the socket after `limit` seconds, so
        a server that dribbles its headers or body cannot hold the attempt longer."""
        u = self._url
        conn_type = (
            http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        )
        conn = conn_type(u.hostname or "", u.port, timeout=limit)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        watchdog = threading.Timer(limit, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            chunks, size = [], 0
            # read1: at most one receive per call (read(n) would wait for all n bytes of a dribble).
            while chunk := resp.read1(min(1 << 16, self.max_reply_bytes + 1 - size)):
                if expired.is_set():  # Linux keeps delivering data that arrives after the shutdown
                    raise _Fault(f"no complete reply within {limit:.3g} s")
                chunks.append(chunk)
                size += len(chunk)
                if size > self.max_reply_bytes:
                    raise _Fault(f"reply larger than {self.max_reply_bytes} bytes")
            if expired.is_set():  # the watchdog's shutdown reads as an end of file
                raise _Fault(f"no complete reply within {limit:.3g} s")
            if resp.length:  # read(amt) returns short at EOF instead of raising
                raise _Fault(
                    f"IncompleteRead: the reply was cut short ({size} bytes, {resp.length} more "
                    "announced)"
                )
            return resp.status, b"".join(chunks)
        except (OSError, http.client.HTTPException) as e:
            if expired.is_set():
                raise _Fault(f"no complete reply within {limit:.3g} s") from None
            raise _Fault(f"{type(e).__name__}: {str(e)[:200]}") from None
        finally:
            watchdog.cancel()
            conn.close()

    def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        parse: Callable[[Any], T] = lambda d: d,
        at_root: bool = False,
    ) -> tuple[T, int]:
        """(parse(decoded JSON), attempts). Retries server faults (`parse` raising _Fault is one);
        raises LLMError otherwise, when the retries run out, or when the call's deadline fires.
        `path` is under the base URL, or under the server's root with `at_root` (vLLM's /tokenize
        is not under /v1)."""
        base = self._url.path
        full = (
            (base[: -len("/v1")] if base.endswith("/v1") else base) + path
            if at_root
            else base + path
        )
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        status: int | None = None
        start = time.monotonic()
        end = start + self.deadline
        for attempt in range(1, self.max_retries + 2):
            limit = min(self.timeout, end - time.monotonic())
            if limit <= 0:  # a backoff sleep overran by a hair
                raise self._past_deadline(path, attempt - 1, start, last, status)
            try:
                status, raw = self._exchange(method, full, data, headers, limit)
                if not 200 <= status < 300:
                    text = raw[:2000].decode("utf-8", "replace")
                    if _is_context_error(status, text):
                        raise ContextLengthError(
                            f"prompt exceeds the model's context window: {text[:300]}", status
                        )
                    if status not in RETRY_STATUS:
                        raise LLMError(
                            f"HTTP {status} from {self.base_url}{path}: {text[:300]}", status
                        )
                    raise _Fault(f"HTTP {status}: {text[:200]}")
                try:
                    decoded = json.loads(raw)
                except (ValueError, RecursionError):
                    raise _Fault(
                        f"the server sent a reply that is not JSON: {raw[:200]!r}"
                    ) from None
                return parse(decoded), attempt
            except _Fault as f:
                last = str(f)
            if attempt <= self.max_retries:
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1)) * (
                    0.5 + self._rng.random() / 2
                )
                # no sleep that ends past the deadline: no attempt could follow it
                if time.monotonic() + delay >= end:
                    raise self._past_deadline(path, attempt, start, last, status)
                time.sleep(delay)
            # the deadline, not the attempt's timeout, cut the last attempt
            elif limit < self.timeout and time.monotonic() >= end:
                raise self._past_deadline(path, attempt, start, last, status)
        raise LLMError(
            f"no answer from {self.base_url}{path} after {self.max_retries + 1} attempts ({last})",
            status,
            fault=True,
        )

    def _past_deadline(
        self, path: str, attempts: int, start: float, last: str, status: int | None
    ) -> LLMError:
        took = time.monotonic() - start
        return LLMError(
            f"llm deadline: no answer from {self.base_url}{path} within the call's total deadline "
            f"of {self.deadline:g} s "
            f"({attempts} attempt{'s' if attempts != 1 else ''} in {took:.1f} s; last: {last})",
            status,
            fault=True,
        )

    def _models(self) -> list[dict[str, Any]]:
        """/v1/models' entries ([] when the server has none, or answers something else)."""
        data: Any
        try:
            data, _ = self._request("GET", "/models")
        except LLMError:
            return []
        entries = data.get("data") if isinstance(data, dict) else None
        return [m for m in entries if isinstance(m, dict)] if isinstance(entries, list) else []

    def server_kind(self) -> str:
        """ "vllm" when /v1/models says its models are owned by vLLM, else "openai-compatible"
        ("unknown" when it answers nothing usable)."""
        models = self._models()
        if not models:
            return "unknown"
        return "vllm" if any(m.get("owned_by") == "vllm" for m in models) else "openai-compatible"

    def max_model_len(self) -> int | None:
        """The server's context window, if it reports one (vLLM does, in /v1/models)."""
        for m in self._models():
            n = m.get("max_model_len")
            if (
                m.get("id") == self.model
                and isinstance(n, int)
                and not isinstance(n, bool)
                and n > 0
            ):
                return n
        return None

    def count_prompt(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> int | None:
        """The prompt's length in the model's tokens, chat template included, when the server can
        say (vLLM's /tokenize); None otherwise (then remembered: the server is not asked again)."""
        if self._no_tokenize:
            return None
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "add_generation_prompt": True,
        }
        if tools:
            body["tools"] = tools
        data: Any
        try:
            data, _ = self._request("POST", "/tokenize", body, at_root=True)
        except LLMError:
            data = None
        n = data.get("count") if isinstance(data, dict) else None
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            self._no_tokenize = True
            return None
        return n

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
        (parsed, data), attempts = self._request(
            "POST", "/chat/completions", body, parse=lambda d: (parse_completion(d), d)
        )
        content, calls, finish, prompt_tokens, completion_tokens, reasoning = parsed
        counted = prompt_tokens is None or completion_tokens is None
        if prompt_tokens is None:
            prompt_tokens = self.count_prompt(messages, tools)
            if prompt_tokens is None:
                prompt_tokens = sum(_words(m.get("content")) for m in messages)
        if completion_tokens is None:  # the reasoning is generated output too
            completion_tokens = self.count_text(
                "\n".join([reasoning, content, *(c.arguments for c in calls)])
            )
        return Completion(
            content=content,
            tool_calls=calls,
            finish_reason=finish,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            seconds=time.perf_counter() - t0,
            attempts=attempts,
            raw=data,
            reasoning=reasoning,
            counted=counted,
        )

    def count_text(self, text: str) -> int:
        """A text's length in the model's tokens when the server can say (vLLM's /tokenize), else
        in whitespace words."""
        if not self._no_tokenize:
            data: Any
            try:
                data, _ = self._request(
                    "POST",
                    "/tokenize",
                    {"model": self.model, "prompt": text, "add_special_tokens": False},
                    at_root=True,
                )
            except LLMError:
                data = None
            n = data.get("count") if isinstance(data, dict) else None
            if isinstance(n, int) and not isinstance(n, bool) and n >= 0:
                return n
            self._no_tokenize = True
        return len(text.split())
