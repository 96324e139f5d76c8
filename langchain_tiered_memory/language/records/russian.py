"""Russian: Cyrillic. The unambiguous cues only; a fuller entry is welcome.

Example:
    >>> from langchain_tiered_memory.language.registry import language_of
    >>> language_of("Меня зовут Иван").code
    'ru'
"""

from __future__ import annotations

from langchain_tiered_memory.language.record import Language, LanguageRules

__all__ = ["LANGUAGE"]

LANGUAGE = Language(
    code="ru",
    name="Russian",
    order=50,
    markers=r"[\u0400-\u04ff]",
    rules=LanguageRules(
        name="ru",
        cues={"name": (r"меня зовут",)},
        suffixes={"age": r"\s*(?:лет|года|год)"},
        self_subject=r"\b(?:мне|я)\b",
        other_subject=r"\b(?:он|она)\b",
        change=r"\b(?:теперь|сейчас)\b",
        negation=r"\b(?:не|нет)\b",
        reporting=r"\b(?:сказал|сказала|говорит)\b",
        irrealis=r"\b(?:если|когда)\b",
        clause_break=r"\b(?:и|но)\b",
    ),
    first_person=r"(?<![\w'])(?:я|мой|моя|моё|мои|меня|мне)(?![\w])",
    said="Пользователь сказал: ",
)
