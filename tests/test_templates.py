"""The one template renderer: prompts, the judge's prompt and the tool manual all go through it."""

from __future__ import annotations

import pytest

from sieve.common.templates import load, render


def test_blocks_and_fields() -> None:
    assert render("<!-- if a -->\nA {x}\n<!-- endif a -->\nB\n", {"a": True}, x=1) == "A 1\nB\n"
    # a field inside a dropped block needs no value
    assert render("<!-- if a -->\nA {x}\n<!-- endif a -->\nB\n", {"a": False}) == "B\n"


def test_nested_blocks() -> None:
    text = "<!-- if a -->\n<!-- if b -->\nAB\n<!-- endif b -->\nA\n<!-- endif a -->\n"
    assert render(text, {"a": True, "b": False}) == "A\n"
    assert render(text, {"a": True, "b": True}) == "AB\nA\n"


def test_strictness() -> None:
    with pytest.raises(KeyError, match="no flag 'a'"):
        render("<!-- if a -->\nA\n<!-- endif a -->\n")
    with pytest.raises(KeyError, match="missing \\['missing'\\]"):
        render("{missing}\n")
    with pytest.raises(KeyError, match="unused \\['typo'\\]"):
        render("{name}\n", name="x", typo="y")
    with pytest.raises(ValueError, match="unbalanced"):
        render("<!-- if a -->\nA\n", {"a": True})


def test_other_braces_are_text() -> None:
    text = '<tool_call>{"name": "TOOL", "arguments": {ARGUMENTS AS JSON}}</tool_call> {x}'
    assert render(text, x="!") == '<tool_call>{"name": "TOOL", "arguments": {ARGUMENTS AS JSON}}</tool_call> !'


@pytest.mark.parametrize("package,path", [("sieve.agent", ("prompts", "system.md")), ("sieve.agent", ("prompts", "one_shot.md")),
                                          ("sieve.agent", ("prompts", "text_protocol.md")), ("sieve.eval", ("prompts", "judge.md")),
                                          ("sieve.tools", ("manual.md",))])
def test_shipped_templates_load(package: str, path: tuple[str, ...]) -> None:
    assert load(package, *path).strip()
