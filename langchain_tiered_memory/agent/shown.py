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

from langchain_tiered_memory.agent.replies import REPORT, only_machinery, said_by_model

__all__ = ["conversation_only", "models_words"]


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
        if not text or text.startswith("[not stored:"):
            continue
        if isinstance(message, HumanMessage):
            out.append(message)
        elif isinstance(message, AIMessage):
            # what the model said, without the package's report of the tools; then the
            # package's placeholders (a real model shown one from an earlier thread
            # answered "I have an exam tomorrow" with it) and tool calls written as text
            said = said_by_model(message)
            if only_machinery(said):
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
