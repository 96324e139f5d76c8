"""What of a message the model said, and what the package wrote into it.

The package writes into a turn: placeholders (the content of a forced call's AI message),
reports of what the tools did (marked with :data:`REPORT`), a reply for no reply. A model
writes tool calls and results as text. None of it is conversation: a model shown it from
an earlier turn or thread imitates it, and a summarizer shown it stores it again. Read by
the agent (what the model is shown, what a new thread carries) and the summarizer (the
transcript it is given).
"""

from __future__ import annotations

import json
import re

from langchain_core.messages import AIMessage

__all__ = [
    "CAPTURE_NOTE",
    "MEMORY_TOOLS",
    "PLACEHOLDERS",
    "REPORT",
    "SUMMARIZE_NOTE",
    "only_machinery",
    "said_by_model",
]

REPORT = "tiered_memory_report"
"""``response_metadata`` key of a reply's part the package wrote (what the turn's tools
did): the user reads it, a later thread does not carry it (the model copied it)."""

# the memory's own tools, by name (agent/tools.py): a JSON call naming one is machinery
MEMORY_TOOLS = frozenset({"user_tag", "summarize", "search_memory"})


# A tool call or a tool's result written as the reply's text: Qwen2.5-Coder-1.5B answered
# "My birthday is on March 5." with "<tool_response>\nRecorded: birthday=March 5.\n
# </tool_response>" (nothing was recorded), and, tools withdrawn, with a user_tag call as
# JSON. Neither is a reply: the user would read machinery, or a claim no tool made. Only a
# reply that is nothing else counts: one that explains tool calls ("How does Qwen format a
# tool call?" -> "... wrapped in <tool_call> tags ...") is an answer.
_BLOCK = re.compile(r"<(tool_(?:call|response))>.*?(?:</\1>|\Z)", re.DOTALL)
_TAG = re.compile(r"</?tool_(?:call|response)>")
_FENCE = re.compile(r"\A```(?:json)?\s*|\s*```\Z")

# The package's own placeholders (the content of a forced call's AI message: OpenAI-
# compatible servers reject an assistant message whose content is null). A reply that is
# one is no reply: a real model shown them answered "I have an exam tomorrow" with one.
CAPTURE_NOTE = "(recording what you told me)"
SUMMARIZE_NOTE = "(saving our conversation to memory)"
PLACEHOLDERS = frozenset({CAPTURE_NOTE, SUMMARIZE_NOTE})


def _a_call(text: str) -> bool:
    """Whether ``text`` is one tool call as JSON (``{"name": ..., "arguments": ...}``) of
    one of the memory's tools (a JSON object naming another function is an answer: "show
    me the JSON of a function call").
    """
    try:
        call = json.loads(_FENCE.sub("", text))
    except ValueError:
        return False
    return (
        isinstance(call, dict)
        and set(call) <= {"name", "arguments", "parameters"}
        and call.get("name") in MEMORY_TOOLS
    )


# A reply whose every sentence tells to call one of the memory's tools narrates the
# model's tools to the user: Qwen2.5-Coder-1.5B answered "我住在上海。" and "我住在哪里？" with
# "To summarize the conversation so far into long-term memory, call `summarize`."
_TOOL_NAMES = "|".join(sorted(MEMORY_TOOLS))
_CALL_THE_TOOL = re.compile(rf"\bcall(?:ing)?\s+(?:the\s+)?`(?:{_TOOL_NAMES})`", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


def only_machinery(text: str) -> bool:
    """Whether ``text`` holds nothing for the user: empty, a package placeholder, only
    tool calls and results written as text, or sentences that each tell to call one of
    the memory's tools.

    Example:
        >>> only_machinery('<tool_call>{"name": "user_tag"}</tool_call>')
        True
        >>> only_machinery("To save this to memory, call `summarize`.")
        True
        >>> only_machinery("Qwen wraps each call in <tool_call></tool_call> tags.")
        False
    """
    text = text.strip()
    if not text or text in PLACEHOLDERS:
        return True
    rest = _TAG.sub("", _BLOCK.sub("", text)).strip()
    if not rest or _a_call(rest):
        return True
    sentences = [s for s in _SENTENCE.split(rest) if s.strip()]
    return all(_CALL_THE_TOOL.search(s) for s in sentences)


def said_by_model(message: AIMessage) -> str:
    """A reply's text without the part the package wrote (:data:`REPORT`).

    Example:
        >>> report = {REPORT: "Stored 1 item"}
        >>> said_by_model(AIMessage("Sure! Stored 1 item", response_metadata=report))
        'Sure!'
    """
    report = message.response_metadata.get(REPORT)
    text = str(message.text)
    if isinstance(report, str) and report:
        text = text.replace(report, "")
    return text.strip()
