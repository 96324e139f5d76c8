"""The demo's deterministic stand-in model (``--model fake``): it answers only from what
the memory put into its prompt, so a demo run with it checks the memory, not a model.

It lives with the testing helpers, below the apps: ``defaults.default_chat_model("fake")``
builds it, and the CLI and the demo use it; its old path ``cli.fake_model`` still imports
it (``_moved.py``).
"""

from __future__ import annotations

import json
import re
from contextlib import suppress
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from langchain_tiered_memory.agent.tools import SUMMARIZE_TOOL, USER_TAG_TOOL
from langchain_tiered_memory.summarization.summarizer import SUMMARY_SYSTEM_PROMPT
from langchain_tiered_memory.testing import ScriptedChatModel

__all__ = ["fake_demo_model", "prompt_tags"]

_USER_TAGS_BLOCK = re.compile(r"<user_tags>\n(.*?)\n</user_tags>", re.DOTALL)
_MEMORIES_BLOCK = re.compile(r"<memories>\n(.*?)\n</memories>", re.DOTALL)
_COMPACT_TAG = re.compile(r'^The user\'s ([\w ]+) is (".*")\.$', re.MULTILINE)


_FIRST_PERSON_SENTENCE = re.compile(r"\b(i|i'm|i am|my)\b", re.IGNORECASE)
_GREETING = re.compile(r"^(hi|hello|hey)\b[,!.]?\s*", re.IGNORECASE)


def _third_person(sentence: str) -> str:
    text = _GREETING.sub("", sentence.strip())
    text = re.sub(r"\bI am\b|\bI'm\b", "the user is", text, flags=re.IGNORECASE)
    text = re.sub(r"\bmy\b", "the user's", text, flags=re.IGNORECASE)
    text = re.sub(r"\bI\b", "the user", text)
    return text[:1].upper() + text[1:]


def _summary_items(transcript: str) -> list[str]:
    items: list[str] = []
    for text_line in transcript.splitlines():
        if not text_line.startswith("User: "):
            continue
        for sentence in re.split(r"(?<=[.!])\s+", text_line[len("User: ") :]):
            sentence = sentence.strip()
            if sentence and not sentence.endswith("?") and _FIRST_PERSON_SENTENCE.search(sentence):
                items.append(_third_person(sentence))
    return items


def prompt_tags(memory_prompt: str) -> dict[str, str]:
    """The tags rendered in a memory section of the prompt (``{}`` if none), in the default
    JSON section or in the compact lines of small models (``The user's name is "Alice".``).
    """
    match = _USER_TAGS_BLOCK.search(memory_prompt or "")
    if not match:
        return {
            m.group(1).replace(" ", "_"): str(json.loads(m.group(2)))
            for m in _COMPACT_TAG.finditer(memory_prompt or "")
        }
    try:
        tags = json.loads(match.group(1))
    except json.JSONDecodeError:
        return {}
    return {str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {}


def _prompt_memories(memory_prompt: str) -> list[str]:
    match = _MEMORIES_BLOCK.search(memory_prompt or "")
    lines = match.group(1).splitlines() if match else (memory_prompt or "").splitlines()
    out = []
    for text_line in lines:
        if match is None and not text_line.startswith("- ["):
            continue
        _, _, quoted = text_line.partition("] ")
        with suppress(json.JSONDecodeError):
            out.append(str(json.loads(quoted)))
    return out


def _call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call_{n}"}])


def _scripted_reply(messages: list[BaseMessage]) -> AIMessage | str:
    system = messages[0].text if messages and isinstance(messages[0], SystemMessage) else ""
    last = messages[-1] if messages else HumanMessage("")
    n = len(messages)
    if system.startswith(SUMMARY_SYSTEM_PROMPT):  # the summarizer's request
        return _call("SummaryItems", {"items": _summary_items(last.text)}, n)
    if isinstance(last, ToolMessage):
        if last.name == SUMMARIZE_TOOL:
            return f"Done. {last.text}"
        return "Nice to meet you! I will remember that."
    text = last.text
    lowered = text.lower()
    if "summar" in lowered:
        return _call(SUMMARIZE_TOOL, {}, n)
    facts: dict[str, Any] = {}
    if name := re.search(r"\bmy name is (\w+)", text, re.IGNORECASE):
        facts["name"] = name.group(1)
    if age := re.search(r"\b(?:i am|i'm) (\d{1,3})\b", text, re.IGNORECASE):
        facts["age"] = int(age.group(1))
    if facts:
        return _call(USER_TAG_TOOL, facts, n)
    tags = prompt_tags(system)
    if "how old" in lowered:
        return f"You are {tags['age']} years old." if "age" in tags else "I don't know your age."
    if "birthday" in lowered:
        notes = [m for m in _prompt_memories(system) if "birthday" in m.lower()]
        return f"From my notes: {notes[0]}" if notes else "I don't know your birthday."
    if "name" in lowered and "name" in tags:
        return f"Your name is {tags['name']}."
    return "OK."


def fake_demo_model() -> ScriptedChatModel:
    """A deterministic chat model for the demo and tests: rules over its prompt, no model.

    It records name/age with ``user_tag``, calls ``summarize`` when asked to, writes
    summary items (first-person sentences of the user turned into third person) when it is
    the summarizer, and answers age/birthday questions *only* from the memory section of
    its system prompt, so a right answer proves the memory reached the prompt.
    """
    return ScriptedChatModel(replies=[_scripted_reply])


# --------------------------------------------------------------------------- plumbing
