"""Does a new thread answer worse when it carries the earlier thread's non-answers (issue 79
item 6)?

    python bench/carried_refusals.py --base-url http://127.0.0.1:8765/v1 --record OUT.json
    python bench/carried_refusals.py --local                   # SmolLM2, its own policy
    python bench/carried_refusals.py --local --small-model off # SmolLM2 without the guards
    python bench/carried_refusals.py --table A.json B.json     # the counts of recorded runs

Each conversation is an earlier thread (the user's statements, the assistant's replies: some
are answers, some are replies the package would not give as answers: "I'm sorry, but I can't
assist with that." to a statement, an English reply to a Chinese user) and the memory that
holds what the user said (tags and summary items, stored directly: the same memory in every
arm), then a question on a new thread whose answer is in the memory section. The same
question runs through ``create_memory_graph`` once per arm, on its copy of the earlier
thread:

- **carried**: the earlier thread as it was (what the package carried before this bench);
- **reply dropped**: without the non-answers (the user's statement kept);
- **turn dropped**: without the non-answers and the messages they answered (the memory
  holds what those said);
- **rule**: whatever the package's ``conversation_only`` carries now (same as one of the two
  above, or a third).

A reply counts as right if it states the fact (``answer_states``: not in a question, not "I
don't know"); a reply that repeats a carried non-answer word for word is counted too. Both
models decode greedily (the capable one at temperature 0, SmolLM2 by default), so one run
per arm is each one's answer (``--repeat`` for a sampling model). The default local model
with its own policy is shown no earlier thread at all (``ModelPolicy.small``: the current
turn only), so its arms differ only with ``--small-model off``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory.agent.shown import conversation_only
from langchain_tiered_memory.language.text import answer_states

REFUSAL = "I'm sorry, but I can't assist with that."  # Qwen2.5-Coder-1.5B, round four

# name: (earlier thread [(user, reply, is an answer)], tags, items, question, the fact)
CONVERSATIONS: dict[str, dict[str, Any]] = {
    "move-en": {
        "thread": [
            ("My birthday is on March 5.", "Happy early birthday! March 5 is noted.", True),
            ("I moved from Lyon to Marseille.", REFUSAL, False),
        ],
        "tags": {"name": "Ann"},
        "items": ["The user's birthday is on March 5.", "The user moved from Lyon to Marseille."],
        "question": "When is my birthday, and where do I live?",
        "fact": r"(?i)marseille",
    },
    "job-en": {
        "thread": [
            ("I work as a teacher.", "Teaching is a rewarding job!", True),
            ("I no longer work late on Fridays.", REFUSAL, False),
        ],
        "tags": {},
        "items": ["The user works as a teacher.", "The user no longer works late on Fridays."],
        "question": "What is my job?",
        "fact": r"(?i)teach",
    },
    "nurse-en": {
        "thread": [("I work as a nurse at the hospital.", REFUSAL, False)],
        "tags": {},
        "items": ["The user said: I work as a nurse at the hospital."],
        "question": "What do I do for a living?",
        "fact": r"(?i)nurs",
    },
    "age-en": {
        "thread": [
            ("Hi, my name is Alice and I am 30 years old.", "Nice to meet you, Alice!", True),
            ("I have a dog named Rex.", REFUSAL, False),
        ],
        "tags": {"name": "Alice", "age": "30"},
        "items": ["The user has a dog named Rex."],
        "question": "What is my dog's name?",
        "fact": r"Rex",
    },
    "move-zh": {
        "thread": [
            ("我上个月搬到了北京。", REFUSAL, False),
            ("我在一家银行工作。", "That's great! Working at a bank must be interesting.", False),
        ],
        "tags": {},
        "items": ["用户说：我上个月搬到了北京。", "用户说：我在一家银行工作。"],
        "question": "我住在哪里？",
        "fact": r"北京",
    },
    "birthday-zh": {
        "thread": [
            ("我叫王芳，今年28岁。", "Nice to meet you, Wang Fang!", False),
            ("我的生日是十月三日。", REFUSAL, False),
        ],
        "tags": {"name": "王芳", "age": "28"},
        "items": ["用户说：我的生日是十月三日。"],
        "question": "我的生日是哪天？",
        "fact": r"十月三日|10月3日|十月三号|10月3号",
    },
    "move-es": {
        "thread": [
            ("El mes pasado me mudé a Valencia.", REFUSAL, False),
            ("Tengo un gato que se llama Tom.", "¡Qué bonito nombre para un gato!", True),
        ],
        "tags": {},
        "items": [
            "El usuario dijo: El mes pasado me mudé a Valencia.",
            "El usuario dijo: Tengo un gato que se llama Tom.",
        ],
        "question": "¿Dónde vivo ahora?",
        "fact": r"(?i)valencia",
    },
    "nurse-es": {
        "thread": [
            ("Soy enfermera y trabajo en el hospital.", "I'm sorry, I don't understand.", False),
        ],
        "tags": {},
        "items": ["El usuario dijo: Soy enfermera y trabajo en el hospital."],
        "question": "¿En qué trabajo?",
        "fact": r"(?i)enfermer|hospital",
    },
}
ARMS = ("carried", "reply dropped", "turn dropped", "rule")


def earlier_thread(spec: dict[str, Any], arm: str) -> list[BaseMessage]:
    """The earlier thread of one arm, as the history holds it."""
    out: list[BaseMessage] = []
    for user, reply, answer in spec["thread"]:
        if answer or arm in ("carried", "rule"):
            out += [HumanMessage(user), AIMessage(reply)]
        elif arm == "reply dropped":
            out.append(HumanMessage(user))
    return out


def _model(args: argparse.Namespace) -> Any:
    if args.local:
        from langchain_tiered_memory.defaults import default_local_model

        return default_local_model()
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=args.base_url,
        api_key="local",  # type: ignore[arg-type]
        model=args.model,
        temperature=0,
        max_tokens=args.max_tokens,  # type: ignore[call-arg]
        timeout=args.timeout,
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    small = {"auto": None, "on": True, "off": False}[args.small_model]
    model = _model(args)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, TieredMemory.embedded(Path(tmp)) as memory:
        graph = create_memory_graph(
            model, memory=memory, checkpointer=memory.checkpointer(), small_model=small
        )
        for name, spec in CONVERSATIONS.items():
            if args.only and not any(o in name for o in args.only):
                continue
            bad = [reply for _, reply, answer in spec["thread"] if not answer]
            for arm in args.arms:
                for n in range(args.repeat):
                    user = f"{name}-{arm.replace(' ', '-')}-{n}"
                    thread = earlier_thread(spec, "carried" if arm == "rule" else arm)
                    memory.add_session_log(user, thread, thread_id=f"{user}-0")
                    if spec["tags"]:
                        memory.set_user_tags(user, spec["tags"])
                    memory.add_summaries(user, spec["items"])
                    # what the package's rule carries of it (in every arm: "rule" is
                    # "carried" with whatever the rule drops now)
                    shown = [m.text for m in conversation_only(thread)]
                    started = time.perf_counter()
                    out = graph.invoke(
                        {"messages": [HumanMessage(spec["question"])]},
                        {"configurable": {"thread_id": f"{user}-1"}},
                        context={"user_id": user},
                    )
                    reply = out["messages"][-1].text
                    row = {
                        "conversation": name,
                        "arm": arm,
                        "run": n,
                        "carried": shown,
                        "reply": reply,
                        "right": answer_states(reply, re.compile(spec["fact"])),
                        "repeats a non-answer": any(b in reply for b in bad),
                        "s": round(time.perf_counter() - started, 1),
                    }
                    rows.append(row)
                    print(json.dumps(row, ensure_ascii=False), flush=True)
    label = "SmolLM2-135M (local)" if args.local else args.model
    return {"model": label, "small_model": args.small_model, "rows": rows}


def table(paths: list[str]) -> None:
    """Right answers and repeated non-answers per model and arm."""
    print("| model | small-model guards | arm | right | repeats a carried non-answer |")
    print("|---|---|---|---:|---:|")
    for path in paths:
        run_ = json.loads(Path(path).read_text())
        for arm in ARMS:
            rows = [r for r in run_["rows"] if r["arm"] == arm]
            if not rows:
                continue
            right = sum(r["right"] for r in rows)
            repeats = sum(r["repeats a non-answer"] for r in rows)
            print(
                f"| {run_['model']} | {run_['small_model']} | {arm} | {right} of {len(rows)} |"
                f" {repeats} |"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--base-url", help="an OpenAI-compatible server, e.g. .../v1")
    p.add_argument("--local", action="store_true", help="the default local model (SmolLM2)")
    p.add_argument("--small-model", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--model", default="qwen")
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--only", nargs="+")
    p.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS))
    p.add_argument("--record", help="save the rows to this JSON file")
    p.add_argument("--table", nargs="+", metavar="JSON")
    args = p.parse_args()
    if args.table:
        table(args.table)
        return
    if not (args.local or args.base_url):
        p.error("give --base-url, --local or --table")
    result = run(args)
    if args.record:
        Path(args.record).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
        print(f"recorded to {args.record}", file=sys.stderr)
    for arm in args.arms:
        rows = [r for r in result["rows"] if r["arm"] == arm]
        print(f"{arm}: {sum(r['right'] for r in rows)} of {len(rows)} right", file=sys.stderr)


if __name__ == "__main__":
    main()
