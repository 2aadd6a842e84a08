"""The agent's prompt templates (data files in `prompts/`, rendered by `sieve.templates`)."""

from __future__ import annotations

import hashlib

from sieve.templates import load, render

__all__ = ["digest", "render", "template"]


def template(name: str) -> str:
    return load("sieve.agent", "prompts", name)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]
