"""The import paths of modules that moved into folders, kept working.

Issue 35 put the modules into folders by part (``agent/``, ``language/``,
``summarization/``, ``backend/``, ``persistence/``). An app that imported a module by its
old path (``langchain_tiered_memory.graph``, ``langchain_tiered_memory.checkpoint``) still
gets it: the finder below answers for the old name with the very module object of the new
one, so ``isinstance`` checks, ``mock.patch`` targets and pickled classes agree whichever
name is used. The stable API is the package's ``__all__`` and the folders' modules;
docs/development.md lists both names of every moved module.

Example:
    >>> import langchain_tiered_memory.graph as old
    >>> import langchain_tiered_memory.agent.graph as new
    >>> old is new
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

PACKAGE = "langchain_tiered_memory"

# old name (under the package) -> new name; a name under an old package moves with it
MOVED: dict[str, str] = {
    "attribution": "language.attribution",
    "capture": "agent.capture",
    "checkpoint": "persistence.checkpoint",
    "cli.fake_model": "testing.fake_model",
    "context": "agent.context",
    "graph": "agent.graph",
    "languages": "language.rules",
    "agent.messages": "persistence.messages",
    "backend.opening": "memory.opening",
    "messages": "persistence.messages",
    "middleware": "agent.middleware",
    "nodes": "agent.nodes",
    "opening": "memory.opening",
    "policy": "agent.policy",
    "prompt": "agent.prompt",
    "queue": "stores.queue",
    "reconcile": "summarization.reconcile",
    "store": "persistence.store",
    "summarizer": "summarization.summarizer",
    "text": "language.text",
    "tools": "agent.tools",
    "worker": "summarization.worker",
}


def new_name(old: str) -> str | None:
    """The module's current name for an old one, or ``None`` if ``old`` did not move.

    Example:
        >>> new_name("langchain_tiered_memory.checkpoint.saver")
        'langchain_tiered_memory.persistence.checkpoint.saver'
        >>> new_name("langchain_tiered_memory.backend.opening")
        'langchain_tiered_memory.memory.opening'
        >>> new_name("langchain_tiered_memory.stores") is None
        True
    """
    head, dot, rest = old.partition(".")
    if head != PACKAGE or not dot:
        return None
    parts = rest.split(".")
    for n in (2, 1):  # a module moved out of a folder first ("backend.opening")
        target = MOVED.get(".".join(parts[:n]))
        if target is not None and len(parts) >= n:
            tail = ".".join(parts[n:])
            return f"{PACKAGE}.{target}" + (f".{tail}" if tail else "")
    return None


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module name with the module imported under its new name."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec whose loader hands out the moved module (``None``: not ours)."""
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, origin=new)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The module under its new name: the same object, not a copy."""
        assert spec.origin is not None  # find_spec always sets it
        return importlib.import_module(spec.origin)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module ran when it was imported under its new name."""


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): before the path finder, which
    would otherwise load a second copy of ``checkpoint.saver`` from the moved folder.
    """
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
