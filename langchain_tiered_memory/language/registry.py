"""The language records (:mod:`~langchain_tiered_memory.language.records`), found once, and
the language a text is in.

Example:
    >>> [language.code for language in languages()][:3]
    ['en', 'zh', 'es']
    >>> language_of("我多大了？").name, language_of("¿Cuántos años tengo?").name
    ('Chinese', 'Spanish')
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from functools import cache
from types import ModuleType

from langchain_tiered_memory.language import records
from langchain_tiered_memory.language.record import Language, Replies

__all__ = [
    "discover",
    "frame_words",
    "joined",
    "language_named",
    "language_of",
    "languages",
    "replies_in",
    "tag_questions",
]


def discover(package: ModuleType) -> tuple[Language, ...]:
    """The records of the modules of ``package`` (each module's ``LANGUAGE`` or
    ``LANGUAGES``), by their ``order``.

    Raises:
        TypeError: a module of ``package`` defines no record.
    """
    found: list[Language] = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        one = getattr(module, "LANGUAGE", None)
        found.extend([one] if one is not None else getattr(module, "LANGUAGES", ()))
        if one is None and not hasattr(module, "LANGUAGES"):
            raise TypeError(
                f"{module.__name__} defines no language: give it LANGUAGE = Language(...)"
            )
    return tuple(sorted(found, key=lambda language: (language.order, language.code)))


@cache
def languages() -> tuple[Language, ...]:
    """Every language record, the first one (English) the default."""
    return discover(records)


@cache
def frame_words() -> str:
    """How a summary item names the user, in every language ("The user's", "用户",
    "The user said: ", and the nouns of the languages whose record has no such phrase:
    "Der Nutzer", a German noun capitalised as every noun is): never evidence that an item
    was said, never a name.

    Example:
        >>> "用户" in frame_words() and "Nutzer" in frame_words()
        True
    """
    return " ".join(
        [
            *(language.the_user for language in languages()),
            *(language.said or "" for language in languages()),
            "user users Der Die Nutzer Benutzer Nutzerin L Le La Utilisateur Utilisatrice",
            "O A Usuário Usuária Il Lo Utente",
        ]
    )


def language_of(text: str, *, prefer: Language | None = None) -> Language:
    """The language ``text`` is in: the record with the most markers in it, the earlier on
    a tie, the first (English) when none has any. ``prefer`` (the language of the
    conversation a sentence is from) wins a tie, none-all included: a short sentence
    holds few markers, and Spanish shares some with English ("me", "a").

    Example:
        >>> spanish = language_of("¿Cómo me llamo?")
        >>> language_of("Hola, Ana.").code, language_of("Ana.", prefer=spanish).code
        ('es', 'es')
        >>> language_of("I live in Lyon.", prefer=spanish).code
        'en'
    """
    best, best_score = languages()[0], 0
    for language in languages():
        score = language.score(text)
        if score > best_score:
            best, best_score = language, score
    if prefer is not None and prefer is not best and prefer.score(text) >= best_score:
        return prefer
    return best


def language_named(name: str) -> Language | None:
    """The record of the language called ``name`` (``"Chinese"``), or ``None``."""
    return next((language for language in languages() if language.name == name), None)


@cache
def joined(field: str) -> re.Pattern[str]:
    """One pattern matching what any record's ``field`` (a regex) matches, ignoring case.

    Example:
        >>> bool(joined("summarize_request").search("请总结一下"))
        True
    """
    parts = [getattr(language, field) for language in languages()]
    return re.compile("|".join(f"(?:{part})" for part in parts if part), re.IGNORECASE)


def replies_in(text: str) -> Replies:
    """The package's own replies in the language of ``text`` (the first record's when its
    record has none).

    Example:
        >>> replies_in("¿Cómo me llamo?").tag_answers["name"].format(value="Lucía")
        'Te llamas Lucía.'
    """
    return language_of(text).replies or languages()[0].replies or Replies()


@cache
def tag_questions() -> dict[str, re.Pattern[str]]:
    """Per tag, one pattern for a sentence that is a question asking for it, in any language
    ("How old am I?", "Hi, what's my name?"), to be matched whole (``fullmatch``): beside
    the question only punctuation and the language's asides ("please", "了"), so that "How
    old am I in dog years?" is not a question for the stored age.
    """
    tags = {tag for language in languages() for tag in language.tag_questions}
    return {
        tag: re.compile(
            "|".join(
                f"(?:(?:{language.tag_question_asides}|\\W)*"
                f"(?:{language.tag_questions[tag]})"
                f"(?:{language.tag_question_asides}|\\W)*)"
                for language in languages()
                if tag in language.tag_questions
            ),
            re.IGNORECASE,
        )
        for tag in sorted(tags)
    }
