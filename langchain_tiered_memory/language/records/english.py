"""English: the first record, the language of a text with no other language's markers.

Example:
    >>> from langchain_tiered_memory.language.records.english import LANGUAGE
    >>> LANGUAGE.numbers("I am thirty-one")
    'I am 31'
"""

from __future__ import annotations

import re

from langchain_tiered_memory.language.record import DateGrammar, Language, LanguageRules, Replies

__all__ = ["LANGUAGE"]

_RELATIONS = (
    r"(?:sister|brother|sibling|mother|mom|mum|father|dad|parents?|wife|husband|partner|"
    r"spouse|son|daughter|kids?|child|children|baby|friend|best friend|boyfriend|girlfriend|"
    r"fianc[ée]e?|boss|manager|colleague|co-?worker|neighbou?r|cousin|aunt|uncle|grandma|"
    r"grandmother|grandpa|grandfather|grandparents?|niece|nephew|roommate|flatmate|teacher|"
    r"doctor|dog|cat|pet|family|team|classmate|student|client|landlord|in-laws?)s?"
)
# After "I'm" a number is an age only if nothing makes it something else.
_MONTH_WORDS = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b"
)
_AGE_AFTER = (
    r"\s*(?:years?\b|yrs?\b|y/?o\b|[.,!?;:)]|$|and\b|but\b|now\b|today\b|this\b|already\b|"
    r"so\b|too\b|as of\b|btw\b|lol\b|haha\b|tbh\b|though\b|myself\b|"
    # when it happened ("I turned 53 in May", "... last week")
    rf"in {_MONTH_WORDS}|last\b|recently\b|yesterday\b|earlier\b|on my birthday\b)"
)
RULES = LanguageRules(
    name="en",
    cues={
        "name": (
            r"\bmy (?:full |first |real |new )?name(?:'s| is| was changed to)"
            r"(?: actually| really| now| officially)?",
            r"\b(?:you can |please |just )?call me",
            r"\bi go by",
            r"\b(?:i am|i'm) called",
            r"\bi changed my name to",
            r"\bi'?m now called",
        ),
        "age": (
            r"\bmy age is",
            r"\b(?:i am|i'm|im)(?: now| already| actually| only| just)?",
            r"\bi(?:'ve| have)? (?:just )?turned",
            r"\bi turn",
            r"\bnow i(?:'m| am)",
            r"\bage:?",
            # the age in apposition after the user's name: "I'm Alice, 30."
            r"\b(?:i am|i'm|im|my name is|my name's|call me) [\w'’-]+(?: [\w'’-]+){0,2},",
        ),
    },
    loose_cues={"name": (r"\b(?:i am|i'm|im)(?: actually| now)?",)},
    # capitalised words ("Carol", "Alice Moreau", "Jean-Luc", "O'Brien"), at most three
    value_looks={"name": r"[A-ZÀ-ÖØ-ÞА-Я][\w'’-]*(?: [A-ZÀ-ÖØ-ÞА-Я][\w'’-]*){0,2}"},
    value_after={"age": _AGE_AFTER, "name": r"(?:\W|$)"},
    suffixes={"age": r"\s*(?:-|\s)?(?:years?|yrs?)(?:\s|-)+old\b|\s*y/?o\b"},
    self_subject=r"\b(?:i|i'm|im|i've|i'd|i'll|me|my|myself)\b",
    other_subject=(
        r"\b(?:my|our|his|her|their|your) (?:(?:best|little|older|younger|big|new|old) )?"
        + _RELATIONS
        + r"\b|\b(?:he|she|they|him|her|his|their|we|you)\b"
    ),
    named_other=r"\b[A-Z][a-z]+'s\b",
    change=(
        r"\b(?:now|actually|anymore|any more|no longer|changed?|correction|i meant|wrong|"
        r"mistake|instead|these days|turned|update|new name|not (?:\w+ ){0,3}but|"
        r"from now on|to be exact|sorry)\b"
    ),
    request=(
        r"^\W*(?:hi|hello|hey|ok|okay)?\W*(?:please|pls|can you|could you|would you|will you|"
        r"let's|lets|tell me|show me|remind me|help me|summari[sz]e|give me|what|how|why|when|"
        r"where|who|do you|are you|translate|repeat|say|write|spell|type|print|rewrite|"
        r"paraphrase|proofread|correct|complete|reply|respond|pretend|imagine|act as|"
        r"recommend|suggest|find|book|plan|list|explain|describe|check|look up|search|"
        r"compare|calculate|draft|make|create|generate|name some)\b"
    ),
    remember=r"\b(?:remember|note|keep in mind)\b",
    negation=(
        r"\b(?:not|never|no|nor|neither|without|hardly|don['’]?t|doesn['’]?t|didn['’]?t|"
        r"isn['’]?t|wasn['’]?t|aren['’]?t|won['’]?t|can['’]?t|cannot|stop)\b|n['’]t\b"
    ),
    reporting=(
        r"\b(?:said|says|say|told|tells|tell|asked|asks|wrote|writes|replied|replies|"
        r"claims?|claimed|thinks?|thought|believes?|believed|heard|insists?|insisted)\b"
    ),
    irrealis=(
        r"\b(?:if|unless|when|whenever|once|until|till|by the time|as soon as|suppose|"
        r"imagine|wish|hope|want to be|would|could|might|will|['’]ll|gonna|going to|"
        r"plan to|someday|one day)\b"
    ),
    clause_break=r"\b(?:and|but|so|because|though|although|then)\b",
    not_after={
        "name": r"['’]s\b",
        "age": (
            r"\s*(?:-\s*)?(?:years?|yrs?|months?|weeks?|days?|hours?|minutes?)\s+"
            r"(?:into|in|of|since|ago|later|from|at|before|after|away|left|clean|sober|"
            r"married|together|apart|older|younger|behind|ahead|out)\b"
        ),
    },
    single_valued={
        # the words before the preposition are no object ("moved the meeting to Friday"),
        # and "moved on" (from an argument) is no move
        "home": r"\b(?:lives?|living|lived|moved(?! on\b)|relocated|resides?|based) "
        r"(?:(?!(?:the|a|an|his|her|their|its|my|our|your)\b)\w+ ){0,4}"
        r"(?:in|to|at|near|with|on)\b|\bhome(?:town)? is\b",
        "work": r"\b(?:works?|worked|working|employed|hired) (?:\w+ ){0,2}(?:at|for|as|in)\b|"
        # a job of the user's, not any job named ("the career fair", "a job interview")
        r"\b(?:user['’]s|his|her|their|my|new|first|dream|day) (?:\w+ )?"
        r"(?:job|career|profession)\b|\b(?:quit \w+ (?:job|company)|retired)\b|"
        r"\b(?:is|was|became|now) an? (?:\w+ )?(?:engineer|teacher|nurse|doctor|lawyer|"
        r"developer|designer|student|manager|accountant)\b",
        "study": r"\b(?:stud(?:y|ies|ied|ying)|majors?|majored|enrolled)\b",
        "diet": r"\b(?:vegetarian|vegan|pescatarian|eats? (?:\w+ )?(?:meat|fish)|meat)\b",
        "partner": r"\b(?:single|married|divorced|dating|engaged|broke up|boyfriend|"
        r"girlfriend|fianc[ée]e?|wife|husband)\b",
        "habit": r"\b(?:smok(?:e|es|ing|er)|drinks? (?:\w+ )?(?:coffee|alcohol|tea)|"
        r"coffee|alcohol)\b",
    },
    moved_on=(
        r"\b(?:moved|relocated|has since|no longer|not \w+ (?:\w+ )?any ?more|any ?more|"
        r"quit|quitted|stopped|switched|changed|divorced|broke up|now|these days|"
        r"currently|new job|again)\b"
    ),
    ceased=r"\b(?:stopped|quit|quitted|no longer|gave up|giving up|not \w+ any ?more)\b",
    # as the subject: "the user's sister moved", not "the user lives with their parents"
    someone_elses=(
        r"^\W*(?:the )?(?:user['’]s|his|her|their|my) (?:\w+ ){0,2}?(?:"
        + _RELATIONS
        + r"|restaurant|shop|store|cafe|team|company|office|house|flat|car)\b"
    ),
)


# ----- numbers in words -----

_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_NUMBER = re.compile(
    r"\b("
    + "|".join(_TENS)
    + r")(?:[- ]("
    + "|".join(_UNITS[1:10])
    + r"))?\b|\b("
    + "|".join(_UNITS)
    + r")\b",
    re.IGNORECASE,
)


def _number(match: re.Match[str]) -> str:
    tens, unit, alone = match.group(1), match.group(2), match.group(3)
    if alone:
        return str(_UNITS.index(alone.lower()))
    value = (_TENS.index(tens.lower()) + 2) * 10
    return str(value + (_UNITS.index(unit.lower()) if unit else 0))


def _numbers(text: str) -> str:
    return _NUMBER.sub(_number, text)


# ----- dates -----

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
# A bare month name needs a preposition before it ("in May"): "may" and "march" are verbs.
_LEAD = r"(?:in|during|of|since|until|till|by|before|after|around|early|late|mid|on|from|through)"
_COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
    "several": 3,
}
_SPANS = {"week": 7, "weekend": 7, "month": 30, "year": 365}
DATES = DateGrammar(
    patterns=(
        ("day", r"\b(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})\b"),
        ("day", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?(?:\s+{_YEAR})?\b"),
        ("day", rf"\b{_MONTH}\s+{_DAY}(?!\d)(?:,?\s+{_YEAR})?\b"),
        ("month", rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b"),
        ("season", rf"\b(?P<season>spring|summer|autumn|fall|winter),?\s+(?:of\s+)?{_YEAR}\b"),
        ("month", rf"\b{_LEAD}\s+(?:the\s+)?(?:month\s+of\s+)?{_MONTH}(?![\w-])"),
        ("year", rf"\b(?:{_LEAD}|year|the\s+year)\s+{_YEAR}\b"),
        (
            "ago",
            r"\b(?P<n>\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|"
            r"a few|several)\s+(?P<unit>day|week|month|year)s?\s+ago\b",
        ),
        ("relative", r"\b(?P<rel>yesterday|today|tonight)\b"),
        ("relative", r"\b(?P<rel>(?:last|this|past)\s+(?:week(?:end)?|month|year))\b"),
    ),
    hint=r"\d|\b(?:"
    + "|".join(_MONTHS)
    + r"|spring|summer|autumn|fall|winter|yesterday|today|tonight|last|this|past|ago)\b",
    months=_MONTHS,
    number=lambda text: int(text) if text.isdigit() else _COUNTS.get(text.lower()),
    units={"day": 1, "week": 7, "month": 30, "year": 365},
    relative={
        "today": ("day", 0),
        "tonight": ("day", 0),
        "yesterday": ("day", 1),
        **{f"this {unit}": ("this", days) for unit, days in _SPANS.items()},
        **{f"last {unit}": ("last", days) for unit, days in _SPANS.items()},
        **{f"past {unit}": ("last", days) for unit, days in _SPANS.items()},
    },
    seasons={
        "spring": (3, 3),
        "summer": (6, 3),
        "autumn": (9, 3),
        "fall": (9, 3),
        "winter": (12, 3),
    },
    ignore_case=True,
)

# ----- the rest -----

# English function words: they carry no topic, and BM25 would give them weight in a small
# collection where they are not frequent enough to get a low IDF.
_STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been
    before being below between both but by can cannot could couldn d did didn do does doesn
    doing don down during each few for from further had hadn has hasn have haven having he
    her here hers herself him himself his how i if in into is isn it its itself just ll m me
    more most my myself no nor not now o of off on once only or other ought our ours
    ourselves out over own re s same shan she should shouldn so some such t than that the
    their theirs them themselves then there these they this those through to too under until
    up ve very was wasn we were weren what when where which while who whom why will with
    won would wouldn y you your yours yourself yourselves
    """.split()
)
_RELATION_WORDS = (
    "sister|brother|mother|mom|mum|father|dad|wife|husband|partner|son|daughter|friend|"
    "boss|colleague|cousin|aunt|uncle|grandmother|grandfather|girlfriend|boyfriend|neighbou?r"
)
LANGUAGE = Language(
    code="en",
    name="English",
    order=0,
    markers=r"\b(?:i|i'm|my|me|the|a|an|is|am|are|was|you|your|what|how|who|when|where|do|"
    r"does|did|and|of|to|in|it|please|name|old|years|have|with|for|this|that)\b",
    rules=RULES,
    first_person=r"(?<![\w'])(?:i|i'm|im|i've|i'd|i'll|my|me|mine|myself)(?![\w])",
    summarize_request=r"\b(?:summari[sz]e|summary|recap)\b",
    tag_questions={
        "age": r"\bhow old am i\b|\bwhat(?:'s| is) my age\b",
        "name": r"\bwhat(?:'s| is) my name\b|\bdo you (?:know|remember) my name\b",
    },
    tag_question_asides=r"\b(?:hi|hey|hello|so|ok|okay|oh|please|again|now|then|actually"
    r"|tell me|remind me|sorry|quick question)\b",
    unsure=r"\b(?:i\s+(?:do\s*n[o']t|don't|cannot|can't)\s+(?:know|remember|recall|tell)"
    r"|not\s+sure|no\s+idea)\b",
    replies=Replies(
        tag_answers={"age": "You are {value}.", "name": "Your name is {value}."},
    ),
    said="The user said: ",
    the_user="The user's",
    is_the_user=r"the user(?:'s name)? is (?:named |called )?",
    relation_item="The user's {relation} {item}",
    introduced=rf"\b[Mm]y (?:(?:little|big|older|younger|best) )?(?P<relation>{_RELATION_WORDS}),?"
    r"\s+(?:is\s+)?(?:named\s+|called\s+)?(?P<name>[A-Z][\w'-]+)",
    pronoun_subject=r"(?:she|he|they|her|his|their)\b",
    about_assistant=r"(?:the |your )?assistant\b"
    r"|I(?: will|'ll| shall) (?:keep|remember|note|make sure|remind)\b"
    r"|I have (?:noted|recorded|saved|remembered)\b"
    # the conversation itself, not the user: Qwen2.5-Coder-1.5B wrote "The conversation was
    # brief." and "The conversation was about moving to Berlin." as memories
    r"|(?:the |this |our )?conversation\b|we (?:talked|discussed|chatted)\b",
    stopwords=_STOPWORDS,
    dates=DATES,
    numbers=_numbers,
)
