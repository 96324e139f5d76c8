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
    "without_machinery",
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
    """Whether ``text`` is one tool call or more as JSON (``{"name": ..., "arguments":
    ...}``), each of one of the memory's tools (a JSON object naming another function is an
    answer: "show me the JSON of a function call").
    """
    text = _FENCE.sub("", text).strip()
    decoder = json.JSONDecoder()
    found = 0
    while text:
        try:
            call, end = decoder.raw_decode(text)
        except ValueError:
            return False
        if not (
            isinstance(call, dict)
            and set(call) <= {"name", "arguments", "parameters"}
            and call.get("name") in MEMORY_TOOLS
        ):
            return False
        found += 1
        text = text[end:].lstrip(" \t\r\n,")
    return found > 0


# The memory section of the package's prompt copied into a reply (Qwen2.5-Coder-1.5B began
# one with the summarize placeholder and went on with the <memories> block, timestamps and
# all): a block on lines of its own whose every line is a quoted note or JSON, with the
# "## ..." heading and the line of explanation the prompt puts before it. A block named in
# a sentence ("between <memories> and </memories>") is an answer about the format.
_NOTE_LINE = r"[ \t]*(?:-[ \t]*)?(?:\[[^\]\n]*\][ \t]*)?(?:\".*\"|\{.*\})[ \t]*\n"
_PROMPT_BLOCK = re.compile(
    r"^(?:[ \t]*\#\#[^\n]*\n(?:[^<\n][^\n]*\n)?)?"
    rf"[ \t]*<(memories|user_tags)>[ \t]*\n(?:{_NOTE_LINE})*[ \t]*</\1>[ \t]*$",
    re.MULTILINE,
)
# a tool call or result written as text on lines of its own (an inline one is named)
_OWN_LINES_BLOCK = re.compile(
    r"^[ \t]*<(tool_(?:call|response))>.*?(?:</\1>|\Z)[ \t]*$", re.MULTILINE | re.DOTALL
)
_FENCED = re.compile(
    r"^[ \t]*```(?:json)?[ \t]*\n(.*?)\n[ \t]*```[ \t]*$", re.MULTILINE | re.DOTALL
)


def without_machinery(text: str) -> str:
    r"""``text`` without each kind of machinery the package or a model's tool format put in
    it, wherever it stands: the package's placeholders, its prompt's memory section, tool
    calls and results written as text (tagged, fenced or bare JSON lines). What is left is
    what the reply says to the user, judged as any reply (a real model answered with a
    placeholder followed by the <memories> block, and with two JSON calls and the user's
    message: each kind alone was caught, not together).

    Example:
        >>> without_machinery('(saving our conversation to memory) Vives en Valencia.')
        'Vives en Valencia.'
        >>> without_machinery('{"name": "user_tag", "arguments": {"age": 3}}\nHi Ann.')
        'Hi Ann.'
        >>> without_machinery("Qwen wraps each call in <tool_call></tool_call> tags.")
        'Qwen wraps each call in <tool_call></tool_call> tags.'
    """
    for note in PLACEHOLDERS:
        text = text.replace(note, "\n")
    text = _PROMPT_BLOCK.sub("", text)
    text = _OWN_LINES_BLOCK.sub("", text)
    text = _FENCED.sub(lambda m: "" if _a_call(m.group(1)) else m.group(0), text)
    lines = [line for line in text.splitlines() if not _a_call(line)]
    return "\n".join(line.rstrip() for line in lines).strip()


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
    rest = without_machinery(text)
    # a tool block within a line is machinery too when nothing but tags is left
    rest = rest if not rest else _TAG.sub("", _BLOCK.sub("", rest)).strip()
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
