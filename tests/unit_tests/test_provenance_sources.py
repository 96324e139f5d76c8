"""Which messages an item came from, when two messages share their phrasing (issue 77,
found by the long server walk): "I like X very much." in one thread and "I like Y very
much." in another both carried most of "The user likes Y very much.", so the item was
attributed to both threads, and deleting the thread that said Y kept Y in memory.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.summarization.provenance import item_provenance

CASES = [  # (first thread's message, second's, the item made of the second)
    ("I like Zqone very much.", "I like Zqtwo very much.", "The user likes Zqtwo very much."),
    ("我非常喜欢红茶。", "我非常喜欢咖啡。", "用户非常喜欢咖啡。"),
    (
        "Me gusta mucho el Zqtenis.",
        "Me gusta mucho el Zqajedrez.",
        "Al usuario le gusta mucho el Zqajedrez.",
    ),
]


def _batch(
    first: str, second: str
) -> tuple[list[tuple[int, BaseMessage]], list[tuple[int, int, str]]]:
    found = [
        (0, HumanMessage(first)),
        (1, AIMessage("OK.")),
        (2, HumanMessage(second)),
        (3, AIMessage("OK.")),
    ]
    return found, [(0, 2, "t1"), (2, 4, "t2")]


@pytest.mark.parametrize(("first", "second", "item"), CASES, ids=["en", "zh", "es"])
def test_an_item_is_from_the_message_that_said_it_not_one_that_shares_its_phrasing(
    first: str, second: str, item: str
) -> None:
    found, spans = _batch(first, second)
    made = item_provenance([item], found, spans, 0, 4)[0]
    assert made["source_threads"] == ["t2"]
    assert made["source_positions"] == [2]


@pytest.mark.parametrize(
    "said", ["I live in Paris.", "我住在巴黎。", "Vivo en París."], ids=["en", "zh", "es"]
)
def test_an_item_said_alike_in_two_threads_is_from_both(said: str) -> None:
    found, spans = _batch(said, said)
    item = {
        "I": "The user lives in Paris.",
        "我": "用户住在巴黎。",
        "V": "El usuario vive en París.",
    }
    made = item_provenance([item[said[0]]], found, spans, 0, 4)[0]
    assert made["source_threads"] == ["t1", "t2"]  # forgetting one of them keeps it


def test_forgetting_the_thread_that_said_it_takes_the_item() -> None:
    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    memory.add_session_log(
        "bob", [HumanMessage("I like Zqone very much."), AIMessage("OK.")], thread_id="t1"
    )
    memory.add_session_log(
        "bob", [HumanMessage("I like Zqtwo very much."), AIMessage("OK.")], thread_id="t2"
    )
    first, end = 0, 4
    found = list(enumerate(memory.load_context("bob", max=10)))
    meta = item_provenance(
        ["The user likes Zqtwo very much."], found, memory.history.spans("bob"), first, end
    )  # type: ignore[attr-defined]
    memory.add_summaries("bob", ["The user likes Zqtwo very much."], metadata=meta[0])
    memory.forget_thread("bob", "t2")
    assert "Zqtwo" not in str(memory.export_user("bob"))
    memory.close()
