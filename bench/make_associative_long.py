"""Write ``bench/data/associative_long.json``: long conversations to choose the query's depth.

    python bench/make_associative_long.py

Issue 70 item 1: the several-memory set's conversations are 4 user turns long, so it cannot
tell 4 turns from "the whole conversation". These are 10-11 user turns each, with a change
of topic, small talk, and a return to an earlier topic; each has three probes, the turns
where memories should come up (``at``: the index of the user's latest turn; ``targets``: the
events relevant there). The users and their dated events are those of
``associative_multi.json`` (same ids in English and Chinese); the conversations are our own,
written in both languages, each used for the six users of its language (the same
conversation over six users with other dates is one sample, not six). The turns avoid date
words ("last winter"), which the time signal would read against the users' random dates.

Splits: 6 conversations per language for dev, 3 held out (run once, at the end).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "data"

# (turns, {probe turn index: target event ids}), English then Chinese, dev then held out
EN: list[tuple[list[str], dict[int, list[str]]]] = [
    (
        [
            "Morning! Slept badly again.",
            "I've booked the driving test for next Thursday.",
            "My instructor says my parking is fine now.",
            "But I keep picturing the last two times it went wrong.",
            "Anyway, did you see the rain today?",
            "I got completely soaked on the way in.",
            "Work was a pain as well.",
            "My boss wants to be copied on literally every message I send.",
            "It makes me feel like a child.",
            "Sorry, back to Thursday.",
            "What should I do if my nerves take over again?",
        ],
        {3: ["road_test", "road_test_2"], 7: ["new_manager"], 10: ["road_test", "road_test_2"]},
    ),
    (
        [
            "Hi, quick one.",
            "Biscuit has been sniffing around the laundry basket again.",
            "I'm terrified he'll eat something he shouldn't, like that time.",
            "Completely unrelated, my bedroom wall has black spots again.",
            "The owner of the flat still won't do anything about it.",
            "And he wants more money from me every year.",
            "Whatever, I'll deal with it at the weekend.",
            "Did you watch the match last night?",
            "Such a boring draw.",
            "Oh no, he just grabbed something off the floor and ran off with it!",
            "Should I be worried?",
        ],
        {2: ["biscuit_vet"], 5: ["landlord_2", "landlord"], 10: ["biscuit_vet"]},
    ),
    (
        [
            "I've got two weeks off in April.",
            "Thinking about going back to Japan.",
            "Last time I basically lived on noodles.",
            "I want it to go more smoothly than my first night there.",
            "My head has been pounding all afternoon though.",
            "Too many hours staring at the laptop, probably.",
            "I'll take a break soon.",
            "What's a good snack that isn't crisps?",
            "Fruit, I guess.",
            "Back to the holiday: should I buy a local SIM this time?",
            "And carry a paper map just in case.",
        ],
        {
            3: ["tokyo", "tokyo_ramen", "tokyo_phone"],
            5: ["migraine"],
            10: ["tokyo_phone", "tokyo"],
        },
    ),
    (
        [
            "Long day.",
            "It still stings that they shut down my old department.",
            "Funny how things turned out at the agency, though.",
            "Anyway, I want to get back into running.",
            "I signed up for a 10k in the autumn.",
            "Hopefully my leg holds up this time.",
            "The people upstairs were blasting music until 2am again.",
            "I'm so tired.",
            "Do you think I should ask for more money at the new place?",
            "The last time I asked, it didn't go well.",
        ],
        {2: ["layoff", "new_job"], 5: ["knee", "knee_2"], 9: ["raise", "new_job"]},
    ),
    (
        [
            "Hey.",
            "It would have been my grandma's birthday today.",
            "I still think about what I said at her service.",
            "Mum wants to have a small dinner for her.",
            "Work is crazy though, big deadline in two weeks.",
            "The last time I had a deadline like this I got sick right before it.",
            "I need to look after myself.",
            "Any ideas for what to cook?",
            "Something grandma used to make, maybe.",
            "I hope I don't cry in front of everyone again.",
        ],
        {2: ["grandmother"], 5: ["flu_2"], 9: ["grandmother"]},
    ),
    (
        [
            "Brr, it's freezing tonight.",
            "The radiators are barely warm.",
            "I really hope it doesn't break down completely like before.",
            "On a happier note, I've been playing chess online.",
            "Thinking of entering a tournament again.",
            "Hopefully I win at least one game this time.",
            "What time is it?",
            "Ugh, already late.",
            "The plumber is coming tomorrow about the heat.",
            "Should I just ask him to replace everything?",
        ],
        {2: ["heating", "boiler"], 5: ["chess"], 9: ["boiler", "heating"]},
    ),
    # held out
    (
        [
            "Hi there.",
            "I'm applying for another master's programme.",
            "They want a language certificate again.",
            "My cat knocked a glass over this morning.",
            "She's always getting into things she shouldn't swallow.",
            "Luckily nothing broke.",
            "What's the weather tomorrow?",
            "Doesn't matter, I'm staying in.",
            "I need a higher score than last time, right?",
            "Maybe I should take a course.",
        ],
        {2: ["ielts"], 4: ["cat_vet"], 8: ["ielts"]},
    ),
    (
        [
            "Evening!",
            "Rehearsal tonight went great.",
            "The drummer says my rhythm has improved a lot.",
            "When I got home the front door was open.",
            "For a moment I panicked that someone had broken in again.",
            "It was just my flatmate.",
            "I had pizza for dinner.",
            "Too much cheese.",
            "We have a gig next month, my first on stage since that open mic.",
            "I really hope I remember all the lyrics.",
        ],
        {2: ["band", "guitar"], 4: ["burglary"], 9: ["guitar", "band"]},
    ),
    (
        [
            "Hi!",
            "I'm looking at photos from my trip up north.",
            "Those lights in the sky were unreal.",
            "I want to start cycling to work.",
            "But I'm a bit nervous after my fall.",
            "I'll buy a helmet first.",
            "Is it going to be sunny this weekend?",
            "I want to hang the laundry outside.",
            "Should I hire a car again if I go back there?",
            "Last time the tyre was a nightmare.",
        ],
        {2: ["iceland"], 4: ["wrist"], 9: ["iceland"]},
    ),
]

ZH: list[tuple[list[str], dict[int, list[str]]]] = [
    (
        [
            "早上好！昨晚又没睡好。",
            "我把驾照考试约在了下周四。",
            "教练说我现在停车没问题了。",
            "可我老是想起前两次搞砸的样子。",
            "对了，你看到今天的雨了吗？",
            "我来的路上全身都湿透了。",
            "工作也很烦。",
            "老板要求我发的每条消息都要抄送他。",
            "感觉自己像个小孩。",
            "抱歉，说回周四。",
            "要是我又紧张得不行怎么办？",
        ],
        {3: ["road_test", "road_test_2"], 7: ["new_manager"], 10: ["road_test", "road_test_2"]},
    ),
    (
        [
            "嗨，问个事。",
            "饼干又在脏衣篮旁边闻来闻去了。",
            "我好怕它又乱吞东西，像上次那样。",
            "说个不相干的，我卧室墙上又长黑斑了。",
            "房子的主人还是什么都不管。",
            "而且他每年都要我多交钱。",
            "算了，周末再处理吧。",
            "你昨晚看球赛了吗？",
            "平局，太无聊了。",
            "糟了，它刚从地上叼起个东西就跑了！",
            "我该担心吗？",
        ],
        {2: ["biscuit_vet"], 5: ["landlord_2", "landlord"], 10: ["biscuit_vet"]},
    ),
    (
        [
            "我四月有两周假。",
            "在考虑再去一趟日本。",
            "上次我基本天天吃面。",
            "希望这次比第一晚顺利点。",
            "不过我整个下午头都在疼。",
            "可能是盯着电脑太久了。",
            "我一会儿休息一下。",
            "有什么不是薯片的零食推荐吗？",
            "那就水果吧。",
            "说回假期：这次要不要买张当地的电话卡？",
            "再带张纸质地图以防万一。",
        ],
        {
            3: ["tokyo", "tokyo_ramen", "tokyo_phone"],
            5: ["migraine"],
            10: ["tokyo_phone", "tokyo"],
        },
    ),
    (
        [
            "今天好累。",
            "想到原来的部门被撤掉，心里还是不舒服。",
            "不过在设计公司这边，事情发展得挺有意思。",
            "对了，我想重新开始跑步。",
            "我报了秋天的一个十公里。",
            "希望这次我的腿能撑住。",
            "楼上的人又把音乐放到半夜两点。",
            "我困死了。",
            "你觉得我该在新单位要求涨工资吗？",
            "上次我开口的时候结果不太好。",
        ],
        {2: ["layoff", "new_job"], 5: ["knee", "knee_2"], 9: ["raise", "new_job"]},
    ),
    (
        [
            "嘿。",
            "今天本来是我奶奶的生日。",
            "我还常想起在她告别仪式上说的话。",
            "妈妈想为她办个小小的晚饭。",
            "不过工作忙疯了，两周后有个大截止日期。",
            "上次碰到这种截止日期，我正好在之前病倒了。",
            "我得照顾好自己。",
            "做什么菜好呢？",
            "也许做奶奶以前常做的菜。",
            "希望我别又在大家面前哭出来。",
        ],
        {2: ["grandmother"], 5: ["flu_2"], 9: ["grandmother"]},
    ),
    (
        [
            "哇，今晚好冷。",
            "暖气片几乎不热。",
            "真希望别像以前那样彻底坏掉。",
            "说点开心的，我最近在网上下象棋。",
            "在考虑再去参加一次比赛。",
            "希望这次至少能赢一局。",
            "现在几点了？",
            "唉，已经这么晚了。",
            "水管工明天来看供暖的问题。",
            "要不要干脆让他全换掉？",
        ],
        {2: ["heating", "boiler"], 5: ["chess"], 9: ["boiler", "heating"]},
    ),
    # held out
    (
        [
            "你好。",
            "我又在申请一个硕士项目。",
            "他们又要语言成绩证明。",
            "今天早上我的猫把杯子打翻了。",
            "它总是去碰那些不该吞的东西。",
            "还好没摔碎。",
            "明天天气怎么样？",
            "无所谓，我待在家里。",
            "这次我得考得比上次高，对吧？",
            "也许我该报个班。",
        ],
        {2: ["ielts"], 4: ["cat_vet"], 8: ["ielts"]},
    ),
    (
        [
            "晚上好！",
            "今晚排练得特别好。",
            "鼓手说我的节奏进步了很多。",
            "我回家的时候发现大门开着。",
            "那一瞬间我慌了，以为又有人闯进来了。",
            "结果只是我室友。",
            "我晚饭吃了披萨。",
            "奶酪太多了。",
            "我们下个月有场演出，这是那次开放麦之后我第一次上台。",
            "真希望我能记住所有歌词。",
        ],
        {2: ["band", "guitar"], 4: ["burglary"], 9: ["guitar", "band"]},
    ),
    (
        [
            "嗨！",
            "我在看北边那趟旅行的照片。",
            "天上的那些光太不真实了。",
            "我想开始骑车上班。",
            "可是摔过那一跤以后有点紧张。",
            "我先去买个头盔。",
            "这个周末会出太阳吗？",
            "我想把衣服晾在外面。",
            "要是再去那儿，还要租车吗？",
            "上次那个轮胎真是噩梦。",
        ],
        {2: ["iceland"], 4: ["wrist"], 9: ["iceland"]},
    ),
]

DEV = 6  # the first six of each language; the rest are held out


def talks(conversations: list[tuple[list[str], dict[int, list[str]]]]) -> list[dict[str, Any]]:
    """The conversations in the set's form."""
    return [
        {
            "split": "dev" if n < DEV else "held_out",
            "turns": turns,
            "probes": [{"at": at, "targets": targets} for at, targets in sorted(probes.items())],
        }
        for n, (turns, probes) in enumerate(conversations)
    ]


def main() -> None:
    multi = json.loads((HERE / "associative_multi.json").read_text(encoding="utf-8"))
    users = []
    for user in multi["users"]:
        ids = {e["id"] for e in user["events"]}
        long_talks = talks(EN if user["lang"] == "en" else ZH)
        for talk in long_talks:
            for probe in talk["probes"]:
                assert set(probe["targets"]) <= ids, probe
                assert 0 <= probe["at"] < len(talk["turns"])
        users.append({**user, "talks": long_talks, "asks": []})
    out = {
        "source": "langchain-tiered-memory, bench/make_associative_long.py (our own text)",
        "now": multi["now"],
        "users": users,
    }
    path = HERE / "associative_long.json"
    path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(users)} users, {sum(len(u['talks']) for u in users)} talks")


if __name__ == "__main__":
    main()
