"""The rules of :mod:`~langchain_tiered_memory.language.attribution`, read from the language
records (:mod:`~langchain_tiered_memory.language.records`): how each language states a fact
about the speaker, and numbers written in words (``二十八岁``, ``thirty``).

Example:
    >>> normalize_numbers("I am thirty-one, 她二十八岁")
    'I am 31, 她28岁'
"""

from __future__ import annotations

import unicodedata

from langchain_tiered_memory.language.record import LanguageRules
from langchain_tiered_memory.language.records.chinese import LANGUAGE as _CHINESE
from langchain_tiered_memory.language.records.english import LANGUAGE as _ENGLISH
from langchain_tiered_memory.language.registry import languages

__all__ = ["CHINESE", "ENGLISH", "LANGUAGES", "LanguageRules", "normalize_numbers"]

ENGLISH = _ENGLISH.rules
CHINESE = _CHINESE.rules
LANGUAGES: tuple[LanguageRules, ...] = tuple(
    language.rules
    for language in languages()
    if language.rules != LanguageRules(name=language.rules.name)  # a record with no rules
)
"""The rules every message is read with (all of them: a message may mix languages)."""


def normalize_numbers(text: str) -> str:
    """``text`` NFKC-normalised, with ages in words written as digits (every language's).

    Example:
        >>> normalize_numbers("我今年二十八岁，she is thirty-two, tengo veinte años")
        '我今年28岁,she is 32, tengo 20 años'
    """
    text = unicodedata.normalize("NFKC", text)
    for language in languages():
        if language.numbers is not None:
            text = language.numbers(text)
    return text
