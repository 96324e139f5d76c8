"""Which messages each summary item came from: per-item provenance.

A summarization batch reads messages of several threads; an item is usually about one of
them. Recording the batch's threads on every item made ``forget_thread`` delete nothing
in ordinary use (items "made only from" the thread were none). Each item is attributed to
the messages that carry its content: character n-grams, any language (the summarizer's
own measure), the summary's framing ("The user ...") left out. Where no message carries
enough of it (an abstraction), the item is the whole batch's: kept, never wrongly erased.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory.summarization.summarizer import FRAME_GRAMS, char_grams

__all__ = ["MIN_SOURCE_SHARE", "item_provenance", "thread_at"]

# A message is a source of an item when it holds at least this share of the item's
# content n-grams, and at least half as much as the best source: an item said twice in two
# threads is from both, and forgetting one of them keeps it.
MIN_SOURCE_SHARE = 0.25


def thread_at(spans: Sequence[tuple[int, int, str]], position: int) -> str | None:
    """The thread of the message at absolute ``position``, if it was saved with one."""
    for first, last, thread in spans:
        if first <= position < last:
            return thread
    return None


def item_provenance(
    items: Sequence[str],
    found: Sequence[tuple[int, BaseMessage]],
    spans: Sequence[tuple[int, int, str]],
    first: int,
    end: int,
) -> list[dict[str, Any]]:
    """Each item's metadata: the batch's positions ``[first, end)``, the positions of the
    messages it came from (``source_positions``) and their threads (``source_threads``).

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> found = [(0, HumanMessage("I live in Paris.")), (1, HumanMessage("I own a cat."))]
        >>> spans = [(0, 1, "t1"), (1, 2, "t2")]
        >>> item_provenance(["The user lives in Paris."], found, spans, 0, 2)[0]["source_threads"]
        ['t1']
    """
    texts = [
        (pos, char_grams(m.text))
        for pos, m in found
        if isinstance(m, (HumanMessage, AIMessage)) and m.text.strip()
    ]
    batch = [pos for pos, _ in texts]
    out = []
    for item in items:
        grams = char_grams(item) - FRAME_GRAMS
        shares = [(pos, len(grams & have) / len(grams)) for pos, have in texts] if grams else []
        best = max((share for _, share in shares), default=0.0)
        if best >= MIN_SOURCE_SHARE:
            sources = [pos for pos, share in shares if share >= max(best / 2, MIN_SOURCE_SHARE)]
        else:
            sources = batch  # no message carries it: the whole batch's
        threads = list(dict.fromkeys(t for t in (thread_at(spans, p) for p in sources) if t))
        out.append(
            {
                "source_start": first,
                "source_end": end,
                "source_positions": sources,
                "source_threads": threads,
            }
        )
    return out
