"""The passage that scored, carried on dense and hybrid hits (`Hit.passage_section`, found lazily)
and shown where hits are shown: cards, the agent tools, the served tools (MCP), the CLI's JSON.

Exactness runs with the hashed bag-of-words encoder; what a reader sees runs with the real bundled
model on a tiny corpus."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("hnswlib", reason="embeddings need the dense extra: pip install -e '.[dense]'")

import sieve
from sieve.dense import store, units
from sieve.serve.service import Service
from sieve.tools.toolset import ToolConfig, Toolset

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
from synth import HashEncoder  # noqa: E402

WORDS = "river mill dawn bread salt copper engine harbor violin glacier tunnel lantern orchard compass ledger".split()


def _docs(n: int, seed: int = 5) -> list[dict[str, Any]]:
    r = random.Random(seed)
    out = []
    for i in range(n):
        secs = [
            {"heading": f"part {j}", "text": " ".join(r.choice(WORDS) for _ in range(r.randint(0, 300)))}
            for j in range(r.randint(0, 5))
        ]
        out.append({"id": f"d{i}", "title": f"doc {i}", "sections": secs})
    return out


def _closest_by_hand(ix: sieve.Index, d: int, text: str) -> int | None:
    """The section of the document's closest passage, the passages cut here again."""
    enc = HashEncoder()
    q = enc.encode([text])[0]
    cut: list[tuple[int, str]] = []
    for j in range(ix.reader.section_count(d)):
        words = ix.reader.section_text(d, j).split()
        cut += [(j, " ".join(words[a : a + units.PASSAGE_WORDS])) for a in range(0, len(words), units.PASSAGE_WORDS)]
    if not cut:
        return None
    heads = [p.split("\n", 1)[0] for p in units.passages(ix, d)]
    sims = enc.encode([h + "\n" + t for h, (_, t) in zip(heads, cut)]) @ q
    return cut[int(np.argmax(sims))][0]


@pytest.fixture
def hashed(tmp_path: Path) -> sieve.Index:
    ix = sieve.build_index(_docs(40), tmp_path / "ix")
    store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="passage")
    ix.use_dense(model="hash-64", encoder=HashEncoder(), unit="passage")
    return ix


@pytest.mark.parametrize("ranker", ["dense", "hybrid"])
@pytest.mark.parametrize("query", ["copper lantern", "glacier OR violin"])
def test_a_hit_carries_the_section_of_its_closest_passage(hashed: sieve.Index, ranker: str, query: str) -> None:
    r = hashed.search(query, k=10, ranker=ranker)
    assert r.hits
    text = r.text
    for h in r.hits:
        assert h.passage_section == _closest_by_hand(hashed, h.doc, text), h.doc_id
    assert any(h.passage_section not in (None, 0) for h in r.hits)  # not merely the first section


def test_the_closest_section_is_found_at_first_read_for_every_hit(hashed: sieve.Index) -> None:
    r = hashed.search("copper", k=5, ranker="dense", explain=False)
    assert all("_closest" in h.__dict__ for h in r.hits)  # nothing computed by the search itself
    _ = r.hits[2].passage_section
    assert not any("_closest" in h.__dict__ for h in r.hits[2:3])
    finder = r.hits[0].__dict__["_closest"][0]
    assert finder.found is not None and len(finder.found) == len(r.hits)  # one pass for all
    bm = hashed.search("copper", k=5, ranker="bm25")
    assert all("_closest" not in h.__dict__ and h.passage_section is None for h in bm.hits)


def test_the_zero_hit_fallback_carries_it_too(hashed: sieve.Index) -> None:
    r = hashed.search("copper AND nosuchword", k=5, ranker="dense")
    assert r.fallback and r.hits
    for h in r.hits:
        assert h.passage_section == _closest_by_hand(hashed, h.doc, r.text)


def test_a_hit_pickles_with_its_section(hashed: sieve.Index) -> None:
    import pickle

    h = hashed.search("copper", k=3, ranker="dense").hits[0]
    got = pickle.loads(pickle.dumps(h))
    assert got.passage_section == h.passage_section is not None


def test_document_embeddings_still_open_and_search(tmp_path: Path) -> None:
    """An index embedded by the document unit alone (the default before passages) searches as
    before: its hits point at no passage and its cards say nothing of one."""
    ix = sieve.build_index(_docs(20), tmp_path / "ix")
    out = store.embed(ix, model="hash-64", encoder=HashEncoder(), unit="document")
    assert out.name == "hash-64"
    reopened = sieve.open_index(tmp_path / "ix")
    reopened.use_dense(model="hash-64", encoder=HashEncoder())
    assert reopened.searcher.dense.unit == "document"
    r = reopened.search("copper", k=5, ranker="hybrid")
    assert r.hits and all(h.passage_section is None for h in r.hits)
    text = Toolset(reopened, config=ToolConfig(ranker="dense")).call("search", {"query": "copper"}).text
    assert "[1]" in text and "closest passage" not in text


# ---------------------------------------------------------------- what a reader sees (real model)

FILLER = " ".join(["The committee met again to review routine budget paperwork and approve the minutes."] * 40)
OTTERS = [
    {"id": "long", "title": "Town records", "sections": [
        {"heading": "Minutes", "text": FILLER},
        {"heading": "Wildlife", "text": "A family of otters built a den under the old stone bridge."},
        {"heading": "Roads", "text": "The council will resurface the high street in spring."}]},
    {"id": "fish", "title": "River notes", "text": "Trout and salmon swim upstream in the autumn."},
    {"id": "birds", "title": "Garden birds", "text": "Robins and sparrows visit the feeder every morning."},
]


@pytest.fixture(scope="module")
def otters(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("otters") / "ix"
    ix = sieve.build_index(OTTERS, path)
    store.embed(ix, unit="passage")  # the bundled model, its default backend
    ix.close()
    return path


QUESTION = "where do the otters live"


@pytest.mark.parametrize("ranker", ["dense", "hybrid"])
def test_the_card_points_at_the_passage_that_scored(otters: Path, ranker: str) -> None:
    ix = sieve.open_index(otters)
    ix.use_dense()
    h = ix.ranked_search(QUESTION, k=3, ranker=ranker).hits[0]
    assert (h.doc_id, h.passage_section) == ("long", 1)
    text = Toolset(ix, config=ToolConfig(ranker=ranker)).call("search", {"query": QUESTION}).text
    card = text.split("[1]", 1)[1].split("[2]", 1)[0]
    assert "closest passage: Wildlife" in card
    assert "» Wildlife: A family of otters" in card  # the snippet quotes that section


def test_served_tools_show_it(otters: Path) -> None:
    """The MCP server's tools are the Service's: a dense search there points at the section."""
    ix = sieve.open_index(otters)
    ix.use_dense()
    service = Service({"town": ix}, config=ToolConfig(ranker="dense"))
    r = service.call(service.new_session(), "search", {"query": "otters OR den OR bridge"})
    assert r.ok and "closest passage: Wildlife" in r.text.split("[2]", 1)[0]


def test_cli_json_names_it(otters: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "sieve", "search", str(otters), "otters OR den", "--ranker", "dense", "--json"],
        capture_output=True, text=True,
    )
    assert p.returncode == 0, p.stderr
    first = json.loads(p.stdout)["hits"][0]
    assert first["id"] == "long" and first["closest_passage"] == "Wildlife"
    assert first["snippet"]["section"] == "Wildlife"


# ---------------------------------------------------------------- the default unit


def test_the_default_unit_is_the_measured_one(tmp_path: Path) -> None:
    """`sieve embed` and `store.embed` make document vectors unless told (passages ranked no
    better on the NAME-line task at 18 times the rows: docs/ranking.md); the help says so."""
    assert units.DEFAULT_UNIT == "document"
    ix = sieve.build_index(_docs(6), tmp_path / "ix")
    assert store.embed(ix, model="hash-64", encoder=HashEncoder()).name == "hash-64"
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in OTTERS))
    sieve.build_index(corpus, tmp_path / "cli").close()
    p = subprocess.run([sys.executable, "-m", "sieve", "embed", str(tmp_path / "cli"), "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["unit"] == "document" and got["vectors"] == 3 and got["embeddings"].endswith("all-MiniLM-L6-v2")
    helped = subprocess.run([sys.executable, "-m", "sieve", "embed", "--help"], capture_output=True, text=True).stdout
    assert "default document" in " ".join(helped.split())
