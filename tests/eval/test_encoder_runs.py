"""The encoder in evaluation runs: `eval build --embed-model`, `eval run` recording (and refusing)
the model, exact dense search by default, and `eval grid` across several encoders (Figure 5), all
through the CLI against the scripted loopback server, with the MiniLM and a second real encoder
made offline from its files (tests/support/encoders.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("sentence_transformers", reason="needs the dense extra: pip install torch==2.13.0 && pip install -e '.[dense]'")

from encoders import derived_model
from loopback import LoopbackServer
from test_conditions_run import collection, records, researcher  # noqa: F401  (a fixture)

from sieve.cli.main import main
from sieve.errors import InvalidArgumentError
from sieve.eval.grid import Cell, plan

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def test_several_encoders_multiply_the_dense_cells() -> None:
    names = [c.name for c in plan(["sieve", "search-visit"], ["bm25", "dense"], embed_models=["BAAI/bge-small-en-v1.5", "BAAI/bge-base-en-v1.5"])]
    assert names == ["sieve-bm25", "sieve-dense@bge-small-en-v1.5", "sieve-dense@bge-base-en-v1.5",
                     "search-visit-bm25", "search-visit-dense@bge-small-en-v1.5", "search-visit-dense@bge-base-en-v1.5"]
    assert [c.name for c in plan(["sieve"], ["dense"], embed_models=["BAAI/bge-base-en-v1.5"])] == ["sieve-dense"]  # one model: the run's
    assert [c.name for c in plan(["sieve"], ["bm25"], controls=True, embed_models=["a/x", "b/y"])] == [
        "sieve-bm25", "indri-control-indri", "indri-control-indri+dense@x", "indri-control-indri+dense@y"]
    with pytest.raises(InvalidArgumentError, match="short names .* must differ"):
        plan(["sieve"], ["dense"], embed_models=["one/minilm", "two/minilm"])
    with pytest.raises(InvalidArgumentError, match="sieve-bm25@x: an embedding model applies to the rankers dense, hybrid, indri\\+dense only"):
        Cell("sieve", "bm25", embed_model="a/x").check()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return derived_model(tmp_path_factory.mktemp("models") / "minilm-cls-256", pooling="cls", dim=256)


def _summary(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())


def test_build_run_and_report_name_the_encoder(collection: Path, tmp_path: Path, small: Path,  # noqa: F811
                                               capsys: pytest.CaptureFixture[str]) -> None:
    ix = tmp_path / "ix"
    assert main(["eval", "build", str(collection), str(ix), "--embed-model", str(small)]) == 0
    for twin in ("structured", "flat"):
        assert [p.name for p in (ix / twin / "embeddings").iterdir()] == [str(small).strip("/").replace("/", "--")]
    base = ["eval", "run", "--collection", str(collection), "--index-dir", str(ix), "--condition", "sieve"]
    with LoopbackServer(researcher) as srv:
        agent = ["--llm-url", srv.url, "--model", "scripted"]
        assert main(base + ["--out", str(tmp_path / "dense"), "--ranker", "dense"] + agent) == 0  # no model named: the one the index holds
        assert main(base + ["--out", str(tmp_path / "bm25"), "--ranker", "bm25"] + agent) == 0
        capsys.readouterr()
        asked = len(srv.requests)
        assert main(base + ["--out", str(tmp_path / "other"), "--ranker", "hybrid", "--embed-model", MINILM] + agent) == 1
        assert len(srv.requests) == asked  # refused before any episode
    err = capsys.readouterr().err
    assert f"holds embeddings of {small} (256 dimensions), not of {MINILM}" in err
    enc = _summary(tmp_path / "dense")["encoder"]
    assert (enc["model"], enc["dim"], enc["unit"], enc["search"]) == (str(small), 256, "document", "exact")
    assert len(enc["model_fingerprint"]) == 16
    assert _summary(tmp_path / "dense")["accuracy"] == 1.0
    assert _summary(tmp_path / "bm25")["encoder"] is None
    assert main(["eval", "report", str(tmp_path / "bm25"), str(tmp_path / "dense"), "--out", str(tmp_path / "report")]) == 0
    table = (tmp_path / "report" / "report.md").read_text()
    header = next(line for line in table.splitlines() if line.startswith("| Family"))
    assert "| Condition | Ranker | Encoder |" in header  # Table 1
    assert "| dense | minilm-cls-256 |" in table and "| bm25 | – |" in table


def test_eval_searches_exactly_unless_asked(collection: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    from sieve.dense import store

    ix = tmp_path / "ix"
    assert main(["eval", "build", str(collection), str(ix), "--embed"]) == 0
    monkeypatch.setattr(store, "EXACT_MAX", 0)  # approximate search would read the graph for any admitted set...
    graph = next((ix / "structured" / "embeddings").iterdir()) / "hnsw.bin"
    raw = bytearray(graph.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    graph.write_bytes(bytes(raw))  # ...and the graph is damaged
    base = ["eval", "run", "--collection", str(collection), "--index-dir", str(ix), "--condition", "search-visit", "--ranker", "dense"]
    with LoopbackServer(researcher) as srv:
        agent = ["--llm-url", srv.url, "--model", "scripted"]
        assert main(base + ["--out", str(tmp_path / "exact")] + agent) == 0
        assert main(base + ["--out", str(tmp_path / "approx"), "--dense-search", "approximate", "--max-steps", "4"] + agent) == 0
    s = _summary(tmp_path / "exact")
    assert (s["accuracy"], s["crashed"], s["encoder"]["search"], s["encoder"]["model"]) == (1.0, 0, "exact", MINILM)
    assert not any("hnsw.bin" in str(t["result"]) for r in records(tmp_path / "exact") for t in r["tool_calls"])
    approx = _summary(tmp_path / "approx")
    assert approx["accuracy"] == 0.0 and approx["encoder"]["search"] == "approximate"
    # The approximate search read the damaged graph, and the model was told so.
    assert all(any("hnsw.bin" in str(t["result"]) for t in r["tool_calls"]) for r in records(tmp_path / "approx"))


def test_the_grid_across_encoders(collection: Path, tmp_path: Path, small: Path) -> None:  # noqa: F811
    out = tmp_path / "grid"
    argv = ["eval", "grid", "--collection", str(collection), "--out", str(out), "--index-dir", str(tmp_path / "ix"), "--conditions", "sieve",
            "--rankers", "bm25,dense", "--embed-model", MINILM, "--embed-model", str(small)]
    with LoopbackServer(researcher) as srv:
        assert main(argv + ["--llm-url", srv.url, "--model", "scripted"]) == 0
    cells = json.loads((out / "grid.json").read_text())["cells"]
    assert [(c["run"], c["embed_model"]) for c in cells] == [
        ("sieve-bm25", None), ("sieve-dense@all-MiniLM-L6-v2", MINILM), ("sieve-dense@minilm-cls-256", str(small))]
    assert len(list((tmp_path / "ix" / "structured" / "embeddings").iterdir())) == 2  # side by side in one index
    encoders = {c["run"]: _summary(out / c["run"])["encoder"] for c in cells}
    assert encoders["sieve-bm25"] is None
    assert (encoders["sieve-dense@all-MiniLM-L6-v2"]["model"], encoders["sieve-dense@all-MiniLM-L6-v2"]["dim"]) == (MINILM, 384)
    assert (encoders["sieve-dense@minilm-cls-256"]["model"], encoders["sieve-dense@minilm-cls-256"]["dim"]) == (str(small), 256)
    report = (out / "report" / "report.md").read_text()
    assert "| dense | all-MiniLM-L6-v2 (default) |" in report and "| dense | minilm-cls-256 |" in report


def test_eval_runs_over_passages_point_at_the_passage_that_scored(collection: Path, tmp_path: Path) -> None:  # noqa: F811
    """`eval build --embed-unit passage`: the run ranks by passages, records the unit, and the
    agent's cards name the section of each hit's closest passage."""
    ix = tmp_path / "ix"
    assert main(["eval", "build", str(collection), str(ix), "--embed-unit", "passage"]) == 0
    for twin in ("structured", "flat"):
        assert [p.name for p in (ix / twin / "embeddings").iterdir()] == [MINILM.replace("/", "--") + "@passages"]
    base = ["eval", "run", "--collection", str(collection), "--index-dir", str(ix), "--condition", "sieve"]
    with LoopbackServer(researcher) as srv:
        assert main(base + ["--out", str(tmp_path / "dense"), "--ranker", "dense", "--llm-url", srv.url, "--model", "scripted"]) == 0
    assert _summary(tmp_path / "dense")["encoder"]["unit"] == "passage"
    assert "closest passage: " in (tmp_path / "dense" / "trajectories.jsonl").read_text()
