"""The package's default chat model, and which models get the small-model guards.

``default_chat_model`` picks ``ChatOpenAI`` when an OpenAI key or base URL is configured (which
covers any OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp's server) and a local
in-process model otherwise (:mod:`langchain_tiered_memory.local`).

Example:
    >>> from langchain_tiered_memory.chat_models import default_chat_model
    >>> model = default_chat_model()  # nothing is loaded until the first call
    >>> model.invoke("Say hello.").content  # doctest: +SKIP
    'Hello! How can I help you today?'
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableBinding

from langchain_tiered_memory.local import ChatLocalLlama, ChatLocalTransformers, LocalChatModel

__all__ = [
    "BACKEND_ENV_VAR",
    "DEFAULT_OPENAI_MODEL",
    "MODEL_ENV_VAR",
    "default_chat_model",
    "default_local_model",
    "is_small_local_model",
]

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
      whatever else is configured.

    Nothing is loaded or contacted here.

    Args:
        model: An OpenAI model name or a path to a ``.gguf`` file.

    Returns:
        The chat model.

    Raises:
        FileNotFoundError: If ``model`` is a ``.gguf`` path that does not exist.
        ValueError: If a model name is given but no OpenAI key or base URL is configured.

    Example:
        >>> import os
        >>> os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:8000/v1"
        >>> type(default_chat_model("smollm2")).__name__
        'ChatOpenAI'
        >>> del os.environ["OPENAI_BASE_URL"]
    """
    name = model or os.environ.get(MODEL_ENV_VAR) or None
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
    return default_local_model()


def is_small_local_model(model: object) -> bool:
    """Tell whether a model is a small in-process model that needs forced tag capture.

    True for the package's local models (:class:`~langchain_tiered_memory.local.LocalChatModel`)
    and langchain-community's ``ChatLlamaCpp`` (recognized by name without importing it), also
    when wrapped by ``bind``/``bind_tools``.

    Args:
        model: A chat model or a runnable binding of one.

    Returns:
        Whether the graph should force the tag tool rather than wait for the model to call it.

    Example:
        >>> is_small_local_model(ChatLocalTransformers())
        True
    """
    while isinstance(model, RunnableBinding):
        model = model.bound
    if isinstance(model, LocalChatModel):
        return True
    return type(model).__name__ == "ChatLlamaCpp"
