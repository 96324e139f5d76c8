"""Deterministic stand-ins for models, plus turn builders and history checkers.

Nothing here mocks Redis: the tests run against real servers. These replace only the
*models* (chat and embeddings), which do not matter for storage guarantees.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory.testing import ScriptedChatModel

_LINE = re.compile(r"^(?:User|Assistant): (.+)$", re.MULTILINE)
_TURN = re.compile(r"^msg w(\d+) s(\d+) p(\d+) of (\d+)$")


def _echo(messages: list[BaseMessage]) -> AIMessage:
    request = str(messages[-1].content)
    return AIMessage("\n".join(f"- remembered: {line}" for line in _LINE.findall(request)))


def EchoSummarizer() -> ScriptedChatModel:  # noqa: N802 - used like the class it was
    """A summarizer answering with one bullet per conversation line.

    The item for a message with content ``C`` is ``"remembered: C"`` (no word capitalised:
    a capitalised word the user never said is a name, and the package stores none), so a
    test can tell exactly which message every stored item came from.
    """
    return ScriptedChatModel(replies=[_echo])


class RandomEmbeddings(Embeddings):
    """A pseudo-random unit vector per distinct text (same text, same vector).

    Distinct texts are nearly orthogonal, so the store's near-duplicate filter never
    merges two different items by accident, unlike bag-of-words hashing.
    """

    def __init__(self, dim: int = 64) -> None:
        self.dim = dim

    def _one(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")
        vec = np.random.default_rng(seed).standard_normal(self.dim)
        return (vec / np.linalg.norm(vec)).astype(np.float32).tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


def turn(writer: int, seq: int, size: int | None = None) -> list[BaseMessage]:
    """A turn of 3-5 messages (Human first, alternating), each naming writer/seq/part."""
    n = size if size is not None else 3 + (writer + seq) % 3
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(f"msg w{writer} s{seq} p{i} of {n}")
        for i in range(n)
    ]


def parse(message: BaseMessage) -> tuple[int, int, int, int]:
    """``(writer, seq, part, size)`` of a message made by :func:`turn`."""
    match = _TURN.match(str(message.content))
    assert match, f"not a test turn message: {message.content!r}"
    w, s, p, n = (int(g) for g in match.groups())
    return w, s, p, n


def split_turns(messages: Sequence[BaseMessage]) -> list[tuple[int, int]]:
    """Check the history is a sequence of whole, contiguous turns; return their ids.

    Raises AssertionError naming the first torn, interleaved or out-of-order turn.
    """
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(messages):
        w, s, p, n = parse(messages[i])
        assert p == 0, f"turn w{w} s{s} starts at part {p} (position {i}): torn turn"
        for j in range(n):
            assert i + j < len(messages), f"turn w{w} s{s} is cut off at the end"
            got = parse(messages[i + j])
            assert got == (w, s, j, n), f"position {i + j}: expected w{w} s{s} p{j}, got {got}"
            expected = HumanMessage if j % 2 == 0 else AIMessage
            assert type(messages[i + j]) is expected
        out.append((w, s))
        i += n
    return out


def assert_each_writer_in_order(turns: Sequence[tuple[int, int]]) -> None:
    """Each writer's turns appear in the order it wrote them."""
    last: dict[int, int] = {}
    for w, s in turns:
        assert s > last.get(w, -1), f"writer {w}: turn {s} after turn {last[w]}"
        last[w] = s
