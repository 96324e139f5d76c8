"""Every sentence the package writes to a user is in the user's language (issue 79 item 4).

A real turn (Qwen2.5-Coder-1.5B, round four) showed Chinese and Spanish users "好的。Nothing
new to summarize: the memory is up to date.", "Hecho. Recorded: age=34, name=Lucía Romero.",
"Stored 1 memory item(s) from the conversation:" and "Thanks for telling me." to a Spanish
statement. The test reaches every reply template with a Chinese and a Spanish user and
fails on any word of the package's English templates (the vocabulary is read from them, so
a new English template is covered without a list to keep).
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_tiered_memory.agent.capture import capture_reply, summary_reply, tag_answer
from langchain_tiered_memory.agent.replies import (
    SUMMARIZE_NOTE,
    no_reply,
    with_stored_items,
)
from langchain_tiered_memory.agent.tools import (
    SEARCH_MEMORY_TOOL,
    SUMMARIZE_TOOL,
    USER_TAG_TOOL,
    SummarizeTool,
    UserTagTool,
)
from langchain_tiered_memory.language.record import Replies
from langchain_tiered_memory.language.registry import language_of, languages
from langchain_tiered_memory.language.text import is_question

_NOTHING_NEW = SummarizeTool._report([], [])
_STORED = SummarizeTool._report(
    ["i1"], [SimpleNamespace(id="i1", page_content="El mes pasado me mudé a Valencia.")]
)
_RECORDED = UserTagTool._confirm({"age": "34", "name": "Lucía Romero"}, {"age": 34})


def _english_vocabulary() -> frozenset[str]:
    """Every word of three letters or more of the package's English templates: the
    default replies, the English record's, and the tools' reports.
    """
    english = languages()[0].replies or Replies()
    texts = [
        *(v for v in vars(Replies()).values() if isinstance(v, str)),
        *(v for v in vars(english).values() if isinstance(v, str)),
        *english.tag_answers.values(),
        _NOTHING_NEW,
        _STORED.split(":")[0],
        _RECORDED.split(":")[0],
    ]
    words = {w.casefold() for t in texts for w in re.findall(r"[A-Za-z]{3,}", t)}
    return frozenset(words - {"label", "value", "facts", "count", "items"})


ENGLISH = _english_vocabulary()


def english_words(text: str, *, allowed: str = "") -> list[str]:
    """The words of ``text`` that are the package's English ones (the user's own words,
    ``allowed``, excepted: a name, an item the user said).
    """
    own = {w.casefold() for w in re.findall(r"[A-Za-z]{3,}", allowed)}
    return [
        w
        for w in re.findall(r"[A-Za-z]{3,}", text)
        if w.casefold() in ENGLISH and w.casefold() not in own
    ]


def _tool(text: str, name: str) -> ToolMessage:
    return ToolMessage(text, tool_call_id="c1", name=name)


def _call(name: str, note: str = "") -> AIMessage:
    return AIMessage(note, tool_calls=[{"name": name, "args": {}, "id": "c1"}])


USERS = {
    "zh": {
        "statement": "我今年34岁，叫王芳。",
        "moved": "上个月我搬到了上海。",
        "question": "我应该吃什么？",
        "summarize": "请总结一下我们的对话。",
        "age": "我多大了？",
    },
    "es": {
        "statement": "Me llamo Lucía Romero y tengo 34 años.",
        "moved": "El mes pasado me mudé a Valencia.",
        "question": "¿Qué debería comer?",
        "summarize": "Por favor, resume nuestra conversación.",
        "age": "¿Cuántos años tengo?",
    },
}


def _replies(user: dict[str, str]) -> list[tuple[str, BaseMessage | None]]:
    """Every reply template of the package, reached with this user's messages."""
    statement, summarize = HumanMessage(user["statement"]), HumanMessage(user["summarize"])
    tag_call = AIMessage(
        "(recording what you told me)",
        tool_calls=[{"name": USER_TAG_TOOL, "args": {"age": 34}, "id": "c1"}],
    )
    return [
        ("heard", no_reply([HumanMessage(user["moved"])])),
        ("heard, short", no_reply([HumanMessage(user["statement"])])),
        ("no answer", no_reply([HumanMessage(user["question"])])),
        (
            "done: recorded",
            no_reply([statement, _call(USER_TAG_TOOL), _tool(_RECORDED, USER_TAG_TOOL)]),
        ),
        (
            "done: nothing new",
            no_reply([summarize, _call(SUMMARIZE_TOOL), _tool(_NOTHING_NEW, SUMMARIZE_TOOL)]),
        ),
        (
            "done: stored",
            no_reply([summarize, _call(SUMMARIZE_TOOL), _tool(_STORED, SUMMARIZE_TOOL)]),
        ),
        (
            "a lookup is no deed",
            no_reply([statement, _call(SEARCH_MEMORY_TOOL), _tool("- x", SEARCH_MEMORY_TOOL)]),
        ),
        (
            "the model's reply with the stored items",
            with_stored_items(
                AIMessage("好的。" if user is USERS["zh"] else "Vale."),
                [summarize, _call(SUMMARIZE_TOOL), _tool(_STORED, SUMMARIZE_TOOL)],
            ),
        ),
        (
            "forced summary: stored",
            summary_reply(
                [summarize, _call(SUMMARIZE_TOOL, SUMMARIZE_NOTE), _tool(_STORED, SUMMARIZE_TOOL)]
            ),
        ),
        (
            "forced summary: nothing new",
            summary_reply(
                [
                    summarize,
                    _call(SUMMARIZE_TOOL, SUMMARIZE_NOTE),
                    _tool(_NOTHING_NEW, SUMMARIZE_TOOL),
                ]
            ),
        ),
        ("capture", capture_reply([statement, tag_call, _tool(_RECORDED, USER_TAG_TOOL)])),
        ("tag answer", tag_answer([HumanMessage(user["age"])], {"age": "34"})),
    ]


@pytest.mark.parametrize("code", ["zh", "es"])
def test_every_reply_the_package_writes_is_in_the_users_language(code: str) -> None:
    user = USERS[code]
    allowed = "Lucía Romero El mes pasado me mudé a Valencia."
    wrong = {}
    for what, reply in _replies(user):
        assert reply is not None, what
        if found := english_words(reply.text, allowed=allowed):
            wrong[what] = (reply.text, found)
    assert wrong == {}


def test_an_english_user_still_reads_the_tools_reports() -> None:
    user = HumanMessage("Please summarize our conversation.")
    stored = no_reply([user, _call(SUMMARIZE_TOOL), _tool(_STORED, SUMMARIZE_TOOL)])
    assert stored.text.startswith("Done. Stored 1 memory item(s)")
    reply = with_stored_items(
        AIMessage("Sure."), [user, _call(SUMMARIZE_TOOL), _tool(_STORED, SUMMARIZE_TOOL)]
    )
    assert _STORED in reply.text


@pytest.mark.parametrize(
    "text",
    [
        "El mes pasado me mudé a Valencia.",
        "Trabajo como enfermera.",
        "Estudio medicina.",
        "Hoy hace sol.",
    ],
)
def test_a_spanish_statement_is_spanish_and_heard_in_spanish(text: str) -> None:
    """The Spanish statements a tie or no marker left English: "Thanks for telling me."."""
    assert not is_question(text)
    assert language_of(text).code == "es"
    assert no_reply([HumanMessage(text)]).text == "Gracias por contármelo."


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Valencia last month.",
        "I work as a nurse.",
        "Me and my sister live in Madrid.",
        "My name is Pablo and I live in La Paz.",
        "Give me a minute.",
    ],
)
def test_english_statements_stay_english(text: str) -> None:
    assert language_of(text).code == "en"
