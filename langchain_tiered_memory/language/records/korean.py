"""Korean: hangul. The unambiguous cues only; a fuller entry is welcome.

Example:
    >>> from langchain_tiered_memory.language.registry import language_of
    >>> language_of("제 이름은 민수입니다").code
    'ko'
"""

from __future__ import annotations

from langchain_tiered_memory.language.record import Language, LanguageRules

__all__ = ["LANGUAGE"]

LANGUAGE = Language(
    code="ko",
    name="Korean",
    order=40,
    markers=r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]",
    rules=LanguageRules(
        name="ko",
        cues={"name": (r"제 이름은|내 이름은",)},
        suffixes={"age": r"\s*(?:살|세)"},
        self_subject=r"저는|나는",
        change=r"지금",
        negation=r"아니",
        reporting=r"라고",
    ),
    first_person=r"(?<!\w)(?:저는|제가|저의|나는|내가|제|저|나|내)(?!\w)",
    summarize_request=r"요약",
    said="사용자가 말했다: ",
)
