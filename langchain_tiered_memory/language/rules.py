"""The rules of :mod:`~langchain_tiered_memory.language.attribution` as data: how each language
states a fact about the speaker (:class:`LanguageRules`: name and age cues, who the subject
is, what says a value changed), and numbers written in words (``二十八岁``, ``thirty``).
A language is one more entry of :data:`LANGUAGES`.

Example:
    >>> normalize_numbers("I am thirty-one, 她二十八岁")
    'I am 31, 她28岁'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CHINESE", "ENGLISH", "LANGUAGES", "OTHERS", "LanguageRules", "normalize_numbers"]


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
    self_subject: str = r"(?!x)x"
    other_subject: str = r"(?!x)x"
    named_other: str = r"(?!x)x"
    change: str = r"(?!x)x"
    request: str = r"(?!x)x"
    negation: str = r"(?!x)x"
    reporting: str = r"(?!x)x"
    irrealis: str = r"(?!x)x"
    clause_break: str = r"(?!x)x"
    not_after: Mapping[str, str] = field(default_factory=dict)
    single_valued: Mapping[str, str] = field(default_factory=dict)
    moved_on: str = r"(?!x)x"
    ceased: str = r"(?!x)x"
    someone_elses: str = r"(?!x)x"


_EN_RELATIONS = (
    r"(?:sister|brother|sibling|mother|mom|mum|father|dad|parents?|wife|husband|partner|"
    r"spouse|son|daughter|kids?|child|children|baby|friend|best friend|boyfriend|girlfriend|"
    r"fianc[ée]e?|boss|manager|colleague|co-?worker|neighbou?r|cousin|aunt|uncle|grandma|"
    r"grandmother|grandpa|grandfather|grandparents?|niece|nephew|roommate|flatmate|teacher|"
    r"doctor|dog|cat|pet|family|team|classmate|student|client|landlord|in-laws?)s?"
)
# After "I'm" a number is an age only if nothing makes it something else.
_EN_MONTHS = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\b"
)
_EN_AGE_AFTER = (
    r"\s*(?:years?\b|yrs?\b|y/?o\b|[.,!?;:)]|$|and\b|but\b|now\b|today\b|this\b|already\b|"
    r"so\b|too\b|as of\b|btw\b|lol\b|haha\b|tbh\b|though\b|myself\b|"
    # when it happened ("I turned 53 in May", "... last week")
    rf"in {_EN_MONTHS}|last\b|recently\b|yesterday\b|earlier\b|on my birthday\b)"
)
_CJK_NAME_END = (
    r"(?:$|[^\u4e00-\u9fff]|今年|今天|现在|目前|已经|住|来自|在|是|和|也|的|岁|从|平时|喜欢|"
    r"工作|做|还|了|啊|呀|吧|呢|哦|嘛|，)"
)
ENGLISH = LanguageRules(
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
        r"where|who|do you|are you|translate|repeat|say|write|spell|type|print|rewrite|"
        r"paraphrase|proofread|correct|complete|reply|respond|pretend|imagine|act as|"
        r"recommend|suggest|find|book|plan|list|explain|describe|check|look up|search|"
        r"compare|calculate|draft|make|create|generate|name some)\b"
    ),
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
        "home": r"\b(?:lives?|living|lived|moved|relocated|resides?|based) (?:\w+ ){0,4}"
        r"(?:in|to|at|near|with|on)\b|\bhome(?:town)? is\b",
        "work": r"\b(?:works?|worked|working|employed|hired) (?:\w+ ){0,2}(?:at|for|as|in)\b|"
        r"\b(?:job|career|careers|profession|quit \w+ (?:job|company)|retired)\b|"
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
        + _EN_RELATIONS
        + r"|restaurant|shop|store|cafe|team|company|office|house|flat|car)\b"
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
    request=r"^\W*(?:你好\W*)?(?:请|麻烦|帮我|能不能|能否|可以|你能|你可以|总结|概括|告诉我|说说|提醒我|"
    r"翻译|重复|假装|想象)",
    negation=r"不是|不叫|不要|不用|不姓|不再|从不|别|没有|没|并非|并不",
    reporting=r"说|告诉|讲|写道|问|认为|觉得|以为|听说|声称",
    irrealis=r"如果|要是|假如|假设|等我|等到|到我|希望|想要|想成为|将来|会是|会叫|打算|计划|将要|明年",
    clause_break=r"但是|可是|不过|而且|然后|所以|因为|虽然",
    not_after={"name": r"的"},
    single_valued={
        "home": r"住在|住到|搬到|搬去|搬家|定居|家在|老家",
        "work": r"工作|上班|辞职|辞掉|入职|跳槽|创业|退休|当老师|做老师|是一名|做软件|工程师|"
        r"护士|医生|律师|老师",
        "study": r"读书|上学|专业|读法律|读医|学医|在读|大学|研究生",
        "diet": r"吃素|素食|吃肉|吃牛排|吃荤",
        "partner": r"单身|结婚|离婚|恋爱|男朋友|女朋友|对象|分手|订婚|老公|老婆",
        "habit": r"抽烟|吸烟|戒烟|喝酒|戒酒|喝咖啡|咖啡",
    },
    moved_on=r"搬到|搬去|搬家|现在|如今|目前|不再|已经不|不读|不吃|不喝|辞职|辞掉|戒|换了|换成|改成|"
    r"改为|转到|转行|分手|离婚|又开始",
    ceased=r"不再|已经不|戒掉了|戒掉|放弃了",
    someone_elses=r"^\W*(?:用户|我|他|她)的?" + _ZH_RELATIONS,
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
    negation=r"\b(?:nicht|kein|keine|nie|pas|jamais|nunca|não|non|не|нет)\b|じゃない|아니",
    reporting=(
        r"\b(?:sagt|sagte|meint|dit|disait|dice|dijo|diz|disse|dice|detto|сказал|сказала|"
        r"говорит)\b|と言|라고"
    ),
    irrealis=r"\b(?:wenn|falls|si|cuando|quando|se|если|когда)\b",
    clause_break=r"\b(?:und|aber|et|mais|y|pero|e|mas|ma|и|но)\b",
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
