"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions protocol, driven by a
scripted policy: a function that reads the request (messages, tools) and decides the reply.

Token usage is counted deterministically (whitespace words of every message's content and tool-call
arguments, plus 3 per message), so tests can check the client's accounting by hand.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


def count_tokens(messages: list[dict[str, Any]], per_word: int = 1) -> int:
    """The prompt's tokens: 3 per message plus `per_word` per whitespace word of its content and
    tool-call arguments."""
    total = 0
    for m in messages:
        total += 3 + per_word * len(str(m.get("content") or "").split())
        for c in m.get("tool_calls") or []:
            total += per_word * len(str(c["function"].get("arguments", "")).split())
    return total


def context_error(window: int, prompt: int, completion: int) -> str:
    """vLLM's body for a request over `max_model_len` (vllm/entrypoints/openai/serving_engine.py):
    HTTP 400, the prompt and the completion budget named."""
    return json.dumps({
        "object": "error",
        "message": f"This model's maximum context length is {window} tokens. However, you requested {prompt + completion} tokens "
                   f"({prompt} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.",
        "type": "BadRequestError", "param": None, "code": 400,
    })


@dataclass
class Fault:
    """Instead of a reply: an HTTP status with a body, a delay, or a dropped connection."""

    status: int = 0
    body: str = ""
    delay: float = 0.0
    drop: bool = False


@dataclass
class Say:
    """A reply: text content and/or native tool calls [(name, arguments JSON)]."""

    content: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    finish_reason: str = "stop"
    reasoning: str = ""  # sent in the message's reasoning field, counted in the usage's completion tokens


Policy = Callable[[dict[str, Any]], "Say | Fault"]


class LoopbackServer:
    def __init__(self, policy: Policy, model: str = "scripted", max_model_len: int | None = 131072, owned_by: str = "scripted",
                 tokenize: bool = False, enforce: bool = False, per_word: int = 1, reasoning_field: str = "reasoning_content",
                 usage: bool = True, enforced_len: int | None = None) -> None:
        """`tokenize=True` also serves vLLM's `/tokenize` (at the root, not under /v1): the prompt's
        `count` by the same rule as the usage (or a `prompt` text's words); the bodies it got are in
        `tokenized`. `enforce=True` refuses, as vLLM does, a request whose prompt plus `max_tokens`
        exceeds `max_model_len` (HTTP 400, vLLM's body; the refused bodies are in `refused`).
        `per_word`: tokens per word of this "model". A reply's reasoning goes in `reasoning_field`
        (vLLM's `reasoning_content`, or `reasoning` in newer versions); `usage=False` sends no usage.
        `enforced_len`: the window enforced, where it is not the one /v1/models reports."""
        self.policy = policy
        self.enforce = enforce
        self.per_word = per_word
        self.reasoning_field = reasoning_field
        self.usage = usage
        self.refused: list[dict[str, Any]] = []
        self.enforced_len = enforced_len
        self.tokenize = tokenize
        self.tokenized: list[dict[str, Any]] = []
        self.owned_by = owned_by
        self.model = model
        self.max_model_len = max_model_len
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, obj: Any) -> None:
                raw = json.dumps(obj).encode() if not isinstance(obj, str) else obj.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                if self.path.endswith("/models"):
                    entry: dict[str, Any] = {"id": outer.model, "object": "model", "owned_by": outer.owned_by}
                    if outer.max_model_len is not None:
                        entry["max_model_len"] = outer.max_model_len
                    self._send(200, {"object": "list", "data": [entry]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                if self.path == "/tokenize":
                    if not outer.tokenize:
                        self._send(404, {"detail": "Not Found"})
                        return
                    outer.tokenized.append(body)
                    n = count_tokens(body["messages"], outer.per_word) if "messages" in body else outer.per_word * len(str(body["prompt"]).split())
                    self._send(200, {"count": n, "max_model_len": outer.max_model_len, "tokens": []})
                    return
                prompt = count_tokens(body["messages"], outer.per_word)
                window = outer.enforced_len or outer.max_model_len
                if outer.enforce and window is not None and prompt + int(body.get("max_tokens") or 0) > window:
                    outer.refused.append(body)
                    self._send(400, context_error(window, prompt, int(body.get("max_tokens") or 0)))
                    return
                outer.requests.append(body)
                action = outer.policy(body)
                if isinstance(action, Fault):
                    if action.delay:
                        time.sleep(action.delay)
                    if action.drop:
                        self.connection.shutdown(2)
                        return
                    if action.status:
                        self._send(action.status, action.body or {"error": {"message": "fault"}})
                        return
                    action = Say("")
                calls = [{"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}} for i, (n, a) in enumerate(action.tool_calls)]
                words = len(action.reasoning.split()) + len(action.content.split()) + sum(len(a.split()) for _, a in action.tool_calls)
                completion = outer.per_word * words
                msg: dict[str, Any] = {"role": "assistant", "content": action.content or None}
                if action.reasoning:
                    msg[outer.reasoning_field] = action.reasoning
                if calls:
                    msg["tool_calls"] = calls
                reply: dict[str, Any] = {
                    "id": "cmpl", "object": "chat.completion", "model": outer.model,
                    "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if calls else action.finish_reason}],
                }
                if outer.usage:
                    reply["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
                self._send(200, reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "LoopbackServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class RawServer:
    """A TCP server on 127.0.0.1 that answers every request with bytes a test chooses, including
    ones no HTTP server should send: `reply(path)` returns the bytes (or an iterable of chunks,
    each sent after `pace` seconds); the connection is closed after the last one."""

    def __init__(self, reply: Callable[[str], "bytes | Any"], pace: float = 0.0) -> None:
        import socket

        self.reply = reply
        self.pace = pace
        self.requests = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: Any) -> None:
        try:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            rest = head.split(b"\r\n\r\n", 1)[1]
            while len(rest) < length:
                rest += conn.recv(65536)
            self.requests += 1
            path = head.split(b" ")[1].decode()
            out = self.reply(path)
            for chunk in [out] if isinstance(out, bytes) else out:
                if self._stop.is_set():
                    return
                if self.pace:
                    time.sleep(self.pace)
                conn.sendall(chunk)
        except OSError:
            pass  # the client gave up (what several tests expect)
        finally:
            conn.close()

    def __enter__(self) -> "RawServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self.sock.close()


def http_reply(body: bytes, status: str = "200 OK", headers: tuple[str, ...] = (), length: int | None = None) -> bytes:
    """The bytes of one HTTP/1.1 response (Content-Length `length`, default the body's)."""
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json", f"Content-Length: {len(body) if length is None else length}", "Connection: close", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def completion(message: dict[str, Any], usage: Any = None) -> bytes:
    """A chat completion's JSON with this message (and usage, if given)."""
    data: dict[str, Any] = {"id": "c", "object": "chat.completion", "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
    if usage is not None:
        data["usage"] = usage
    return json.dumps(data).encode()
