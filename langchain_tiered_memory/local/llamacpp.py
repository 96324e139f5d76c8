"""``ChatLocalLlama``: a GGUF model in-process through llama.cpp (``llama-cpp-python``).

The faster of the two local backends (see ``bench/local_models.py``), but
``llama-cpp-python`` compiles llama.cpp when installed (8-15 minutes on 2 cores), so it is
the opt-in ``[llama-cpp]`` extra; :class:`~langchain_tiered_memory.local.ChatLocalTransformers`
runs the same file with nothing to compile.

Example:
    >>> from langchain_tiered_memory.local import ChatLocalLlama
    >>> model = ChatLocalLlama(seed=0)  # nothing is loaded until the first call
    >>> model.invoke("Say hello.").content  # doctest: +SKIP
    'Hello! How can I help you today?'
"""

from __future__ import annotations

from typing import Any, ClassVar

from langchain_tiered_memory.local._chat import LocalChatModel, is_empty_reply
from langchain_tiered_memory.local._smollm2 import LLAMA_CPP_EXTRA_HINT

__all__ = ["ChatLocalLlama"]


def _import_llama() -> Any:
    """Import ``llama_cpp.Llama``, with an install hint when it is missing."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the environment
        msg = (
            "ChatLocalLlama needs `llama-cpp-python`, which is not installed. Install it "
            f"with: {LLAMA_CPP_EXTRA_HINT} (it compiles llama.cpp once), or use "
            "ChatLocalTransformers, which needs no compiler."
        )
        raise ImportError(msg) from exc
    return Llama


def _mark_safe(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Wrap message text and tool-call arguments as ``markupsafe.Markup``.

    llama-cpp-python renders the ``chatml-function-calling`` prompt with Jinja autoescaping
    on, so ``I'm "Bob"`` would reach the model as ``I&#39;m &#34;Bob&#34;`` (and the model
    then imitates the entities). ``Markup`` strings are not escaped; they are plain ``str``
    subclasses everywhere else. ``markupsafe`` comes with ``jinja2``, a dependency of
    ``llama-cpp-python``.
    """
    from markupsafe import Markup

    safe: list[dict[str, Any]] = []
    for message in messages:
        copy = dict(message)
        if isinstance(copy.get("content"), str):
            copy["content"] = Markup(copy["content"])
        if copy.get("tool_calls"):
            calls = []
            for call in copy["tool_calls"]:
                function = dict(call["function"])
                if isinstance(function.get("arguments"), str):
                    function["arguments"] = Markup(function["arguments"])
                calls.append({**call, "function": function})
            copy["tool_calls"] = calls
        safe.append(copy)
    return safe


class ChatLocalLlama(LocalChatModel):
    """A chat model running a GGUF file in-process through ``llama-cpp-python``.

    Tools use llama.cpp's ``chatml-function-calling`` format: a tool forced by
    ``tool_choice`` is generated under a JSON-schema grammar. A ``llama_cpp.Llama`` must not
    be used from two threads at once, so generation is serialized. All options are
    keyword-only; see :class:`~langchain_tiered_memory.local.LocalChatModel` for the shared
    ones.

    Attributes:
        chat_format: llama.cpp chat format; keep the default for tool calling.

    Example:
        >>> model = ChatLocalLlama(seed=0)  # no I/O yet; used as ChatLocalTransformers is
        >>> model.bind_tools([], tool_choice=None) is not None
        True
    """

    chat_format: str = "chatml-function-calling"

    provider: ClassVar[str] = "llama-cpp"

    @property
    def _llm_type(self) -> str:
        return "local-llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {**super()._identifying_params, "chat_format": self.chat_format}

    def _load_backend(self, path: str) -> Any:
        llama_cls = _import_llama()
        kwargs: dict[str, Any] = {
            "model_path": path,
            "n_ctx": self.n_ctx,
            "chat_format": self.chat_format,
            "verbose": self.verbose,
        }
        if self.n_threads is not None:
            kwargs["n_threads"] = self.n_threads
        if self.seed is not None:
            kwargs["seed"] = self.seed
        kwargs.update(self.model_kwargs)
        return llama_cls(**kwargs)

    def _chat_completion(
        self, backend: Any, messages: list[dict[str, Any]], params: dict[str, Any]
    ) -> dict[str, Any]:
        if self.chat_format == "chatml-function-calling":
            messages = _mark_safe(messages)
        response: dict[str, Any] = backend.create_chat_completion(messages=messages, **params)
        if params.get("tool_choice") == "auto" and is_empty_reply(response):
            # llama-cpp-python's "auto" mode first picks a call or a message under a
            # grammar, but then samples the message under the grammar meant for a
            # follow-up tool call, which allows only "<|im_end|>": a message always
            # comes back empty. When it picked a message, generate it without tools.
            plain = {k: v for k, v in params.items() if k not in ("tools", "tool_choice")}
            response = backend.create_chat_completion(messages=messages, **plain)
        return response
