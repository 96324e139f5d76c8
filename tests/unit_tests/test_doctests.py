"""The examples in the package's docstrings run (those marked ``+SKIP`` need a server or model)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import langchain_tiered_memory

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(
        langchain_tiered_memory.__path__, prefix="langchain_tiered_memory."
    )
    if not info.name.endswith("__main__")  # running it is the CLI
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_every_public_entry_point_has_an_example() -> None:
    # Exceptions, protocols and plain data holders explain themselves; everything a user
    # calls or builds carries an example.
    exempt = {"MemorySnapshot", "MemoryState", "DefaultTags"}
    missing = []
    for name in langchain_tiered_memory.__all__:
        obj = getattr(langchain_tiered_memory, name)
        if (
            name.startswith("__")
            or name in exempt
            or (isinstance(obj, type) and issubclass(obj, Exception))
        ):
            continue
        if ">>>" not in (obj.__doc__ or ""):
            missing.append(name)
    assert missing == []


def test_the_redis_saver_and_store_have_examples() -> None:
    from langchain_tiered_memory.persistence import checkpoint, store

    for cls in (
        checkpoint.RedisSaver,
        checkpoint.AsyncRedisSaver,
        store.RedisStore,
        store.AsyncRedisStore,
    ):
        for name in ("__doc__", "from_url"):
            doc = cls.__doc__ if name == "__doc__" else getattr(cls, name).__doc__
            assert ">>>" in (doc or ""), f"{cls.__name__}.{name}"
