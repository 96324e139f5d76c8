"""The user's own sentences a small model's summary left out, kept as the user said them.

A small local model's items drop facts: SmolLM2-135M summarized "My birthday is on March 5
and I live in Lyon." and "I work as a nurse at the hospital." as "They work at the hospital.
Their birthday is March 5th." (issue 79, 3 runs of 3): Lyon and "nurse" were in no item, and
the next chat could not say where the user lives. The rule: where the model wrote no item
that keeps a fact, the user's own sentence is kept, labelled as the language records label
a quoted sentence ("The user said: ...", "用户说：...", "El usuario dijo: ..."), as the
Chinese and Spanish fallbacks already keep them.

A fact is what a sentence's content words carry (:func:`content_units`: the words left when
the function words and the speaker's "I", "my", "我", "mi" are taken out; a CJK character
each). A sentence with a content word that no item holds is kept; a model item all of whose
content words the kept sentences hold says nothing they do not, and goes. No model and no
threshold is involved, so nothing is invented and nothing is tuned: the cost of a wrong
call is a sentence kept beside an item that says it too.

Example:
    >>> said = ["My birthday is on March 5 and I live in Lyon.", "I am a nurse."]
    >>> for item in keep_uncovered(["They are a nurse. Their birthday is March 5th."], said, 20):
    ...     print(item)
    They are a nurse. Their birthday is March 5th.
    The user said: My birthday is on March 5 and I live in Lyon.
    >>> keep_uncovered(["The user lives in Lyon."], ["I live in Lyon."], 20)
    ['The user lives in Lyon.']
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage

from langchain_tiered_memory.language.attribution import states_a_fact
from langchain_tiered_memory.language.registry import frame_words, joined
from langchain_tiered_memory.language.text import is_cjk, said_item, split_sentences, tokenize

__all__ = ["content_units", "keep_uncovered", "user_statements"]

logger = logging.getLogger(__name__)

_FIRST_PERSON = joined("first_person")  # the speaker: an item names them otherwise
_ORDINAL = re.compile(r"^(\d+)(?:st|nd|rd|th|º|ª)$")  # "5th" says what "5" says
_FRAME = frozenset(tokenize(frame_words()))  # how an item names the user: "user", "用"


def content_units(text: str) -> frozenset[str]:
    """The content words of ``text``: its tokens (stemmed, without its language's function
    words) without the speaker's first person and the items' frame; a CJK run as its
    characters, a number without its ordinal ending.

    Example:
        >>> sorted(content_units("My birthday is on March 5th."))
        ['5', 'birthday', 'march']
        >>> sorted(content_units("我住在里昂。"))
        ['住', '在', '昂', '里']
    """
    units: set[str] = set()
    for token in tokenize(_FIRST_PERSON.sub(" ", text)):
        if any(is_cjk(char) for char in token):
            if len(token) == 1:  # the characters, not tokenize's bigrams of them
                units.add(token)
            continue
        ordinal = _ORDINAL.match(token)
        units.add(ordinal.group(1) if ordinal else token)
    return frozenset(units - _FRAME)


def user_statements(
    messages: Sequence[BaseMessage], *, min_chars: int, max_chars: int
) -> list[str]:
    """The user's sentences that state a fact (first person, not a question or a request:
    :func:`~langchain_tiered_memory.language.attribution.states_a_fact`) of ``min_chars``
    to ``max_chars``, in order, each once.

    Example:
        >>> user_statements([HumanMessage("Hi! I live in Lyon. Where is it?")],
        ...                 min_chars=4, max_chars=280)
        ['I live in Lyon.']
    """
    out: list[str] = []
    for message in messages:
        if isinstance(message, HumanMessage):
            for sentence in split_sentences(message.text):
                if min_chars <= len(sentence) <= max_chars and states_a_fact(sentence):
                    out.append(sentence.strip())
    return list(dict.fromkeys(out))


def keep_uncovered(
    items: Sequence[str], statements: Sequence[str], max_items: int, context: str | None = None
) -> list[str]:
    """``items`` with each of the user's ``statements`` (their first-person sentences that
    state a fact) that holds a content word no item holds, as the user's own sentence
    (:func:`~langchain_tiered_memory.language.text.said_item`, its language told with
    ``context``, what the user said); an item all of whose content words those kept
    sentences hold is left out. At most ``max_items``, the model's first.
    """
    covered = frozenset().union(*(content_units(item) for item in items))
    kept: list[str] = []
    said: set[str] = set()
    for sentence in statements:
        units = content_units(sentence)
        if units - covered:
            item = said_item(sentence, context=context)
            if item not in kept and item not in items:
                kept.append(item)
                said |= units
    if not kept:
        return list(items)
    logger.info("kept %d of the user's own sentences no summary item covered", len(kept))
    left = [item for item in items if not (units := content_units(item)) or not units <= said]
    return [*left, *kept][:max_items]
