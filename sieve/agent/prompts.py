"""The agent's prompt templates (data files in `prompts/`, rendered by `sieve.common.templates`)."""

from __future__ import annotations

import hashlib

from sieve.common.templates import load, render

__all__ = ["digest", "render", "template"]


def template(name: str) -> str:
    return load("sieve.agent", "prompts", name)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
