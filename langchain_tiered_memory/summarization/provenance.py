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

from langchain_tiered_memory.language.registry import frame_words, languages
from langchain_tiered_memory.language.rules import normalize_numbers
from langchain_tiered_memory.language.text import is_cjk, split_sentences, tokenize
from langchain_tiered_memory.summarization.summarizer import FRAME_GRAMS, char_grams

__all__ = ["MIN_SAID_SHARE", "MIN_SOURCE_SHARE", "grounded_in_user", "item_provenance", "thread_at"]

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
            sources = _sources(grams, dict(texts), shares, best)
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


def _sources(
    grams: set[str],
    held: dict[int, set[str]],
    shares: Sequence[tuple[int, float]],
    best: float,
) -> list[int]:
    """The positions an item came from: the message that carries most of it, and each
    other one that carries at least half as much, provided it is not just a weaker copy
    of the same phrasing: it must carry at least half as much of the item the best one
    lacks as the best carries that it lacks. "I like X very much." and "I like Y very
    much." both carry most of "The user likes Y very much." (issue 77: forgetting the
    thread that said Y kept the item); "I live in Paris." said in two threads carries the
    item alike from each, and both stay its sources.
    """
    top = max(shares, key=lambda s: s[1])[0]
    mine = grams & held[top]
    sources = []
    for pos, share in shares:
        if share < max(best / 2, MIN_SOURCE_SHARE):
            continue
        theirs = grams & held[pos]
        if pos == top or 2 * len(theirs - mine) >= len(mine - theirs):
            sources.append(pos)
    return sources


# A capitalised word, or a run of digits: what an item names (a person, a place, a month,
# an age, a year) and must have from the user, not from the assistant or the model. A quote
# mark before it does not hide it ("'Jack'"); an apostrophe inside a word does ("user's").
_NAMED = re.compile(r"(?<![\w-])(?<!\w['’])[A-ZÀ-ÖØ-ÞА-Я][\w'’-]*|\d+")

_FUNCTION_WORDS = frozenset().union(*(language.stopwords for language in languages()))


def _key(term: str) -> str:
    """What two words must share to be one word here: a CJK term as it is, another word's
    first five letters once stemmed ("living"/"lives", "Marseille"/"Marseilles").
    """
    return term if any(is_cjk(c) for c in term) else term[:5]


def _keys(text: str) -> set[str]:
    """The content words of ``text`` as :func:`_key` keys: stemmed words and CJK
    character pairs (single characters say little), function words left out.
    """
    return {_key(t) for t in tokenize(text) if len(t) > 1}


# the summary's words for the user (language.registry.frame_words): no evidence, no name
_FRAME_KEYS = _keys(frame_words())
_FRAME_NAMES = {w.casefold() for w in re.findall(r"\w+", frame_words())}


def _named(item: str) -> list[str]:
    """The names and numbers of ``item``: capitalised words that are not function words
    or the summary's words for the user ("The user", "In March": "March" counts) and digit
    runs.
    """
    out = []
    for word in _NAMED.findall(item):
        base = re.sub(r"['’]s$", "", word)
        folded = base.casefold()
        if folded and folded not in _FUNCTION_WORDS and folded not in _FRAME_NAMES:
            out.append(base)
    return out


# The share of a sentence's content words that must be the user's. Chosen on two LoCoMo
# conversations (bench/grounding.py: the annotators' facts kept 0.997, facts of another
# session dropped 0.47; at 1/4 0.21, at 1/2 the true ones start to go, 0.980), checked on
# the other three once (0.994 and 0.61).
MIN_SAID_SHARE = 1 / 3


def _unsaid(item: str, said: str, said_keys: set[str]) -> str | None:
    """Why ``item`` is not what the user said (``None``: it is): a name or a number the
    user never said (numbers in words count), or a sentence of which less than a third of
    the content words are the user's. A paraphrase keeps most of them ("I don't eat meat"
    -> "The user does not eat meat"); an invented fact brings its own ("The user works
    as a software engineer").
    """
    normal = normalize_numbers(item)
    unsaid = [n for n in _named(normal) if not _holds(said, n, said_keys)]
    if unsaid:
        return f"{unsaid} not said by the user"
    for sentence in split_sentences(normal):
        content = _keys(sentence) - _FRAME_KEYS
        if content and len(content & said_keys) < MIN_SAID_SHARE * len(content):
            return f"{sentence!r}: most of its words are not the user's"
    return None


def grounded_in_user(
    items: Sequence[str], found: Sequence[tuple[int, BaseMessage]], known: Sequence[str] = ()
) -> tuple[list[str], list[str]]:
    """Split ``items`` into those kept and those dropped (``(kept, dropped)``), for every
    model: a memory is only what the user said.

    An item is dropped when it names what the user never said (a capitalised word: a
    person, a place, a month; or a number, in digits or words), when in one of its
    sentences less than a third of the content words are the user's, or when it is
    carried by the assistant's messages alone. ``known`` (the user's tags) counts as
    said: a name given in an earlier conversation. Real models wrote "John Doe failed
    their driving test in March" (the name from the assistant's reply), and, asked to
    summarize a conversation that was only the request, "The user has a friend named
    Jack who lives in New York."

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> found = [(0, HumanMessage("I failed my driving test in March.")),
        ...          (1, AIMessage("Sorry to hear that, John Doe."))]
        >>> grounded_in_user(["John Doe failed the driving test in March.",
        ...                   "The user failed the driving test in March.",
        ...                   "The user works as a software engineer."], found)[0]
        ['The user failed the driving test in March.']
    """
    said = normalize_numbers(
        " ".join([*known, *(m.text for _, m in found if isinstance(m, HumanMessage))])
    )
    said_keys = _keys(said)
    sources = item_provenance(items, found, [], 0, 0)
    human = {pos for pos, m in found if isinstance(m, HumanMessage)}
    batch = [pos for pos, m in found if isinstance(m, (HumanMessage, AIMessage))]
    kept, dropped = [], []
    for item, meta in zip(items, sources, strict=True):
        positions = meta["source_positions"]
        why = _unsaid(item, said, said_keys)
        if why is None and positions != batch and not human.intersection(positions):
            why = "from the assistant alone"
        if why:
            logger.info("summary item dropped (%s): %r", why, item)
            dropped.append(item)
        else:
            kept.append(item)
    return kept, dropped


def _holds(text: str, word: str, keys: set[str]) -> bool:
    """Whether ``word`` occurs in ``text`` as a word (case-folded, or as a content word of
    it, :func:`_key`; digits anywhere, as CJK writes them beside characters: "我30岁").
    """
    if word.isdigit():
        return re.search(rf"(?<!\d){word}(?!\d)", text) is not None
    folded = word.casefold()
    if re.search(rf"(?<![\w'’-]){re.escape(folded)}", text.casefold()) is not None:
        return True
    return bool(_keys(folded) & keys)
