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

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_tiered_memory.agent.replies import REPORT, only_machinery, said_by_model
from langchain_tiered_memory.agent.tools import SUMMARIZE_TOOL
from langchain_tiered_memory.language.registry import languages
from langchain_tiered_memory.language.text import asks_to_summarize, char_grams
from langchain_tiered_memory.stores.history.codec import RETRACTED

__all__ = ["conversation_only", "models_words"]


# what every summary item says whatever it is about ("The user", "用户")
_FRAME = char_grams(" ".join(language.the_user for language in languages()))
# a carried message holding this share of a superseded item's content says what it said
_SAYS = 0.5


def _says_what_no_longer_holds(text: str, superseded: Sequence[set[str]]) -> bool:
    grams = char_grams(text)
    return any(item and len(item & grams) / len(item) >= _SAYS for item in superseded)


def _stores_items(message: BaseMessage) -> bool:
    """Whether ``message`` is the ``summarize`` tool's call or its result: the turn it is
    in stored memory items, and what its replies say is about them.
    """
    if isinstance(message, ToolMessage):
        return message.name == SUMMARIZE_TOOL
    if isinstance(message, AIMessage):
        calls = [*message.tool_calls, *message.invalid_tool_calls]
        return any(call.get("name") == SUMMARIZE_TOOL for call in calls)
    return False


def conversation_only(
    messages: Sequence[BaseMessage], superseded: Sequence[str] = ()
) -> list[BaseMessage]:
    """What of an earlier thread a new one carries: the user's and the assistant's text,
    without tool calls, tool results (also those a model wrote as its reply, and the
    package's reports of them), empty replies, the package's placeholders and the history's
    "[not stored: ...]" notes, requests to summarize and the replies of a turn that stored
    memory items (the package's report of them, which a model copies or retells: deleting
    an item would leave its text carried in them), the messages whose memory item the
    user deleted or edited (``HistoryStore.retract``), and what the memory holds as no
    longer true: a message that says a ``superseded`` item (a real model answered "Where
    do I live?" with "Paris" from a carried "I live in Paris." while the memory held the
    move to Berlin); ids kept (the prompt is de-duplicated by id).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
        >>> call = {"name": "user_tag", "args": {"age": 30}, "id": "c1"}
        >>> kept = conversation_only([HumanMessage("I'm 30."), AIMessage("", tool_calls=[call]),
        ...     ToolMessage("Recorded: age=30.", tool_call_id="c1"), AIMessage("Noted!")])
        >>> [m.text for m in kept]
        ["I'm 30.", 'Noted!']
    """
    old = [char_grams(item) - _FRAME for item in superseded]
    out: list[BaseMessage] = []
    storing = False  # in a turn that stored memory items: its replies are not carried
    for message in messages:
        text = message.text.strip()
        if isinstance(message, HumanMessage):  # a turn starts; a request to store is one
            storing = asks_to_summarize(text)
        storing = storing or _stores_items(message)
        if storing and isinstance(message, AIMessage):
            # A reply about what was stored quotes the items (the tool's report, appended
            # or copied by the model) or retells them; the items have their own tier,
            # where a delete or an edit reaches them, and this copy it would not reach.
            continue
        if not text or text.startswith("[not stored:") or message.response_metadata.get(RETRACTED):
            continue
        if old and _says_what_no_longer_holds(text, old):
            continue
        if isinstance(message, HumanMessage):
            if asks_to_summarize(text):  # a request done long ago, not conversation
                continue
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
