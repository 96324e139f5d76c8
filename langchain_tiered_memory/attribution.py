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

import logging
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain_tiered_memory.text import is_cjk, is_first_person, is_question

logger = logging.getLogger(__name__)

__all__ = [
    "LANGUAGES",
    "DroppedValue",
    "Grounding",
    "LanguageRules",
    "check_changes",
    "ground_tags",
    "is_request",
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
        request: the start of a request ("please", "can you", "请", "帮我").

    Example:
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
    self_subject: str = r"(?!x)x"
    other_subject: str = r"(?!x)x"
    named_other: str = r"(?!x)x"
    change: str = r"(?!x)x"
    request: str = r"(?!x)x"


_EN_RELATIONS = (
    r"(?:sister|brother|sibling|mother|mom|mum|father|dad|parents?|wife|husband|partner|"
    r"spouse|son|daughter|kids?|child|children|baby|friend|best friend|boyfriend|girlfriend|"
    r"fianc[ée]e?|boss|manager|colleague|co-?worker|neighbou?r|cousin|aunt|uncle|grandma|"
    r"grandmother|grandpa|grandfather|grandparents?|niece|nephew|roommate|flatmate|teacher|"
    r"doctor|dog|cat|pet|family|team|classmate|student|client|landlord|in-laws?)s?"
)
# After "I'm" a number is an age only if nothing makes it something else.
_EN_AGE_AFTER = (
    r"\s*(?:years?\b|yrs?\b|y/?o\b|[.,!?;:)]|$|and\b|but\b|now\b|today\b|this\b|already\b|"
    r"so\b|too\b|as of\b|btw\b|lol\b|haha\b|tbh\b|though\b|myself\b)"
)
_CJK_NAME_END = (
    r"(?:$|[^\u4e00-\u9fff]|今年|今天|现在|目前|已经|住|来自|在|是|和|也|的|岁|从|平时|喜欢|"
    r"工作|做|还|了|啊|呀|吧|呢|哦|嘛|，)"
)
ENGLISH = LanguageRules(
    name="en",
    cues={
        "name": (
            r"\bmy (?:full |first |real |new )?name(?:'s| is| was changed to)",
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
    value_after={"age": _EN_AGE_AFTER, "name": r"(?:\W|$)"},
    suffixes={"age": r"\s*(?:-|\s)?(?:years?|yrs?)(?:\s|-)+old\b|\s*y/?o\b"},
    self_subject=r"\b(?:i|i'm|im|i've|i'd|i'll|me|my|myself)\b",
    other_subject=(
        r"\b(?:my|our|his|her|their|your) (?:(?:best|little|older|younger|big|new|old) )?"
        + _EN_RELATIONS
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
        r"where|who|do you|are you)\b"
    ),
)

# Common Chinese surnames (the hundred most frequent, plus compound ones): after the loose
# cue 我是, a value is a name only if it starts with one ("我是王芳" yes, "我是护士" no).
_ZH_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程"
    "苏魏吕丁任沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝"
    "龚邵万钱严覃武戴莫孔向汤常温康施文牛樊葛邢安齐易乔伍庞颜倪庄聂章鲁岳翟殷詹申欧耿关兰焦俞"
    "左柳甘祝包宁尚符舒阮柯纪梅童凌毕单季裴霍涂成苗谷盛曲翁冉骆蓝路游辛靳管柴蒙鲍华喻祁蒲房滕"
    "屈饶解牟艾尤阳时穆农司卓古吉缪简车项连芦麦褚娄窦戚岑景党宫费卜冷晏席卫米柏宗瞿桂全佟应臧"
    "闵苟邬边卞姬师和仇栾隋商刁沙荣巫寇桑郎甄丛仲虞敖巩明佘池查麻苑迟邝"
)
_ZH_COMPOUND = "欧阳|司马|诸葛|上官|东方|皇甫|尉迟|公孙|慕容|令狐|夏侯|长孙|宇文|司徒|端木"
_ZH_RELATIONS = (
    r"(?:妹妹|姐姐|哥哥|弟弟|妈妈|母亲|爸爸|父亲|父母|老婆|妻子|老公|丈夫|爱人|儿子|女儿|孩子|"
    r"朋友|男朋友|女朋友|对象|老板|同事|邻居|表哥|表姐|表妹|表弟|堂哥|堂姐|堂妹|堂弟|奶奶|爷爷|"
    r"外婆|外公|姥姥|姥爷|叔叔|阿姨|舅舅|姑姑|老师|室友|宝宝|狗|猫|家人|上司|经理|同学|学生|"
    r"客户|领导|闺蜜|兄弟|姐妹|小孩|侄子|侄女|外甥|婆婆|公公|岳父|岳母)"
)
CHINESE = LanguageRules(
    name="zh",
    cues={
        "name": (
            r"我(?:现在|其实|本来就)?(?:叫做?|名叫)",
            r"我的?名字(?:是|叫)",
            r"叫我",
            r"我(?:已经)?改名(?:叫|为|成)?",
            r"我姓名是",
            r"本人(?:叫|名叫)?",
        ),
        "age": (r"我的?年龄是", r"年龄[:：]?"),
    },
    loose_cues={"name": (r"我(?:就|其实)?是",)},
    value_looks={"name": rf"(?:{_ZH_COMPOUND}|[{_ZH_SURNAMES}])[\u4e00-\u9fff]{{1,3}}"},
    value_after={"name": _CJK_NAME_END, "age": r"(?:\s*(?:周岁|岁|歲)|[^\d]|$)"},
    suffixes={"age": r"\s*(?:周岁|岁|歲)"},
    self_subject=r"我(?!们|的?" + _ZH_RELATIONS + r")|本人",
    other_subject=r"我的?" + _ZH_RELATIONS + r"|[他她它]们?|" + _ZH_RELATIONS,
    change=r"现在|改名|改成|改为|改叫|其实|不是|更正|纠正|刚满|满了|已经|如今|错了|说错|记错|"
    r"新名字|今年|以后|不再|换成",
    request=r"^\W*(?:你好\W*)?(?:请|麻烦|帮我|能不能|能否|可以|你能|你可以|总结|概括|告诉我|说说|提醒我)",
)
# Other languages: the unambiguous name cues and age units (Japanese, Korean, German,
# French, Spanish, Portuguese, Italian, Russian); a fuller entry is welcome.
OTHERS = LanguageRules(
    name="other",
    cues={
        "name": (
            r"\bich heiße|\bich heisse|\bmein name ist|\bje m'appelle|\bmon nom est|"
            r"\bme llamo|\bmi nombre es|\bme chamo|\bmeu nome é|\bmi chiamo|\bil mio nome è|"
            r"меня зовут|私の名前は|僕の名前は|제 이름은|내 이름은",
        ),
    },
    suffixes={"age": r"\s*(?:jahre|ans|años|anos|anni|лет|года|год|歳|才|살|세)"},
    self_subject=r"\b(?:ich|je|j'|yo|eu|io|мне|я)\b|私|僕|俺|저는|나는",
    other_subject=r"\b(?:er|sie|il|elle|él|ella|ele|ela|lui|lei|он|она)\b",
    change=r"\b(?:jetzt|nun|maintenant|ahora|agora|adesso|ora|теперь|сейчас)\b|今は|지금",
)
LANGUAGES: tuple[LanguageRules, ...] = (ENGLISH, CHINESE, OTHERS)
"""The rules every message is read with (all of them: a message may mix languages)."""


# ----- numbers in words -----

_CJK_DIGITS = dict(zip("零一二两三四五六七八九", (0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True))
_CJK_NUMERAL = re.compile(r"[零一二两三四五六七八九十百]{1,5}(?=\s*(?:周岁|岁|歲|歳|才))")
_EN_UNITS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen"
).split()
_EN_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_EN_NUMBER = re.compile(
    r"\b("
    + "|".join(_EN_TENS)
    + r")(?:[- ]("
    + "|".join(_EN_UNITS[1:10])
    + r"))?\b|\b("
    + "|".join(_EN_UNITS)
    + r")\b",
    re.IGNORECASE,
)


def _cjk_number(text: str) -> int | None:
    total = current = 0
    for char in text:
        if char in _CJK_DIGITS:
            current = _CJK_DIGITS[char]
        elif char == "十":
            total, current = total + (current or 1) * 10, 0
        elif char == "百":
            total, current = total + (current or 1) * 100, 0
        else:
            return None
    return total + current


def _en_number(match: re.Match[str]) -> str:
    tens, unit, alone = match.group(1), match.group(2), match.group(3)
    if alone:
        return str(_EN_UNITS.index(alone.lower()))
    value = (_EN_TENS.index(tens.lower()) + 2) * 10
    return str(value + (_EN_UNITS.index(unit.lower()) if unit else 0))


def normalize_numbers(text: str) -> str:
    """``text`` NFKC-normalised, with ages in words written as digits.

    Example:
        >>> normalize_numbers("我今年二十八岁，she is thirty-two")
        '我今年28岁,she is 32'
    """
    text = unicodedata.normalize("NFKC", text)
    text = _CJK_NUMERAL.sub(lambda m: str(_cjk_number(m.group()) or m.group()), text)
    return _EN_NUMBER.sub(_en_number, text)


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


def _sentence_before(text: str, start: int) -> str:
    return _SENTENCE_END.split(text[:start])[-1]


def _ends_with(patterns: Iterable[str], before: str) -> bool:
    return any(re.search(rf"(?:{p})\s*[:：,，]?\s*$", before, re.IGNORECASE) for p in patterns)


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
            for match in re.finditer(pattern, before, flags):
                if match.end() > best or (match.end() == best and name == "other"):
                    best, kind = match.end(), name
    return kind


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
) -> str | None:
    """``None`` if the occurrence of ``value`` at ``start`` is stated of the user, else
    why not. ``lowercase_names``: in an all-lower-case message a loose cue may take an
    uncapitalised name a model proposed ("hi i'm carol"); read with no model, never ("hi
    i'm tired").
    """
    languages = tuple(languages)
    before, after = _sentence_before(text, start), text[start + len(value) :]
    cued = [r for r in languages if tag in r.cues or tag in r.loose_cues or tag in r.suffixes]
    for rules in cued:
        fits_after = re.match(rules.value_after.get(tag, ""), after, re.IGNORECASE)
        if fits_after and _ends_with(rules.cues.get(tag, ()), before):
            return None
        looks = rules.value_looks.get(tag)
        if (
            fits_after
            and looks
            and _ends_with(rules.loose_cues.get(tag, ()), before)
            and (
                re.fullmatch(looks, text[start : start + len(value)])
                or (lowercase_names and _lowercase(text, looks))
            )
        ):
            return None
        suffix = rules.suffixes.get(tag)
        if suffix and re.match(suffix, after, re.IGNORECASE):
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


def _lowercase(text: str, looks: str) -> bool:
    """A message written all in lower case gives a name no capital: "hi i'm carol"."""
    return "A-Z" in looks and not any(c.isupper() for c in text)


def states_a_change(text: str, languages: Iterable[LanguageRules] = LANGUAGES) -> bool:
    """Whether ``text`` says a value changed or was wrong ("I'm 31 now", "我改名叫…").

    Example:
        >>> [states_a_change(t) for t in ["I'm 31 now.", "I'm 31.", "其实我叫王芳。"]]
        [True, False, True]
    """
    return any(re.search(r.change, text, re.IGNORECASE) for r in languages)


_REMEMBER = re.compile(r"\b(?:remember|note|keep in mind)\b|记住|记下|记一下|记得", re.IGNORECASE)


def is_request(text: str, languages: Iterable[LanguageRules] = LANGUAGES) -> bool:
    """Whether ``text`` opens as a request or a question word ("Please ...", "请...");
    a request to remember something is a statement of it ("Please remember I'm 30").

    Example:
        >>> [is_request(t) for t in ["请总结一下我们的对话。", "Please call me Al.", "我叫李明。"]]
        [True, True, False]
    """
    stripped = unicodedata.normalize("NFKC", text).strip()
    if _REMEMBER.search(stripped):
        return False
    return any(re.search(r.request, stripped, re.IGNORECASE) for r in languages)


def states_a_fact(text: str) -> bool:
    """Heuristic: a first-person statement that may hold a fact, not a question or a
    request (English, Chinese, Japanese, Korean, German, French, Spanish, Portuguese,
    Italian, Russian: see :func:`langchain_tiered_memory.text.is_first_person`).

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


def _candidates(tag: str, text: str) -> Iterable[tuple[int, str]]:
    """Values of ``tag`` that may stand in ``text``, with where they start: numbers for
    ``age``; for ``name`` one to three capitalised words from each capital, longest first,
    runs of two to four Han characters, and in an all-lower-case message each word.
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
    if not any(c.isupper() for c in text):
        for match in _LOWER_WORD.finditer(text):
            yield match.start(), match.group()


def stated_tags(
    text: str, tags: Iterable[str], *, languages: Iterable[LanguageRules] = LANGUAGES
) -> dict[str, Any]:
    """The ``name`` and ``age`` (of ``tags``) that ``text`` states about the user, read off
    the cues of :func:`ground_tags` with no model; a tag with no cue is never read.

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
        for start, value in _candidates(tag, normal):
            if best is not None and start <= best[0]:
                continue
            if _stated_at(tag, value, normal, start, languages, lowercase_names=False):
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
