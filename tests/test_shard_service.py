"""A sharded index served by Ray actors (sieve.index.shard_service) on a local Ray cluster (this machine
only) answers exactly as one index over the same corpus, and a shard that is gone is an error,
never a partial answer passed off as complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve import (BQLLimitError, BQLSyntaxError, ClusterError, DeadlineExceededError, InvalidArgumentError, Limits, UnknownDocumentError,
                   build_index, open_index)
from sieve.cli.main import main
from sieve.index.cluster import connect
from sieve.corpus.demo import stdlib_documents
from sieve.serve.service import Service
from sieve.index.shard_service import open_ray_index
from sieve.tools.toolset import Toolset

sys.path.insert(0, str(Path(__file__).parent / "engine"))
from test_match_oracle import HYPOTHESIS, _Draws, gen_corpus, gen_tree, printed_query  # noqa: E402
from test_shards import stdlib_queries  # noqa: E402
from listening import descendants, listeners  # noqa: E402


def seen(index: Any, query: str, k: int) -> tuple:
    r = index.search(query, k=k)
    if hasattr(index, "count"):
        assert index.count(query) == r.count
    return (index.match(query).ids, r.query, r.count, r.fallback, r.missing, r.diagnosis, r.terms,
            [(h.doc_id, h.fields, h.sections) for h in r.hits], [h.score for h in r.hits])


def assert_same(one: Any, served: Any, queries: list[str], k: int = 10) -> None:
    for q in queries:
        a, b = seen(one, q, k), seen(served, q, k)
        assert a[:-1] == b[:-1], q
        assert b[-1] == pytest.approx(a[-1], rel=1e-9, abs=1e-12), q


@pytest.fixture(scope="module")
def ray_cluster() -> Any:
    os.environ.setdefault("SIEVE_RAY_CPUS", "2")
    return connect("local")


@pytest.fixture(scope="module")
def pair(ray_cluster: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("served")
    docs = list(stdlib_documents(limit=400))
    one = build_index(docs, root / "one")
    build_index(docs, root / "four", shards=4)
    served = open_ray_index(root / "four", "local")
    yield one, served
    served.close()


def test_four_shards_over_ray_answer_as_one_index(pair: Any) -> None:
    one, served = pair
    assert len(served) == len(one) and served.shards == 4
    queries = stdlib_queries(one, 250, seed=11) + ["zzqx", "zzqx OR file", "zzqx AND file", "NOT file", "the"]
    assert_same(one, served, queries, k=10)
    assert_same(one, served, queries[:25], k=300)


def test_the_private_cluster_listens_on_loopback_only(pair: Any) -> None:
    # `--ray local` (sieve.index.cluster.connect("local")) with its shard servers up: every socket of this
    # process and of the Ray processes it started is on loopback, read from /proc, not from options.
    one, served = pair
    assert served.ray.get(served.actors[0].pid.remote()) > 0  # a shard server is up and answering
    found = listeners(descendants(os.getpid()))
    commands = {x.command for x in found}
    assert {"gcs_server", "raylet"} <= commands and "ray::ShardServe" in commands, [str(x) for x in found]
    assert any(x.pid == os.getpid() for x in found)  # this process's own Ray server
    assert [str(x) for x in found if not x.loopback] == []


def test_cluster_mode_says_ray_trusts_its_network(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["index", "--help"], ["search", "--help"], ["serve", "--help"], ["eval", "run", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "Ray trusts its network" in " ".join(capsys.readouterr().out.split()), argv


def test_documents_sections_and_ranked_search(pair: Any) -> None:
    one, served = pair
    for doc_id in one.match("NOT zzqx").ids[::41]:
        assert served.document(doc_id) == one.document(doc_id)
        assert served.section(doc_id, 0) == one.section(doc_id, 0)
        g = served.reader.doc_number(doc_id)
        assert served.reader.doc_id(g) == doc_id and served.reader.headings(g) == one.reader.headings(one.reader.doc_number(doc_id))
    for text in ["read a file", "json parser", "the"]:
        a, b = one.ranked_search(text, k=7), served.ranked_search(text, k=7)
        assert [h.doc_id for h in b.hits] == [h.doc_id for h in a.hits] and b.query == a.query
    with pytest.raises(UnknownDocumentError):
        served.document("no-such-doc")
    with pytest.raises(InvalidArgumentError, match="no section 99"):
        served.section(one.match("NOT zzqx").ids[0], 99)


def test_the_agents_tools_read_the_same_over_ray(pair: Any) -> None:
    one, served = pair
    tools = ["search", "fetch", "visit", "ranked_search"]
    local, remote = Toolset(one, tools), Toolset(served, tools)
    calls = [("search", {"query": "file OR json"}), ("search", {"query": "zzqx AND file"}), ("search", {"query": '"no such phrase"[title] AND os'}),
             ("fetch", {"doc_id": "json", "section": "(intro)"}), ("visit", {"doc_id": "json"}), ("fetch", {"doc_id": "nope", "section": "x"}),
             ("ranked_search", {"query": "read a file"})]
    for name, args in calls:
        assert remote.call(name, args).text == local.call(name, args).text, name


def test_the_mcp_service_over_ray_describes_and_answers_as_over_one_index(pair: Any) -> None:
    one, served = pair
    local, remote = Service({"ix": one}), Service({"ix": served})
    assert remote.instructions() == local.instructions() and remote.manual("ix") == local.manual("ix")
    assert [t.description for t in remote.tools] == [t.description for t in local.tools]
    a, b = local.new_session(), remote.new_session()
    for name, args in [("search", {"query": "json OR file", "k": 3}), ("show", {"doc": 2}), ("fetch", {"doc_id": "json", "section": "(intro)"}),
                       ("search", {"query": "zzqx AND file"})]:
        assert remote.call(b, name, args).text == local.call(a, name, args).text, name


def test_sieve_search_over_ray(pair: Any, capsys: pytest.CaptureFixture[str]) -> None:
    one, served = pair
    outputs = []
    for extra in ([], ["--ray", "local"]):
        for query in ("file OR json", "zzqx AND file"):
            assert main(["search", str(served.path), query, "-k", "4", "--json", *extra]) == 0
            got = json.loads(capsys.readouterr().out)
            got.pop("ms")
            outputs.append(got)
        assert main(["search", str(served.path), "json[title]", *extra]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[:3] == outputs[3:] and outputs[0]["hits"] and outputs[1]["diagnosis"] is not None
    assert main(["search", str(served.path), "--topics", "t.tsv", "--run", "r", "--ray", "local"]) == 1
    assert "drop --ray" in capsys.readouterr().err


def test_query_errors_come_back_as_they_are(pair: Any) -> None:
    one, served = pair
    with pytest.raises(BQLSyntaxError) as local:
        one.search("a AND (b")
    with pytest.raises(BQLSyntaxError) as remote:
        served.search("a AND (b")
    assert str(remote.value) == str(local.value)
    with pytest.raises(InvalidArgumentError, match="bm25 only"):
        served.search("file", ranker="dense")
    with pytest.raises(InvalidArgumentError, match="not a sharded index"):
        open_ray_index(one.path, "local")


def test_the_limits_on_a_query_hold_over_ray(pair: Any) -> None:
    """A query past a cap, or past its time budget, is the same error from the shards' actors."""
    one, served = pair
    phrase = '"' + " ".join(["file"] * 65) + '"'
    for index in (one, served):
        with pytest.raises(BQLLimitError, match="^phrase length limit exceeded: 65 > 64"):
            index.search(phrase)
        with pytest.raises(BQLLimitError, match="^query length limit exceeded: 2001 > 2000"):
            index.ranked_search("x" * 2_001)
    with open_ray_index(served.path, "local", limits=Limits(seconds=1e-9)) as spent:
        with pytest.raises(DeadlineExceededError, match=r"^stopped after 1e-09 s \(the time allowed for this call\)"):
            spent.search("file AND nowhere")


def test_shards_built_as_ray_tasks_and_opened_through_open_index(ray_cluster: Any, tmp_path: Path) -> None:
    docs = list(stdlib_documents(limit=150))
    local = build_index(docs, tmp_path / "local", shards=3)
    remote = build_index(docs, tmp_path / "remote", shards=3, ray="local")
    assert remote.manifest["segments"] == local.manifest["segments"]  # the same segments, files and keys
    with open_index(tmp_path / "remote", ray="local") as served:
        assert served.match("NOT zzqx").ids == local.match("NOT zzqx").ids
        assert seen(served, "file OR os", 10)[:-1] == seen(local, "file OR os", 10)[:-1]


def test_a_killed_shard_is_restarted_and_the_answer_retried(pair: Any) -> None:
    one, served = pair
    ray = served.ray
    before = seen(served, "file OR os", 10)
    victim = served.actors[2]
    pid = ray.get(victim.pid.remote())
    os.kill(pid, signal.SIGKILL)  # the process dies as a crashed node's would; Ray restarts the actor
    assert seen(served, "file OR os", 10) == before == seen(one, "file OR os", 10)[:-1] + (before[-1],)
    assert ray.get(victim.pid.remote()) != pid


def test_a_shard_gone_for_good_is_an_error_not_a_partial_answer(ray_cluster: Any, tmp_path: Path) -> None:
    docs = list(stdlib_documents(limit=60))
    build_index(docs, tmp_path / "ix", shards=3)
    served = open_ray_index(tmp_path / "ix", "local", restarts=0)
    try:
        assert served.search("file").count > 0
        served.ray.kill(served.actors[1], no_restart=True)
        time.sleep(0.5)
        with pytest.raises(ClusterError, match="no partial answer"):
            served.search("file")
        with pytest.raises(ClusterError):
            served.match("file")
    finally:
        served.close()


PLACEMENT = """
import json, os, sys
os.environ["SIEVE_RAY_CPUS"] = "1"
os.environ["SIEVE_RAY_RESOURCES"] = json.dumps({"sieve_shard_0": 1, "sieve_shard_1": 1})
from sieve.serve.service import Service
from sieve.index.shard_service import open_ray_index
with open_ray_index(sys.argv[1], "local") as served:
    infos = served._get([a.info.remote() for a in served.actors])
    print(json.dumps([i["resources"] for i in infos]))
"""


def test_each_shards_actor_asks_for_its_node_when_the_cluster_names_one(tmp_path: Path) -> None:
    # A node started with the resource sieve_shard_<j> holds shard j: its actor must land there.
    build_index(list(stdlib_documents(limit=30)), tmp_path / "ix", shards=2)
    p = subprocess.run([sys.executable, "-c", PLACEMENT, str(tmp_path / "ix")], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads(p.stdout.strip().splitlines()[-1]) == [["sieve_shard_0"], ["sieve_shard_1"]]


@given(st.composite(lambda draw: gen_corpus(_Draws(draw)))(),
       st.lists(st.composite(lambda draw: gen_tree(_Draws(draw)))(), min_size=10, max_size=10),
       st.integers(min_value=2, max_value=4))
@pytest.mark.slow
@settings(HYPOTHESIS, max_examples=5)  # each example starts its shards' actors: seconds apiece
def test_random_corpora_served_over_ray_equal_one_index(ray_cluster: Any, recs: list[dict[str, Any]], trees: list[Any], shards: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        one = build_index(recs, Path(d) / "one")
        build_index(recs, Path(d) / "sharded", shards=shards, jobs=1)
        with open_ray_index(Path(d) / "sharded", "local") as served:
            assert_same(one, served, [printed_query(t) for t in trees] + ["alpha OR beta OR gamma"], k=30)
