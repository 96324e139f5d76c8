"""Test helpers for apps built on this package: a scripted chat model, no model, no network.

:class:`ScriptedChatModel` supports ``bind_tools`` (so it can drive the memory graph) and
records every prompt it receives, so a test can assert what the model was shown. Pair it with
:class:`~langchain_tiered_memory.HashingEmbeddings` and the in-memory stores for unit tests
that need neither Redis nor a model:

Example:
    >>> from langchain_core.messages import AIMessage
    >>> from langchain_tiered_memory.testing import ScriptedChatModel
    >>> model = ScriptedChatModel(replies=["Hello, Alice!"])
    >>> model.invoke("Hi, I am Alice.").content
    'Hello, Alice!'
    >>> model.prompts[0][0].content
    'Hi, I am Alice.'
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

__all__ = ["ScriptedChatModel"]


class ScriptedChatModel(BaseChatModel):
    """Replies with a fixed script, one entry per call; records the prompts it received.

    An entry is an ``AIMessage`` (e.g. with ``tool_calls``), a string, an exception (raised,
    to play a failing provider), or a function of the prompt returning an answer. When the
    script runs out, the last entry repeats.

    ``bind_tools`` returns a binding (like a provider model) rather than changing the model,
    so one model can serve several bindings (the agent's tools, a forced ``tool_choice``,
    the summarizer's ``SummaryItems``). ``bindings[i]`` records the tool names and
    ``tool_choice`` that call ``i`` was made with (``{}`` for an unbound call).

    Example:
        >>> model = ScriptedChatModel(replies=["Hello!"])
        >>> model.invoke("hi").content
        'Hello!'
        >>> model.prompts[0][0].content
        'hi'

    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")  # typos fail

    replies: list[Any] = Field(default_factory=list)
    prompts: list[list[BaseMessage]] = Field(default_factory=list)
    bindings: list[dict[str, Any]] = Field(default_factory=list)
    _cursor: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        with self._lock:
            self.prompts.append(list(messages))
            self.bindings.append(
                {k: kwargs[k] for k in ("tool_names", "tool_choice") if kwargs.get(k) is not None}
            )
            if not self.replies:
                entry: Any = "OK."
            else:
                entry = self.replies[min(self._cursor, len(self.replies) - 1)]
                self._cursor += 1
        if isinstance(entry, BaseException):
            raise entry
        if callable(entry) and not isinstance(entry, AIMessage):
            entry = entry(list(messages))
        message = entry if isinstance(entry, AIMessage) else AIMessage(content=str(entry))
        # A fresh copy per call: the graph state must not share message objects.
        return ChatResult(generations=[ChatGeneration(message=message.model_copy(deep=True))])

    def bind_tools(  # type: ignore[override]
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind the tools (recorded per call in :attr:`bindings`); the script decides the calls."""
        names = [convert_to_openai_tool(t)["function"]["name"] for t in tools]
        return self.bind(tool_names=names, tool_choice=tool_choice, **kwargs)
