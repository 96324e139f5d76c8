"""Updates the words make clear: a new summary item that supersedes a stored one without
asking a model.

"The user lives in Paris." then, weeks later, "The user moved to Berlin last month.": a
capable model judged the second ``new`` and both stayed current, so "Where do I live?" was
answered from the first. Where the signal is clear, the package does not leave it to a
model: the new item speaks of an attribute a person has one value of at a time (where they
live, their work, what they eat: :attr:`LanguageRules.single_valued`), says the value
changed (:attr:`LanguageRules.moved_on`: "moved", "no longer", "now", "搬到", "现在") in the
same clause, at or right before the attribute's verb and object ("now works as", not "now
has a cat named Coffee"), states a fact rather than a plan or a wish
(:attr:`LanguageRules.irrealis`), and is the user's, not a relative's or a friend's
(:attr:`LanguageRules.someone_elses`, anywhere before the cue); then the most similar
older current item on the same attribute is superseded. It runs for every model, before
and beside the model's update step (:mod:`.reconcile`), and only ever adds supersessions:
an item is never dropped by it.
"""

from __future__ import annotations

import functools
import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence

from langchain_core.documents import Document

from langchain_tiered_memory.language.registry import frame_words, languages
from langchain_tiered_memory.language.rules import LANGUAGES, LanguageRules
from langchain_tiered_memory.language.text import is_cjk, tokenize

__all__ = [
    "clear_updates",
    "kept_part",
    "may_update",
    "merge_supersedes",
    "same_attribute",
    "same_kind",
]

logger = logging.getLogger(__name__)


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def _search(pattern: str, text: str) -> bool:
    return _compiled(pattern).search(text) is not None


def _attributes(text: str, languages: Iterable[LanguageRules]) -> set[str]:
    return {
        name
        for rules in languages
        for name, pattern in rules.single_valued.items()
        if _search(pattern, text)
    }


_RECORDS = languages()


def _spoken(text: str, languages: Sequence[LanguageRules]) -> list[LanguageRules]:
    """The rules of the languages ``text`` holds markers of (all of them when it holds
    none): a word that makes a clause a wish in one language is an ordinary word in another
    (Italian and Portuguese "se", "if", is the Spanish "se" of "se mudó", which made every
    Spanish move a wish).
    """
    scored = {id(record.rules) for record in _RECORDS if record.score(text) > 0}
    return [r for r in languages if id(r) in scored] or list(languages)


def _irrealis(text: str, languages: Sequence[LanguageRules]) -> bool:
    """Whether ``text`` is not a present fact by the cues of the languages it is in."""
    return any(_search(r.irrealis, text) for r in _spoken(text, languages))


def _states_a_change(text: str, languages: Sequence[LanguageRules]) -> bool:
    """A change of the user's own state, stated as done: not a plan, a wish or a relative's."""
    return (
        any(_search(r.moved_on, text) for r in languages)
        and not _irrealis(text, languages)
        and not any(_search(r.someone_elses, text) for r in languages)
    )


# where what stopped ends: "stopped playing tennis after a knee injury"
_CLAUSE_END = re.compile(r"[,.;:!?，。；：！？]|\b(?:and|but|after|because|since|when)\b")


def _terms(text: str) -> set[str]:
    """Recall's own terms (stemmed words, CJK character pairs), single characters left out:
    what two phrases share.
    """
    return {t for t in tokenize(text) if len(t) > 1}


def _ceased(new: str, old: str, languages: Sequence[LanguageRules]) -> bool:
    """``new`` says the user stopped doing what ``old`` names ("stopped playing tennis",
    "不再喝咖啡"): whatever the attribute, most of what follows the cue is in ``old`` (a
    verb alone is not: "no longer works late on Fridays" stops nothing of "works as a
    teacher").
    """
    for rules in languages:
        for match in re.finditer(rules.ceased, new, re.IGNORECASE):
            if _negated(new, match.start(), languages):
                continue  # "I won't quit", "没有辞职"
            stopped = _terms(_CLAUSE_END.split(new[match.end() :], maxsplit=1)[0])
            if stopped and 2 * len(stopped & _terms(old)) >= len(stopped):
                return True
    return False


def may_update(item: str, languages: Sequence[LanguageRules] = LANGUAGES) -> bool:
    """Whether ``item`` could update a stored item (a cheap test before any search).

    Example:
        >>> may_update("The user moved to Berlin."), may_update("The user likes jazz.")
        (True, False)
    """
    return _states_a_change(unicodedata.normalize("NFKC", item), languages)


# how far a change cue may stand before the attribute it changes ("now lives in", "no
# longer eats meat", "现在在谷歌工作"): a word counts one, a CJK character a half (two make
# a word); further, the cue belongs to something else ("no longer remembers the street
# they lived on", "目前在读一本关于工作的书")
_CUE_REACH = 2.0


def _reach(gap: str) -> float:
    cjk = sum(1 for c in gap if is_cjk(c))
    return len(re.sub(r"[\u3000-\u9fff\uf900-\ufaff]", " ", gap).split()) + cjk / 2


def _clauses(text: str, languages: Sequence[LanguageRules]) -> list[str]:
    breaks = "|".join([_CLAUSE_END.pattern, *(r.clause_break for r in languages)])
    return [c for c in re.split(breaks, text, flags=re.IGNORECASE) if c and c.strip()]


def _negated(text: str, at: int, languages: Sequence[LanguageRules]) -> bool:
    """The word right before ``at`` (two CJK characters) denies the cue there ("won't
    quit", "never moved", "没有搬家"); a cue that is itself negative ("no longer") is not
    denied by what it says.
    """
    head = text[:at].rstrip()
    if not head:
        return False
    last = head[-2:] if is_cjk(head[-1]) else head.split()[-1]
    return any(_search(r.negation, last) for r in languages)


def _someone_else_before(clause: str, at: int, languages: Sequence[LanguageRules]) -> bool:
    """Another person is the subject before the cue ("said their sister now lives")."""
    head = clause[:at]
    return any(
        _search(r.someone_elses.removeprefix("^\\W*"), head) or _search(r.someone_elses, clause)
        for r in languages
    )


def _changed(new: str, languages: Sequence[LanguageRules]) -> set[str]:
    """The attributes ``new`` says the user's own value of changed: in one clause, a
    change cue at or right before the attribute (its verb and object: "moved to", "now
    works as"), the user the subject, a fact (not a plan or a wish).
    """
    out: set[str] = set()
    for clause in _clauses(new, languages):
        if _irrealis(clause, languages):
            continue
        for rules in languages:
            for cue in _compiled(rules.moved_on).finditer(clause):
                if _someone_else_before(clause, cue.start(), languages) or _negated(
                    clause, cue.start(), languages
                ):
                    continue
                for name, pattern in rules.single_valued.items():
                    for found in _compiled(pattern).finditer(clause):
                        if found.end() <= cue.start():
                            # the cue right after it ("is vegetarian now"), not further
                            # ("went to a vegan restaurant again")
                            if not _reach(clause[found.end() : cue.start()]):
                                out.add(name)
                            continue
                        if _reach(clause[cue.end() : found.start()]) <= _CUE_REACH:
                            out.add(name)
    return out


def same_attribute(new: str, old: str, languages: Sequence[LanguageRules] = LANGUAGES) -> set[str]:
    """The single-valued attributes both items speak of, if ``new`` states a change of the
    user's own (else none).

    Example:
        >>> same_attribute("The user moved to Berlin last month.", "The user lives in Paris.")
        {'home'}
        >>> same_attribute("The user stopped playing tennis.", "The user plays tennis.")
        {'activity'}
        >>> same_attribute("The user's sister moved to Berlin.", "The user lives in Paris.")
        set()
    """
    new, old = unicodedata.normalize("NFKC", new), unicodedata.normalize("NFKC", old)
    if not _states_a_change(new, languages) or any(
        _search(r.someone_elses, old) for r in languages
    ):
        return set()
    shared = _changed(new, languages) & _attributes(old, languages)
    return shared | ({"activity"} if _ceased(new, old, languages) else set())


def same_kind(new: str, old: str, languages: Sequence[LanguageRules] = LANGUAGES) -> set[str]:
    """The single-valued attributes both items speak of, whether or not ``new`` says its
    value changed (the model said so; the words need not).

    Example:
        >>> same_kind("The user lives in Berlin.", "The user lives in Paris.")
        {'home'}
        >>> same_kind("The user no longer works late on Fridays.", "The user works as a teacher.")
        set()
    """
    new, old = unicodedata.normalize("NFKC", new), unicodedata.normalize("NFKC", old)
    return _attributes(new, languages) & _attributes(old, languages)


def clear_updates(
    items: Sequence[str],
    similar: Sequence[Sequence[Document]],
    languages: Sequence[LanguageRules] = LANGUAGES,
) -> dict[int, list[str]]:
    """``{i: [stored id]}``: for each new item that clearly updates a stored one, the most
    similar current stored item (``similar[i]``, best first) on the same attribute.

    Example:
        >>> old = Document("The user lives in Paris.", id="p1")
        >>> clear_updates(["The user moved to Berlin last month."], [[old]])
        {0: ['p1']}
    """
    found: dict[int, list[str]] = {}
    for i, (item, docs) in enumerate(zip(items, similar)):
        for doc in docs:
            if doc.id is not None and same_attribute(item, doc.page_content, languages):
                found[i] = [str(doc.id)]
                break
    if found:
        logger.info("%d stored item(s) superseded by a clear update", len(found))
    return found


def merge_supersedes(*maps: Mapping[int, Sequence[str]]) -> dict[int, list[str]]:
    """The union of several ``{item: [superseded ids]}`` maps, each id once.

    Example:
        >>> merge_supersedes({0: ["a"]}, {0: ["a", "b"], 2: ["c"]})
        {0: ['a', 'b'], 2: ['c']}
    """
    merged: dict[int, list[str]] = {}
    for mapping in maps:
        for i, ids in mapping.items():
            merged.setdefault(i, [])
            merged[i] += [x for x in ids if x not in merged[i]]
    return dict(sorted(merged.items()))


def kept_part(new: str, old: str, languages: Sequence[LanguageRules] = LANGUAGES) -> str | None:
    """What of a superseded ``old`` item ``new`` does not change: its clauses that neither
    speak of an attribute ``new`` changes nor share a word with it, as one item (the
    frame "The user said:" kept); ``None`` when no clause is left, or none was changed
    (the supersession is of the whole item).

    "My birthday is on March 5 and I live in Lyon." was one item; "I moved from Lyon to
    Marseille." superseded all of it and the birthday left recall.

    Example:
        >>> kept_part("The user moved from Lyon to Marseille.",
        ...           "The user said: My birthday is on March 5 and I live in Lyon.")
        'The user said: My birthday is on March 5.'
        >>> kept_part("The user moved to Berlin.", "The user lives in Paris.") is None
        True
    """
    new = unicodedata.normalize("NFKC", new)
    frame = next((f for f in _SAID_FRAMES if old.startswith(f)), "")
    subject = "" if frame else next((f for f in _SUBJECTS if old.startswith(f)), "")
    clauses = [c.strip() for c in _clauses(old[len(frame) :], languages)]
    words = _terms(new) - _FRAME_TERMS
    kept = [
        c
        for c in clauses
        if not (_terms(c) & words) and not (_changed(new, languages) & _attributes(c, languages))
    ]
    if not kept or len(kept) == len(clauses) or len(set().union(*map(_terms, kept))) < 2:
        return None
    cjk = any(is_cjk(ch) for ch in old)
    body = ("，" if cjk else ", ").join(kept)
    if subject and not body.casefold().startswith(subject.casefold()):
        body = f"{subject}{'' if cjk else ' '}{body}"  # "... and works as a nurse"
    if not frame:
        body = body[0].upper() + body[1:]
    return f"{frame}{body}{'。' if cjk else '.'}"


# the forms an item takes: "The user said: ..." (every language's), "The user ..."
_SAID_FRAMES = tuple(lang.said for lang in languages() if lang.said)
_SUBJECTS = tuple(re.sub(r"['’]s$", "", lang.the_user) for lang in languages() if lang.the_user)
_FRAME_TERMS = _terms(frame_words())
