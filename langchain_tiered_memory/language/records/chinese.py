"""Chinese (simplified and traditional): written in Han characters with no kana or hangul.

Example:
    >>> from langchain_tiered_memory.language.records.chinese import LANGUAGE
    >>> LANGUAGE.numbers("她二十八岁"), LANGUAGE.dates.number("十二")
    ('她28岁', 12)
"""

from __future__ import annotations

import re

from langchain_tiered_memory.language.record import DateGrammar, Language, LanguageRules, Replies

__all__ = ["LANGUAGE"]

_CJK_NAME_END = (
    r"(?:$|[^\u4e00-\u9fff]|今年|今天|现在|目前|已经|住|来自|在|是|和|也|的|岁|从|平时|喜欢|"
    r"工作|做|还|了|啊|呀|吧|呢|哦|嘛|，)"
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
# 把 + a thing + 搬到 moves the thing (把沙发搬到了客厅), not the user: no move of home
_USER_MOVES = "".join(f"(?<!把{'.' * n})" for n in range(6))

RULES = LanguageRules(
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
    remember=r"记住|记下|记一下|记得",
    negation=r"不是|不叫|不要|不用|不姓|不再|从不|别|没有|没|并非|并不",
    reporting=r"说|告诉|讲|写道|问|认为|觉得|以为|听说|声称",
    irrealis=r"如果|要是|假如|假设|等我|等到|到我|希望|想要|想成为|将来|会是|会叫|打算|计划|将要|明年",
    clause_break=r"但是|可是|不过|而且|然后|所以|因为|虽然",
    not_after={"name": r"的"},
    single_valued={
        "home": r"住在|住到|" + _USER_MOVES + r"(?:搬到|搬去|搬家)|定居|家在|老家",
        "work": r"工作|上班|辞职|辞掉|入职|跳槽|创业|退休|当老师|做老师|是一名|做软件|工程师|"
        r"护士|医生|律师|老师",
        "study": r"读书|上学|专业|读法律|读医|学医|在读|大学|研究生",
        "diet": r"吃素|素食|吃肉|吃牛排|吃荤",
        "partner": r"单身|结婚|离婚|恋爱|男朋友|女朋友|对象|分手|订婚|老公|老婆",
        "habit": r"抽烟|吸烟|戒烟|喝酒|戒酒|喝咖啡|咖啡",
    },
    moved_on=_USER_MOVES
    + r"(?:搬到|搬去|搬家)|现在|如今|目前|不再|已经不|不读|不吃|不喝|辞职|辞掉|戒|换了|换成|"
    r"改成|改为|转到|转行|分手|离婚|又开始",
    ceased=r"不再|已经不|戒掉了|戒掉|放弃了",
    # a relative's, or something done for someone (帮朋友搬家: a friend's move)
    someone_elses=r"^\W*(?:用户|我|他|她)的?" + _ZH_RELATIONS + r"|(?:帮|替|给)" + _ZH_RELATIONS,
)

# ----- numbers -----

_DIGITS = dict(zip("零〇一二两三四五六七八九", (0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True))


def _number(text: str) -> int | None:
    """``"12"``, ``"十二"``, ``"二十三"``, ``"两"``, ``"一二"`` as an int; ``"几"`` (a few) as 3."""
    if text.isdigit():
        return int(text)
    if text == "几":
        return 3
    if "十" not in text and "百" not in text:
        value = 0
        for char in text:
            if char not in _DIGITS:
                return None
            value = value * 10 + _DIGITS[char]
        return value if text else None
    total = current = 0
    for char in text:
        if char in _DIGITS:
            current = _DIGITS[char]
        elif char == "十":
            total, current = total + (current or 1) * 10, 0
        elif char == "百":
            total, current = total + (current or 1) * 100, 0
        else:
            return None
    return total + current


# an age or a date in numerals ("二十八岁", "十月三日", "二〇二三年"; Japanese writes 歳 and 才
# after the same numerals): a summary that writes "10月3日" says what the user said
_COUNTED_NUMERAL = re.compile(
    r"[零〇一二两三四五六七八九十百]{1,5}(?=\s*(?:周岁|岁|歲|歳|才|月|日|号|號|年))"
)


def _numbers(text: str) -> str:
    return _COUNTED_NUMERAL.sub(lambda m: str(_number(m.group()) or m.group()), text)


# ----- dates -----

# "2023年5月8日", "5月8号", "五月八日", "2023年5月", "2023年", "去年", "上周", "上个月", "昨天",
# "3天前", "两周前". Hand-written like the English ones: dateparser (measured: 0.3-1.5 ms a
# query) returns points without their granularity and read "5月8日" as June 23.
_N = r"(?:\d+|[零〇一二两三四五六七八九十]+)"
_WEEKS = ("上星期", "上个星期", "上礼拜", "上个礼拜", "上周", "上个周", "上週")
_THIS_WEEK = ("本周", "这星期", "这个星期", "这周")
DATES = DateGrammar(
    patterns=(
        ("day", rf"(?:(?P<year>\d{{4}})\s*年\s*)?(?P<month>{_N})\s*月\s*(?P<day>{_N})\s*[日号號]"),
        ("month", rf"(?:(?P<year>\d{{4}})\s*年\s*)?(?P<month>{_N})\s*(?:个)?月(?!前)"),
        ("year", r"(?P<year>\d{4})\s*年"),
        ("ago", rf"(?P<n>{_N}|几)\s*(?:个)?(?P<unit>天|日|周|週|星期|礼拜|月|年)(?:以)?前"),
        (
            "relative",
            r"(?P<rel>去年|前年|今年|明年|上个?星期|上个?礼拜|上个?周|上週|本周|这个?星期|这周|"
            r"上个?月|这个?月|本月|昨天|前天|今天)",
        ),
    ),
    hint=r"[年月日号號周週天前]|星期|礼拜",
    number=_number,
    units={"天": 1, "日": 1, "周": 7, "週": 7, "星期": 7, "礼拜": 7, "月": 30, "年": 365},
    relative={
        "去年": ("year", -1),
        "前年": ("year", -2),
        "今年": ("year", 0),
        "明年": ("year", 1),
        "今天": ("day", 0),
        "昨天": ("day", 1),
        "前天": ("day", 2),
        **dict.fromkeys(_WEEKS, ("last", 7)),
        **dict.fromkeys(_THIS_WEEK, ("this", 7)),
        **dict.fromkeys(("上月", "上个月"), ("last", 30)),
        **dict.fromkeys(("这月", "这个月", "本月"), ("this", 30)),
    },
)

LANGUAGE = Language(
    code="zh",
    name="Chinese",
    order=10,
    markers=r"[\u4e00-\u9fff\u3400-\u4dbf]",
    excludes=r"[\u3040-\u30ff\uac00-\ud7af]",  # kana: Japanese; hangul: Korean
    rules=RULES,
    first_person=r"我",
    question_end=r"[吗嗎呢][。.!！]?",
    summarize_request=r"总结|概括|归纳|摘要|總結",
    tag_questions={
        "age": r"我(?:今年|现在)?(?:多大|几岁|多少岁)|我的年龄(?:是)?(?:多少|几)",
        "name": r"我叫什么(?:名字)?|我的名字(?:是|叫)?什么"
        r"|你(?:知道|记得)我(?:的名字|叫什么(?:名字)?)",
    },
    tag_question_asides=r"请问|请|你好|那|那么|现在|了|呢|吗|嗎|啊|呀|吧",
    unsure=r"不知道|不确定|不清楚",
    replies=Replies(
        tag_answers={"age": "你{value}岁。", "name": "你叫{value}。"},
        tag_labels={"name": "名字", "age": "年龄"},
        recorded="好的，我记住了（{facts}）。",
        fact="{label}：{value}",
        fact_separator="，",
        stored="好的，我记下了{count}条记忆：\n{items}",
        nothing_new="没有新的内容需要记下：记忆已是最新的。",
        done="好的。",
        heard="谢谢你告诉我。",
        no_answer="抱歉，我没能给出回答。请换个说法再问一次。",
    ),
    said="用户说：",
    the_user="用户",
    is_the_user=r"用户(?:名叫|叫|是)",
    relation_item="用户的{relation}{item}",
    introduced=r"我的?(?P<relation>妹妹|姐姐|哥哥|弟弟|妈妈|母亲|爸爸|父亲|妻子|老婆|丈夫|老公|儿子|"
    r"女儿|朋友|同事|老板)(?:叫|名叫|是)(?P<name>[\u4e00-\u9fff]{1,3}|[A-Za-z][\w'-]*)",
    pronoun_subject=r"[她他]们?",
    # and about the conversation, not the user: "对话很简短。" (a real model wrote its kind)
    # "他们讨论了彼此的年龄和职业。" ("they discussed each other's age and job": the two
    # speakers, Qwen2.5-Coder-1.5B) reports the conversation as "我们讨论了" does
    about_assistant=r"助手|助理|我会记住|我会记得|(?:这次|这段|我们的|本次)?对话"
    r"|(?:我们|他们|她们|双方)(?:聊|谈|讨论)了",
    dates=DATES,
    numbers=_numbers,
)
