"""The form a summary item is stored in, whatever form a model wrote it in: about the user,
in the third person, self-contained.

Two forms a real model (Qwen2.5-Coder-1.5B) wrote that read wrong later, out of the
conversation they came from:

- **The user's own sentence, in the first person** ("I moved to Berlin last month."): in a
  prompt it reads as the assistant speaking. It is stored as the user's quoted words
  ("The user said: I moved to Berlin last month."), the extractive fallback's form; a
  first-person item the user never said (the assistant's "I recommend the tasting menu.")
  is not a fact about the user and is dropped.
- **The user's request, reported** ("The user asked for a summary of the conversation.",
  "Por favor, resume nuestra conversación."): every word is the user's, so the provenance
  rule passes it, but it is about the conversation, not the user: not stored
  (:func:`reports_a_request`).
- **An item that opens with a pronoun for someone the item before named**
  (["王芳今年28岁", "她的生日是十月三日"]: "her birthday is October 3"): alone, "her" is
  nobody. It is joined to the item before, where its person is named, and the reader
  resolves it as the model meant it. An item whose pronoun the user used too is left as it
  is: the user's own "she" may be someone else, and joining would make a guess.

Example:
    >>> first_person_item("I moved to Berlin last month.", said="I moved to Berlin last month.")
    'The user said: I moved to Berlin last month.'
    >>> first_person_item("I recommend the tasting menu.", said="I moved to Berlin.")
    >>> kept = ["王芳今年28岁"]
    >>> with_antecedent(kept, "她的生日是十月三日", said="我的生日是十月三日。", max_chars=300)
    True
    >>> kept
    ['王芳今年28岁。她的生日是十月三日']
"""

from __future__ import annotations

import re
import unicodedata

from langchain_tiered_memory.language.registry import frame_words, joined, languages
from langchain_tiered_memory.language.text import (
    char_grams,
    is_cjk,
    is_first_person,
    said_item,
)

__all__ = ["first_person_item", "reports_a_request", "with_antecedent"]

MIN_SAID_SHARE = 0.5  # as the grounding guard: most of the item's n-grams in the user's lines

# How items name the user ("The user's", "用户") or quote them ("The user said: "): an item
# with one of these is about the user already, whatever "I" it quotes.
_ABOUT_THE_USER = re.compile(
    "|".join(
        re.escape(form.strip(" :：'s"))
        for language in languages()
        for form in (language.the_user, language.said or "")
        if form.strip(" :：'s")
    ),
    re.IGNORECASE,
)
_PRONOUN_LED = joined("pronoun_subject")

# What makes an item a report of the conversation act rather than a fact about the user,
# in every record's words: a request to summarize ("summary", "总结", "resumen"), one to
# remember when the item also names the conversation ("remember this conversation"; "the
# user asked me to remember that they are allergic to peanuts" is a fact), a request's
# opening ("Please", "请", "Por favor"), the conversation or the assistant.
_SUMMARIZE = joined("summarize_request")
_REMEMBER = re.compile(
    "|".join(f"(?:{language.rules.remember})" for language in languages()), re.IGNORECASE
)
_REQUEST = re.compile(
    "|".join(f"(?:{language.rules.request})" for language in languages()), re.IGNORECASE
)
_CONVERSATION = joined("about_assistant")
_FRAME = frozenset(re.findall(r"[^\W_]+", frame_words().casefold()))
_FUNCTION_WORDS = frozenset().union(*(language.stopwords for language in languages()))
_WORDS = re.compile(r"[^\W_]+")

# The words a reported request has beside the act itself: who asked and how ("asked",
# "wants", "quiere", "要求"), at most two ("The user wants the assistant to summarize the
# chat."). A fact has its own words ("... a summary of their trip to Japan for their blog").
MAX_ACT_WORDS = 2


def _content_words(text: str) -> float:
    """How many words of ``text`` are neither function words nor how an item names the
    user (a CJK run counts half a word a character, as elsewhere).
    """
    count = 0.0
    for word in _WORDS.findall(text.casefold()):
        if word in _FUNCTION_WORDS or word in _FRAME:
            continue
        cjk = sum(is_cjk(c) for c in word)
        count += cjk / 2 + (1 if cjk < len(word) else 0)
    return count


def reports_a_request(item: str) -> bool:
    """Whether ``item`` only reports the user's request to summarize or remember the
    conversation, in any language: with the request, the conversation and the user's frame
    taken out, at most :data:`MAX_ACT_WORDS` words are left. Such an item is not a fact:
    Qwen2.5-Coder-1.5B stored "The user asked for a summary of the conversation." and,
    told to write in Spanish, "Por favor, resume nuestra conversación." (issue 79).

    Example:
        >>> reports_a_request("The user asked for a summary of the conversation.")
        True
        >>> reports_a_request("用户要求总结我们的对话。")
        True
        >>> reports_a_request("The user wants a summary of their trip to Japan for the blog.")
        False
        >>> reports_a_request("The user asked me to remember they are allergic to peanuts.")
        False
    """
    summarize = _SUMMARIZE.search(item)
    if summarize is None and not (_REMEMBER.search(item) and _CONVERSATION.search(item)):
        return False
    rest = _REQUEST.sub(" ", item.strip())
    for pattern in (_SUMMARIZE, _REMEMBER, _CONVERSATION):
        rest = pattern.sub(" ", rest)
    return _content_words(rest) <= MAX_ACT_WORDS


def first_person_item(item: str, *, said: str | None) -> str | None:
    """``item`` in the form it is stored in if it speaks in the first person without naming
    the user: the user's quoted words if most of it is in ``said`` (what the user said),
    ``None`` if not (someone else's "I"); any other item unchanged. With ``said=None`` (no
    transcript to check against) a first-person item is taken as the user's.
    """
    if _ABOUT_THE_USER.search(item) or not is_first_person(item):
        return item
    if said is not None:
        grams = char_grams(item)
        if len(grams & char_grams(said)) < MIN_SAID_SHARE * len(grams):
            return None
    # labelled in the user's language on a tie of the item's (an English label on a
    # Spanish sentence made the language rule drop it)
    return said_item(item, context=said)


def with_antecedent(kept: list[str], item: str, *, said: str, max_chars: int) -> bool:
    """Join ``item`` to the last of ``kept`` if it opens with a third-person pronoun ("She",
    "她") that the user, in ``said``, never used: the pronoun stands for whom the item
    before names. Whether it was joined (``kept[-1]`` then holds both, at most
    ``max_chars`` long).
    """
    pronoun = _PRONOUN_LED.match(item)
    if not kept or pronoun is None:
        return False
    word = re.escape(pronoun.group(0))
    if re.search(rf"(?<!\w){word}(?!\w)" if word.isascii() else word, said, re.IGNORECASE):
        return False
    before = kept[-1].rstrip()
    wide = unicodedata.east_asian_width(before[-1]) in "WF"
    if unicodedata.category(before[-1]) != "Po":
        before += "。" if wide else "."
    both = before + ("" if wide else " ") + item
    if len(both) > max_chars:
        return False
    kept[-1] = both
    return True
