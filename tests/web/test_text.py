"""sieve.web.text: Markdown emphasis as HTML with every document character escaped, and numbers at
the precision a person reads."""

from __future__ import annotations

import pytest

from sieve.web.text import number, rendered


@pytest.mark.parametrize(
    ("text", "html"),
    [
        ("an *emphasised* word", "an <em>emphasised</em> word"),
        ("a **strong** word", "a <strong>strong</strong> word"),
        (
            "from __future__ import x; __init__ and __call__ methods",
            "from __future__ import x; __init__ and __call__ methods",
        ),
        ("f(x, __validate__=True) and _private", "f(x, __validate__=True) and _private"),
        ("_one_ and *two words*", "<em>one</em> and <em>two words</em>"),
        ("**a *b* c**", "<strong>a <em>b</em> c</strong>"),
        ("f(*args, **kwargs)", "f(*args, **kwargs)"),
        ("2*3*4 and snake_case_name", "2*3*4 and snake_case_name"),
        ("*.py or *.txt", "*.py or *.txt"),
        ("a * b * c", "a * b * c"),
        ("*open\nclosed*", "*open\nclosed*"),  # emphasis stays on one line
        ("*<script>x</script>*", "<em>&lt;script&gt;x&lt;/script&gt;</em>"),
        ('<a href="x">*y*</a>', "&lt;a href=&quot;x&quot;&gt;<em>y</em>&lt;/a&gt;"),
        ("**<b>*</b>**", "<strong>&lt;b&gt;*&lt;/b&gt;</strong>"),
    ],
)
def test_rendered(text: str, html: str) -> None:
    assert rendered(text) == html


def test_marks_query_words_inside_and_outside_emphasis() -> None:
    got = rendered("the *heat wave* & heat", lambda w: w.strip("*&") == "heat")
    assert (
        got == 'the <em><mark class="hit">heat</mark> wave</em> &amp; <mark class="hit">heat</mark>'
    )


def test_no_tag_but_ours_whatever_the_asterisks() -> None:
    import html
    import re

    for text in (
        "*<i>*<u>**</u>*",
        "**<script>**" * 5,
        "*" * 20 + "<x>" + "_" * 20,
        "<em>*</em>*",
        "*a **b *c **d** c* b** a*",
    ):
        got = rendered(text, lambda w: True)
        assert set(re.findall(r"</?([a-z]+)", got)) <= {"em", "strong", "mark"}, (text, got)
        # Only delimiters are taken out: the document's characters all come back, in order.
        assert html.unescape(re.sub(r"</?(em|strong|mark[^>]*)>", "", got)).replace(
            "*", ""
        ).replace("_", "") == text.replace("*", "").replace("_", "")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (0.6667, "0.667"),
        (12.3456, "12.3"),
        (1234.6, "1,235"),
        (0.5, "0.5"),
        (1.0, "1"),
        (3, "3"),
        (123456, "123,456"),
        (0.000123456, "0.000123"),
        (None, "None"),
        (True, "True"),
        ("text", "text"),
    ],
)
def test_number(value: object, shown: str) -> None:
    assert number(value) == shown
