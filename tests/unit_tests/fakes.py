"""Fake chat models for the summarizer: scripted answers, no network."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from langchain_tiered_memory.testing import ScriptedChatModel as _PackageScriptedChatModel


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


class ScriptedChatModel(_PackageScriptedChatModel):
    """The package's scripted model under this suite's names: ``responses`` in,
    ``requests`` recorded."""

    def __init__(self, *, responses: Sequence[Any], **kwargs: Any) -> None:
        super().__init__(replies=list(responses), **kwargs)

    @property
    def requests(self) -> list[list[BaseMessage]]:
        return self.prompts
