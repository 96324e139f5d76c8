"""Tag capture: does the exact tier learn only what the user said about themself?

    python bench/tag_capture.py                       # scripted stand-ins, before/after
    python bench/tag_capture.py --small               # + SmolLM2-135M (forced capture)
    python bench/tag_capture.py --base-url http://127.0.0.1:8080/v1 --record replies.json
    python bench/tag_capture.py --replay replies.json # a recorded capable model, offline

The messages are of this project's own making (templates filled from small name, age,
city and hobby lists with a fixed seed), in English and Chinese: 85 stating the user's own
name and/or age (plain, with fillers, lower case, numerals in words, corrections of a stored
value), 115 distractors (relatives' and friends' names and ages, jobs, hobbies, questions,
requests, small talk, numbers that are no age, a changed value stated without saying so).
Two splits: ``dev`` holds the kinds of message the rules of
:mod:`langchain_tiered_memory.language.attribution` were written against (issue 36's table);
``heldout`` templates were written after the rules and run once, unchanged since.

Each message comes with the tags stored before it and the tags that must hold after it.
A model's extraction (what it proposes to store) goes through:

- **before**: what the package stored before issue 36: a capable model's values as they
  came; a small model's only if they literally occur in the message (plus the age the
  message states, ``stated_age``);
- **after**: :class:`~langchain_tiered_memory.agent.capture.AfterTurnCapture` as the graph and
  the middleware run it (grounded values, cue-read values for what the call left out, no
  change of a stored value without an explicit statement), on an in-memory memory.

Models: ``perfect`` (proposes exactly the truth), ``recorded-errors`` (a stand-in that
makes the errors Qwen2.5-Coder-1.5B made in issue 36: a relative's name, the hobby or job
as a name, any number as the age, "John Doe"/30 when the message has nothing, and the name
left out of a message that also states the age), ``smollm2`` (the real small local model,
forced ``user_tag`` call, ``--small``) and ``openai`` (any OpenAI-compatible server,
``--base-url``; ``--record`` saves its replies, ``--replay`` plays them back).

Reported per model, pipeline and split: values written, wrong values written (not stated
by the user about themself, or a stored value changed without saying so), precision of
written values, distractor messages left clean, and recall of the self-statements' facts.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.agent.capture import AfterTurnCapture
from langchain_tiered_memory.testing import ScriptedChatModel


@dataclass
class Case:
    split: str
    lang: str
    kind: str  # "self" or "distractor"
    text: str
    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)  # the truth after the message
    entities: list[str] = field(default_factory=list)  # what an erring model grabs


NAMES = ["Carol", "Dana", "Liam", "Priya", "Mateo", "Sofia", "Noah", "Hannah", "Omar", "Yuki"]
SURNAMES = ["Moreau", "Okafor", "Lindqvist", "Tanaka", "Rossi"]
CITIES = ["Lyon", "Berlin", "Oslo", "Lisbon", "Denver"]
HOBBIES = ["hiking", "chess", "pottery", "surfing", "baking"]
JOBS = ["nurse", "pilot", "teacher", "plumber", "lawyer"]
FOODS = ["sushi", "ramen", "tacos", "paella"]
RELATIVES = ["sister", "brother", "mother", "boss", "best friend", "neighbour"]
ZNAMES = ["赵磊", "王芳", "李明", "陈静", "刘洋", "张伟", "杨帆", "黄婷", "周杰", "吴敏"]
ZCITIES = ["上海", "成都", "杭州", "西安", "广州"]
ZHOBBIES = ["爬山", "下棋", "钓鱼", "跑步", "画画"]
ZJOBS = ["护士", "老师", "医生", "程序员", "厨师"]
ZRELATIVES = ["妹妹", "哥哥", "妈妈", "爸爸", "同事", "老板"]
CN_DIGITS = "零一二三四五六七八九"


def cn_number(n: int) -> str:
    tens, ones = divmod(n, 10)
    return (
        (CN_DIGITS[tens] if tens > 1 else "")
        + ("十" if tens else "")
        + (CN_DIGITS[ones] if ones else "")
    )


EN_WORDS = "twenty thirty forty fifty sixty".split()


def en_words(n: int) -> str:
    tens, ones = divmod(n, 10)
    units = "zero one two three four five six seven eight nine".split()
    return EN_WORDS[tens - 2] + (f"-{units[ones]}" if ones else "")


def build(seed: int = 7) -> list[Case]:
    rng = random.Random(seed)
    out: list[Case] = []

    def pick(xs: list[str]) -> str:
        return rng.choice(xs)

    def age() -> int:
        return rng.randint(21, 68)

    def add(split: str, lang: str, kind: str, text: str, **kw: Any) -> None:
        out.append(Case(split, lang, kind, text, **kw))

    for _ in range(5):
        n, a, n2, a2 = pick(NAMES), age(), pick(NAMES), age()
        s, c, h, j, f = pick(SURNAMES), pick(CITIES), pick(HOBBIES), pick(JOBS), pick(FOODS)
        r = pick(RELATIVES)
        known = {"name": n2, "age": str(a2)}
        # ---- dev, English
        add("dev", "en", "self", f"Hi, I'm {n} and I'm {a}.", after={"name": n, "age": str(a)})
        add("dev", "en", "self", f"My name is {n} {s}.", after={"name": f"{n} {s}"})
        add(
            "dev",
            "en",
            "self",
            f"Hi, my name is {n} and I am {a} years old.",
            after={"name": n, "age": str(a)},
        )
        add(
            "dev",
            "en",
            "self",
            f"I'm {a + 1} now.",
            before={"age": str(a)},
            after={"age": str(a + 1)},
        )
        add(
            "dev",
            "en",
            "distractor",
            f"I love {h} in the Alps.",
            before=known,
            after=known,
            entities=[h.title(), "Alps"],
        )
        add(
            "dev",
            "en",
            "distractor",
            f"My {r} {n} lives in {c}.",
            before=known,
            after=known,
            entities=[n, c],
        )
        add(
            "dev",
            "en",
            "distractor",
            f"I work as a {j}.",
            before=known,
            after=known,
            entities=[j.title()],
        )
        add(
            "dev",
            "en",
            "distractor",
            f"My favourite food is {f}.",
            before=known,
            after=known,
            entities=[f.title()],
        )
        add(
            "dev",
            "en",
            "distractor",
            f"Big news: I moved to {c} last month.",
            before=known,
            after=known,
            entities=[f"Big news: I moved to {c} last month.", c],
        )
        add(
            "dev",
            "en",
            "distractor",
            f"My {r} is {a}.",
            before=known,
            after=known,
            entities=[str(a)],
        )
        # ---- dev, Chinese
        zn, zn2, zc, zh, zj = pick(ZNAMES), pick(ZNAMES), pick(ZCITIES), pick(ZHOBBIES), pick(ZJOBS)
        zr = pick(ZRELATIVES)
        zknown = {"name": zn2, "age": str(a2)}
        add("dev", "zh", "self", f"你好，我叫{zn}，今年{a}岁。", after={"name": zn, "age": str(a)})
        add(
            "dev",
            "zh",
            "self",
            f"我是{zn}，今年{cn_number(a)}岁。",
            after={"name": zn, "age": str(a)},
        )
        add(
            "dev",
            "zh",
            "self",
            f"我今年{a + 1}岁了。",
            before={"age": str(a)},
            after={"age": str(a + 1)},
        )
        add("dev", "zh", "distractor", f"我喜欢{zh}。", before=zknown, after=zknown, entities=[zh])
        add(
            "dev",
            "zh",
            "distractor",
            f"我{zr}住在{zc}。",
            before=zknown,
            after=zknown,
            entities=["小红", zc],
        )
        add("dev", "zh", "distractor", f"我是{zj}。", before=zknown, after=zknown, entities=[zj])
        add("dev", "zh", "distractor", "我多大了？", before=zknown, after=zknown, entities=["小明"])
        add(
            "dev",
            "zh",
            "distractor",
            "请总结一下我们的对话。",
            before=zknown,
            after=zknown,
            entities=["小明"],
        )
        add(
            "dev",
            "zh",
            "distractor",
            "今天天气怎么样？",
            before=zknown,
            after=zknown,
            entities=["小明"],
        )

        # ---- held out (written after the rules; not tuned to)
        n, a, n2 = pick(NAMES), age(), pick(NAMES)
        s, c, h, j = pick(SURNAMES), pick(CITIES), pick(HOBBIES), pick(JOBS)
        r = pick(RELATIVES)
        add("heldout", "en", "self", f"Just so you know, my name's {n}.", after={"name": n})
        add("heldout", "en", "self", f"hey, i'm {a} btw", after={"age": str(a)})
        add("heldout", "en", "self", f"I am {en_words(a)} years old.", after={"age": str(a)})
        add(
            "heldout",
            "en",
            "self",
            f"You can call me {n}. I turned {a} in May.",
            after={"name": n, "age": str(a)},
        )
        add(
            "heldout",
            "en",
            "self",
            f"Sorry, I got that wrong: my name is actually {n}.",
            before={"name": n2},
            after={"name": n},
        )
        add(
            "heldout",
            "en",
            "self",
            f"{n} here! I'm {a} and I live in {c}.",
            after={"age": str(a)},
            entities=[n],
        )  # "{n} here": no cue, the name is a miss
        add(
            "heldout",
            "en",
            "distractor",
            f"I'm {a + 1}.",
            before={"age": str(a)},
            after={"age": str(a)},
            entities=[str(a + 1)],
        )  # changed without saying so
        add(
            "heldout",
            "en",
            "distractor",
            f"{n2} is my {r}; she turned {a} last week.",
            before=known,
            after=known,
            entities=[n2, str(a)],
        )
        add(
            "heldout",
            "en",
            "distractor",
            f"I'm {rng.randint(5, 20)} minutes away.",
            before=known,
            after=known,
            entities=["5"],
        )
        add(
            "heldout",
            "en",
            "distractor",
            f"I met {n} {s} at the gym yesterday.",
            before=known,
            after=known,
            entities=[f"{n} {s}"],
        )
        add(
            "heldout",
            "en",
            "distractor",
            "What's my name again?",
            before=known,
            after=known,
            entities=["John Doe"],
        )
        add(
            "heldout",
            "en",
            "distractor",
            f"I'm so tired of {h} today.",
            before=known,
            after=known,
            entities=["Tired", h.title()],
        )
        zn, zn2, zc, zj, zr = (
            pick(ZNAMES),
            pick(ZNAMES),
            pick(ZCITIES),
            pick(ZJOBS),
            pick(ZRELATIVES),
        )
        add(
            "heldout",
            "zh",
            "self",
            f"我叫{zn}，{cn_number(a)}岁了。",
            after={"name": zn, "age": str(a)},
        )
        add("heldout", "zh", "self", f"大家都叫我{zn}。", after={"name": zn})
        add(
            "heldout",
            "zh",
            "self",
            f"其实我今年{a}岁，不是{a - 1}岁。",
            before={"age": str(a - 1)},
            after={"age": str(a)},
        )
        add("heldout", "zh", "self", f"我的名字是{zn}，在{zc}工作。", after={"name": zn})
        add(
            "heldout",
            "zh",
            "distractor",
            f"他叫{zn2}，今年{a}岁。",
            before=zknown,
            after=zknown,
            entities=[zn2, str(a)],
        )
        add(
            "heldout",
            "zh",
            "distractor",
            f"我{zr}今年{a}岁。",
            before=zknown,
            after=zknown,
            entities=[str(a)],
        )
        add(
            "heldout",
            "zh",
            "distractor",
            f"我在{zc}当{zj}。",
            before=zknown,
            after=zknown,
            entities=[zj, zc],
        )
        add(
            "heldout",
            "zh",
            "distractor",
            "你能告诉我我叫什么名字吗？",
            before=zknown,
            after=zknown,
            entities=["小明"],
        )
        add(
            "heldout",
            "zh",
            "distractor",
            f"我儿子{rng.randint(3, 12)}岁了。",
            before=zknown,
            after=zknown,
            entities=["5"],
        )
    return out


# ----- models: what each proposes to store for a message


def perfect(case: Case) -> dict[str, Any]:
    return {k: v for k, v in case.after.items() if case.before.get(k) != v}


def recorded_errors(case: Case) -> dict[str, Any]:
    """The kinds of error Qwen2.5-Coder-1.5B made in issue 36, as a rule."""
    if case.kind == "self":
        truth = perfect(case)
        if len(truth) == 2 and len(case.text) % 3 == 0:  # "Hi, I'm Carol and I'm 52." -> age
            truth.pop("name")
        return truth
    proposal: dict[str, Any] = {}
    for entity in case.entities:
        if entity.isdigit():
            proposal.setdefault("age", int(entity))
        else:
            proposal.setdefault("name", entity)
    return proposal or {"name": "John Doe", "age": 30}


# ----- pipelines


def _literal(args: dict[str, Any], text: str) -> dict[str, Any]:
    """Before issue 36, a small model's values: those that literally occur in the message."""
    low = text.lower()
    return {k: v for k, v in args.items() if str(v).strip().lower() in low}


def run_before(case: Case, proposal: dict[str, Any], small: bool) -> dict[str, str]:
    values = _literal(proposal, case.text) if small else dict(proposal)
    return {**case.before, **{k: str(v) for k, v in values.items()}}


def run_after(memory: TieredMemory, case: Case, proposal: dict[str, Any], i: int) -> dict[str, str]:
    user = f"u{i}"
    if case.before:
        memory.set_user_tags(user, case.before)
    call = {"name": "user_facts", "args": proposal, "id": "x"}
    model = ScriptedChatModel(replies=[AIMessage(content="", tool_calls=[call])])
    capture = AfterTurnCapture.for_model(memory, model)
    capture.run([HumanMessage(case.text), AIMessage("OK.")], user, "t")
    return memory.get_user_tags(user)


@dataclass
class Score:
    written: int = 0
    wrong: int = 0
    clean: int = 0
    distractors: int = 0
    found: int = 0
    facts: int = 0

    def add(self, case: Case, result: dict[str, str]) -> None:
        changed = {k: v for k, v in result.items() if case.before.get(k) != v}
        self.written += len(changed)
        self.wrong += sum(1 for k, v in changed.items() if case.after.get(k) != v)
        if case.kind == "distractor":
            self.distractors += 1
            self.clean += result == case.before
        else:
            truth = {k: v for k, v in case.after.items() if case.before.get(k) != v}
            self.facts += len(truth)
            self.found += sum(1 for k, v in truth.items() if result.get(k) == v)

    def row(self) -> str:
        precision = (self.written - self.wrong) / self.written if self.written else 1.0
        clean = self.clean / self.distractors if self.distractors else 1.0
        recall = self.found / self.facts if self.facts else 1.0
        return (
            f"{self.written:>7} | {self.wrong:>5} | {precision:>9.3f} | "
            f"{self.clean:>3}/{self.distractors:<3} ({clean:.3f}) | {recall:>6.3f}"
        )


# ----- real models


def smollm2_proposer() -> Callable[[Case], dict[str, Any]]:
    """SmolLM2-135M forced to call user_tag, as the graph's forced capture runs it."""
    from langchain_tiered_memory.agent.prompt import base_system_prompt
    from langchain_tiered_memory.agent.tools import USER_TAG_TOOL, UserTagTool
    from langchain_tiered_memory.defaults import default_local_model

    model = default_local_model()
    with TieredMemory.in_memory(embeddings=HashingEmbeddings()) as memory:
        tool = UserTagTool(memory=memory)
    forced = model.bind_tools([tool], tool_choice=USER_TAG_TOOL)
    system = base_system_prompt(True)

    def propose(case: Case) -> dict[str, Any]:
        reply = forced.invoke([SystemMessage(system), HumanMessage(case.text)])
        calls = getattr(reply, "tool_calls", None) or []
        return dict(calls[0].get("args") or {}) if calls else {}

    return propose


def openai_proposer(
    base_url: str, model_name: str, record: dict[str, Any]
) -> Callable[[Case], dict[str, Any]]:
    """The after-turn extraction as a capable model answers it over an OpenAI API."""
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    from langchain_tiered_memory.agent.capture import (
        EXTRACTION_PROMPT,
        EXTRACTION_TOOL,
        extraction_schema,
    )
    from langchain_tiered_memory.stores.tags import DefaultTags

    key = SecretStr("none")
    chat = ChatOpenAI(base_url=base_url, api_key=key, model=model_name, temperature=0)
    bound = chat.bind_tools([extraction_schema(DefaultTags)], tool_choice=EXTRACTION_TOOL)
    prompt = EXTRACTION_PROMPT.format(fields="name, age")

    def propose(case: Case) -> dict[str, Any]:
        reply = bound.invoke([SystemMessage(prompt), HumanMessage(case.text)])
        calls = [dict(c) for c in getattr(reply, "tool_calls", None) or []]
        record[case.text] = {
            "content": reply.text,
            "tool_calls": [{"name": c["name"], "args": c["args"]} for c in calls],
        }
        args = dict(calls[0].get("args") or {}) if calls else {}
        return {} if args.pop("nothing_stated", False) is True else args

    return propose


def replay_proposer(path: Path) -> Callable[[Case], dict[str, Any]]:
    replies = json.loads(path.read_text(encoding="utf-8"))["replies"]

    def propose(case: Case) -> dict[str, Any]:
        calls = replies.get(case.text, {}).get("tool_calls") or []
        args = dict(calls[0].get("args") or {}) if calls else {}
        return {} if args.pop("nothing_stated", False) is True else args

    return propose


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="also run SmolLM2-135M")
    parser.add_argument("--base-url", help="an OpenAI-compatible server to extract with")
    parser.add_argument("--model", default="local", help="the server's model name")
    parser.add_argument("--record", type=Path, help="save the server's replies here")
    parser.add_argument("--replay", type=Path, help="replay recorded replies")
    parser.add_argument("--split", choices=["dev", "heldout", "all"], default="all")
    parser.add_argument("--limit", type=int, help="an even sample of this many messages")
    args = parser.parse_args()

    cases = [c for c in build() if args.split in ("all", c.split)]
    if args.limit and args.limit < len(cases):
        step = len(cases) / args.limit  # every step-th message: all splits and languages
        cases = [cases[int(i * step)] for i in range(args.limit)]
    print(
        f"{len(cases)} messages: "
        + ", ".join(
            f"{s}/{lang}/{kind} {sum((c.split, c.lang, c.kind) == (s, lang, kind) for c in cases)}"
            for s in ("dev", "heldout")
            for lang in ("en", "zh")
            for kind in ("self", "distractor")
        )
    )
    models: list[tuple[str, Callable[[Case], dict[str, Any]], bool]] = [
        ("perfect", perfect, False),
        ("recorded-errors", recorded_errors, False),
    ]
    record: dict[str, Any] = {}
    if args.small:
        models.append(("smollm2-135m", smollm2_proposer(), True))
    if args.base_url:
        models.append(
            (f"openai:{args.model}", openai_proposer(args.base_url, args.model, record), False)
        )
    if args.replay:
        models.append((f"replay:{args.replay.name}", replay_proposer(args.replay), False))

    print()
    print("| model | pipeline | split | written | wrong | precision | distractors clean | recall |")
    print("|---|---|---|---:|---:|---:|---|---:|")
    with TieredMemory.in_memory(embeddings=HashingEmbeddings()) as memory:
        for name, propose, small in models:
            started = time.perf_counter()
            proposals = [propose(c) for c in cases]
            seconds = time.perf_counter() - started
            for pipeline in ("before", "after"):
                scores = {"dev": Score(), "heldout": Score()}
                for i, (case, proposal) in enumerate(zip(cases, proposals, strict=True)):
                    if pipeline == "before":
                        result = run_before(case, proposal, small)
                    else:
                        result = run_after(memory, case, proposal, hash((name, i)) & 0xFFFFFF)
                    scores[case.split].add(case, result)
                for split, score in scores.items():
                    if score.facts or score.distractors:
                        print(f"| {name} | {pipeline} | {split} | {score.row()} |")
            print(f"<!-- {name}: {len(cases)} proposals in {seconds:.1f} s -->", file=sys.stderr)
    if args.record and record:
        payload = {
            "source": f"{args.model} at {args.base_url}, temperature 0, the after-turn "
            "extraction (user_facts forced), recorded by bench/tag_capture.py --record",
            "replies": record,
        }
        args.record.write_text(json.dumps(payload, ensure_ascii=False, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
