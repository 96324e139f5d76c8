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
