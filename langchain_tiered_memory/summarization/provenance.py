"""Which messages each summary item came from (per-item provenance), and whether what it
names came from the user.

A summarization batch reads messages of several threads; an item is usually about one of
them. Recording the batch's threads on every item made ``forget_thread`` delete nothing
in ordinary use (items "made only from" the thread were none). Each item is attributed to
the messages that carry its content: character n-grams, any language (the summarizer's
own measure), the summary's framing ("The user ...") left out. Where no message carries
enough of it (an abstraction), the item is the whole batch's (``source_basis="batch"``):
forgetting any of the batch's threads deletes it, so nothing made only from a forgotten
thread survives (an item the user also said elsewhere may go with it: the safe side).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory.language.rules import normalize_numbers
from langchain_tiered_memory.language.text import STOPWORDS
from langchain_tiered_memory.summarization.summarizer import FRAME_GRAMS, char_grams

__all__ = ["MIN_SOURCE_SHARE", "grounded_in_user", "item_provenance", "thread_at"]

logger = logging.getLogger(__name__)

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
        basis = "carried"
        if best >= MIN_SOURCE_SHARE:
            sources = [pos for pos, share in shares if share >= max(best / 2, MIN_SOURCE_SHARE)]
        else:
            # no message carries it (a paraphrase: "I don't eat meat." -> "The user is
            # vegetarian."): the whole batch's, marked, so that forgetting any thread of
            # the batch deletes it too (for an erasure, keeping is the unsafe side)
            sources, basis = batch, "batch"
        threads = list(dict.fromkeys(t for t in (thread_at(spans, p) for p in sources) if t))
        out.append(
            {
                "source_start": first,
                "source_end": end,
                "source_positions": sources,
                "source_threads": threads,
                "source_basis": basis,
            }
        )
    return out


# A capitalised word, or a run of digits: what an item names (a person, a place, a month,
# an age, a year) and must have from the user, not from the assistant or the model.
_NAMED = re.compile(r"(?<![\w'’-])[A-ZÀ-ÖØ-Þ][\w'’-]*|\d+")


def _named(item: str) -> list[str]:
    """The names and numbers of ``item``: capitalised words that are not function words
    ("The user", "In March": "March" counts) and digit runs.
    """
    out = []
    for word in _NAMED.findall(item):
        base = re.sub(r"['’]s$", "", word).casefold()
        if base and base not in STOPWORDS and base not in ("user", "users"):
            out.append(re.sub(r"['’]s$", "", word))
    return out


def grounded_in_user(
    items: Sequence[str], found: Sequence[tuple[int, BaseMessage]], known: Sequence[str] = ()
) -> tuple[list[str], list[str]]:
    """Split ``items`` into those kept and those dropped (``(kept, dropped)``).

    An item is dropped when it names what only the assistant said (a capitalised word the
    assistant's messages hold and the user's do not), carries a number the user never said
    (numbers in words count), or is carried by the assistant's messages alone. ``known``
    (the user's tags) counts as said: a name given in an earlier conversation. A real
    model's item read "John Doe failed their driving test in March": the name came from
    the assistant's own reply. For every model. (A capitalised word no message holds is
    the summary's own: "Der Nutzer", a German noun.)

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> found = [(0, HumanMessage("I failed my driving test in March.")),
        ...          (1, AIMessage("Sorry to hear that, John Doe."))]
        >>> grounded_in_user(["John Doe failed the driving test in March.",
        ...                   "The user failed the driving test in March."], found)[0]
        ['The user failed the driving test in March.']
    """
    said = normalize_numbers(
        " ".join([*known, *(m.text for _, m in found if isinstance(m, HumanMessage))])
    )
    answered = normalize_numbers(" ".join(m.text for _, m in found if isinstance(m, AIMessage)))
    sources = item_provenance(items, found, [], 0, 0)
    human = {pos for pos, m in found if isinstance(m, HumanMessage)}
    batch = [pos for pos, m in found if isinstance(m, (HumanMessage, AIMessage))]
    kept, dropped = [], []
    for item, meta in zip(items, sources, strict=True):
        unsaid = [
            n
            for n in _named(normalize_numbers(item))
            if not _holds(said, n) and (n.isdigit() or _holds(answered, n))
        ]
        positions = meta["source_positions"]
        assistant_only = positions != batch and not human.intersection(positions)
        if unsaid or assistant_only:
            why = f"{unsaid} not said by the user" if unsaid else "from the assistant alone"
            logger.info("summary item dropped (%s): %r", why, item)
            dropped.append(item)
        else:
            kept.append(item)
    return kept, dropped


def _holds(text: str, word: str) -> bool:
    """Whether ``word`` occurs in ``text`` as a word (case-folded; digits anywhere, as CJK
    writes them beside characters: "我30岁").
    """
    if word.isdigit():
        return re.search(rf"(?<!\d){word}(?!\d)", text) is not None
    return re.search(rf"(?<![\w'’-]){re.escape(word.casefold())}", text.casefold()) is not None
