"""`sieve search` cards, `sieve fetch`, `sieve visit`, `sieve show` for people."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sieve.tools.style import terminal_style
from sieve.cli.main import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_search_shows_cards(gold_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "search", str(gold_path), "schools", "-k", "1")
    assert code == 0
    assert out == (
        "2 documents match schools; top 1 by bm25:\n"
        "[1] cold — Cold snap in Zürich · 2021\n"
        "    §[*(intro)*] matched: body\n"
        "    » (intro): Snow fell on Zürich. Schools stayed open.\n"
    )
    code, out, _ = run(capsys, "search", str(gold_path), "schools", "--json")
    hit = json.loads(out)["hits"][1]
    assert hit["id"] == "heat-2022" and hit["title"] == "Heatwave of 2022 in France"
    assert hit["snippet"] == {"section": "School closures", "text": "Many schools closed early. The school closure in Paris lasted two days, and exams moved online."}


def test_fetch_visit_show(gold_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    idx = str(gold_path)
    code, out, _ = run(capsys, "fetch", idx, "heat-2022", "causes")
    assert code == 0 and out == "[heat-2022] Heatwave of 2022 in France § Causes\nA blocking high pressure system held hot air from the Sahara over Western Europe.\n"
    code, out, err = run(capsys, "fetch", idx, "river", "Notes")
    assert code == 1 and out == ""
    assert err == 'sieve: "Notes" names 2 sections of river: #2, #3; pick one by number, e.g. "#2". Sections: Early history · Notes (#2) · Notes (#3) · Flood log. Also: facts, contents.\n'
    code, out, _ = run(capsys, "fetch", idx, "river", "flood", "--max-tokens", "200")
    assert out.splitlines()[-1] == f"[continued in part 2 of 14: sieve fetch {idx} river 'Flood log' --part 2]"
    code, out, _ = run(capsys, "fetch", idx, "river", "flood", "--max-tokens", "200", "--part", "14", "--json")
    data = json.loads(out)
    assert (data["part"], data["parts"], data["section"]) == (14, 14, "Flood log") and data["text"].endswith("at dawn.")
    code, out, _ = run(capsys, "visit", idx, "cold")
    assert code == 0 and out.startswith("[cold] Cold snap in Zürich · whole document\ndate: 2021\n\nSnow fell")
    code, out, _ = run(capsys, "show", idx, "river")
    assert out == "river\ntitle: River notes\n4 sections:\n  #1 Early history (6 words)\n  #2 Notes (2 words)\n  #3 Notes (2 words)\n  #4 Flood log (1,560 words)\n"
    code, out, _ = run(capsys, "show", idx, "cold", "--json")
    assert json.loads(out)["sections"] == [{"heading": "(intro)", "words": 7}]
    code, _, err = run(capsys, "show", idx, "nope")
    assert code == 1 and err == "sieve: no document with id 'nope'\n"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert terminal_style(_Tty()).colour and not terminal_style(io.StringIO()).colour
    monkeypatch.setenv("NO_COLOR", "1")
    assert not terminal_style(_Tty()).colour
