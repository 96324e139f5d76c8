"""Languages known by their script alone: the summarizer is asked to write in them, and a
summary item is checked to be in them. No cues yet: each is welcome to a fuller record.

Example:
    >>> from langchain_tiered_memory.language.registry import language_of
    >>> language_of("مرحبا، اسمي ليلى").name
    'Arabic'
"""

from __future__ import annotations

from langchain_tiered_memory.language.record import Language, LanguageRules

__all__ = ["LANGUAGES"]

_SCRIPTS = {
    "ar": ("Arabic", r"[\u0600-\u06ff]"),
    "he": ("Hebrew", r"[\u0590-\u05ff]"),
    "el": ("Greek", r"[\u0370-\u03ff]"),
    "th": ("Thai", r"[\u0e00-\u0e7f]"),
    "hi": ("Hindi", r"[\u0900-\u097f]"),
}
LANGUAGES = tuple(
    Language(code=code, name=name, order=70, markers=letters, rules=LanguageRules(name=code))
    for code, (name, letters) in _SCRIPTS.items()
)
