"""The scripted agent model of the eval tests, and the small real collection it runs on: used by
the eval tests and by the web view's run viewer tests (real runs, not hand-made records)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from loopback import Say

FIX = Path(__file__).parents[1] / "eval" / "fixtures" / "beir"


def scripted(body: dict[str, Any]) -> Say:
    """Search the question's capitalised words in titles, read rank 1's History, answer from it;
    the Intramuros question is answered wrong on purpose, without reading."""
    texts = [str(m.get("content") or "") for m in body["messages"]]
    question, seen = texts[1], "\n".join(texts[2:])
    built = re.search(r"Built in \d+ by ([^.\n]+)", seen)
    if built:
        return Say(f"<answer>{built.group(1)}</answer>")
    if "matches" in seen and "[1]" in seen:
        return Say('<tool_call>{"name": "fetch", "arguments": {"sections": [{"doc": 1, "section": "History"}]}}</tool_call>')
    if "Intramuros" in question:
        return Say("<answer>Quezon City</answer>")
    words = " ".join(w for w in re.findall(r"[A-Z]\w+", question) if w != "Who")
    return Say(json.dumps({"name": "search", "arguments": {"query": f"{words}[title]"}}).join(["<tool_call>", "</tool_call>"]))
