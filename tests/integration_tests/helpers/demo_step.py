"""One step of the three-process demo, in a process of its own.

Usage: python demo_step.py STEP DATA_DIR [en|zh] [graph|agent]

Each step opens the embedded memory and a SQLite checkpointer in DATA_DIR, drives the
memory graph with a ScriptedChatModel of its own, closes everything (the embedded
redis-server it started shuts down and persists), and prints one JSON line of what it
observed: the prompts the model received, the tags and summary items stored, and for a
resumed thread the state the checkpointer restored.

1. thread t1: "Hi, my name is Alice ..." -> the model calls user_tag(name, age).
2. thread t2: "Please summarize our conversation." -> the model calls summarize.
3. thread t1 again: "When is my birthday?" -> the model just answers.

``zh`` is the same story in Chinese, the language of the design this package comes from;
step 2 also stores 30 unrelated Chinese notes, so step 3's recall has to find the birthday.

``agent`` runs LangChain's ``create_agent`` with ``TieredMemoryMiddleware`` instead of the
graph, with a capable model that never calls a tool on its own (it answers in text): the
middleware's after-turn extraction records the tags, and the request to summarize runs
the summarize tool.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.testing import ScriptedChatModel

USER = "alice"
INTRO = "Hi, my name is Alice and I am 30 years old. My birthday is on May 8."
BIRTHDAY_ITEM = "The user's birthday is on May 8."
NAME_ITEM = "The user's name is Alice and she is 30 years old."


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


STEPS: dict[str, tuple[str, str, list[Any]]] = {
    "1": ("t1", INTRO, [_call("user_tag", {"name": "Alice", "age": 30}, "c1"), "Hi Alice!"]),
    "2": (
        "t2",
        "Please summarize our conversation.",
        [  # the graph calls summarize for the request; the model writes the items
            _call("SummaryItems", {"items": [BIRTHDAY_ITEM, NAME_ITEM]}, "s1"),
            "I will remember that.",
        ],
    ),
    "3": ("t1", "When is my birthday?", ["Your birthday is on May 8."]),
}


INTRO_ZH = "你好，我叫李明，今年三十岁，生日是五月八日。我喜欢下围棋。"
ITEMS_ZH = ["用户名叫李明，今年三十岁。", "用户的生日是五月八日。", "用户喜欢下围棋。"]
NOISE_ZH = [f"用户第{i}次去了一个新的城市旅行，拍了很多照片。" for i in range(1, 31)]
STEPS_ZH: dict[str, tuple[str, str, list[Any]]] = {
    "1": ("t1", INTRO_ZH, [_call("user_tag", {"name": "李明", "age": 30}, "c1"), "你好，李明！"]),
    "2": (
        "t2",
        "请总结一下我们的对话。",
        [_call("SummaryItems", {"items": ITEMS_ZH}, "s1"), "好的。"],
    ),
    "3": ("t3", "我的生日是哪天？", ["你的生日是五月八日。"]),
}


def _agent_model(texts: list[str]) -> ScriptedChatModel:
    """A capable model that answers in text and calls no tool on its own: the forced
    extraction and the summarizer get their structured answers, every other call the next
    of ``texts``."""
    left = list(texts)

    def answer(prompt: list[BaseMessage]) -> AIMessage:
        system = prompt[0].text if prompt else ""
        if "user_facts" in system:
            return _call("user_facts", {"name": "Alice", "age": 30}, "x1")
        if "SummaryItems" in system:
            return _call("SummaryItems", {"items": [BIRTHDAY_ITEM, NAME_ITEM]}, "s1")
        return AIMessage(content=left.pop(0) if left else "OK.")

    return ScriptedChatModel(replies=[answer])


AGENT_STEPS: dict[str, tuple[str, str, list[str]]] = {
    "1": ("t1", INTRO, ["Nice to meet you, Alice!"]),
    "2": ("t2", "Please summarize our conversation.", ["I kept your birthday and age."]),
    "3": ("t1", "When is my birthday?", ["Your birthday is on May 8."]),
}


def _agent(model: ScriptedChatModel, memory: TieredMemory, saver: Any) -> Any:
    from langchain.agents import create_agent

    from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware

    middleware = [TieredMemoryMiddleware(memory, recall_k=1)]
    return create_agent(
        model, tools=[], middleware=middleware, checkpointer=memory.checkpointer(saver)
    )


def _dump(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return [{"type": m.type, "id": m.id, "text": m.text} for m in messages]


def main() -> None:
    step, data_dir = sys.argv[1], Path(sys.argv[2])
    lang = sys.argv[3] if len(sys.argv) > 3 else "en"
    mode = sys.argv[4] if len(sys.argv) > 4 else "graph"
    if mode == "agent":
        thread, text, texts = AGENT_STEPS[step]
        model = _agent_model(texts)
    else:
        thread, text, replies = (STEPS_ZH if lang == "zh" else STEPS)[step]
        model = ScriptedChatModel(replies=replies)
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    memory = TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings())
    try:
        with contextlib.nullcontext(memory.checkpointer()) as saver:  # threads in Redis too
            # recall_k=1: in step 3 the birthday item must win on relevance, not by count;
            # in Chinese, k=3 among 30 other notes.
            k = 3 if lang == "zh" else 1
            if mode == "agent":
                graph = _agent(model, memory, saver)
            else:
                graph = create_memory_graph(model, memory=memory, checkpointer=saver, recall_k=k)
            restored = graph.get_state(config).values.get("messages", [])
            result = graph.invoke(
                {"messages": [HumanMessage(text)]}, context={"user_id": USER}, config=config
            )
            if lang == "zh" and step == "2":
                memory.add_summaries(USER, NOISE_ZH)
            observed = {
                "step": step,
                "pid": os.getpid(),
                "server_started_here": bool(memory.server and memory.server._started),
                "restored_thread": _dump(restored),
                "prompts": [_dump(p) for p in model.prompts],
                "bindings": model.bindings,
                "result": _dump(result["messages"]),
                "tags": memory.get_user_tags(USER),
                "summaries": [s["text"] for s in memory.export_user(USER)["summaries"]],
                "history_length": memory.history.length(USER),
            }
    finally:
        memory.close()
    print(json.dumps(observed), flush=True)


if __name__ == "__main__":
    main()
