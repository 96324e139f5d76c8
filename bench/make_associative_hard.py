# ruff: noqa: E501  (the events and conversations are data: one per line reads best)
"""Writes ``bench/data/associative_hard.json``: the hard associative dev set (issue 45).

    python bench/make_associative_hard.py

Of this project's own making, never derived from a benchmark. Each user has 80 dated life
events over 18 months (January 2024 to June 2025), ten on each of eight topics (exams,
trips, illness, work, family, pets, home, money and hobbies), so every conversation has
same-topic distractors: several exams, several trips, several illnesses. A conversation is
4 to 6 user turns that stop where the assistant should bring one event up; the link is the
situation or the feeling, not the event's words. Named-fact questions ask for an event by
what it names. English and Chinese users (the same events, written in each language).

Splits: ``dev`` conversations (three target events a topic) and ``held_out`` ones (one more
a topic, never read while choosing anything; run once, at the end). The events of both
are in every user's memory, so the held-out targets are dev distractors.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).parent / "data" / "associative_hard.json"
USERS_PER_LANGUAGE = 6
SEED = 45

# (topic, id, English item, Chinese item); {m}: the event's month ("March 2024", "2024年3月")
EVENTS: list[tuple[str, str, str, str]] = [
    # exams and tests
    (
        "exam",
        "road_test",
        "The user failed the driving road test in {m} after stalling at a roundabout, and felt humiliated.",
        "用户{m}驾照路考没通过，在环岛熄火，觉得很丢脸。",
    ),
    (
        "exam",
        "calculus",
        "The user passed the calculus final in {m} with a B after weeks of late-night study.",
        "用户{m}微积分期末考试得了B，之前熬夜复习了好几周。",
    ),
    (
        "exam",
        "ielts",
        "The user took the IELTS in {m} and scored 6.5, short of the 7 the master's programme asked for.",
        "用户{m}考了雅思，拿了6.5分，没达到硕士项目要求的7分。",
    ),
    (
        "exam",
        "piano",
        "The user sat the grade 6 piano exam in {m}; their hands shook during the sight-reading.",
        "用户{m}参加了钢琴六级考试，视奏时手一直在抖。",
    ),
    (
        "exam",
        "interview",
        "The user had a job interview at a logistics firm in {m} and blanked on a technical question.",
        "用户{m}去一家物流公司面试，一道技术题脑子一片空白。",
    ),
    (
        "exam",
        "theory",
        "The user passed the driving theory test on the first try in {m}.",
        "用户{m}一次就通过了驾照科目一理论考试。",
    ),
    (
        "exam",
        "first_aid",
        "The user earned a first-aid certificate in {m} after a weekend course.",
        "用户{m}参加周末课程，拿到了急救证书。",
    ),
    (
        "exam",
        "thesis",
        "The user defended their bachelor's thesis in {m}; a committee member grilled them on the statistics.",
        "用户{m}本科论文答辩，一位评委追问了很久统计方法。",
    ),
    (
        "exam",
        "swim",
        "The user failed the lifeguard swimming test in {m} by four seconds.",
        "用户{m}救生员游泳测试差四秒没过。",
    ),
    (
        "exam",
        "citizenship",
        "The user passed the citizenship knowledge test in {m}.",
        "用户{m}通过了入籍知识考试。",
    ),
    # trips
    (
        "trip",
        "iceland",
        "The user travelled around Iceland in {m}, saw the northern lights, and their rental car got a flat tyre on a gravel road.",
        "用户{m}去冰岛自驾，看到了极光，租的车在碎石路上爆了胎。",
    ),
    (
        "trip",
        "tokyo",
        "The user spent a week in Tokyo in {m} and got lost in Shinjuku station on the first night.",
        "用户{m}在东京待了一周，第一晚在新宿站迷了路。",
    ),
    (
        "trip",
        "hometown",
        "The user visited their father's home village in {m} for the first time in ten years.",
        "用户{m}回了父亲的老家，十年来第一次。",
    ),
    (
        "trip",
        "business_berlin",
        "The user went on a business trip to Berlin in {m} and presented to a client there.",
        "用户{m}去柏林出差，给客户做了汇报。",
    ),
    (
        "trip",
        "camping",
        "The user went camping in the mountains in {m}; a storm flooded their tent at night.",
        "用户{m}去山里露营，夜里一场暴雨把帐篷淹了。",
    ),
    (
        "trip",
        "missed_flight",
        "The user missed a connecting flight in Dubai in {m} and slept at the airport.",
        "用户{m}在迪拜转机时误了航班，在机场睡了一夜。",
    ),
    (
        "trip",
        "beach",
        "The user had a beach holiday in Bali in {m} and got badly sunburned.",
        "用户{m}去巴厘岛海边度假，被晒伤得很厉害。",
    ),
    (
        "trip",
        "road_trip",
        "The user drove along the coast with friends in {m}, sharing the driving.",
        "用户{m}和朋友沿海岸线自驾，轮流开车。",
    ),
    (
        "trip",
        "honeymoon_friend",
        "The user went to a friend's destination wedding in Italy in {m}.",
        "用户{m}去意大利参加了朋友的海外婚礼。",
    ),
    (
        "trip",
        "ski",
        "The user took a ski trip in {m} and spent most of it on the beginner slope.",
        "用户{m}去滑雪，大部分时间都在初级道上。",
    ),
    # illness and health
    (
        "health",
        "wrist",
        "The user broke their left wrist falling off a bike in {m} and wore a cast for six weeks.",
        "用户{m}骑自行车摔倒，左手腕骨折，打了六周石膏。",
    ),
    (
        "health",
        "flu",
        "The user had a bad flu in {m} and was in bed for a week with a high fever.",
        "用户{m}得了重感冒，发高烧在床上躺了一周。",
    ),
    (
        "health",
        "migraine",
        "The user started getting migraines in {m}; a neurologist suggested less screen time.",
        "用户{m}开始偏头痛，神经科医生建议少看屏幕。",
    ),
    (
        "health",
        "wisdom_tooth",
        "The user had a wisdom tooth pulled in {m}; their cheek was swollen for days.",
        "用户{m}拔了智齿，脸肿了好几天。",
    ),
    (
        "health",
        "food_poisoning",
        "The user got food poisoning from street food in {m}.",
        "用户{m}吃路边摊食物中毒了。",
    ),
    (
        "health",
        "knee",
        "The user hurt their knee running in {m} and did physiotherapy for two months.",
        "用户{m}跑步伤了膝盖，做了两个月理疗。",
    ),
    (
        "health",
        "allergy",
        "The user found out in {m} that they are allergic to cats.",
        "用户{m}发现自己对猫过敏。",
    ),
    (
        "health",
        "burnout",
        "The user was signed off work for burnout in {m} and felt exhausted for weeks.",
        "用户{m}因为职业倦怠请了病假，好几周都觉得筋疲力尽。",
    ),
    (
        "health",
        "glasses",
        "The user got their first pair of glasses in {m}.",
        "用户{m}配了第一副眼镜。",
    ),
    (
        "health",
        "covid",
        "The user had covid in {m} and lost their sense of taste for a month.",
        "用户{m}得了新冠，一个月尝不出味道。",
    ),
    # work
    ("work", "promotion", "The user was promoted to team lead in {m}.", "用户{m}升职当了组长。"),
    (
        "work",
        "layoff",
        "The user was laid off in {m} when their department was closed.",
        "用户{m}所在部门被裁撤，被裁员了。",
    ),
    (
        "work",
        "presentation",
        "The user gave a presentation to the board in {m} and the projector failed halfway.",
        "用户{m}给董事会做汇报，投影仪中途坏了。",
    ),
    (
        "work",
        "new_manager",
        "The user got a new manager in {m} who micromanages every email.",
        "用户{m}换了个新领导，连每封邮件都要管。",
    ),
    (
        "work",
        "launch",
        "The user's team launched the mobile app in {m} after a month of overtime.",
        "用户{m}团队加班一个月后上线了手机应用。",
    ),
    (
        "work",
        "conflict",
        "The user argued with a colleague over credit for a project in {m}.",
        "用户{m}和同事为了项目功劳吵了一架。",
    ),
    (
        "work",
        "raise",
        "The user asked for a raise in {m} and was turned down.",
        "用户{m}提了加薪，被拒绝了。",
    ),
    (
        "work",
        "conference",
        "The user spoke at an industry conference in {m} for the first time.",
        "用户{m}第一次在行业大会上演讲。",
    ),
    (
        "work",
        "remote",
        "The user started working from home three days a week in {m}.",
        "用户{m}开始每周三天在家办公。",
    ),
    (
        "work",
        "award",
        "The user won an employee-of-the-year award in {m}.",
        "用户{m}获得了年度优秀员工奖。",
    ),
    # family and friends
    (
        "family",
        "grandmother",
        "The user's grandmother died in {m}; the user gave a speech at the funeral.",
        "用户的奶奶{m}去世了，用户在葬礼上致了辞。",
    ),
    (
        "family",
        "sister_wedding",
        "The user's sister got married in {m} and the user was the maid of honour.",
        "用户的姐姐{m}结婚，用户当了伴娘。",
    ),
    ("family", "nephew", "The user's nephew was born in {m}.", "用户的外甥{m}出生了。"),
    (
        "family",
        "dad_surgery",
        "The user's father had heart surgery in {m}; the user stayed at the hospital overnight.",
        "用户的父亲{m}做了心脏手术，用户在医院陪了一夜。",
    ),
    (
        "family",
        "friend_fight",
        "The user fell out with their best friend in {m} over a cancelled trip.",
        "用户{m}因为取消的旅行和最好的朋友闹翻了。",
    ),
    (
        "family",
        "reunion",
        "The user went to a high-school reunion in {m}.",
        "用户{m}参加了高中同学聚会。",
    ),
    (
        "family",
        "mum_birthday",
        "The user threw a surprise 60th birthday party for their mother in {m}.",
        "用户{m}给母亲办了六十岁的惊喜生日会。",
    ),
    (
        "family",
        "breakup",
        "The user broke up with their partner of three years in {m}.",
        "用户{m}和交往三年的对象分手了。",
    ),
    (
        "family",
        "brother_move",
        "The user's brother moved to Canada in {m}.",
        "用户的哥哥{m}移居加拿大。",
    ),
    (
        "family",
        "cousin_baby",
        "The user became godparent to a cousin's daughter in {m}.",
        "用户{m}成了表姐女儿的干妈。",
    ),
    # pets
    (
        "pets",
        "dog_adopt",
        "The user adopted a rescue dog named Biscuit in {m}.",
        "用户{m}领养了一只叫饼干的流浪狗。",
    ),
    (
        "pets",
        "cat_vet",
        "The user's cat needed emergency surgery in {m} after swallowing a hair tie.",
        "用户的猫{m}吞了发圈，做了紧急手术。",
    ),
    ("pets", "dog_died", "The user's old dog died in {m}.", "用户养的老狗{m}去世了。"),
    ("pets", "fish", "The user set up an aquarium in {m}.", "用户{m}养了一缸鱼。"),
    (
        "pets",
        "dog_training",
        "The user took the dog to obedience classes in {m}.",
        "用户{m}带狗去上了服从训练课。",
    ),
    (
        "pets",
        "lost_cat",
        "The user's cat went missing for three days in {m} and came back thin.",
        "用户的猫{m}走丢了三天，回来瘦了一圈。",
    ),
    ("pets", "hamster", "The user's child's hamster escaped in {m}.", "用户孩子的仓鼠{m}跑丢了。"),
    (
        "pets",
        "dog_bite",
        "The user was bitten by a neighbour's dog in {m}.",
        "用户{m}被邻居家的狗咬了。",
    ),
    (
        "pets",
        "pet_sitting",
        "The user looked after a friend's parrot for a month in {m}.",
        "用户{m}帮朋友照顾了一个月鹦鹉。",
    ),
    (
        "pets",
        "cat_allergy_rehome",
        "The user had to find a new home for a kitten in {m}.",
        "用户{m}不得不给一只小猫找新主人。",
    ),
    # home
    (
        "home",
        "pipe",
        "A pipe burst in the user's flat in {m} and flooded the kitchen.",
        "用户家{m}水管爆裂，厨房被淹了。",
    ),
    (
        "home",
        "move",
        "The user moved to a bigger flat across town in {m}.",
        "用户{m}搬到了城另一头更大的房子。",
    ),
    (
        "home",
        "neighbour",
        "The user's upstairs neighbour played loud music every night in {m}.",
        "用户楼上的邻居{m}每晚都放很吵的音乐。",
    ),
    (
        "home",
        "burglary",
        "The user's flat was burgled in {m} and their laptop was stolen.",
        "用户家{m}遭了小偷，笔记本电脑被偷了。",
    ),
    (
        "home",
        "renovation",
        "The user renovated their bathroom in {m}; it took twice as long as planned.",
        "用户{m}翻修了浴室，工期比计划长了一倍。",
    ),
    (
        "home",
        "heating",
        "The user's heating broke in {m} during a cold snap.",
        "用户家的暖气{m}在寒潮时坏了。",
    ),
    (
        "home",
        "garden",
        "The user started a vegetable garden on the balcony in {m}.",
        "用户{m}在阳台上种了菜。",
    ),
    (
        "home",
        "landlord",
        "The user's landlord raised the rent by 15 percent in {m}.",
        "用户的房东{m}把房租涨了15%。",
    ),
    (
        "home",
        "furniture",
        "The user built a wardrobe from a flat-pack kit in {m} and had screws left over.",
        "用户{m}自己组装了一个衣柜，最后还多出几颗螺丝。",
    ),
    (
        "home",
        "lockout",
        "The user locked themselves out in {m} and waited two hours for a locksmith.",
        "用户{m}把自己锁在门外，等了两个小时开锁师傅。",
    ),
    # money and hobbies
    (
        "life",
        "car_breakdown",
        "The user's car broke down on the motorway in {m} and the repair cost a month's salary.",
        "用户的车{m}在高速上抛锚，修车花了一个月工资。",
    ),
    (
        "life",
        "wallet",
        "The user lost their wallet on the metro in {m}.",
        "用户{m}在地铁上丢了钱包。",
    ),
    (
        "life",
        "marathon",
        "The user ran their first half marathon in {m}.",
        "用户{m}跑完了第一个半程马拉松。",
    ),
    (
        "life",
        "guitar",
        "The user played guitar at an open-mic night in {m} and forgot the second verse.",
        "用户{m}在开放麦之夜弹吉他，忘了第二段歌词。",
    ),
    (
        "life",
        "pottery",
        "The user took a pottery class in {m} and made a lopsided bowl.",
        "用户{m}上了陶艺课，做了一个歪歪扭扭的碗。",
    ),
    (
        "life",
        "raffle",
        "The user won a weekend for two in a raffle in {m}.",
        "用户{m}抽奖中了一个双人周末游。",
    ),
    ("life", "scam", "The user lost money to a phone scam in {m}.", "用户{m}被电话诈骗骗了钱。"),
    (
        "life",
        "volunteer",
        "The user volunteered at a food bank every Saturday from {m}.",
        "用户从{m}开始每周六去食物银行做志愿者。",
    ),
    (
        "life",
        "chess",
        "The user entered a local chess tournament in {m} and lost every game.",
        "用户{m}参加了本地象棋比赛，一局都没赢。",
    ),
    ("life", "savings", "The user paid off their student loan in {m}.", "用户{m}还清了助学贷款。"),
]

# Conversations: (event id, split, English turns, Chinese turns). The last turn is where
# the assistant should recall the event; none repeats its words.
TALKS: list[tuple[str, str, list[str], list[str]]] = [
    (
        "road_test",
        "dev",
        [
            "Morning! Quick one.",
            "I booked another slot for Thursday morning.",
            "My instructor swears I'm ready this time.",
            "I practised hill starts all weekend in my uncle's hatchback.",
            "I just don't want to feel that embarrassed again.",
        ],
        [
            "早上好，问你个事。",
            "我又约了周四上午的场次。",
            "教练说我这次肯定没问题。",
            "周末我开着叔叔的小车练了一整天坡道起步。",
            "我真的不想再那么丢人了。",
        ],
    ),
    (
        "ielts",
        "dev",
        [
            "The university emailed me today.",
            "They want proof of English by August or the offer lapses.",
            "I've been doing listening practice on the bus.",
            "Last time the writing part dragged my score down.",
            "Do you think I can get half a band higher in two months?",
        ],
        [
            "学校今天给我发邮件了。",
            "说八月前要交英语成绩证明，不然录取就作废。",
            "我现在坐公交都在练听力。",
            "上次就是写作把分数拉低了。",
            "你觉得两个月能提高半分吗？",
        ],
    ),
    (
        "piano",
        "dev",
        [
            "My teacher put me in for the next grade.",
            "We picked a Chopin nocturne this time.",
            "I practise an hour every evening.",
            "But the part where they put an unseen page in front of you terrifies me.",
            "How do I stop my fingers trembling?",
        ],
        [
            "老师给我报了下一级。",
            "这次选了一首肖邦的夜曲。",
            "我每天晚上练一个小时。",
            "但是当场给一页没见过的谱子那部分太吓人了。",
            "我怎么才能让手指不发抖？",
        ],
    ),
    (
        "iceland",
        "held_out",
        [
            "Planning something for winter.",
            "I want dark skies and somewhere really cold.",
            "Last time we saw green lights dancing over the fjord, it was magic.",
            "But I'm nervous about those unpaved roads again.",
            "Should I rent a four-by-four this time?",
        ],
        [
            "在计划冬天的旅行。",
            "我想找个天特别黑、特别冷的地方。",
            "上次看到绿色的光在峡湾上跳舞，太神奇了。",
            "但我还是有点怕那种没铺好的路。",
            "这次要不要租辆四驱车？",
        ],
    ),
    (
        "tokyo",
        "dev",
        [
            "I'm going back to Japan in the autumn!",
            "This time I'm staying near a smaller station.",
            "I downloaded three different maps apps already.",
            "The first night last time was chaos, I walked in circles for an hour.",
            "Any tips so that doesn't happen again?",
        ],
        [
            "我秋天又要去日本了！",
            "这次住在一个小一点的车站附近。",
            "我已经下了三个地图软件。",
            "上次第一晚太乱了，我转了一个小时的圈。",
            "有什么办法避免再这样吗？",
        ],
    ),
    (
        "camping",
        "dev",
        [
            "The weather's finally warming up.",
            "My friends want to sleep outdoors next weekend.",
            "I bought a new groundsheet and some pegs.",
            "I still remember waking up in a puddle.",
            "What should I check before we pitch?",
        ],
        [
            "天气终于暖和了。",
            "朋友们想下周末去野外过夜。",
            "我买了新的防潮垫和地钉。",
            "我到现在还记得半夜在水坑里醒来。",
            "搭之前我应该检查什么？",
        ],
    ),
    (
        "missed_flight",
        "dev",
        [
            "Booking flights for the holidays.",
            "The cheapest option has a 50-minute layover.",
            "The airline says that's enough.",
            "I spent a night on a bench once because of a tight change.",
            "Is it worth paying more for a longer gap?",
        ],
        [
            "在订假期的机票。",
            "最便宜的那个中转只有50分钟。",
            "航空公司说够用了。",
            "我以前就因为转机太紧在长椅上睡过一夜。",
            "多花点钱换个中转时间长的值得吗？",
        ],
    ),
    (
        "wrist",
        "dev",
        [
            "I got a new bike!",
            "It's a road bike, much faster than my old one.",
            "My friends want to do a long ride on Sunday.",
            "My left arm still aches a bit when it rains though.",
            "Should I wear some kind of support?",
        ],
        [
            "我买了辆新自行车！",
            "是公路车，比以前那辆快多了。",
            "朋友们周日想骑长途。",
            "不过下雨天我左手还是有点疼。",
            "我要不要戴个护具？",
        ],
    ),
    (
        "migraine",
        "dev",
        [
            "Long day at the office.",
            "I stared at spreadsheets for nine hours straight.",
            "Now there's a throbbing behind my right eye.",
            "The lights in here feel way too bright.",
            "What should I do?",
        ],
        [
            "今天在公司待了一整天。",
            "我连着盯了九个小时表格。",
            "现在右眼后面一跳一跳地疼。",
            "这里的灯感觉太刺眼了。",
            "我该怎么办？",
        ],
    ),
    (
        "food_poisoning",
        "dev",
        [
            "We're at the night market!",
            "Everything smells amazing.",
            "There's a stall selling grilled seafood skewers.",
            "My stomach still remembers what happened last time though.",
            "Is it safe to try?",
        ],
        [
            "我们在逛夜市！",
            "什么都好香。",
            "有个摊子在卖烤海鲜串。",
            "不过我的肚子还记得上次的事。",
            "吃了会不会有问题？",
        ],
    ),
    (
        "knee",
        "held_out",
        [
            "I signed up for a 10k.",
            "Training starts Monday.",
            "I'm a bit worried about the downhill parts.",
            "My physio said to build up slowly after last time.",
            "How many runs a week is sensible?",
        ],
        [
            "我报名了一个十公里跑。",
            "周一开始训练。",
            "我有点担心下坡路段。",
            "理疗师说上次之后要慢慢加量。",
            "一周跑几次比较合理？",
        ],
    ),
    (
        "layoff",
        "dev",
        [
            "Saw a headline about restructuring at my company.",
            "People are whispering in the kitchen.",
            "HR booked a meeting with the whole floor tomorrow.",
            "I can't go through that again, I really can't.",
            "How do I prepare?",
        ],
        [
            "看到新闻说我们公司要重组。",
            "大家在茶水间都在小声议论。",
            "人事明天约了整层楼开会。",
            "我真的受不了再经历一次了。",
            "我该怎么准备？",
        ],
    ),
    (
        "presentation",
        "dev",
        [
            "Big day tomorrow.",
            "I'm pitching the budget to the directors.",
            "I've rehearsed the slides five times.",
            "I'm bringing printed handouts in case the tech dies on me again.",
            "Anything else I should have as a backup?",
        ],
        [
            "明天是个大日子。",
            "我要给总监们讲预算方案。",
            "幻灯片我排练了五遍。",
            "我准备了纸质材料，以防设备又出问题。",
            "还有什么需要备用的吗？",
        ],
    ),
    (
        "new_manager",
        "dev",
        [
            "Ugh, another message from my boss.",
            "She wants to review my reply to a client before I send it.",
            "It's two lines long.",
            "Every single thing goes through her.",
            "How do I handle this without sounding rude?",
        ],
        [
            "唉，领导又发消息来了。",
            "她要我给客户回复之前先给她过目。",
            "就两行字。",
            "什么事都要经过她。",
            "我怎么说才不显得没礼貌？",
        ],
    ),
    (
        "raise",
        "held_out",
        [
            "Annual reviews are next month.",
            "I've taken on a lot more this year.",
            "My friend says I should negotiate.",
            "But last time they just said no and I felt stupid.",
            "How should I bring it up?",
        ],
        [
            "下个月年度考核。",
            "今年我多做了很多事。",
            "朋友说我应该去谈谈。",
            "可是上次他们直接拒绝了，我觉得自己很傻。",
            "我该怎么开口？",
        ],
    ),
    (
        "grandmother",
        "dev",
        [
            "I found an old recipe card in a drawer today.",
            "It's her handwriting, for plum dumplings.",
            "I haven't been able to make them since spring.",
            "I miss her voice so much.",
            "Is it normal that it still hurts this much?",
        ],
        [
            "今天在抽屉里翻到一张旧菜谱。",
            "是她的字迹，写的是包饺子的做法。",
            "从春天到现在我都没包过。",
            "我好想听她说话。",
            "到现在还这么难受正常吗？",
        ],
    ),
    (
        "dad_surgery",
        "dev",
        [
            "My dad has a check-up on Friday.",
            "It's with the cardiologist.",
            "He pretends he's fine, but he gets tired on the stairs.",
            "Those hours in the waiting room last time were the longest of my life.",
            "What questions should I ask the doctor?",
        ],
        [
            "我爸周五要复查。",
            "是看心内科。",
            "他假装没事，但爬楼梯就累。",
            "上次在等候室的那几个小时是我这辈子最长的。",
            "我该问医生些什么？",
        ],
    ),
    (
        "friend_fight",
        "dev",
        [
            "She liked my photo today.",
            "First time in months.",
            "We used to talk every day.",
            "I still think I was right about the plans, but I miss her.",
            "Should I message her?",
        ],
        [
            "她今天给我的照片点赞了。",
            "几个月来第一次。",
            "我们以前天天聊天。",
            "我还是觉得那次计划的事我没错，但我想她了。",
            "我要不要给她发消息？",
        ],
    ),
    (
        "breakup",
        "held_out",
        [
            "Someone asked me out today.",
            "He seems kind and funny.",
            "But I keep comparing everyone to how things were.",
            "Three years is a long time to unlearn.",
            "Am I ready, do you think?",
        ],
        [
            "今天有人约我出去。",
            "他看起来挺温柔也挺有趣。",
            "但我总是拿别人和以前比。",
            "三年的习惯太难改了。",
            "你觉得我准备好了吗？",
        ],
    ),
    (
        "cat_vet",
        "dev",
        [
            "My cat is chewing everything again.",
            "Yesterday it was a rubber band.",
            "I managed to grab it out of her mouth.",
            "I can't afford another emergency operation, financially or emotionally.",
            "How do I cat-proof the flat?",
        ],
        [
            "我家猫又开始什么都咬了。",
            "昨天咬的是橡皮筋。",
            "我从它嘴里抢了出来。",
            "我真的承受不起再一次急诊手术了，钱和心理都是。",
            "家里怎么做防猫措施？",
        ],
    ),
    (
        "dog_died",
        "dev",
        [
            "The kids next door are getting a puppy.",
            "They showed me photos, he's so tiny.",
            "Our old boy was that small once.",
            "The house is so quiet without him.",
            "Is it too soon to think about another?",
        ],
        [
            "隔壁小孩要养小狗了。",
            "他们给我看照片，小小的一只。",
            "我们家那只以前也这么小。",
            "家里没有它太安静了。",
            "现在考虑再养一只是不是太早了？",
        ],
    ),
    (
        "lost_cat",
        "held_out",
        [
            "The window was open this morning.",
            "I can't find her anywhere.",
            "I've checked under every bed.",
            "The last time she vanished I didn't sleep for three nights.",
            "What should I do first?",
        ],
        [
            "今天早上窗户开着。",
            "我到处都找不到它。",
            "每张床底下都看过了。",
            "上次它不见了，我三个晚上没睡着。",
            "我应该先做什么？",
        ],
    ),
    (
        "pipe",
        "dev",
        [
            "It's freezing tonight.",
            "I can hear a knocking sound in the walls.",
            "There's a damp patch near the sink again.",
            "I really don't want to be mopping the floor at 3am again.",
            "Should I call a plumber now?",
        ],
        [
            "今晚冷死了。",
            "墙里有咚咚的响声。",
            "水池边上又有一块湿了。",
            "我真的不想再半夜三点拖地了。",
            "我现在要叫水管工吗？",
        ],
    ),
    (
        "burglary",
        "dev",
        [
            "Someone tried the door handle last night.",
            "I heard it around midnight.",
            "I've been jumpy ever since my stuff was taken.",
            "I back up everything to the cloud now.",
            "What kind of lock should I get?",
        ],
        [
            "昨晚有人拧我家门把手。",
            "大概半夜听到的。",
            "自从东西被拿走以后我就一直很紧张。",
            "现在我什么都备份到云上。",
            "我该换什么样的锁？",
        ],
    ),
    (
        "neighbour",
        "dev",
        [
            "It's 1am and the bass is shaking my ceiling.",
            "Again.",
            "I've got an early meeting.",
            "I tried knocking once and nobody answered.",
            "What are my options?",
        ],
        [
            "凌晨一点了，低音震得我天花板都在抖。",
            "又来了。",
            "我明天一早要开会。",
            "我上去敲过一次门，没人应。",
            "我还能怎么办？",
        ],
    ),
    (
        "landlord",
        "held_out",
        [
            "Got a letter from the agency.",
            "My lease is up in two months.",
            "Last renewal hit my budget hard.",
            "I'm scared the number will jump like that again.",
            "Should I start looking elsewhere?",
        ],
        [
            "收到中介的信了。",
            "还有两个月租约到期。",
            "上次续约对我的预算打击很大。",
            "我怕这次又涨那么多。",
            "我要不要开始找别的地方？",
        ],
    ),
    (
        "car_breakdown",
        "dev",
        [
            "Driving to my parents' this weekend.",
            "It's three hours on the highway.",
            "The engine light flickered this morning.",
            "I still have nightmares about standing on the hard shoulder waiting for the tow truck.",
            "Should I get it checked first?",
        ],
        [
            "这周末开车回父母家。",
            "要在高速上开三个小时。",
            "今天早上发动机灯闪了一下。",
            "我到现在还会梦到站在应急车道上等拖车。",
            "我要不要先去检查一下？",
        ],
    ),
    (
        "guitar",
        "dev",
        [
            "The café down the street has an open stage on Fridays.",
            "My friends are pushing me to sign up.",
            "I've been learning a new song.",
            "My mind went completely blank halfway through last time.",
            "How do I memorise lyrics better?",
        ],
        [
            "街口那家咖啡馆周五有开放舞台。",
            "朋友们一直怂恿我报名。",
            "我在学一首新歌。",
            "上次唱到一半脑子一片空白。",
            "怎么才能把歌词记牢？",
        ],
    ),
    (
        "scam",
        "dev",
        [
            "Got a call from 'my bank' just now.",
            "They said my account was compromised.",
            "They wanted me to move money to a safe account.",
            "My heart started pounding, it sounded too familiar.",
            "What should I do?",
        ],
        [
            "刚刚接到一个'银行'的电话。",
            "说我的账户被盗了。",
            "要我把钱转到安全账户。",
            "我心跳一下子快了，这套路太熟悉了。",
            "我该怎么办？",
        ],
    ),
    (
        "chess",
        "held_out",
        [
            "There's a club tournament next month.",
            "I've been doing puzzles every night.",
            "My openings are still shaky.",
            "I'd be happy with just one win this time.",
            "How should I prepare?",
        ],
        [
            "下个月俱乐部有比赛。",
            "我每晚都在做习题。",
            "开局还是不太稳。",
            "这次能赢一局我就满足了。",
            "我该怎么准备？",
        ],
    ),
    (
        "thesis",
        "held_out",
        [
            "My master's defence is set for June.",
            "The committee has one stats professor again.",
            "I've been re-running all my regressions.",
            "I still wake up remembering those questions.",
            "How do I prepare for hard questions?",
        ],
        [
            "我硕士答辩定在六月。",
            "评委里又有一位统计学教授。",
            "我把回归全部重跑了一遍。",
            "我到现在还会想起那些追问。",
            "怎么准备那些刁钻的问题？",
        ],
    ),
    (
        "covid",
        "held_out",
        [
            "Everything tastes like cardboard today.",
            "And I've got a scratchy throat.",
            "Half my office is off sick.",
            "This feels scarily like last time.",
            "Should I test?",
        ],
        [
            "今天吃什么都像嚼纸板。",
            "嗓子也有点痒。",
            "办公室一半人都请病假了。",
            "感觉跟上次特别像。",
            "我要不要测一下？",
        ],
    ),
]

# Named-fact questions: (event id, English, Chinese); they name the event.
ASKS: list[tuple[str, str, str]] = [
    ("road_test", "When did I fail my driving road test?", "我驾照路考是什么时候没过的？"),
    ("ielts", "What did I score on the IELTS?", "我雅思考了多少分？"),
    ("piano", "Which piano grade did I take?", "我考的是钢琴几级？"),
    ("tokyo", "When was I in Tokyo?", "我什么时候去的东京？"),
    ("wrist", "Which wrist did I break?", "我哪只手腕骨折了？"),
    (
        "migraine",
        "What did the neurologist say about my migraines?",
        "神经科医生对我的偏头痛怎么说？",
    ),
    ("layoff", "Why was I laid off?", "我为什么被裁员？"),
    ("grandmother", "When did my grandmother die?", "我奶奶是什么时候去世的？"),
    ("dog_adopt", "What is my rescue dog called?", "我领养的狗叫什么名字？"),
    ("pipe", "What happened when the pipe burst?", "水管爆裂那次怎么了？"),
    ("marathon", "When did I run my first half marathon?", "我第一个半程马拉松是什么时候跑的？"),
    ("promotion", "When was I promoted to team lead?", "我什么时候升的组长？"),
    ("sister_wedding", "What was my role at my sister's wedding?", "我姐姐婚礼上我是什么角色？"),
    ("burglary", "What was stolen when my flat was burgled?", "家里遭小偷时被偷了什么？"),
    ("savings", "When did I pay off my student loan?", "我什么时候还清的助学贷款？"),
    ("iceland", "What happened to the rental car in Iceland?", "在冰岛租的车出了什么事？"),
]

_EN_MONTHS = (
    "January February March April May June July August September October November December".split()
)


def _month(lang: str, year: int, month: int) -> str:
    return f"{_EN_MONTHS[month - 1]} {year}" if lang == "en" else f"{year}年{month}月"


def main() -> None:
    rng = random.Random(SEED)
    months = [(2024 + (i // 12), i % 12 + 1) for i in range(18)]  # Jan 2024 .. Jun 2025
    users = []
    for lang in ("en", "zh"):
        for n in range(USERS_PER_LANGUAGE):
            events = []
            for topic, event_id, en, zh in EVENTS:
                year, month = rng.choice(months)
                day = rng.randint(1, 28)
                text = (en if lang == "en" else zh).format(m=_month(lang, year, month))
                events.append(
                    {
                        "id": event_id,
                        "topic": topic,
                        "text": text,
                        "created_at": f"{year}-{month:02d}-{day:02d}T12:00:00+00:00",
                    }
                )
            talks = [
                {"target": event_id, "split": split, "turns": en if lang == "en" else zh}
                for event_id, split, en, zh in TALKS
            ]
            asks = [{"target": e, "question": en if lang == "en" else zh} for e, en, zh in ASKS]
            users.append(
                {
                    "user": f"{lang}-{n}",
                    "lang": lang,
                    "events": events,
                    "talks": talks,
                    "asks": asks,
                }
            )
    data = {
        "source": (
            "Written for langchain-tiered-memory (its own, MIT like the code), never derived "
            "from a benchmark: bench/make_associative_hard.py writes it. 12 users (6 English, "
            "6 Chinese) x 80 dated events over 18 months, ten a topic; conversations of 5 user "
            "turns linked to one event by situation or feeling; named-fact questions. Split "
            "'dev' chooses; 'held_out' is run once, at the end."
        ),
        "now": "2025-07-15T12:00:00+00:00",
        "users": users,
    }
    OUT.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    n_talks = sum(len(u["talks"]) for u in users)
    n_events = sum(len(u["events"]) for u in users)
    print(f"wrote {OUT}: {len(users)} users, {n_events} events, {n_talks} talks")


if __name__ == "__main__":
    main()
