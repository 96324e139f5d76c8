"""The classic demo in Chinese with the small local model (SmolLM2-135M), over phrasings.

    python bench/local_models_zh.py            # 5 phrasings, ~5 minutes on 2 cores
    python bench/local_models_zh.py --runs 2

For each phrasing, on a fresh embedded memory and the prebuilt graph with
``ChatLocalTransformers`` (small-model policy on, as the demo): a statement of name, age and
birthday; a request to summarize; then, in a new thread, "how old am I" and "when is my
birthday". Counted: name recorded, age recorded, an item holding the birthday, and each
answer right (its number or date stated). Greedy decoding: robustness over phrasings.
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from typing import Any

from langchain_core.messages import HumanMessage

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.language.text import answer_states
from langchain_tiered_memory.local import ChatLocalTransformers

PHRASINGS = [
    ("我叫李明，今年28岁，我的生日是十月三日。", "我几岁？", "我的生日是哪天？"),
    ("你好，我是李明。我今年二十八岁，生日是十月三日。", "我今年多大了？", "我哪天过生日？"),
    ("我的名字叫李明，我28岁了。我的生日在十月三日。", "你知道我几岁吗？", "你记得我的生日吗？"),
    ("我叫李明。我今年28岁。我的生日是10月3日。", "我的年龄是多少？", "我的生日是几月几号？"),
    (
        "大家好，我叫李明，今年二十八岁，十月三日是我的生日。",
        "请告诉我我的年龄。",
        "请告诉我我的生日。",
    ),
]
AGE = re.compile(r"(?<!\d)28(?!\d)|二十八")
BIRTHDAY = re.compile(r"十月三[日号]|10\s*月\s*3\s*[日号]")


def turn(graph: Any, text: str, thread: str) -> str:
    result = graph.invoke(
        {"messages": [HumanMessage(text)]},
        context={"user_id": "li-ming"},
        config={"configurable": {"thread_id": thread}},
    )
    return str(result["messages"][-1].text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--runs", type=int, default=len(PHRASINGS))
    args = p.parse_args()
    model = ChatLocalTransformers(seed=0)
    model.load()
    rows: list[dict[str, Any]] = []
    for statement, age_q, birthday_q in PHRASINGS[: args.runs]:
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="tm-zh-") as tmp:
            memory = TieredMemory.embedded(tmp)
            with memory:
                graph = create_memory_graph(model, memory=memory)  # small: auto-detected
                turn(graph, statement, "t1")
                tags = memory.get_user_tags("li-ming")
                summary_reply = turn(graph, "请总结一下我们的对话。", "t1")
                items = [d.page_content for d in memory.summaries.get_all("li-ming")]
                age_answer = turn(graph, age_q, "t2")
                birthday_answer = turn(graph, birthday_q, "t2")
        rows.append(
            {
                "name": tags.get("name") == "李明",
                "age": tags.get("age") == "28",
                "birthday item": any(BIRTHDAY.search(i) for i in items),
                "age answer": answer_states(age_answer, AGE),
                "birthday answer": answer_states(birthday_answer, BIRTHDAY),
                "seconds": time.perf_counter() - started,
                "transcript": (statement, summary_reply, age_answer, birthday_answer),
            }
        )
        print(f"{statement}\n  tags {tags}\n  summary: {summary_reply!r}\n  items {items}")
        print(f"  {age_q} -> {age_answer!r}\n  {birthday_q} -> {birthday_answer!r}", flush=True)
    keys = ["name", "age", "birthday item", "age answer", "birthday answer"]
    print("\n| " + " | ".join(keys) + " | seconds per run |")
    print("|" + "---|" * (len(keys) + 1))
    n = len(rows)
    counts = [f"{sum(bool(r[k]) for r in rows)}/{n}" for k in keys]
    mean = sum(float(r["seconds"]) for r in rows) / n
    print("| " + " | ".join(counts) + f" | {mean:.0f} |")


if __name__ == "__main__":
    main()
