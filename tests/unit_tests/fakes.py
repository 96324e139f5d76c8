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


class ReplayChatModel(_PackageScriptedChatModel):
    """Answers with a real model's recorded answers (``bench/real_model_turns.py
    --record``), one turn at a time: :meth:`play` loads a turn's recorded calls, and each
    call of the package gets the next recorded answer to the same kind of request (the
    forced tool, or the free reply with or without tools), in order. A request the model
    answered fewer times than the package asks gets the last such answer again; one it
    never answered is an error. Calls are recorded as :class:`ScriptedChatModel`'s.
    """

    def play(self, recorded: Sequence[dict[str, Any]]) -> None:
        """Answer the next requests with ``recorded`` (one turn's calls, in order)."""
        used = [False] * len(recorded)

        def answer(messages: list[BaseMessage]) -> AIMessage:
            binding = self.bindings[-1]  # this call's, recorded before the answer is asked
            choice, tools = binding.get("tool_choice"), bool(binding.get("tool_names"))
            same = [i for i, r in enumerate(recorded) if r.get("tool_choice") == choice]
            exact = [i for i in same if bool(recorded[i].get("tools")) == tools]
            for pool in (exact, same):
                if not pool:
                    continue
                fresh = [i for i in pool if not used[i]]
                i = fresh[0] if fresh else pool[-1]
                used[i] = True
                entry = recorded[i]
                calls = entry.get("tool_calls") or []
                return AIMessage(
                    content=entry.get("content") or "",
                    tool_calls=[
                        {
                            "name": c["name"],
                            "args": c["args"],
                            "id": f"call_{len(self.bindings)}_{n}",
                        }
                        for n, c in enumerate(calls)
                    ],
                )
            raise LookupError(f"no recorded answer to a request with tool_choice={choice!r}")

        self.replies = [answer]

    def requests_with(self, tool_choice: str | None) -> int:
        """How many calls were made with this forced tool (``None``: free replies)."""
        return sum(1 for b in self.bindings if b.get("tool_choice") == tool_choice)
