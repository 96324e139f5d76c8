# ruff: noqa: E501  (the events and conversations are data: one per line reads best)
"""Writes ``bench/data/associative_multi.json``: conversations that call for several memories
(issue 57 item 1).

    python bench/make_associative_multi.py

Of this project's own making, never derived from a benchmark. The users of the hard set
(``make_associative_hard.py``: 80 dated events each, ten a topic) get ten more events that
make a memory several items: a second failed driving test, three memories of one trip, two
knee injuries, a layoff and the job after it. Each conversation (4-5 user turns, English
and Chinese) calls for two or three of them, often from different months; the link is the
situation, not the events' words. Scored by ``bench/recall_hard.py --data`` as the share of
a conversation's targets among the top k.

Splits: ``dev`` (8 conversations) chooses; ``held_out`` (4) is run once, at the end.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from make_associative_hard import EVENTS, _month
from make_associative_hard import OUT as HARD

OUT = Path(__file__).parent / "data" / "associative_multi.json"
SEED = 57

# (topic, id, the event it follows, English, Chinese): each comes 2-5 months after the one
# it follows (a second time, an update, another memory of the same trip)
MORE: list[tuple[str, str, str, str, str]] = [
    (
        "exam",
        "road_test_2",
        "road_test",
        "The user failed the driving road test a second time in {m}, this time on the parallel parking.",
        "用户{m}第二次驾照路考又没过，这次栽在侧方停车上。",
    ),
    (
        "trip",
        "tokyo_ramen",
        "tokyo",
        "The user found a tiny ramen bar in Tokyo's Golden Gai in {m} and still talks about the broth.",
        "用户{m}在东京黄金街发现了一家小拉面店，到现在还念念不忘那碗汤。",
    ),
    (
        "trip",
        "tokyo_phone",
        "tokyo",
        "The user's phone died on a day in Tokyo in {m} and they got around the subway with a paper map.",
        "用户{m}在东京的一天手机没电了，只能拿着纸质地图坐地铁。",
    ),
    (
        "illness",
        "knee_2",
        "knee",
        "The user's knee flared up again in {m} after a long hike and they had to stop running.",
        "用户{m}长途徒步后膝盖旧伤复发，只好停止跑步。",
    ),
    (
        "work",
        "new_job",
        "layoff",
        "The user started a new job at a design agency in {m}, four months after being laid off.",
        "用户{m}在一家设计公司开始了新工作，那是被裁员四个月之后。",
    ),
    (
        "pets",
        "biscuit_vet",
        "dog_adopt",
        "The user's dog Biscuit swallowed a sock in {m} and needed an X-ray and a night at the vet.",
        "用户的狗Biscuit在{m}吞了一只袜子，拍了X光，在宠物医院住了一晚。",
    ),
    (
        "home",
        "landlord_2",
        "landlord",
        "The user's landlord refused to fix the mould in the bedroom in {m}, and the user reported it to the council.",
        "用户{m}房东拒绝处理卧室的霉斑，用户向市政部门投诉了。",
    ),
    (
        "hobby",
        "band",
        "guitar",
        "The user joined a band as rhythm guitarist in {m} and rehearses on Tuesday nights.",
        "用户{m}加入了一个乐队当节奏吉他手，每周二晚上排练。",
    ),
    (
        "illness",
        "flu_2",
        "flu",
        "The user caught the flu again in {m}, two weeks before a big deadline.",
        "用户{m}又得了流感，离一个重要截止日期只有两周。",
    ),
    (
        "home",
        "boiler",
        "heating",
        "The user's boiler was replaced in {m} after a plumber said it was beyond repair.",
        "用户{m}换了新锅炉，水管工说旧的已经修不好了。",
    ),
]

# (targets, split, English turns, Chinese turns): the last turn is where the assistant
# should bring all the targets up; none repeats their words
TALKS: list[tuple[list[str], str, list[str], list[str]]] = [
    (
        ["road_test", "road_test_2"],
        "dev",
        [
            "Hey, got a minute?",
            "I finally booked another slot at the test centre.",
            "Third time lucky, everyone keeps telling me.",
            "Honestly I'm dreading the examiner's clipboard already.",
        ],
        [
            "嘿，有空吗？",
            "我终于又在考场约到了一个时间。",
            "大家都说事不过三。",
            "说实话，我现在一想到考官手里的记录板就发怵。",
        ],
    ),
    (
        ["tokyo", "tokyo_ramen", "tokyo_phone"],
        "dev",
        [
            "Guess what, I found cheap flights to Japan.",
            "I'm thinking of going back for ten days in spring.",
            "This time I want to plan it properly.",
            "Any tips from what happened last time I was there?",
        ],
        [
            "你猜怎么着，我找到了去日本的便宜机票。",
            "我打算春天再去玩十天。",
            "这次我想好好计划一下。",
            "根据我上次在那儿的经历，你有什么建议吗？",
        ],
    ),
    (
        ["knee", "knee_2", "marathon"],
        "dev",
        [
            "I did something a bit crazy today.",
            "I signed up for a full marathon in October.",
            "The training plan has me out five days a week.",
            "Do you think my body can take it?",
        ],
        [
            "我今天干了件有点疯狂的事。",
            "我报名了十月的全程马拉松。",
            "训练计划要我一周练五天。",
            "你觉得我的身体吃得消吗？",
        ],
    ),
    (
        ["layoff", "new_job"],
        "dev",
        [
            "Bad news at work today.",
            "They announced a restructuring and nobody knows who stays.",
            "Half my team is already updating their CVs.",
            "I really can't go through all of that again.",
        ],
        [
            "今天公司传来坏消息。",
            "宣布要重组，没人知道谁能留下。",
            "我们组一半的人已经在改简历了。",
            "那一切我真的不想再经历一遍。",
        ],
    ),
    (
        ["cat_vet", "biscuit_vet"],
        "dev",
        [
            "I'm looking at pet insurance plans.",
            "They're not cheap, and the small print is endless.",
            "My partner thinks it's a waste of money.",
            "But those emergency bills really hurt us before.",
        ],
        [
            "我在看宠物保险。",
            "都不便宜，细则还特别长。",
            "我对象觉得是浪费钱。",
            "可之前那几次急诊的账单真的让我们很肉疼。",
        ],
    ),
    (
        ["burnout", "new_manager"],
        "dev",
        [
            "Long day.",
            "I got copied on forty emails before lunch.",
            "Every single reply had to be approved first.",
            "I can feel myself running on empty again.",
        ],
        [
            "今天好累。",
            "中午之前我就被抄送了四十封邮件。",
            "每一封回复都得先让人批准。",
            "我感觉自己又快被掏空了。",
        ],
    ),
    (
        ["road_test", "road_test_2", "swim"],
        "dev",
        [
            "I have another assessment tomorrow morning.",
            "It's a practical one, with someone watching and ticking boxes.",
            "I know the material, but my nerves always get me.",
            "I've failed these things before and I hate that feeling.",
        ],
        [
            "我明天早上又有一场考核。",
            "是实操的，有人在旁边看着打分。",
            "内容我都会，就是一紧张就不行。",
            "我以前就栽过好几次，我讨厌那种感觉。",
        ],
    ),
    (
        ["heating", "boiler"],
        "dev",
        [
            "It's getting really cold at night.",
            "The radiators make a knocking noise when they come on.",
            "I'm scared to even check the pressure gauge.",
            "Please tell me I don't have to go through that again this winter.",
        ],
        [
            "晚上越来越冷了。",
            "暖气片一开就咚咚响。",
            "我都不敢去看压力表。",
            "拜托告诉我今年冬天不用再经历一次那种事了。",
        ],
    ),
    (
        ["landlord", "landlord_2"],
        "held_out",
        [
            "A letter from the letting agency came today.",
            "It's about renewing my lease.",
            "I haven't opened it yet.",
            "Things with that man have never been easy, have they?",
        ],
        [
            "今天中介寄来一封信。",
            "是关于续租的。",
            "我还没拆开。",
            "跟那个人打交道从来就没顺利过，对吧？",
        ],
    ),
    (
        ["guitar", "band"],
        "held_out",
        [
            "We got offered a gig at a bar next month!",
            "It's a proper set, forty minutes.",
            "I've been practising the chord changes every night.",
            "I just hope I don't freeze on stage.",
        ],
        [
            "下个月有个酒吧请我们去演出！",
            "是正式的一整场，四十分钟。",
            "我每天晚上都在练换和弦。",
            "只希望上台别又僵住。",
        ],
    ),
    (
        ["flu", "flu_2"],
        "held_out",
        [
            "My throat is scratchy and I feel shivery.",
            "Of course it's the week before my project is due.",
            "I can't afford to lose a whole week in bed.",
            "Why does this always happen to me at the worst time?",
        ],
        [
            "我嗓子发痒，还有点发冷。",
            "偏偏是项目交付前一周。",
            "我可没法在床上躺一整个星期。",
            "为什么总是在最要命的时候来这一出？",
        ],
    ),
    (
        ["sister_wedding", "honeymoon_friend"],
        "held_out",
        [
            "My cousin just got engaged!",
            "She asked me to help plan the whole thing.",
            "I've been to a few of these now.",
            "What did I learn from the last ones?",
        ],
        [
            "我表妹刚订婚了！",
            "她让我帮忙策划整个婚礼。",
            "这种场合我也参加过好几次了。",
            "从之前那几次我学到了什么？",
        ],
    ),
]


def _later(created_at: str, rng: random.Random) -> tuple[int, int, int]:
    year, month = int(created_at[:4]), int(created_at[5:7])
    index = min((year - 2024) * 12 + month - 1 + rng.randint(2, 5), 17)  # June 2025 at most
    return 2024 + index // 12, index % 12 + 1, rng.randint(1, 28)


def main() -> None:
    rng = random.Random(SEED)
    hard = json.loads(HARD.read_text(encoding="utf-8"))
    known = {event_id for _, event_id, _, _ in EVENTS} | {m[1] for m in MORE}
    assert all(set(targets) <= known for targets, *_ in TALKS)
    users = []
    for user in hard["users"]:
        lang = user["lang"]
        events = list(user["events"])
        when = {e["id"]: e["created_at"] for e in events}
        for topic, event_id, after, en, zh in MORE:
            year, month, day = _later(when[after], rng)
            text = (en if lang == "en" else zh).format(m=_month(lang, year, month))
            created = f"{year}-{month:02d}-{day:02d}T12:00:00+00:00"
            events.append({"id": event_id, "topic": topic, "text": text, "created_at": created})
        talks = [
            {"targets": targets, "split": split, "turns": en if lang == "en" else zh}
            for targets, split, en, zh in TALKS
        ]
        users.append(
            {"user": user["user"], "lang": lang, "events": events, "talks": talks, "asks": []}
        )
    data = {
        "source": (
            "Written for langchain-tiered-memory (its own, MIT like the code), never derived "
            "from a benchmark: bench/make_associative_multi.py writes it from the hard set's "
            "users and ten more events each. Conversations call for two or three memories. "
            "Split 'dev' chooses; 'held_out' is run once, at the end."
        ),
        "now": hard["now"],
        "users": users,
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {len(users)} users, {len(TALKS)} conversations each")


if __name__ == "__main__":
    main()
