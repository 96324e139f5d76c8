"""What a language is to the package, as data: one :class:`Language` record per language,
each in a module of its own under :mod:`~langchain_tiered_memory.language.records`.

Every language-aware module reads the records (:func:`~langchain_tiered_memory.language.
registry.languages`): how a fact about the speaker is stated (:class:`LanguageRules`), how
dates are named (:class:`DateGrammar`), the package's own replies (:class:`Replies`), and
the words that make a message first-person, a question or a request to summarize. Adding a
language is adding one module there.

Example:
    >>> rules = LanguageRules(name="xx", cues={"name": (r"ich heiße",)})
    >>> Language(code="xx", name="Test", markers=r"\\bich\\b", rules=rules).score("ich bin")
    1
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

__all__ = ["DateGrammar", "Language", "LanguageRules", "Replies"]

_NEVER = r"(?!x)x"


@dataclass(frozen=True)
class LanguageRules:
    """How one language states a fact about the speaker, as regular expressions.

    Attributes:
        name: a label for logs.
        cues: per tag, cues that end right before the user's value of that tag ("my name
            is", "我叫"); matched case-insensitively against the text before the value.
        loose_cues: per tag, cues that introduce other things too ("I'm" + tired): the
            value must also look like one (:attr:`value_looks`).
        value_looks: per tag, a pattern a value after a loose cue must match in full
            (written with the message's case: a capitalised name).
        value_after: per tag, what the text right after a cued value must start with
            ("I'm 30." / "I'm 30 years old", never "I'm 5 minutes late").
        suffixes: per tag, a unit after the value that makes it that tag ("30 years old",
            "40岁"); the sentence's nearest subject before it must be the user.
        self_subject: the user as a subject ("I", "my", "我").
        other_subject: someone else as a subject ("my sister", "he", "我妹妹", "他").
        named_other: someone else named, matched with case ("Emma's").
        change: an explicit change of a value ("now", "actually", "改名", "现在").
        request: the start of a request ("please", "can you", "translate", "请", "帮我").
        remember: a request to remember ("remember", "记住"): what follows is stated, a
            request or not.
        negation: a word that denies what follows in its clause ("don't call me", "not",
            "别叫我", "不是"): a value after it in the clause is not stated.
        reporting: a verb of saying or thinking ("said", "told", "说", "sagt"): a value in
            its sentence is someone else's words unless the user is the verb's subject.
        irrealis: what makes a clause not a present fact ("if", "by the time", "will be",
            "如果", "等我"): a value after it in the clause is not stated.
        clause_break: a conjunction that starts a new clause ("and", "but", "但是"), besides
            commas and semicolons.
        not_after: per tag, what right after a value makes it something else ("Bob's
            sister": a possessive; "3 years into my PhD": a duration).
        single_valued: attributes a person has one value of at a time (where they live,
            their work, what they eat), each as a pattern of the words that state it:
            two summary items on the same one, the newer saying it changed, are an update.
        moved_on: what says in a summary item that a state replaced an earlier one
            ("moved to", "no longer", "quit", "搬到", "不再").
        ceased: what says in a summary item that something the user did has stopped
            ("stopped", "no longer", "不再"): it updates a stored item that names what
            follows it, whatever the attribute.
        someone_elses: an attribute of someone else in a summary item ("the user's
            sister", "用户的姐姐"): such an item updates nothing of the user's.

    Example:
        >>> from langchain_tiered_memory.language.attribution import ground_tags
        >>> rules = LanguageRules(name="xx", cues={"name": (r"ich heiße",)})
        >>> ground_tags({"name": "Lena"}, "Ich heiße Lena.", languages=[rules]).kept
        {'name': 'Lena'}
    """

    name: str
    cues: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    loose_cues: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    value_looks: Mapping[str, str] = field(default_factory=dict)
    value_after: Mapping[str, str] = field(default_factory=dict)
    suffixes: Mapping[str, str] = field(default_factory=dict)
    self_subject: str = _NEVER
    other_subject: str = _NEVER
    named_other: str = _NEVER
    change: str = _NEVER
    request: str = _NEVER
    remember: str = _NEVER
    negation: str = _NEVER
    reporting: str = _NEVER
    irrealis: str = _NEVER
    clause_break: str = _NEVER
    not_after: Mapping[str, str] = field(default_factory=dict)
    single_valued: Mapping[str, str] = field(default_factory=dict)
    moved_on: str = _NEVER
    ceased: str = _NEVER
    someone_elses: str = _NEVER


@dataclass(frozen=True)
class DateGrammar:
    """How a language names dates, as patterns with named groups that
    :func:`~langchain_tiered_memory.retrieval.time.parse_time_windows` reads.

    Attributes:
        patterns: ``(kind, regex)`` pairs, tried in order, a span taken once. Kinds and
            their groups: ``"day"`` (``month``, ``day``, optional ``year``), ``"month"``
            (``month``, optional ``year``), ``"year"`` (``year``), ``"season"``
            (``season``, ``year``), ``"ago"`` (``n``, ``unit``), ``"relative"``
            (``rel``). A month is digits or a key of :attr:`months`.
        hint: a query this does not match names no date in the language: the patterns
            are not tried (most queries name none).
        months: month names, lower case, to 1-12.
        number: a number as written (``"3"``, ``"three"``, ``"三"``) to an int, or None.
        units: a unit of ``"ago"`` (lower case) to its days.
        relative: a ``"relative"`` phrase (lower case, single-spaced) to ``(how, n)``:
            ``("year", n)`` the calendar year ``n`` from this one, ``("day", n)`` the day
            ``n`` days back, ``("this", days)`` the last ``days`` days, ``("last", days)``
            the last ``2 * days`` days (a loose "last week").
        seasons: a season (lower case) to its first month and length in months.
        ignore_case: whether the patterns ignore case.

    Example:
        >>> grammar = DateGrammar(patterns=(("year", r"(?P<year>\\d{4})年"),), hint=r"年")
        >>> [kind for kind, _ in grammar.compiled]
        ['year']
    """

    patterns: tuple[tuple[str, str], ...]
    hint: str
    months: Mapping[str, int] = field(default_factory=dict)
    number: Callable[[str], int | None] = lambda text: int(text) if text.isdigit() else None
    units: Mapping[str, int] = field(default_factory=dict)
    relative: Mapping[str, tuple[str, int]] = field(default_factory=dict)
    seasons: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    ignore_case: bool = False

    @cached_property
    def compiled(self) -> tuple[tuple[str, re.Pattern[str]], ...]:
        """:attr:`patterns`, compiled once."""
        flags = re.IGNORECASE if self.ignore_case else 0
        return tuple((kind, re.compile(p, flags)) for kind, p in self.patterns)

    @cached_property
    def hint_pattern(self) -> re.Pattern[str]:
        """:attr:`hint`, compiled once."""
        return re.compile(self.hint, re.IGNORECASE if self.ignore_case else 0)


@dataclass(frozen=True)
class Replies:
    """The package's own replies in a language (a small model's templates: every one of them
    is marked as the package's, not the model's).

    Attributes:
        tag_answers: per tag, the answer to a question about it (``"You are {value}."``).
        tag_labels: per tag, its name in the language, for :attr:`recorded`.
        recorded: what was recorded: ``{facts}``, the labelled values joined.
        fact: one labelled value (``"{label}: {value}"``).
        fact_separator: between two of them.
        stored: the summary items stored: ``{count}``, ``{items}`` (one a line); ``None``
            passes the tool's own report on (it is written in English).
        nothing_new: nothing new was stored; ``None`` passes the tool's report on.
        done: the start of a reply that lists what the turn's tools did.
        heard: the model gave no answer, asked twice, to a statement (nothing stored:
            it claims nothing).
        no_answer: the model gave no answer, asked twice, to a question.

    Example:
        >>> Replies(tag_answers={"age": "Tienes {value} años."}).tag_answers["age"]
        'Tienes {value} años.'
    """

    tag_answers: Mapping[str, str] = field(default_factory=dict)
    tag_labels: Mapping[str, str] = field(default_factory=dict)
    recorded: str = "Got it, I'll remember that ({facts})."
    fact: str = "{label}: {value}"
    fact_separator: str = ", "
    stored: str | None = None
    nothing_new: str | None = None
    done: str = "Done. "
    heard: str = "Thanks for telling me."
    no_answer: str = "Sorry, I could not come up with an answer. Could you ask again?"


@dataclass(frozen=True)
class Language:
    """One language, everything the package knows of it.

    Attributes:
        code: a short label (``"en"``, ``"zh"``): logs, tests, and the order of the records.
        name: its English name, as the summarizer is asked to write in it (``"Chinese"``);
            ``None`` for a record of several languages.
        markers: what tells a text is in it: :meth:`score` counts the matches (its
            letters for a script of its own, its commonest words for a Latin-script one).
        rules: how it states a fact about the speaker (tag capture and grounding).
        excludes: a text with a match is not in it (Chinese: kana, which is Japanese).
        order: the records are read in this order; on a tie the earlier one is the
            language of a text, and with no marker at all, the first (English).
        first_person: a word that makes a sentence first-person ("I", "我").
        question_end: what ends a question besides a question mark (Chinese "吗").
        summarize_request: a request to summarize the conversation ("summarize", "总结").
        tag_questions: per tag, a question asking for it ("how old am I").
        tag_question_asides: what may stand beside a tag question in its sentence and
            leave it that question ("please", "again", "了"); anything else ("in dog
            years", "in 2040") makes it another question, which no template answers.
        unsure: a reply saying it does not know ("I don't know", "不知道").
        replies: the package's own replies; ``None`` for the first record's.
        said: the start of a summary item quoting the user (``"The user said: "``).
        the_user: how a summary item names the user (``"The user"``, ``"用户"``).
        is_the_user: a summary item making the user someone by name ("The user is ").
        relation_item: a summary item about a person the user introduced by relation, put
            back in relation to the user (``"The user's {relation} {item}"``).
        introduced: the user introducing someone by relation ("my sister Emma"), groups
            ``relation`` and ``name``.
        about_assistant: a summary item about the assistant or the conversation itself
            ("助手会记住", "The conversation was brief."), not the user.
        pronoun_subject: a third-person pronoun opening a summary item ("She", "她的"):
            it stands for whom the item before names.
        stopwords: function words left out of lexical recall, in a text in the language.
        dates: how it names dates, or ``None``.
        numbers: the text with its numbers written in words as digits ("thirty" -> "30"),
            or ``None``.

    Example:
        >>> from langchain_tiered_memory.language.registry import language_of
        >>> language_of("我叫李明").code, language_of("How old am I?").code
        ('zh', 'en')
    """

    code: str
    name: str | None
    markers: str
    rules: LanguageRules
    excludes: str = _NEVER
    order: int = 50
    first_person: str = _NEVER
    question_end: str = _NEVER
    summarize_request: str = _NEVER
    tag_questions: Mapping[str, str] = field(default_factory=dict)
    tag_question_asides: str = _NEVER
    unsure: str = _NEVER
    replies: Replies | None = None
    said: str | None = None
    the_user: str = ""
    is_the_user: str = _NEVER
    relation_item: str | None = None
    introduced: str = _NEVER
    about_assistant: str = _NEVER
    pronoun_subject: str = _NEVER
    stopwords: frozenset[str] = frozenset()
    dates: DateGrammar | None = None
    numbers: Callable[[str], str] | None = None

    @cached_property
    def _markers(self) -> re.Pattern[str]:
        return re.compile(self.markers, re.IGNORECASE)

    @cached_property
    def _excludes(self) -> re.Pattern[str]:
        return re.compile(self.excludes)

    def score(self, text: str) -> int:
        """How many of its markers ``text`` holds (0 if it holds what excludes it)."""
        if self._excludes.search(text):
            return 0
        return len(self._markers.findall(text))
