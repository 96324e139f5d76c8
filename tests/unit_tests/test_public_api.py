"""The public surface: exactly these names, each importable, each async twin matching."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

import langchain_tiered_memory
import langchain_tiered_memory.persistence.checkpoint
import langchain_tiered_memory.persistence.store
import langchain_tiered_memory.stores
from langchain_tiered_memory import TieredMemory, errors

PACKAGE_ALL = [
    "AsyncRedisSaver",
    "AsyncRedisStore",
    "ConcurrentEditError",
    "ConcurrentReembedError",
    "CorruptMemoryError",
    "DataFormatError",
    "DefaultTags",
    "EmbeddedRedis",
    "EmbeddingsMismatchError",
    "HashingEmbeddings",
    "HistoryStore",
    "InMemoryHistoryStore",
    "InMemorySummaryStore",
    "InMemoryTagStore",
    "InvalidArgumentError",
    "InvalidMessageError",
    "InvalidSummaryError",
    "InvalidTagError",
    "InvalidUserIdError",
    "LocalMiniLMEmbeddings",
    "MemoryBackendError",
    "MemoryContext",
    "MemorySnapshot",
    "MemoryState",
    "MissingUserIdError",
    "MultilingualE5Embeddings",
    "OnnxMiniLMEmbeddings",
    "RedisConnection",
    "RedisHistoryStore",
    "RedisSaver",
    "RedisStore",
    "RedisSummaryStore",
    "RedisTagStore",
    "RetrievalConfig",
    "SentenceTransformerEmbeddings",
    "SummarizationError",
    "SummarizeTool",
    "SummaryLimitError",
    "SummaryRetriever",
    "SummaryStore",
    "TagStore",
    "ThreadOwnershipError",
    "TieredMemory",
    "TieredMemoryError",
    "TieredMemoryMiddleware",
    "UnguardedCheckpointerError",
    "UnsafeBindError",
    "UnsupportedOperationError",
    "UserChatMessageHistory",
    "UserTagTool",
    "WatermarkConflict",
    "__version__",
    "create_memory_graph",
]

STORES_ALL = [
    "DefaultTags",
    "HistoryStore",
    "InMemoryHistoryStore",
    "InMemorySummaryStore",
    "InMemoryTagStore",
    "RedisHistoryStore",
    "RedisSummaryStore",
    "RedisTagStore",
    "SummaryRetriever",
    "SummaryStore",
    "TagStore",
    "UserChatMessageHistory",
]

CHECKPOINT_ALL = [
    "AsyncRedisSaver",
    "BaseRedisSaver",
    "CheckpointTTL",
    "OwnedSaver",
    "RedisSaver",
    "is_guarded",
]
STORE_ALL = ["AsyncRedisStore", "BaseRedisStore", "RedisStore"]

# The facade of issue 2: each of these has an ``a``-prefixed twin of the same signature.
FACADE_METHODS = [
    "load_context",
    "add_session_log",
    "get_user_tag",
    "get_user_tags",
    "set_user_tags",
    "add_summaries",
    "recall_summaries",
    "load",
    "summarize_history",
    "pending_users",
    "summarize_pending",
    "forget_user",
    "export_user",
    "reembed",
    "touch_user",
    "close",
]


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        (langchain_tiered_memory, PACKAGE_ALL),
        (langchain_tiered_memory.stores, STORES_ALL),
        (langchain_tiered_memory.persistence.checkpoint, CHECKPOINT_ALL),
        (langchain_tiered_memory.persistence.store, STORE_ALL),
    ],
    ids=["package", "stores", "checkpoint", "store"],
)
def test_all_is_pinned_and_resolves(module: object, expected: list[str]) -> None:
    exported = module.__all__  # type: ignore[attr-defined]
    assert sorted(exported) == expected
    assert len(set(exported)) == len(exported)
    for name in exported:
        assert getattr(module, name) is not None, name


def test_star_import_gives_exactly_all() -> None:
    namespace: dict[str, object] = {}
    exec("from langchain_tiered_memory import *", namespace)
    namespace.pop("__builtins__")
    assert sorted(namespace) == PACKAGE_ALL


def test_stores_reexports_are_the_package_objects() -> None:
    for name in STORES_ALL:
        assert getattr(langchain_tiered_memory, name) is getattr(
            langchain_tiered_memory.stores, name
        )


def test_version_is_the_distribution_version() -> None:
    from importlib.metadata import version

    assert langchain_tiered_memory.__version__ == version("langchain-tiered-memory")


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (errors.InvalidUserIdError, ValueError),
        (errors.InvalidTagError, ValueError),
        (errors.InvalidSummaryError, ValueError),
        (errors.InvalidMessageError, ValueError),
        (errors.InvalidArgumentError, ValueError),
        (errors.MissingUserIdError, ValueError),
        (errors.MemoryBackendError, ConnectionError),
        (errors.SummarizationError, RuntimeError),
        (errors.WatermarkConflict, RuntimeError),
        (errors.ThreadOwnershipError, PermissionError),
        (errors.UnguardedCheckpointerError, TypeError),
        (errors.ConcurrentReembedError, RuntimeError),
        (errors.ConcurrentEditError, RuntimeError),
        (errors.UnsafeBindError, ValueError),
        (errors.UnsupportedOperationError, ValueError),
        (errors.CorruptMemoryError, ValueError),
        (errors.DataFormatError, RuntimeError),
        (errors.SummaryLimitError, ValueError),
    ],
)
def test_errors_subclass_the_base_and_their_builtin(error: type, builtin: type) -> None:
    assert issubclass(error, errors.TieredMemoryError)
    assert issubclass(error, builtin)
    assert getattr(langchain_tiered_memory, error.__name__) is error


@pytest.mark.parametrize("name", FACADE_METHODS)
def test_facade_method_has_async_twin_with_same_signature(name: str) -> None:
    sync = getattr(TieredMemory, name)
    twin = getattr(TieredMemory, "a" + name)
    assert not inspect.iscoroutinefunction(sync)
    assert inspect.iscoroutinefunction(twin)
    assert list(inspect.signature(sync).parameters.values()) == list(
        inspect.signature(twin).parameters.values()
    )


def test_the_package_ships_typing_and_its_license() -> None:
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")
    package = Path(langchain_tiered_memory.__file__).parent
    assert (package / "py.typed").is_file()  # users' type checkers read our annotations
    root = package.parent
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and "MIT License" in (root / "LICENSE").read_text()
    assert "Typing :: Typed" in project["classifiers"]


def test_every_public_name_has_a_lazy_home() -> None:
    lazy = langchain_tiered_memory._MODULES
    assert sorted(lazy) == sorted(set(PACKAGE_ALL) - {"__version__"})
    for name, module in lazy.items():
        assert getattr(importlib.import_module(module), name) is getattr(
            langchain_tiered_memory, name
        )
    assert dir(langchain_tiered_memory) == sorted(PACKAGE_ALL)
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        langchain_tiered_memory.Nope  # noqa: B018


def test_importing_the_package_loads_no_heavy_dependency() -> None:
    code = (
        "import sys, langchain_tiered_memory\n"
        "heavy = ['faiss', 'redis', 'langgraph', 'numpy', 'langchain_core.language_models']\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"


def test_old_import_paths_give_the_moved_modules_themselves() -> None:
    """Modules moved into folders (issue 35) keep their old paths: the same object, so
    patching or isinstance through either name agrees; a submodule moves with its package."""
    from langchain_tiered_memory._moved import MOVED

    code = (
        "import importlib, sys\n"
        f"moved = {MOVED!r}\n"
        "for old, new in moved.items():\n"
        "    a = importlib.import_module('langchain_tiered_memory.' + old)\n"
        "    b = importlib.import_module('langchain_tiered_memory.' + new)\n"
        "    assert a is b, old\n"
        "from langchain_tiered_memory.checkpoint.saver import RedisSaver\n"
        "from langchain_tiered_memory.persistence.checkpoint import RedisSaver as R\n"
        "assert RedisSaver is R\n"
        "copies = [m for m in sys.modules.values()\n"
        "          if getattr(m, '__name__', '').endswith('checkpoint.saver')]\n"
        "assert len({id(m) for m in copies}) == 1, copies  # one module, two names\n"
        "from langchain_tiered_memory.graph import create_memory_graph\n"
        "from langchain_tiered_memory.summarization import Summarization\n"
        "assert Summarization.__module__.endswith('summarization.jobs')\n"
        "print('ok')\n"
    )
    out = subprocess.run(  # a fresh interpreter: no module imported under its new name yet
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "ok", out.stderr
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("langchain_tiered_memory.graph_that_never_was")


def test_the_docs_list_every_moved_module() -> None:
    from pathlib import Path

    from langchain_tiered_memory._moved import MOVED

    docs = (Path(__file__).parents[2] / "docs" / "development.md").read_text(encoding="utf-8")
    table = docs[docs.index("## Old import paths") :]
    for old in MOVED:
        assert f"`{old}`" in table, old
