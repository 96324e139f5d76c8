"""A real model's turns through the prebuilt graph: the seed, an update, an associative turn.

    python bench/real_model_turns.py --base-url http://127.0.0.1:8765/v1
    python bench/real_model_turns.py --base-url URL --record tests/unit_tests/data/qwen_turns.json
    PYTHONPATH=<older checkout> python bench/real_model_turns.py --base-url URL   # before

Each scenario is a list of threads, each a list of user messages, sent through
``create_memory_graph`` with a ``ChatOpenAI`` on the server (``temperature=0``), with the
memory's own checkpointer and every thread a new one (what a restart or a new session
gives). After every turn it prints the reply verbatim, the tags, the current items (and
the superseded ones), and how many model calls the turn made (the reply, tool rounds,
summarization, the update step, the after-turn capture). Scenarios:

- **seed (en, zh)**: name and age, birthday, a failed driving test, "summarize"; then a new
  thread asks for the age and the birthday;
- **update**: "I live in Paris." + summarize; "I moved to Berlin last month." + summarize;
  then "Where do I live?" and "Recommend a restaurant near me.";
- **associative**: after the seed, "I have an exam tomorrow and I'm so nervous." (the failed
  driving test should be recalled);
- **update-zh**: the update in Chinese;
- **summarize-new**: "Please summarize" from a user with nothing said (en, zh), and again on a
  new thread after facts were summarized (nothing new): no item may be stored;
- **two-facts**: one message with a birthday and a home, then a move: the birthday stays;
- **nurse**: a job stated without a name: no stored item names anyone;
- **not-updates**: statements with a change word that change nothing stored (en, zh);
- **three-facts (en, zh), small-talk, seed-es, update-es** (issue 79): three facts in one
  sentence, a conversation of greetings only, the seed and the move in Spanish.

``--local`` runs the default local model (SmolLM2-135M, in-process, its own policy) instead
of a server; ``--replay RUN.json`` answers every call with a recorded run's answers
(``tests/unit_tests/fakes.ReplayChatModel``, as the tests replay them) through the code as
it is now. ``--halves A.json ...`` prints issue 79's counts of the rule's two halves: facts
the user stated (``FACTS``) in no current item or tag (lost), items and tags the user never
said (invented), items not in the user's language, and the sentences the package wrote to
the user (a reply's ``REPORT``) not in it; every one found is listed below the table.

``--door middleware`` runs the same turns through ``create_agent`` with
``TieredMemoryMiddleware`` instead of the prebuilt graph. ``--table A.json B.json ...``
prints, for recorded runs, what the issue counts: items not said by the user (the write
path's own rule applied to every stored item against every message the user sent in the
scenario and the tags: a reading to check, so every item is printed for a person), items
stored in a language the user did not write (the user wrote only Chinese), items
superseded in the not-update scenarios, replies that answer nothing (the package's "could
not come up with an answer", a reply that narrates a memory tool, the model's "I can't
assist with that", an empty one), and the package's own model calls per turn (the
summarizer, the update step, the tag extraction: every call but the reply model's) with
their seconds.
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
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import LLMResult

from langchain_tiered_memory import TieredMemory, create_memory_graph
from langchain_tiered_memory._said import REPORT

SCENARIOS: dict[str, list[list[str]]] = {
    "seed-en": [
        [
            "Hi! My name is Ann Lee and I'm 30 years old.",
            "My birthday is on March 5.",
            "I failed my driving test in March, it was awful.",
            "Please summarize our conversation.",
        ],
        ["How old am I, and when is my birthday?", "I have an exam tomorrow and I'm so nervous."],
    ],
    "seed-zh": [
        ["你好，我叫王芳，今年28岁。", "我的生日是十月三日。", "请总结一下我们的对话。"],
        ["我多大了？生日是哪天？"],
    ],
    "update": [
        ["I live in Paris.", "Please summarize our conversation."],
        ["I moved to Berlin last month.", "Please summarize our conversation."],
        ["Where do I live?", "Recommend a restaurant near me."],
    ],
    "update-zh": [
        ["我住在上海。", "请总结一下我们的对话。"],
        ["我上个月搬到了北京。", "请总结一下我们的对话。"],
        ["我住在哪里？"],
    ],
    "summarize-new-en": [
        ["Please summarize our conversation."],
        ["I live in Lyon and I have a cat named Tom.", "Please summarize our conversation."],
        ["Please summarize our conversation."],
    ],
    "summarize-new-zh": [["请总结一下我们的对话。"]],
    "two-facts": [
        ["My birthday is on March 5 and I live in Lyon.", "Please summarize our conversation."],
        ["I moved from Lyon to Marseille.", "Please summarize our conversation."],
        ["When is my birthday, and where do I live?"],
    ],
    "nurse": [
        ["I work as a nurse at the hospital.", "Please summarize our conversation."],
        ["What do I do for a living?"],
    ],
    "not-updates": [
        ["I work as a teacher.", "Please summarize our conversation."],
        ["I no longer work late on Fridays.", "Please summarize our conversation."],
        ["What is my job?"],
    ],
    "not-updates-zh": [
        ["我住在上海。", "请总结一下我们的对话。"],
        ["我把沙发搬到了客厅。", "请总结一下我们的对话。"],
        ["我住在哪里？"],
    ],
    # issue 79: three facts in one sentence, small talk, Spanish
    "three-facts-en": [
        ["Hi! I'm Tom Baker, I'm 41 and I work as a chef in Porto.", "Thanks!"],
        ["Please summarize our conversation."],
        ["What do I do, and where?"],
    ],
    "three-facts-zh": [
        ["我叫李明，今年35岁，在上海当医生。", "请总结一下我们的对话。"],
        ["我做什么工作？"],
    ],
    "small-talk-en": [
        ["Hello! How are you today?", "Nice weather today, isn't it?"],
        ["Please summarize our conversation."],
    ],
    "seed-es": [
        [
            "Hola, me llamo Lucía Romero y tengo 34 años.",
            "Mi cumpleaños es el 12 de abril y vivo en Sevilla.",
            "Por favor, resume nuestra conversación.",
        ],
        ["¿Cuántos años tengo y cuándo es mi cumpleaños?"],
    ],
    "update-es": [
        ["Vivo en Sevilla.", "Por favor, resume nuestra conversación."],
        ["El mes pasado me mudé a Valencia.", "Por favor, resume nuestra conversación."],
        ["¿Dónde vivo?"],
    ],
}

# What each scenario's user states that must end in a current item or a tag (a pattern per
# fact; a place the user moved away from is no current fact, and what was said after the
# last request to summarize is still in the history, not lost): ``--table`` counts a fact
# found in none as lost.
FACTS: dict[str, list[str]] = {
    "seed-en": [r"Ann Lee", r"\b30\b", r"(?i)march 5|5 march|03-05", r"(?i)driving test"],
    "seed-zh": [r"王芳", r"28", r"十月三日|10月3日"],
    "update": [r"Berlin"],
    "update-zh": [r"北京"],
    "summarize-new-en": [r"Lyon", r"Tom"],
    "summarize-new-zh": [],
    "two-facts": [r"(?i)march 5|5 march|03-05", r"Marseille"],
    "nurse": [r"(?i)nurse"],
    "not-updates": [r"(?i)teacher", r"(?i)friday"],
    "not-updates-zh": [r"上海", r"沙发"],
    "three-facts-en": [r"Tom Baker", r"\b41\b", r"(?i)\bchef\b", r"Porto"],
    "three-facts-zh": [r"李明", r"35", r"医生", r"上海"],
    "small-talk-en": [],
    "seed-es": [r"Lucía Romero", r"\b34\b", r"(?i)12 de abril", r"Sevilla"],
    "update-es": [r"Valencia"],
}


class Calls(BaseCallbackHandler):
    """Every model call of a turn: what it was asked (the last user message, the tools
    bound and the forced one, the system prompt's first line) and the reply as the server
    returned it, so a replay can answer each request by what was asked, in any order."""

    def __init__(self) -> None:
        self.started: dict[UUID, float] = {}
        self.asked: dict[UUID, dict[str, Any]] = {}
        self.replies: list[dict[str, Any]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        **kwargs: Any,
    ) -> None:
        params = kwargs.get("invocation_params") or {}
        prompt = messages[0]
        humans = [m.text for m in prompt if isinstance(m, HumanMessage)]
        systems = [m.text for m in prompt if isinstance(m, SystemMessage)]
        choice = params.get("tool_choice")
        if isinstance(choice, dict):
            choice = choice.get("function", {}).get("name")
        self.started[run_id] = time.perf_counter()
        self.asked[run_id] = {
            "system": systems[0].splitlines()[0] if systems else "",
            "last_user": humans[-1] if humans else "",
            "tools": [t.get("function", {}).get("name") for t in params.get("tools") or []],
            "tool_choice": choice,
        }

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                message = getattr(generation, "message", None)
                if isinstance(message, AIMessage):
                    self.replies.append(
                        {
                            **self.asked.pop(run_id, {}),
                            "s": round(time.perf_counter() - self.started.pop(run_id, 0.0), 1),
                            "content": message.content,
                            "tool_calls": [
                                {"name": c["name"], "args": c["args"]} for c in message.tool_calls
                            ],
                        }
                    )


def _model(args: argparse.Namespace, calls: Calls) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        base_url=args.base_url,
        api_key="local",  # type: ignore[arg-type]
        model=args.model,
        temperature=0,
        max_tokens=args.max_tokens,  # type: ignore[call-arg]
        timeout=args.timeout,
        callbacks=[calls],
    )


def _agent(args: argparse.Namespace, model: Any, memory: TieredMemory) -> Any:
    if args.door == "graph":
        return create_memory_graph(model, memory=memory, checkpointer=memory.checkpointer())
    from langchain.agents import create_agent

    from langchain_tiered_memory import TieredMemoryMiddleware

    return create_agent(
        model,
        tools=[],
        middleware=[TieredMemoryMiddleware(memory)],
        checkpointer=memory.checkpointer(),
    )


def _state(memory: TieredMemory, user: str) -> dict[str, Any]:
    every = memory.summaries.get_all(user)
    return {
        "tags": memory.get_user_tags(user),
        "items": [d.page_content for d in every if not d.metadata.get("superseded_by")],
        "superseded": [d.page_content for d in every if d.metadata.get("superseded_by")],
    }


def _turns(args: argparse.Namespace) -> dict[str, list[tuple[int, str, list[Any]]]]:
    """The turns to run: (thread, user message, the recorded calls to replay) per scenario,
    from ``SCENARIOS`` or, with ``--replay``, from a recorded run.
    """
    if args.replay:
        runs = json.loads(Path(args.replay).read_text())
        runs = runs.get("before", runs)  # tests/unit_tests/data/qwen_turns.json nests it
        return {
            name: [(row["thread"], row["user"], row.get("raw", [])) for row in rows]
            for name, rows in runs.items()
        }
    return {
        name: [(t, text, []) for t, thread in enumerate(threads) for text in thread]
        for name, threads in SCENARIOS.items()
    }


def _replayer() -> Any:
    """The tests' replaying model (``tests/unit_tests/fakes.ReplayChatModel``)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit_tests"))
    from fakes import ReplayChatModel  # type: ignore[import-not-found]

    return ReplayChatModel()


def run(args: argparse.Namespace) -> None:
    recorded: dict[str, Any] = {}
    local = None
    if args.local:  # loaded once: the default local model, with its own policy
        from langchain_tiered_memory.defaults import default_local_model

        local = default_local_model()
    with tempfile.TemporaryDirectory() as tmp:
        for name, plays in _turns(args).items():
            if args.only and not any(o in name for o in args.only):
                continue
            print(f"\n### {name}\n", flush=True)
            turns: list[dict[str, Any]] = []
            for t, text, raw in plays:
                calls = Calls()
                if args.replay:
                    model = _replayer()
                    model.play(raw)
                    model.callbacks = [calls]
                elif local is not None:
                    model = local
                    model.callbacks = [calls]
                else:
                    model = _model(args, calls)
                # a new process per turn: the memory, the model and the graph are built
                # again, only the data directory is kept
                with TieredMemory.embedded(Path(tmp) / name) as memory:
                    graph = _agent(args, model, memory)
                    started = time.perf_counter()
                    error = reply = package = ""
                    try:
                        out = graph.invoke(
                            {"messages": [HumanMessage(text)]},
                            {"configurable": {"thread_id": f"{name}-{t}"}},
                            context={"user_id": name},
                        )
                        reply = out["messages"][-1].text
                        package = out["messages"][-1].response_metadata.get(REPORT) or ""
                    except Exception as exc:  # a failing turn is a row, not the end
                        error = f"{type(exc).__name__}: {exc}"
                    state = _state(memory, name)
                row = {
                    "thread": t,
                    "user": text,
                    "reply": reply,
                    "package": package,  # what of the reply the package wrote
                    "error": error,
                    "model calls": len(calls.replies),
                    "s": round(time.perf_counter() - started, 1),
                    **state,
                    "raw": calls.replies,
                }
                turns.append(row)
                print(f"**[thread {t}] user:** {text}", flush=True)
                print(f"**reply:** {reply!r}{'  ERROR ' + error if error else ''}")
                print(
                    f"calls {row['model calls']}, {row['s']} s; tags {state['tags']}; "
                    f"items {json.dumps(state['items'], ensure_ascii=False)}; "
                    f"superseded {json.dumps(state['superseded'], ensure_ascii=False)}\n",
                    flush=True,
                )
            recorded[name] = turns
    if args.record:
        Path(args.record).write_text(json.dumps(recorded, ensure_ascii=False, indent=1) + "\n")
        print(f"recorded to {args.record}", file=sys.stderr)


_REPLY_SYSTEM = "You are a helpful assistant"
# what answers nothing: the package's last resort, a memory tool narrated, a refusal
_NO_ANSWER = (
    "could not come up with an answer",
    "没能给出回答",
    "call `summarize`",
    "call the `summarize`",
    "call the `user_tag`",
    "can't assist with that",
)


def table(paths: list[str]) -> None:
    """The counts of each recorded run (see the module docstring), one row a run."""
    from langchain_tiered_memory.language.registry import language_of
    from langchain_tiered_memory.summarization.provenance import grounded_in_user

    print(
        "| run | turns | items | not said by the user | not in the user's language |"
        " false supersessions | no-answer replies | package calls / turn | their s / turn |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for path in paths:
        runs = json.loads(Path(path).read_text())
        turns = items = unsaid = foreign = false = empty = calls = 0
        seconds = 0.0
        for name, rows in runs.items():
            last = rows[-1] if rows else {}
            stored = [*last.get("items", []), *last.get("superseded", [])]
            items += len(stored)
            said = [(i, HumanMessage(row["user"])) for i, row in enumerate(rows)]
            tags = list((last.get("tags") or {}).values())
            unsaid += len(grounded_in_user(stored, said, tags)[1])
            if name.endswith("-zh"):
                foreign += sum(language_of(i).code != "zh" for i in last.get("items", []))
            if name.startswith("not-updates"):
                false += len(last.get("superseded", []))
            for row in rows:
                turns += 1
                reply = row.get("reply", "")
                empty += not reply.strip() or any(n in reply for n in _NO_ANSWER)
                own = [
                    c
                    for c in row.get("raw", [])
                    if not c.get("system", "").startswith(_REPLY_SYSTEM)
                ]
                calls += len(own)
                seconds += sum(c.get("s", 0.0) for c in own)
        print(
            f"| {Path(path).stem} | {turns} | {items} | {unsaid} | {foreign} | {false} |"
            f" {empty} | {calls / max(turns, 1):.2f} | {seconds / max(turns, 1):.1f} |"
        )
    for path in paths:
        print(f"\n{Path(path).stem}, every item stored (current, then superseded):")
        for name, rows in json.loads(Path(path).read_text()).items():
            last = rows[-1] if rows else {}
            print(
                f"- {name}: {json.dumps(last.get('items', []), ensure_ascii=False)}; "
                f"superseded {json.dumps(last.get('superseded', []), ensure_ascii=False)}"
            )


def _foreign(texts: list[str], language: Any) -> list[str]:
    """The sentences of ``texts`` in another language than ``language`` (all: ``None``)."""
    from langchain_tiered_memory.language.registry import language_of
    from langchain_tiered_memory.language.text import split_sentences

    return [
        sentence
        for text in texts
        for line in text.splitlines()
        for sentence in split_sentences(line.strip(" -"))
        if any(c.isalpha() for c in sentence) and language_of(sentence) is not language
    ]


def halves(paths: list[str]) -> None:
    """The rule's two halves per recorded run (issue 79): facts the user stated that end in
    no current item or tag (lost, by ``FACTS``), items and tags the user never said
    (invented: the write path's own rule for items, a tag value in no user message), items
    not in the user's language, sentences the package wrote to the user not in it.
    """
    from langchain_tiered_memory.language.registry import language_of
    from langchain_tiered_memory.summarization.provenance import grounded_in_user

    print(
        "| run | scenarios | facts stated | lost | items | invented items | invented tags |"
        " items not in the user's language | package sentences | not in the user's language |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    notes: list[str] = []
    for path in paths:
        runs = json.loads(Path(path).read_text())
        runs = runs.get("before", runs)
        count = dict.fromkeys(["sc", "facts", "lost", "items", "inv", "tags", "fi", "ps", "fp"], 0)
        for name, rows in runs.items():
            if name not in FACTS or not rows:
                continue
            count["sc"] += 1
            last = rows[-1]
            items, tags = last.get("items", []), last.get("tags") or {}
            users = [row["user"] for row in rows]
            language = language_of(" ".join(users))
            held = "\n".join([*items, *(str(v) for v in tags.values())])
            lost = [f for f in FACTS[name] if not re.search(f, held)]
            said = [(i, HumanMessage(u)) for i, u in enumerate(users)]
            invented = grounded_in_user(items, said, list(tags.values()))[1]
            heard = " ".join(users).casefold()
            tags_invented = [f"{k}={v}" for k, v in tags.items() if str(v).casefold() not in heard]
            foreign = [i for i in items if language_of(i) is not language]
            package = [row.get("package") or "" for row in rows]
            written = _foreign(package, None)  # every sentence
            foreign_package = _foreign(package, language)
            for key, value in (
                ("facts", FACTS[name]),
                ("lost", lost),
                ("items", items),
                ("inv", invented),
                ("tags", tags_invented),
                ("fi", foreign),
                ("ps", written),
                ("fp", foreign_package),
            ):
                count[key] += len(value)
            for what, value in (
                ("lost", lost),
                ("invented", [*invented, *tags_invented]),
                ("item not in the user's language", foreign),
                ("package sentence not in the user's language", foreign_package),
            ):
                notes += [f"- {Path(path).stem} {name}: {what}: {v!r}" for v in value]
        print(
            f"| {Path(path).stem} | {count['sc']} | {count['facts']} | {count['lost']} |"
            f" {count['items']} | {count['inv']} | {count['tags']} | {count['fi']} |"
            f" {count['ps']} | {count['fp']} |"
        )
    print("\n".join(["", *notes]) if notes else "")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--base-url", help="the server's OpenAI API, e.g. .../v1")
    p.add_argument("--table", nargs="+", metavar="JSON", help="print the counts of recorded runs")
    p.add_argument("--model", default="qwen", help="the model name the server expects")
    p.add_argument("--max-tokens", type=int, default=320)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--record", help="save the model's replies per turn to this JSON file")
    p.add_argument("--door", choices=["graph", "middleware"], default="graph")
    p.add_argument("--only", nargs="+", help="run only the scenarios whose name has one of these")
    p.add_argument("--local", action="store_true", help="the default local model, live")
    p.add_argument("--replay", metavar="JSON", help="a recorded run's answers, replayed")
    p.add_argument("--halves", nargs="+", metavar="JSON", help="issue 79's counts of runs")
    args = p.parse_args()
    if args.halves:
        halves(args.halves)
    elif args.table:
        table(args.table)
    elif args.base_url or args.local or args.replay:
        run(args)
    else:
        p.error("give --base-url or --local (a live run), --replay, --table or --halves")


if __name__ == "__main__":
    main()
