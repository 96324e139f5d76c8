"""A 1 MB message costs a turn's recall no more than a short one's window of it (issue 76
item 9).

One 1 MB message (inside the 4 MiB limit) held the event loop for seconds in a turn's
load: the recall tokenized, ranked and read the dates of all of it, on the loop. What a
recall reads of each text is now bounded (``recall_text``: the embedder's window of a
text), so its work is bounded whatever the message's length. These tests count what the
recall's parts are handed, never how long they take: no test here depends on the
machine's speed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.retrieval import fusion
from langchain_tiered_memory.retrieval.conversation import DEFAULT_CONTEXT_TURNS

ONE_MB = 1_000_000
ENGLISH = (
    "The user failed the driving road test in September 2024 after stalling at a "
    "roundabout, and felt humiliated. Next Friday is the retake, 3 days ago I booked it. "
)
CHINESE = "用户2024年9月驾照路考没通过，在环岛熄火，觉得很丢脸。三天前又约了下周五补考。"
# Chinese with no punctuation at all: one "word" of a million bytes for the tokenizer
CHINESE_RUN = "用户去年九月驾照路考没通过在环岛熄火觉得很丢脸又约了下周五补考"

ITEMS = [
    "The user failed the driving road test in September 2024.",
    "The user's sister moved to Lyon for a new job.",
    "用户2024年9月驾照路考没通过。",
    "用户的猫叫小白。",
]


def megabyte(unit: str) -> str:
    """``unit`` repeated to 1 MB of UTF-8 (a character cut in two is left out)."""
    text = unit * (ONE_MB // len(unit.encode()))
    rest = ONE_MB - len(text.encode())
    return text + unit.encode()[:rest].decode(errors="ignore")


class Handed:
    """What the recall's CPU-bound parts were handed: the texts tokenized for words, the
    texts read for dates, and the query texts embedded (their lengths)."""

    def __init__(self) -> None:
        self.tokenized: list[int] = []
        self.dated: list[int] = []
        self.embedded: list[int] = []

    def longest(self) -> int:
        return max([*self.tokenized, *self.dated, *self.embedded])


class CountingEmbeddings(HashingEmbeddings):
    """Hashing embeddings that record the length of every query text they embed."""

    handed: Handed | None = None

    def embed_query(self, text: str) -> list[float]:
        if self.handed is not None:
            self.handed.embedded.append(len(text))
        return super().embed_query(text)


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Handed]:
    seen = Handed()

    def counting(target: list[int], real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(text: str, *args: Any, **kwargs: Any) -> Any:
            target.append(len(text))
            return real(text, *args, **kwargs)

        return wrapped

    monkeypatch.setattr(fusion, "tokenize", counting(seen.tokenized, fusion.tokenize))
    monkeypatch.setattr(
        fusion, "parse_time_windows", counting(seen.dated, fusion.parse_time_windows)
    )
    yield seen


@pytest.fixture
def memory(memory_factory: Callable[..., TieredMemory], handed: Handed) -> TieredMemory:
    embeddings = CountingEmbeddings()
    memory = memory_factory(embeddings=embeddings)
    memory.add_summaries("u", ITEMS)
    embeddings.handed = handed  # from here: the recall's texts only
    return memory


def _bound() -> int:
    from langchain_tiered_memory.retrieval.conversation import RECALL_TEXT_CHARS

    # the conversation's turns joined with a space each
    return DEFAULT_CONTEXT_TURNS * (RECALL_TEXT_CHARS + 1)


@pytest.mark.parametrize("unit", [ENGLISH, CHINESE, CHINESE_RUN], ids=["en", "zh", "zh-run"])
@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_turn_recall_reads_a_bounded_text_of_a_one_megabyte_message(
    memory: TieredMemory, handed: Handed, unit: str, asynchronous: bool
) -> None:
    message = megabyte(unit)
    assert 0.99 * ONE_MB < len(message.encode()) <= ONE_MB
    context = ["There's a big test on Friday.", "I keep worrying I'll mess it up."]
    if asynchronous:
        snap = await memory.aload("u", message, context=context)
    else:
        snap = memory.load("u", message, context=context)
    assert snap.recalled  # it still recalls
    assert handed.tokenized and handed.embedded  # the words and the vector were read
    read = (handed.tokenized, handed.dated, handed.embedded)
    assert handed.longest() < ONE_MB // 100, read  # nowhere near the message
    assert handed.longest() <= _bound(), read


@pytest.mark.parametrize("unit", [ENGLISH, CHINESE_RUN], ids=["en", "zh-run"])
def test_every_reader_of_a_long_query_reads_the_same_bound(
    memory: TieredMemory, handed: Handed, unit: str
) -> None:
    message = megabyte(unit)
    memory.recall_summaries("u", message)  # one text: the single-text recall
    memory.summaries.search_conversation("u", ["Hello.", message], 3)
    assert handed.longest() < ONE_MB // 100
    assert handed.longest() <= _bound()


def test_the_recall_bound_never_cuts_what_is_stored(memory: TieredMemory) -> None:
    message = megabyte(ENGLISH)
    memory.add_session_log("u", [HumanMessage(message)])
    (stored,) = memory.load_context("u", 1)
    assert stored.content == message


def test_a_short_message_is_read_whole(memory: TieredMemory, handed: Handed) -> None:
    from langchain_tiered_memory.retrieval.conversation import RECALL_TEXT_CHARS, recall_text

    text = "When did I fail my driving test?"
    assert recall_text(text) == text
    edge = "x" * RECALL_TEXT_CHARS
    assert recall_text(edge) == edge
    assert recall_text(edge + "y") == edge
    memory.load("u", text)
    assert max(handed.tokenized) == len(text)
