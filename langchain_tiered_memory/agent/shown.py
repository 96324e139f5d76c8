"""What of a thread the model is shown, and what a new thread carries of an earlier one.

The package writes into a turn (placeholders, reports of what the tools did) and a model
writes tool calls as text; none of it is conversation, and a real model shown it imitated
it (``tests/unit_tests/test_recorded_turns.py``).

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> [m.text for m in conversation_only([HumanMessage("hi"), AIMessage("")])]
    ['hi']
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory.agent.capture import CAPTURE_NOTE, SUMMARIZE_NOTE
from langchain_tiered_memory.agent.replies import REPORT, is_empty, said_by_model

__all__ = ["conversation_only", "models_words"]


# What the package itself writes into a turn: no conversation, and a model shown it from
# an earlier thread imitates it (a real model answered a new thread's "I have an exam
# tomorrow" with the summarize placeholder and a copied summarize call).
_MACHINERY = frozenset({CAPTURE_NOTE, SUMMARIZE_NOTE})


def conversation_only(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """What of an earlier thread a new one carries: the user's and the assistant's text,
    without tool calls, tool results (also those a model wrote as its reply, and the
    package's reports of them), empty replies, the package's placeholders and the history's
    "[not stored: ...]" notes; ids kept (the prompt is de-duplicated by id).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> call = {"name": "user_tag", "args": {"age": 30}, "id": "c1"}
        >>> kept = conversation_only([HumanMessage("I'm 30."), AIMessage("", tool_calls=[call]),
        ...     ToolMessage("Recorded: age=30.", tool_call_id="c1"), AIMessage("Noted!")])
        >>> [m.text for m in kept]
        ["I'm 30.", 'Noted!']
    """
    out: list[BaseMessage] = []
    for message in messages:
        text = message.text.strip()
        if not text or text in _MACHINERY or text.startswith("[not stored:"):
            continue
        if isinstance(message, HumanMessage):
            out.append(message)
        elif isinstance(message, AIMessage):
            said = said_by_model(message)  # not what the package reported of the tools
            if not said or is_empty(AIMessage(content=said)):  # or a tool call as text
                continue
            plain = not (message.tool_calls or message.invalid_tool_calls)
            if plain and said == text:
                out.append(message)
            else:
                out.append(AIMessage(content=said, id=message.id))
    return out


def models_words(thread: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The thread as the model is shown it: its earlier replies without what the package
    wrote into them (the tools' reports, the reply for no reply), which the user reads and
    a model copied as its next answers ("好的。Recorded: ..., birthday=十月三日." after such a
    report; nothing of the kind was recorded).
    """
    out: list[BaseMessage] = []
    for message in thread:
        if isinstance(message, AIMessage) and message.response_metadata.get(REPORT):
            said = said_by_model(message)
            if not said and not message.tool_calls:
                continue
            message = message.model_copy(update={"content": said})
        out.append(message)
    return out
