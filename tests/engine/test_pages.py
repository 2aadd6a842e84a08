"""The writer's large temporaries on ordinary pages: numpy's huge-page advice is off while a
segment is sorted and written, and exactly as it was afterwards, however blocks nest or overlap."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

import sieve
from sieve.corpus.demo import stdlib_documents
from sieve.engine.segment import pages, runs

get_advice = np._core.multiarray._get_madvise_hugepage
set_advice = np._core.multiarray._set_madvise_hugepage


@pytest.fixture(params=[True, False], ids=["advice-on", "advice-off"])
def advice(request: pytest.FixtureRequest) -> bool:
    before = set_advice(request.param)
    yield request.param
    set_advice(before)


def test_blocks_nest_and_restore(advice: bool) -> None:
    with pages.small_pages():
        assert get_advice() is False
        with pages.small_pages():
            assert get_advice() is False
        assert get_advice() is False  # the outer block still holds it off
    assert get_advice() is advice


def test_overlapping_blocks_in_threads_restore_the_setting(advice: bool) -> None:
    inside, release = threading.Barrier(3), threading.Event()
    seen: list[bool] = []

    def work() -> None:
        with pages.small_pages():
            inside.wait()
            release.wait()
            seen.append(get_advice())

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert get_advice() is False
    release.set()
    for t in threads:
        t.join()
    assert seen == [False, False]
    assert get_advice() is advice


def test_an_error_inside_restores_the_setting(advice: bool) -> None:
    with pytest.raises(RuntimeError):
        with pages.small_pages():
            raise RuntimeError("stop")
    assert get_advice() is advice


def test_a_build_sorts_without_the_advice_and_leaves_it_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, advice: bool) -> None:
    during: list[bool] = []
    real = runs.by_key

    def spy(*args: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        during.append(get_advice())
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr("sieve.engine.segment.writer.by_key", spy)
    index = sieve.build_index(list(stdlib_documents())[:50], tmp_path / "idx")
    assert len(index) == 50
    assert during == [False]
    assert get_advice() is advice
