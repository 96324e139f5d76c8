"""The demo across three separate processes sharing one embedded data dir.

Each step is ``helpers/demo_step.py STEP DATA_DIR`` in a new Python process with its own
scripted model; the steps share only the data dir: the embedded Redis (tags, history,
summaries) and a SQLite checkpointer (thread state). Each process starts the embedded
redis-server, and stops it when it closes, so every step also reads back what an earlier
server wrote to disk.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from langchain_tiered_memory.agent.prompt import quote

HELPER = Path(__file__).resolve().parent / "helpers" / "demo_step.py"
BIRTHDAY_ITEM = "The user's birthday is on May 8."
NAME_ITEM = "The user's name is Alice and she is 30 years old."
INTRO = "Hi, my name is Alice and I am 30 years old. My birthday is on May 8."


def run_step(step: int, data_dir: Path, lang: str = "en", mode: str = "graph") -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(HELPER), str(step), str(data_dir), lang, mode],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,  # against a hang only
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def texts(messages: list[dict[str, Any]]) -> list[str]:
    return [m["text"] for m in messages]


def test_demo_in_three_processes(data_dir: Path) -> None:
    # (1) Alice introduces herself; the model records her name and age.
    one = run_step(1, data_dir)
    assert one["server_started_here"]
    assert one["tags"] == {"name": "Alice", "age": "30"}
    assert one["restored_thread"] == []
    first_system = one["prompts"][0][0]
    assert first_system["type"] == "system" and "<user_tags>" not in first_system["text"]
    assert [m["type"] for m in one["result"]] == ["human", "ai", "tool", "ai"]
    assert one["result"][2]["text"] == "Recorded: age=30, name=Alice."
    assert one["history_length"] == 4

    # (2) A new process and a new thread: the request to summarize runs the summarize tool
    # before the reply (the summarizer's call comes first), and the reply is written with
    # what memory knows and what was stored.
    two = run_step(2, data_dir)
    assert two["pid"] != one["pid"] and two["server_started_here"]
    summarizer, reply = two["prompts"]
    system = reply[0]["text"]
    assert '"name": "Alice"' in system and '"age": "30"' in system
    # The first turn came back as recent history, before the new message, once: its
    # conversation, without the tool call and its result (issue 44 item 1).
    spoken = [m for m in one["result"] if m["type"] in ("human", "ai") and m["text"].strip()]
    assert texts(reply[1:])[: len(spoken) + 1] == [
        *texts(spoken),
        "Please summarize our conversation.",
    ]
    assert [m["id"] for m in reply[1 : len(spoken) + 1]] == [m["id"] for m in spoken]
    assert texts(reply)[-1].startswith("Stored 2 memory item(s)")  # the reply sees them
    # The summarize tool ran the summarizer on that history and stored the items.
    assert two["bindings"][0] == {"tool_names": ["SummaryItems"], "tool_choice": "SummaryItems"}
    assert INTRO in summarizer[-1]["text"]
    tool_reply = next(m for m in two["result"] if m["type"] == "tool")
    assert tool_reply["text"].startswith("Stored 2 memory item(s) from the conversation:\n- ")
    assert sorted(two["summaries"]) == sorted([BIRTHDAY_ITEM, NAME_ITEM])
    # named, each quoted as the prompt quotes it (one JSON string a line)
    assert all(f"- {quote(item)}" in tool_reply["text"] for item in two["summaries"])
    assert two["tags"] == {"name": "Alice", "age": "30"}

    # (3) Another process resumes thread t1 and asks about her birthday.
    three = run_step(3, data_dir)
    assert three["pid"] not in {one["pid"], two["pid"]} and three["server_started_here"]
    # The SQLite checkpointer restored the thread as process 1 left it.
    assert three["restored_thread"] == one["result"]
    (prompt,) = three["prompts"]
    system = prompt[0]["text"]
    assert f"] {json.dumps(BIRTHDAY_ITEM)}\n</memories>" in system  # recalled, with a date
    assert NAME_ITEM not in system  # recall_k=1: the birthday item won on relevance
    assert '"name": "Alice"' in system
    assert texts(prompt[1:]) == [*texts(one["result"]), "When is my birthday?"]
    ids = [m["id"] for m in prompt[1:]]
    assert len(ids) == len(set(ids))
    assert three["result"][-1]["text"] == "Your birthday is on May 8."
    assert texts(three["result"]) == [
        *texts(one["result"]),
        "When is my birthday?",
        "Your birthday is on May 8.",
    ]
    assert three["history_length"] == 4 + 4 + 2


def test_the_seed_scenario_in_chinese_in_three_processes(data_dir: Path) -> None:
    # (1) 李明 introduces himself in Chinese; the model records his name and age.
    one = run_step(1, data_dir, "zh")
    assert one["tags"] == {"name": "李明", "age": "30"}
    # (2) a new process: the prompt holds the tags; the summary is stored whole, in
    # Chinese (a capable model's items are not checked against English words)
    two = run_step(2, data_dir, "zh")
    assert '"name": "李明"' in two["prompts"][-1][0]["text"]
    tool_reply = next(m for m in two["result"] if m["type"] == "tool")
    assert tool_reply["text"].startswith("Stored 3 memory item(s) from the conversation:\n- ")
    assert {"用户名叫李明，今年三十岁。", "用户的生日是五月八日。", "用户喜欢下围棋。"} <= set(
        two["summaries"]
    )
    assert len(two["summaries"]) == 33  # and 30 unrelated notes beside them
    # (3) a third process, a new thread: the birthday item is recalled among them (k=3)
    three = run_step(3, data_dir, "zh")
    system = three["prompts"][0][0]["text"]
    memories = system.split("<memories>")[1].split("</memories>")[0]
    assert json.dumps("用户的生日是五月八日。", ensure_ascii=False) in memories
    assert memories.count("\n- [") == 3  # k=3
    assert '"name": "李明"' in system and '"age": "30"' in system


def test_the_seed_scenario_through_create_agent_in_three_processes(data_dir: Path) -> None:
    """Issue 36 item 7: TieredMemoryMiddleware writes memory as the graph does, with a
    capable model that never calls a tool on its own (it answered "Nice to meet you"
    and "I don't have enough information to summarize"): nothing was remembered."""
    one = run_step(1, data_dir, "en", "agent")
    assert one["tags"] == {"name": "Alice", "age": "30"}  # the after-turn extraction
    assert one["result"][-1]["text"] == "Nice to meet you, Alice!"
    two = run_step(2, data_dir, "en", "agent")
    assert two["pid"] != one["pid"]
    assert sorted(two["summaries"]) == sorted([BIRTHDAY_ITEM, NAME_ITEM])
    tool_reply = next(m for m in two["result"] if m["type"] == "tool")
    assert tool_reply["text"].startswith("Stored 2 memory item(s)")
    # the model's words, and what was stored (issue 44 item 5: whatever it writes)
    assert two["result"][-1]["text"].startswith("I kept your birthday and age.")
    assert all(item in two["result"][-1]["text"] for item in two["summaries"])
    three = run_step(3, data_dir, "en", "agent")
    assert three["pid"] not in {one["pid"], two["pid"]}
    system = three["prompts"][-1][0]["text"]
    assert BIRTHDAY_ITEM in system and '"name": "Alice"' in system
    assert three["result"][-1]["text"] == "Your birthday is on May 8."
