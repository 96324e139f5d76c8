"""Japanese: kana, with or without kanji. The unambiguous cues only; a fuller entry is welcome.

Example:
    >>> from langchain_tiered_memory.language.registry import language_of
    >>> language_of("私の名前は田中です").code
    'ja'
"""

from __future__ import annotations

from langchain_tiered_memory.language.record import Language, LanguageRules

__all__ = ["LANGUAGE"]

LANGUAGE = Language(
    code="ja",
    name="Japanese",
    order=30,
    markers=r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f\u4e00-\u9fff]",
    excludes=r"^[^\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]*$",  # no kana: not Japanese
    rules=LanguageRules(
        name="ja",
        cues={"name": (r"私の名前は|僕の名前は",)},
        suffixes={"age": r"\s*(?:歳|才)"},
        self_subject=r"私|僕|俺",
        change=r"今は",
        negation=r"じゃない",
        reporting=r"と言",
    ),
    first_person=r"[私僕俺]|わたし|あたし",
    question_end=r"か[。.]?",
    summarize_request=r"まとめ|要約",
    said="ユーザーは言った：",
    the_user="ユーザー",
)
