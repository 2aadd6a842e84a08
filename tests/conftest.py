"""Shared fixtures, and `tests/support` (the brute-force oracle, the loopback model server) on the
import path of every test folder.

Fixtures: a small hand-written corpus (every card feature; golden texts stay stable across Python
versions) and a slice of the standard library's documentation (real text, for properties)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "support"))

import sieve
from sieve.corpus.demo import stdlib_documents

LONG_LINES = [f"Line {i}: the river rises {i % 7} metres near the old mill at dawn." for i in range(1, 121)]

RECORDS: list[dict[str, Any]] = [
    {
        "id": "heat-2022",
        "title": "Heatwave of 2022 in France",
        "author": ["A. Writer", "B. Reporter", "C. Editor", "D. Checker"],
        "date": "2022-07",
        "infobox": {"country": "France", "deaths": "2816", "start": "June 2022"},
        "sections": [
            {"heading": "(intro)", "text": "The 2022 heatwave struck France in June and July.\nTemperatures passed 40 degrees in the south."},
            {"heading": "Causes", "text": "A blocking high pressure system held hot air from the Sahara over Western Europe."},
            {"heading": "School closures", "text": "Many schools closed early. The school closure in Paris lasted two days, and exams moved online."},
            {"heading": "Health", "text": "Hospitals reported heat strokes; the health ministry opened cooling rooms."},
            {"heading": "Agriculture", "text": "Farmers lost crops to drought and heat."},
            {"heading": "Energy", "text": "Nuclear plants cut output because river water was too warm."},
            {"heading": "Transport", "text": "Rails buckled and trains slowed."},
            {"heading": "Wildfires", "text": "Fires burned forests in the Gironde."},
            {"heading": "Water", "text": "Towns rationed water."},
            {"heading": "Tourism", "text": "Tourists avoided the south."},
            {"heading": "Politics", "text": "The government announced a heat plan."},
            {"heading": "Science", "text": "Scientists linked the heat to climate change."},
            {"heading": "Reactions", "text": "Unions asked for school closure rules for future heatwaves."},
            {"heading": "See also", "text": "Heatwave of 2019."},
        ],
    },
    {"id": "cold", "title": "Cold snap in Zürich", "date": "2021", "text": "Snow fell on Zürich. Schools stayed open."},
    {
        "id": "river",
        "title": "River notes",
        "sections": [
            {"heading": "Early history", "text": "A mill stood by the river."},
            {"heading": "Notes", "text": "First note."},
            {"heading": "Notes", "text": "Second note."},
            {"heading": "Flood log", "text": "\n".join(LONG_LINES)},
        ],
    },
    {"id": "7", "title": "Seven", "text": "A document whose id is a number."},
]


@pytest.fixture()
def gold_records() -> list[dict[str, Any]]:
    """The hand-written corpus as records (a fresh list: a test may add to it)."""
    return list(RECORDS)


@pytest.fixture(scope="session")
def gold(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    return sieve.build_index(RECORDS, tmp_path_factory.mktemp("gold") / "idx")


@pytest.fixture(scope="session")
def stdlib(tmp_path_factory: pytest.TempPathFactory) -> sieve.Index:
    return sieve.build_index(stdlib_documents(limit=80), tmp_path_factory.mktemp("stdlib") / "idx")


@pytest.fixture(scope="session")
def gold_path(gold: sieve.Index) -> Path:
    return gold.path
