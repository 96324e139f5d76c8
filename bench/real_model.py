"""The write path with a real model: updates that supersede, items that are true, in the
user's language. Runs against any OpenAI-compatible server.

    python bench/real_model.py --base-url http://127.0.0.1:8080/v1
    python bench/real_model.py --base-url URL --record tests/unit_tests/data/recorded.json

Each case is a short conversation summarized through the public API
(``TieredMemory.summarize_history`` with a ``ChatOpenAI`` on the server, ``temperature=0``),
the capable-model settings (the update step on, no small-model guards). Reported:

- **updates**: a stored note, then a conversation that changes it ("I moved to Berlin"):
  superseded / should have been, and the share of stale notes in the top 3 recalled for
  the question ("Where do I live?");
- **items**: a small hand-labelled set of conversations (an assistant's promise, a sister,
  a diet stated as a negation, a Chinese user, a name with an apostrophe): items that are
  wrong or not about the user (by the case's labels), facts missed, and items written in
  the user's language (for the cases whose user writes in a non-Latin script).

Per update, which path superseded: the model's update step, the words
(``summarization/updates.py``: "moved", "no longer", "搬到"), or both (an older checkout
logs no paths: 0/0/0).

``--record FILE`` saves every reply of the model (text and tool calls) per case, to replay
in unit tests without a server. Run it from an older checkout (``PYTHONPATH=<checkout>``)
for a before/after.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import LLMResult

from langchain_tiered_memory import HashingEmbeddings, TieredMemory


@dataclass
class Update:
    name: str
    old: str
    said: str
    question: str
    new: re.Pattern[str]  # the new note must match this
    stale: re.Pattern[str]  # a recalled note matching this is stale


@dataclass
class ItemsCase:
    name: str
    said: list[str]
    must: list[re.Pattern[str]]  # some item states each
    wrong: list[re.Pattern[str]]  # no item may match any (wrong, or not about the user)
    script: str | None = None  # the user's script: items should be written in it
    replies: list[str] = field(default_factory=lambda: ["Got it, thanks for telling me!"])


def rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


UPDATES = [
    Update(
        "home",
        "The user lives in Paris.",
        "I moved to Berlin last month.",
        "Where do I live?",
        rx(r"berlin"),
        rx(r"\bparis\b"),
    ),
    Update(
        "job",
        "The user works as a nurse.",
        "I quit nursing; I'm a teacher now.",
        "What is my job?",
        rx(r"teach"),
        rx(r"\bnurse\b"),
    ),
    Update(
        "diet",
        "The user is vegetarian.",
        "I've gone fully vegan since January.",
        "What do I eat?",
        rx(r"vegan"),
        rx(r"\bvegetarian\b"),
    ),
    Update(
        "home-zh",
        "用户住在巴黎。",
        "我上个月搬到了柏林。",
        "我住在哪里？",
        rx(r"柏林"),
        rx(r"巴黎"),
    ),
    Update(
        "coffee-zh",
        "用户每天早上喝咖啡。",
        "我现在不喝咖啡了，改喝茶。",
        "我早上喝什么？",
        rx(r"茶"),
        rx(r"每天早上喝咖啡"),
    ),
    Update(
        "pet",
        "The user has a cat named Tom.",
        "Tom passed away; we adopted a dog, Rex.",
        "What pet do I have?",
        rx(r"\brex\b|\bdog\b"),
        rx(r"\bcat\b"),
    ),
]

ITEMS = [
    ItemsCase(
        "assistant promise",
        ["I'm allergic to peanuts."],
        [rx(r"peanut")],
        [rx(r"^(the )?assistant\b"), rx(r"^I (will|'ll)\b"), rx(r"in mind")],
        replies=["Thanks for telling me! I will keep the peanut allergy in mind."],
    ),
    ItemsCase(
        "sister",
        ["I don't eat meat. My sister Emma lives in Lyon."],
        [rx(r"\bsister\b.*\bemma\b|\bemma\b.*\bsister\b"), rx(r"meat|vegetarian")],
        [rx(r"^the user is emma\b|user's name is emma"), rx(r"^emma lives")],
    ),
    ItemsCase(
        "chinese user",
        ["我叫李明，今年28岁，我的生日是十月三日。"],
        [rx(r"李明"), rx(r"28"), rx(r"十月三日|10月3日")],
        [rx(r"\bli ming\b")],
        script="han",
    ),
    ItemsCase(
        "apostrophe",
        ["Hi, I'm Alice. My birthday is on May 8."],
        [rx(r"may\s*8")],
        [rx(r"&#\d+;|&[a-z]+;")],
    ),
    ItemsCase(
        "one fact once",
        ["I'm a software engineer and I work in Shanghai."],
        [rx(r"engineer")],
        [],
    ),
]


class Paths(logging.Handler):
    """Which path superseded: the update step's log line (model, words, both)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.counts = [0, 0, 0]

    def emit(self, record: logging.LogRecord) -> None:
        if str(record.msg).startswith("update step:") and isinstance(record.args, tuple):
            self.counts = [a + int(str(b)) for a, b in zip(self.counts, record.args)]


class Recorder(BaseCallbackHandler):
    """Every model reply, as the server returned it."""

    def __init__(self) -> None:
        self.replies: list[dict[str, Any]] = []

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                if isinstance(message, AIMessage):
                    self.replies.append(
                        {
                            "content": message.content,
                            "tool_calls": [
                                {"name": c["name"], "args": c["args"]} for c in message.tool_calls
                            ],
                            "invalid_tool_calls": [
                                {"name": c.get("name"), "args": c.get("args")}
                                for c in message.invalid_tool_calls
                            ],
                        }
                    )


def model(args: argparse.Namespace, recorder: Recorder) -> Any:
    from langchain_openai import ChatOpenAI

    options: dict[str, Any] = {
        "base_url": args.base_url,
        "api_key": "local",
        "model": args.model,
        "temperature": 0,
        "max_tokens": args.max_tokens,
        "timeout": args.timeout,
        "callbacks": [recorder],
    }
    return ChatOpenAI(**options)


def conversation(said: list[str], replies: list[str]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i, text in enumerate(said):
        out += [HumanMessage(text), AIMessage(replies[min(i, len(replies) - 1)])]
    return out


def in_script(text: str, script: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    han = [c for c in letters if "\u4e00" <= c <= "\u9fff"]
    return bool(letters) and script == "han" and len(han) * 2 >= len(letters)


def run(args: argparse.Namespace) -> None:
    recorded: dict[str, Any] = {}
    update_rows: list[dict[str, Any]] = []
    item_rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        memory = TieredMemory.embedded(Path(tmp) / "data", embeddings=_embeddings(args))
        with memory:
            for n, case in enumerate(UPDATES):
                if args.only and not any(o in case.name for o in args.only):
                    continue
                recorder = Recorder()
                paths = Paths()
                steps = logging.getLogger("langchain_tiered_memory.summarization.reconcile")
                steps.setLevel(logging.INFO)
                steps.addHandler(paths)
                user = f"update-{n}"
                memory.add_summaries(user, [case.old], created_at="2026-11-01T09:00:00+00:00")
                memory.add_session_log(user, conversation([case.said], ["Thanks for the update!"]))
                started = time.perf_counter()
                error = ""
                try:
                    memory.summarize_history(user, model(args, recorder))
                except Exception as exc:  # a model failure is a row, not the end of the run
                    error = type(exc).__name__
                every = memory.summaries.get_all(user)
                old = next(d for d in every if d.page_content == case.old)
                new = [d for d in every if case.new.search(d.page_content)]
                top = memory.recall_summaries(user, case.question, n=3)
                stale = sum(1 for d in top if case.stale.search(d.page_content))
                update_rows.append(
                    {
                        "case": case.name,
                        "new item": bool(new),
                        "superseded": bool(old.metadata.get("superseded_by")),
                        "stale in top 3": f"{stale}/{len(top)}",
                        "by model / words / both": "/".join(map(str, paths.counts)),
                        "items": [d.page_content for d in every if d.page_content != case.old],
                        "s": time.perf_counter() - started,
                        "error": error,
                    }
                )
                steps.removeHandler(paths)
                recorded[f"update/{case.name}"] = recorder.replies
                print(f"  {case.name}: {update_rows[-1]}", file=sys.stderr, flush=True)
            for n, items_case in enumerate(ITEMS):
                if args.only and not any(o in items_case.name for o in args.only):
                    continue
                recorder = Recorder()
                user = f"items-{n}"
                memory.add_session_log(user, conversation(items_case.said, items_case.replies))
                started = time.perf_counter()
                error = ""
                try:
                    memory.summarize_history(user, model(args, recorder))
                except Exception as exc:
                    error = type(exc).__name__
                items = [d.page_content for d in memory.summaries.get_all(user)]
                wrong = [i for i in items if any(w.search(i) for w in items_case.wrong)]
                missed = [m.pattern for m in items_case.must if not any(m.search(i) for i in items)]
                own = (
                    sum(1 for i in items if in_script(i, items_case.script))
                    if items_case.script
                    else None
                )
                item_rows.append(
                    {
                        "case": items_case.name,
                        "items": items,
                        "wrong or not about the user": len(wrong),
                        "facts missed": len(missed),
                        "own language": "" if own is None else f"{own}/{len(items)}",
                        "s": time.perf_counter() - started,
                        "error": error,
                    }
                )
                recorded[f"items/{items_case.name}"] = recorder.replies
                print(f"  {items_case.name}: {item_rows[-1]}", file=sys.stderr, flush=True)
    print(f"### Updates ({args.base_url}, {args.model})\n")
    print("| case | new item | superseded | by model / words / both | stale in top 3 | s |")
    print("|---|---|---|---|---|---:|")
    for row in update_rows:
        mark = f" ({row['error']})" if row["error"] else ""
        print(
            f"| {row['case']}{mark} | {row['new item']} | {row['superseded']} | "
            f"{row['by model / words / both']} | {row['stale in top 3']} | {row['s']:.0f} |"
        )
    done = sum(r["superseded"] for r in update_rows)
    print(f"\nsuperseded {done}/{len(update_rows)}\n")
    print("### Items\n")
    print("| case | items | wrong / not about the user | facts missed | in the user's language |")
    print("|---|---:|---:|---:|---|")
    for row in item_rows:
        mark = f" ({row['error']})" if row["error"] else ""
        print(
            f"| {row['case']}{mark} | {len(row['items'])} | {row['wrong or not about the user']} "
            f"| {row['facts missed']} | {row['own language']} |"
        )
    print("\nitems stored:")
    for row in [*update_rows, *item_rows]:
        print(f"- {row['case']}: {json.dumps(row['items'], ensure_ascii=False)}")
    if args.record:
        Path(args.record).write_text(json.dumps(recorded, ensure_ascii=False, indent=2) + "\n")


def _embeddings(args: argparse.Namespace) -> Any:
    if args.embeddings == "hashing":
        return HashingEmbeddings()
    from langchain_tiered_memory.defaults import default_embeddings

    return default_embeddings()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--base-url", required=True, help="the server's OpenAI API, e.g. .../v1")
    p.add_argument("--model", default="qwen", help="the model name the server expects")
    p.add_argument("--max-tokens", type=int, default=320)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--embeddings", choices=["default", "hashing"], default="default")
    p.add_argument("--record", help="save the model's replies to this JSON file")
    p.add_argument("--only", nargs="+", help="run only the cases whose name contains one of these")
    run(p.parse_args())


if __name__ == "__main__":
    main()
