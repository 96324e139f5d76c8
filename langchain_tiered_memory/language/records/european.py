"""German, French, Portuguese and Italian, as one record of their unambiguous cues: each is
welcome to a record of its own (``spanish.py`` shows what a full one holds).

Its ``name`` is ``None``: the summarizer is not asked for one language (a Latin-script
language is not told from its letters alone).

Example:
    >>> from langchain_tiered_memory.language.registry import language_of
    >>> language_of("Ich heiße Lena und ich bin 30 Jahre alt").code
    'de-fr-pt-it'
"""

from __future__ import annotations

from langchain_tiered_memory.language.record import Language, LanguageRules

__all__ = ["LANGUAGE"]

LANGUAGE = Language(
    code="de-fr-pt-it",
    name=None,
    order=60,
    markers=r"\b(?:ich|und|der|die|das|ist|nicht|bin|mein|heiße|je|et|le|les|est|pas|suis|"
    r"je|m'appelle|eu|não|sou|meu|io|il|non|che|sono|chiamo)\b|[äöüßçãõ]",
    rules=LanguageRules(
        name="de-fr-pt-it",
        cues={
            "name": (
                r"\bich heiße|\bich heisse|\bmein name ist|\bje m'appelle|\bmon nom est|"
                r"\bme chamo|\bmeu nome é|\bmi chiamo|\bil mio nome è",
            ),
        },
        suffixes={"age": r"\s*(?:jahre|ans|anos|anni)"},
        self_subject=r"\b(?:ich|je|j'|eu|io)\b",
        other_subject=r"\b(?:er|sie|il|elle|ele|ela|lui|lei)\b",
        change=r"\b(?:jetzt|nun|maintenant|agora|adesso|ora)\b",
        negation=r"\b(?:nicht|kein|keine|nie|pas|jamais|não|non)\b",
        reporting=r"\b(?:sagt|sagte|meint|dit|disait|diz|disse|dice|detto)\b",
        irrealis=r"\b(?:wenn|falls|si|quando|se)\b",
        clause_break=r"\b(?:und|aber|et|mais|e|mas|ma)\b",
    ),
    first_person=r"(?<![\w'])(?:ich|mein|meine|meinen|meinem|meiner|meines|mir|mich|je|j|moi|"
    r"mon|ma|mes|eu|meu|minha|meus|minhas|io|mio|mia|miei|mie)(?![\w])",
    summarize_request=r"\b(?:zusammenfass\w*|résum\w*|resum\w*|riassum\w*)\b",
)
