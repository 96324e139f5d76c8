"""Fake chat models for the summarizer: scripted answers, no network."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field


def summary_call(items: Sequence[Any]) -> AIMessage:
    """An answer calling the ``SummaryItems`` tool with ``items``."""
    return AIMessage(
        content="",
        tool_calls=[{"name": "SummaryItems", "args": {"items": list(items)}, "id": "call-1"}],
    )


def user_lines(messages: Sequence[BaseMessage]) -> list[str]:
    """The ``User: ...`` lines of the transcript the summarizer sent."""
    request = messages[-1].text
    return [line[len("User: ") :] for line in request.splitlines() if line.startswith("User: ")]


def echo_facts(messages: Sequence[BaseMessage]) -> AIMessage:
    """One item per user line ("The user said: ..."); a line containing FAIL raises."""
    lines = user_lines(messages)
    if any("FAIL" in line for line in lines):
        raise RuntimeError("provider error (scripted)")
    return summary_call([f"The user said: {line}" for line in lines])


class ScriptedChatModel(BaseChatModel):
    """Answers with ``responses`` in turn (the last one repeats).

    An answer is an ``AIMessage``, an exception (raised) or a callable taking the request
    messages and returning an ``AIMessage`` (or raising).

    Records every request (``requests``) and the tool binding it was called with
    (``bindings``), and supports ``bind_tools`` like a real provider model.
    """

    responses: list[Any]
    requests: list[list[BaseMessage]] = Field(default_factory=list)
    bindings: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.requests.append(list(messages))
        self.bindings.append(kwargs)
        answer = self.responses[min(len(self.requests), len(self.responses)) - 1]
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            answer = answer(messages)
        return ChatResult(generations=[ChatGeneration(message=answer)])

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(
            tools=[convert_to_openai_tool(t) for t in tools], tool_choice=tool_choice, **kwargs
        )
