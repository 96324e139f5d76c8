"""Which tag values a message states about the user themself.

The exact tier is put into every prompt and trusted without question, so a value enters it
only when the user's own message states it **about the user**. A model's ``user_tag``
arguments, whoever made them (the model's own call, a forced extraction, a small model's
forced capture), are checked against the message that prompted them:

1. the value (or its normal form: ``28岁`` -> 28, ``二十八岁`` -> 28, ``thirty`` -> 30)
   occurs in the message as a whole word, and is not most of the message (an echo);
2. it is stated of the user: right after a cue of the tag ("my name is", "call me",
   "我叫", "I'm" + a number), or (a tag with no cue) in a sentence whose nearest subject
   before it is the user ("I", "my", "我") and not someone else ("my sister", "他",
   "我妹妹"). A cue that also introduces other things ("I'm" + tired, "我是" + 护士) takes
   a value only when it looks like one: a capitalised word, a Chinese name starting with
   a surname, a number followed by nothing that makes it minutes or kilometres;
3. a value that would replace a different stored one needs an explicit change ("I'm 31
   now", "actually", "我改名叫", "其实", "现在"); a tag not stored yet needs only 1 and 2.

A value that fails is dropped and logged with its reason; the rest is stored. The rules
are data (:class:`LanguageRules`): a language is one more entry of :data:`LANGUAGES`.
:func:`stated_tags` reads the same cues the other way round: what a message states, with
no model at all (it fills what a model's call left out: "Hi, I'm Carol and I'm 52." ->
the name too).

Example:
    >>> ground_tags({"name": "Emma"}, "My sister Emma lives in Lyon.").kept
    {}
    >>> ground_tags({"name": "Carol", "age": 52}, "Hi, I'm Carol and I'm 52.").kept
    {'name': 'Carol', 'age': 52}
    >>> ground_tags({"age": 31}, "I'm 31.", stored={"age": "30"}).dropped[0].reason
    'changes the stored value 30 without saying so (e.g. "now", "actually")'
    >>> stated_tags("你好，我叫赵磊，今年40岁。", ["name", "age"])
    {'name': '赵磊', 'age': 40}
"""

from __future__ import annotations

import bisect
import functools
import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_tiered_memory.language.rules import (
    CHINESE,
    LANGUAGES,
    LanguageRules,
    normalize_numbers,
)
from langchain_tiered_memory.language.text import is_cjk, is_first_person, is_question

logger = logging.getLogger(__name__)

__all__ = [
    "LANGUAGES",
    "DroppedValue",
    "Grounding",
    "LanguageRules",
    "check_changes",
    "ground_tags",
    "is_request",
    "may_state_tags",
    "normalize_numbers",
    "stated_tags",
    "states_a_change",
    "states_a_fact",
]

# A value that is nearly all of the message is the message echoed, not a fact taken from
# it (SmolLM2-135M: {"name": "Remind me how old I am"}); "I am Alice Moreau." -> "Alice
# Moreau" is 79% of it and is kept.
_MAX_VALUE_SHARE = 0.85
# Where a sentence ends: the subject of one sentence does not carry into the next.
_SENTENCE_END = re.compile(r"[.!?。！？\n]+")


# ----- where a value occurs -----


def _edge(neighbour: str, end: str) -> bool:
    """Whether a match may end at ``end`` beside ``neighbour`` ("" at either end)."""
    if not neighbour or not (neighbour.isalnum() or neighbour == "_"):
        return True
    return is_cjk(neighbour) or is_cjk(end)  # CJK writes words without spaces


def _occurrences(value: str, text: str) -> list[int]:
    """Where ``value`` occurs in ``text`` as whole words, case-insensitively."""
    needle, haystack = value.casefold(), text.casefold()
    if len(needle) != len(value) or len(haystack) != len(text):  # casefold changed lengths
        needle, haystack = value.lower(), text.lower()
    found, start = [], haystack.find(needle)
    while start >= 0 and needle:
        end = start + len(needle)
        before = haystack[start - 1] if start else ""
        after = haystack[end] if end < len(haystack) else ""
        if _edge(before, needle[0]) and _edge(after, needle[-1]):
            found.append(start)
        start = haystack.find(needle, start + 1)
    return found


@functools.cache
def _rx(pattern: str, flags: int = re.IGNORECASE) -> re.Pattern[str]:
    """``pattern`` compiled once: ``re``'s own cache cost more per call than the matching
    (half of :func:`stated_tags`' time, measured with seven languages' rules).
    """
    return re.compile(pattern, flags)


# How far before a value its cue or subject may stand, and after it what qualifies it
# (characters): reading a message costs time linear in its length (a 2,400-character
# message took 25 s when every candidate value read the whole text before it).
_REACH = 300


@functools.lru_cache(maxsize=16)
def _layout(text: str) -> tuple[list[int], list[bool]]:
    """Where ``text``'s sentences start, and whether each position lies inside quotation
    marks or code: read once per message, for all of its candidate values.
    """
    starts = [0, *(m.end() for m in _SENTENCE_END.finditer(text))]
    inside: list[bool] = []
    stack: list[str] = []
    plain = dict.fromkeys(_QUOTE_SAME, 0)
    for c in text:
        inside.append(bool(stack) or any(n % 2 for n in plain.values()))
        if stack and c == _QUOTE_PAIRS[stack[-1]]:
            stack.pop()
        elif c in _QUOTE_PAIRS:
            stack.append(c)
        elif c in plain:
            plain[c] += 1
    inside.append(bool(stack) or any(n % 2 for n in plain.values()))
    return starts, inside


def _sentence_before(text: str, start: int) -> str:
    starts, _ = _layout(text)
    begins = starts[bisect.bisect_right(starts, start) - 1]
    return text[max(begins, start - _REACH) : start]


def _sentence_after(text: str, end: int) -> str:
    return _SENTENCE_END.split(text[end : end + _REACH], maxsplit=1)[0]


def _ends_with(patterns: Iterable[str], before: str) -> bool:
    return any(_rx(rf"(?:{p})\s*[:：,，]?\s*$").search(before) for p in patterns)


def _subject(before: str, languages: Iterable[LanguageRules]) -> str | None:
    """``"self"``, ``"other"`` or ``None``: the subject nearest before a value in its
    sentence (the match that ends last; "我妹妹" outlasts "我", "my sister" "my").
    """
    best, kind = -1, None
    for rules in languages:
        for name, pattern, flags in (
            ("self", rules.self_subject, re.IGNORECASE),
            ("other", rules.other_subject, re.IGNORECASE),
            ("other", rules.named_other, 0),
        ):
            for match in _rx(pattern, flags).finditer(before):
                if match.end() > best or (match.end() == best and name == "other"):
                    best, kind = match.end(), name
    return kind


# ----- what makes a statement not the user's own, in any language -----

# quotation marks that open and close (German „…“ closes with the English opener)
_QUOTE_PAIRS = {"“": "”", "„": "“", "「": "」", "『": "』", "«": "»", "‹": "›", "《": "》"}
_QUOTE_SAME = ('"', "`")
_CLAUSE_MARK = re.compile(r"[,;:，；：、—–()（）\[\]]")


def _quoted(text: str, start: int) -> bool:
    """Whether ``start`` lies inside quotation marks or code (backticks): words quoted
    are someone's words, or an example, not what the user states of themself.
    """
    return _layout(text)[1][start]


def _clause(before: str, languages: tuple[LanguageRules, ...]) -> str:
    """The clause a value stands in, up to the value: after the last comma, semicolon,
    colon, dash or conjunction of its sentence.
    """
    cut = max((m.end() for m in _CLAUSE_MARK.finditer(before)), default=0)
    for rules in languages:
        for m in _rx(rules.clause_break).finditer(before):
            cut = max(cut, m.end())
    return before[cut:]


def _reported(before: str, after: str, languages: tuple[LanguageRules, ...]) -> bool:
    """Whether the sentence reports someone else's words or thoughts: a verb of saying
    whose subject is not the user ("he said", "my friend told me", "…, said my brother",
    "他说"); "I told you" is the user's own statement.
    """
    for rules in languages:
        for m in _rx(rules.reporting).finditer(before):
            if _subject(before[: m.start()], languages) != "self":
                return True
        later = _rx(rules.reporting).search(after)
        if later and _subject(after[: later.start()], languages) != "self":
            return True
    return False


def _not_asserted(
    tag: str, text: str, start: int, end: int, languages: tuple[LanguageRules, ...]
) -> str | None:
    """Why the value at ``text[start:end]`` is not asserted of the user whatever cue comes
    before it, or ``None``: general grammar, read the same way in every language of the
    rules: quotation and code, reported speech, negation, a condition or a wish, a
    request's payload ("Translate: ..."), and what follows that makes it another thing
    (a possessive, a duration).
    """
    if _quoted(text, start):
        return "quoted, not stated"
    before = _sentence_before(text, start)
    after = _sentence_after(text, end)
    if _reported(before, after, languages):
        return "someone else's words (reported speech)"
    clause = _clause(before, languages)
    for rules in languages:
        if _rx(rules.negation).search(clause):
            return "negated"
        if _rx(rules.irrealis).search(clause):
            return "a condition, a wish or the future, not a present fact"
        not_after = rules.not_after.get(tag)
        if not_after and (
            _rx(not_after).match(text[end:]) or _rx(rf"(?:{not_after})$").search(text[start:end])
        ):
            return f"not the user's {tag} (what follows makes it something else)"
    head = text[:start].replace("：", ":")
    if ":" in head and is_request(head.split(":", 1)[0], languages):
        return "the payload of a request, not a statement"
    return None


# ----- the rules -----


@dataclass(frozen=True)
class DroppedValue:
    """A tag value that was not stored, and why."""

    tag: str
    value: Any
    reason: str


@dataclass(frozen=True)
class Grounding:
    """What :func:`ground_tags` keeps and drops."""

    kept: dict[str, Any]
    dropped: list[DroppedValue]

    def log(self, where: str) -> None:
        """Log every dropped value once, with its reason."""
        for d in self.dropped:
            logger.info("%s: tag %s=%r not stored: %s", where, d.tag, d.value, d.reason)


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _stated_at(
    tag: str,
    value: str,
    text: str,
    start: int,
    languages: Iterable[LanguageRules],
    *,
    lowercase_names: bool = True,
    loose: bool = True,
) -> str | None:
    """``None`` if the occurrence of ``value`` at ``start`` is stated of the user, else
    why not. ``lowercase_names``: in an all-lower-case message a loose cue may take an
    uncapitalised name a model proposed ("hi i'm carol"); read with no model, never ("hi
    i'm tired"). ``loose=False``: only the unambiguous cues count ("my name is", not
    "I'm" + a capitalised word, which may be "French").
    """
    languages = tuple(languages)
    denied = _not_asserted(tag, text, start, start + len(value), languages)
    if denied is not None:
        return denied
    before, after = _sentence_before(text, start), text[start + len(value) :][:_REACH]
    cued = [r for r in languages if tag in r.cues or tag in r.loose_cues or tag in r.suffixes]
    for rules in cued:
        fits_after = _rx(rules.value_after.get(tag, "")).match(after)
        if fits_after and _ends_with(rules.cues.get(tag, ()), before):
            return None
        looks = rules.value_looks.get(tag)
        if (
            loose
            and fits_after
            and looks
            and _ends_with(rules.loose_cues.get(tag, ()), before)
            and (
                re.fullmatch(looks, text[start : start + len(value)])
                or (lowercase_names and _lowercase(text, looks))
            )
        ):
            return None
        suffix = rules.suffixes.get(tag)
        if suffix and _rx(suffix).match(after):
            if _subject(before, languages) == "self":
                return None
            return "stated of someone else, not the user"
    if cued:
        subject = _subject(before, languages)
        if subject == "other":
            return "stated of someone else, not the user"
        return f"not stated as the user's {tag}"
    subject = _subject(before, languages)
    if subject == "self":
        return None
    if subject == "other":
        return "stated of someone else, not the user"
    return "not stated about the user"


def may_state_tags(
    text: str, tags: Iterable[str], languages: Iterable[LanguageRules] = LANGUAGES
) -> bool:
    """Whether ``text`` could state one of ``tags`` as :func:`ground_tags` keeps values: a
    cue or unit of one of them is in it, or one has none (a tag of the app's own, stated
    by any first-person sentence). When not, no model is asked: its values would all be
    dropped ("My birthday is on March 5." holds no cue of name or age; a real model's
    extraction read name="John Doe", age=30 from it).

    Example:
        >>> may_state_tags("My birthday is on March 5.", ["name", "age"])
        False
        >>> may_state_tags("Hi, I'm Carol.", ["name", "age"])
        True
        >>> may_state_tags("My birthday is on March 5.", ["name", "city"])
        True
    """
    languages = tuple(languages)
    normal = normalize_numbers(text)
    for tag in tags:
        patterns = [
            p
            for r in languages
            for p in (*r.cues.get(tag, ()), *r.loose_cues.get(tag, ()), r.suffixes.get(tag))
            if p
        ]
        if not patterns or any(_rx(p).search(normal) for p in patterns):
            return True
    return False


def _lowercase(text: str, looks: str) -> bool:
    """A message written all in lower case gives a name no capital: "hi i'm carol"."""
    return "A-Z" in looks and not any(c.isupper() for c in text)


def states_a_change(text: str, languages: Iterable[LanguageRules] = LANGUAGES) -> bool:
    """Whether ``text`` says a value changed or was wrong ("I'm 31 now", "我改名叫…").

    Example:
        >>> [states_a_change(t) for t in ["I'm 31 now.", "I'm 31.", "其实我叫王芳。"]]
        [True, False, True]
    """
    return any(_rx(r.change).search(text) for r in languages)


def is_request(text: str, languages: Iterable[LanguageRules] = LANGUAGES) -> bool:
    """Whether ``text`` opens as a request or a question word ("Please ...", "请...");
    a request to remember something is a statement of it ("Please remember I'm 30").

    Example:
        >>> [is_request(t) for t in ["请总结一下我们的对话。", "Please call me Al.", "我叫李明。"]]
        [True, True, False]
    """
    stripped = unicodedata.normalize("NFKC", text).strip()
    languages = tuple(languages)
    if any(_rx(r.remember).search(stripped) for r in languages):
        return False
    return any(_rx(r.request).search(stripped) for r in languages)


def states_a_fact(text: str) -> bool:
    """Heuristic: a first-person statement that may hold a fact, not a question or a
    request (English, Chinese, Japanese, Korean, German, French, Spanish, Portuguese,
    Italian, Russian: see :func:`langchain_tiered_memory.language.text.is_first_person`).

    Example:
        >>> [states_a_fact(t) for t in ["I'm 30.", "请总结一下我们的对话。", "How old am I?"]]
        [True, False, False]
    """
    stripped = text.strip()
    return (
        bool(stripped)
        and not is_question(stripped)
        and not is_request(stripped)
        and is_first_person(stripped)
    )


def ground_tags(
    values: Mapping[str, Any],
    text: str,
    *,
    stored: Mapping[str, str] | None = None,
    languages: Iterable[LanguageRules] = LANGUAGES,
) -> Grounding:
    """Keep the values ``text`` states about the user (see the module docstring).

    Args:
        values: tag name -> value, as a model gave them (``None``/``""``: not given).
        text: the user's message the values must come from.
        stored: the user's stored tags; a different value replaces one only when
            ``text`` states a change.
        languages: the rules to read ``text`` with (default: :data:`LANGUAGES`).

    Returns:
        The kept values (as given) and each dropped one with its reason.
    """
    languages = tuple(languages)
    normal = normalize_numbers(text)
    said = len(re.sub(r"\W", "", normal))
    kept: dict[str, Any] = {}
    dropped: list[DroppedValue] = []
    for tag, raw in values.items():
        if raw is None or raw == "":
            continue
        reason = _why_not(tag, normalize_numbers(_as_text(raw)), normal, said, languages)
        if reason is None:
            kept[tag] = raw
        else:
            dropped.append(DroppedValue(tag, raw, reason))
    if stored is None:
        return Grounding(kept, dropped)
    changes = check_changes(kept, text, stored, languages=languages)
    return Grounding(changes.kept, dropped + changes.dropped)


def check_changes(
    values: Mapping[str, Any],
    text: str,
    stored: Mapping[str, str],
    *,
    languages: Iterable[LanguageRules] = LANGUAGES,
) -> Grounding:
    """The stored-value rule of :func:`ground_tags` alone: a value that would replace a
    different stored one is kept only when ``text`` states a change. For values already
    grounded in ``text``.

    Example:
        >>> check_changes({"age": 31}, "I'm 31.", {"age": "30"}).kept
        {}
        >>> check_changes({"age": 31}, "I'm 31 now.", {"age": "30"}).kept
        {'age': 31}
    """
    languages = tuple(languages)
    changes: bool | None = None  # read from the text once, when a value would change
    kept: dict[str, Any] = {}
    dropped: list[DroppedValue] = []
    for tag, raw in values.items():
        previous = stored.get(tag)
        if previous is not None and previous != _as_text(raw):
            if changes is None:
                changes = states_a_change(normalize_numbers(text), languages)
            if not changes:
                reason = (
                    f"changes the stored value {previous} without saying so "
                    '(e.g. "now", "actually")'
                )
                dropped.append(DroppedValue(tag, raw, reason))
                continue
        kept[tag] = raw
    return Grounding(kept, dropped)


def _why_not(
    tag: str, value: str, text: str, said: int, languages: tuple[LanguageRules, ...]
) -> str | None:
    if not value:
        return "empty"
    starts = _occurrences(value, text)
    if not starts:
        return "not in the user's message"
    if _echo(value) or (said and len(re.sub(r"\W", "", value)) > _MAX_VALUE_SHARE * said):
        return "the message echoed, not a value taken from it"
    reasons = [_stated_at(tag, value, text, s, languages) for s in starts]
    if any(r is None for r in reasons):
        return None
    return reasons[0]


def _echo(value: str) -> bool:
    """A value that speaks in the first person is a sentence, not a value ("Big news: I
    moved to Berlin"); one word is not ("Mia" is Italian for "my", and a name).
    """
    words = value.split()
    if len(words) > 1 or any(is_cjk(c) for c in value):
        return is_first_person(value)
    return False


# ----- reading values off a message -----

_CAPITAL = re.compile(r"(?<![\w'’-])[A-ZÀ-ÖØ-ÞА-Я]")
_LOWER_WORD = re.compile(r"(?<![\w'’-])[a-z][\w'’-]*")
_HAN = re.compile(r"(?=([\u4e00-\u9fff]{2,4}))")
_NUMBER = re.compile(r"(?<!\d)\d{1,3}(?!\d)")


def _candidates(tag: str, text: str, *, lowercase: bool = True) -> Iterable[tuple[int, str]]:
    """Values of ``tag`` that may stand in ``text``, with where they start: numbers for
    ``age``; for ``name`` one to three capitalised words from each capital, longest first,
    runs of two to four Han characters, and (``lowercase``) in an all-lower-case message
    each word.
    """
    if tag == "age":
        for match in _NUMBER.finditer(text):
            yield match.start(), match.group()
        return
    if tag != "name":
        return
    for match in _CAPITAL.finditer(text):
        words = re.match(r"[\w'’-]+(?: [A-ZÀ-ÖØ-ÞА-Я][\w'’-]*){0,2}", text[match.start() :])
        if words:
            parts = words.group().split(" ")
            for n in range(len(parts), 0, -1):
                yield match.start(), " ".join(parts[:n])
    for match in _HAN.finditer(text):
        name = _trim_name(match.group(1), text, match.start())
        if name:
            yield match.start(), name
    if lowercase and not any(c.isupper() for c in text):
        for match in _LOWER_WORD.finditer(text):
            yield match.start(), match.group()


def stated_tags(
    text: str,
    tags: Iterable[str],
    *,
    languages: Iterable[LanguageRules] = LANGUAGES,
    strict: bool = False,
) -> dict[str, Any]:
    """The ``name`` and ``age`` (of ``tags``) that ``text`` states about the user, read off
    the cues of :func:`ground_tags` with no model; a tag with no cue is never read, and a
    name in lower case never ("call me maybe"). ``strict``: only the unambiguous cues, for
    when a model abstained ("I'm French." is no name then).

    Example:
        >>> stated_tags("Hi, I'm Carol and I'm 52.", ["name", "age"])
        {'name': 'Carol', 'age': 52}
        >>> stated_tags("My sister Emma is 30.", ["name", "age"])
        {}
    """
    languages = tuple(languages)
    normal = normalize_numbers(text)
    said = len(re.sub(r"\W", "", normal))
    out: dict[str, Any] = {}
    for tag in tags:
        # the latest statement wins, and of one start the longest value ("我改名叫王小明":
        # "王小明", not "叫王小明" after the cue "我改名")
        best: tuple[int, Any] | None = None
        for start, value in _candidates(tag, normal, lowercase=False):
            if best is not None and start <= best[0]:
                continue
            if _stated_at(
                tag, value, normal, start, languages, lowercase_names=False, loose=not strict
            ):
                continue
            if _why_not(tag, value, normal, said, languages) is not None:
                continue
            if tag == "age" and not 0 < int(value) <= 150:
                continue
            best = (start, int(value) if tag == "age" else value)
        if best is not None:
            out[tag] = best[1]
    return out


def _trim_name(span: str, text: str, start: int) -> str:
    """A run of Han characters cut where a name ends: the shortest of at least two that a
    boundary follows ("赵磊今年40岁" -> "赵磊", "王小明今年" -> "王小明"), else ``""``.
    """
    for length in range(2, len(span) + 1):
        after = text[start + length :]
        if re.match(CHINESE.value_after["name"], after):
            return span[:length]
    return ""
