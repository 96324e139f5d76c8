"""The demo behind ``tiered-memory demo``: the seed scenario in three separate processes.

1. The user says who they are -> the ``user_tag`` tool records ``name`` and ``age``.
2. A *new process* and a new thread: the memory section of the system prompt already holds
   the tags; the user asks for a summary -> summary items are stored.
3. A *new process* and a new thread: the user asks their age and birthday -> the tags and
   the recalled birthday item are in the memory section of the prompt.

Each step runs in a process of its own (``tiered-memory demo-step N``), so everything the
later steps know went through the embedded Redis on disk and was read back after a restart.
Every step prints ``PASS``/``FAIL`` lines: the memory checks and, in step 3, whether the
model's answers give the age and the birthday.

``--model fake`` runs a deterministic rule-based model (:func:`fake_demo_model`) that reads
only its prompt and emits the right tool calls: the demo then runs in seconds, offline, with
no model at all, and tests the memory plumbing end to end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolCall,
    ToolMessage,
)
from langgraph.graph.state import CompiledStateGraph
from rich.console import Console
from rich.text import Text

from langchain_tiered_memory.agent.graph import LOAD_MEMORY, create_memory_graph
from langchain_tiered_memory.agent.policy import ModelPolicy
from langchain_tiered_memory.agent.prompt import quote
from langchain_tiered_memory.agent.replies import written_by_package
from langchain_tiered_memory.agent.tools import SUMMARIZE_TOOL
from langchain_tiered_memory.backend.server import EmbeddedRedis
from langchain_tiered_memory.cli.common import (
    FAKE_MODEL,
    checkpoint_thread_id,
    describe_model,
    load_chat_model,
    user_thread_ids,
)
from langchain_tiered_memory.cli.render import (
    clip,
    line,
    print_memory_section,
    print_update,
)
from langchain_tiered_memory.defaults import (
    embeddings_for,
    open_checkpointer,
    open_memory,
)
from langchain_tiered_memory.errors import SummarizationError
from langchain_tiered_memory.language.text import answer_states
from langchain_tiered_memory.memory import TieredMemory
from langchain_tiered_memory.testing.fake_model import fake_demo_model, prompt_tags

__all__ = [
    "FAKE_MODEL",
    "DEMO_USER",
    "STEP_MESSAGES",
    "TurnResult",
    "run_turn",
    "fake_demo_model",
    "load_chat_model",
    "describe_model",
    "checkpoint_thread_id",
    "user_thread_ids",
    "prompt_tags",
    "run_demo",
    "run_demo_step",
]

DEMO_USER = "demo-alice"
STEP_MESSAGES: dict[int, tuple[str, ...]] = {
    1: ("Hi, my name is Alice and I am 30 years old. My birthday is on May 8.",),
    2: ("Please summarize our conversation.",),
    3: ("How old am I?", "When is my birthday?"),
}
_STEP_TITLES = {
    1: "tell name, age and birthday",
    2: "restart, new thread: tags in the prompt; summarize",
    3: "restart, new thread: age and birthday from memory",
}
_MAY_8 = re.compile(r"\bmay\s*8(?:th)?\b|\b8(?:th)?\s*(?:of\s+)?may\b", re.IGNORECASE)


@dataclass
class TurnResult:
    """What one graph turn did, collected from its stream of updates."""

    memory_prompt: str = ""
    reply: str = ""
    # who wrote the reply: the model, or the package (a small model's answer from a tag,
    # the reply after a capture or a summary, what the turn did when the model gave none)
    by_package: bool = False
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolMessage] = field(default_factory=list)

    def called(self, tool: str) -> bool:
        """Whether the model called ``tool`` during the turn."""
        return any(call.get("name") == tool for call in self.tool_calls)


def _collect(
    result: TurnResult,
    stream: Iterator[Any],
    on_update: Callable[[str, dict[str, Any]], None] | None,
) -> None:
    for mode, chunk in stream:  # "updates", and "custom": the load's memory section
        if mode == "custom" and not (isinstance(chunk, dict) and LOAD_MEMORY in chunk):
            continue  # an app's own event
        for node, update in chunk.items():
            if not isinstance(update, dict):
                continue
            if node == LOAD_MEMORY:
                result.memory_prompt = str(update.get("memory_prompt") or "")
            for message in update.get("messages") or []:
                if isinstance(message, AIMessage):
                    result.tool_calls.extend(message.tool_calls)
                    if message.text.strip():
                        result.reply = message.text.strip()
                        result.by_package = written_by_package(message)
                elif isinstance(message, ToolMessage):
                    result.tool_results.append(message)
            if on_update is not None:
                on_update(node, update)


def run_turn(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    *,
    user_id: str,
    thread_id: str,
    text: str,
    on_update: Callable[[str, dict[str, Any]], None] | None = None,
) -> TurnResult:
    """Send one user message through the memory graph, streaming its node updates.

    ``on_update(node, update)`` sees each node's update as it happens (e.g. to print the
    memory section as soon as ``load_memory`` has built it). A model that keeps calling
    tools is stopped by the graph's ``max_tool_rounds``.
    """
    config: Any = {"configurable": {"thread_id": thread_id}}
    result = TurnResult()
    inputs = {"messages": [HumanMessage(text)]}
    _collect(
        result,
        graph.stream(
            inputs,
            config=config,
            context={"user_id": user_id},
            stream_mode=["updates", "custom"],
        ),
        on_update,
    )
    return result


def _verdict(console: Console, ok: bool, step: int, text: str) -> bool:
    word = "PASS" if ok else "FAIL"
    console.print(
        Text.assemble((word, "bold green" if ok else "bold red"), f"  step {step}: {text}"),
        soft_wrap=True,
        highlight=False,
    )
    return ok


# a step's exit status when it ran and a memory check failed (1: it could not run)
EXIT_CHECKS_FAILED = 3


def run_demo_step(
    step: int,
    *,
    data_dir: Path,
    user_id: str = DEMO_USER,
    model_name: str | None = None,
    embeddings: str = "local",
    redis_url: str | None = None,
    console: Console | None = None,
    seed: int | None = None,
) -> int:
    """Run step ``step`` (1-3) of the demo in this process; 0 if its memory checks pass,
    :data:`EXIT_CHECKS_FAILED` if one fails.
    """
    console = console or Console()
    if step not in STEP_MESSAGES:
        raise ValueError(f"demo step must be 1, 2 or 3, not {step}.")
    console.rule(f"step {step}/3 (process {os.getpid()}): {_STEP_TITLES[step]}")
    model, force = load_chat_model(model_name, seed=seed)
    line(console, f"model: {describe_model(model)}; small-model guards: {force}")
    with (
        open_memory(
            redis_url=redis_url, data_dir=data_dir, embeddings=embeddings_for(embeddings)
        ) as memory,
        open_checkpointer(memory) as saver,
    ):
        line(console, f"redis: {memory.redis_url}; data dir: {data_dir}")
        if step == 1:
            removed = memory.forget_user(user_id)
            if any(removed.values()):
                line(console, f"(reset user {user_id!r} left over from an earlier run)")
        tags_before = memory.get_user_tags(user_id)
        # A small local model gets the small-model aids: forced tag capture, grounded
        # summaries and, when its summary comes back empty, the user's own statements.
        graph = create_memory_graph(model, memory=memory, checkpointer=saver, small_model=force)
        thread = checkpoint_thread_id(user_id, f"demo-step-{step}-{os.getpid()}")
        turns: list[TurnResult] = []
        for text in STEP_MESSAGES[step]:
            line(console, "")
            line(console, f"user> {text}", style="bold")

            def show(node: str, update: dict[str, Any]) -> None:
                if node == LOAD_MEMORY:
                    print_memory_section(console, str(update.get("memory_prompt") or ""), user_id)
                print_update(console)(node, update)

            with console.status("the model is thinking..."):
                turn = run_turn(graph, user_id=user_id, thread_id=thread, text=text, on_update=show)
            who = "the package wrote this reply" if turn.by_package else "the model's reply"
            line(console, f"assistant> {clip(turn.reply) or '(no text)'}  [{who}]")
            turns.append(turn)
        line(console, "")
        ok = {1: _check_step1, 2: _check_step2, 3: _check_step3}[step](
            console, memory, model, user_id, turns, tags_before
        )
    return 0 if ok else EXIT_CHECKS_FAILED


def _tags_ok(tags: dict[str, str]) -> bool:
    return tags.get("name") == "Alice" and tags.get("age") == "30"


def _tags_in_prompt(prompt: str, stored: dict[str, str]) -> tuple[bool, str]:
    """Whether the memory section shows exactly the (non-empty) tags stored before the turn."""
    shown = prompt_tags(prompt)
    if not stored:
        return False, "none are stored: step 1 recorded nothing"
    detail = (
        f"stored {json.dumps(stored, sort_keys=True)}, shown {json.dumps(shown, sort_keys=True)}"
    )
    return shown == stored, detail


def _check_step1(
    console: Console,
    memory: TieredMemory,
    model: BaseChatModel,
    user: str,
    turns: list[TurnResult],
    tags_before: dict[str, str],
) -> bool:
    tags = memory.get_user_tags(user)
    line(console, f"tags stored: {json.dumps(tags, sort_keys=True)}")
    return _verdict(console, _tags_ok(tags), 1, "tags recorded (expected name=Alice, age=30)")


def _check_step2(
    console: Console,
    memory: TieredMemory,
    model: BaseChatModel,
    user: str,
    turns: list[TurnResult],
    tags_before: dict[str, str],
) -> bool:
    small = ModelPolicy.for_model(model).small
    turn = turns[0]
    shown_ok, detail = _tags_in_prompt(turn.memory_prompt, tags_before)
    tags_ok = _verdict(
        console,
        shown_ok,
        2,
        f"after the restart, the memory section of a new thread holds the stored tags ({detail})",
    )
    items = memory.summaries.get_all(user)
    if turn.called(SUMMARIZE_TOOL) and items:
        # small models: the graph runs the tool for a request to summarize (agent/capture.py)
        who = "the small-model policy ran" if small else "the model called"
        line(console, f"path: {who} the summarize tool")
    else:
        why = (
            "the model called summarize but nothing was stored"
            if turn.called(SUMMARIZE_TOOL)
            else "the model did not call the summarize tool"
        )
        line(console, f"path: {why}; the demo calls memory.summarize_history() directly")
        try:
            memory.summarize_history(user, model, **ModelPolicy(small=small).summary_options)
        except SummarizationError as exc:
            line(console, f"summarize_history failed: {exc}", style="red")
        items = memory.summaries.get_all(user)
    line(console, f"summary items stored: {len(items)}")
    for doc in items:
        line(console, f"  - {doc.page_content}")
    stored_ok = _verdict(console, len(items) >= 1, 2, "summary items stored (expected >= 1)")
    return tags_ok and stored_ok


def _author(turn: TurnResult) -> str:
    """Who the check tested: a template filled from the tags tests the memory, not a model."""
    if turn.by_package:
        return "written by the package from the tags: a small-model guard, not the model"
    return "the model's own answer"


def _check_step3(
    console: Console,
    memory: TieredMemory,
    model: BaseChatModel,
    user: str,
    turns: list[TurnResult],
    tags_before: dict[str, str],
) -> bool:
    age_turn, birthday_turn = turns
    age_ok = _verdict(
        console,
        answer_states(age_turn.reply, "30"),
        3,
        f"the answer to {STEP_MESSAGES[3][0]!r} states 30 ({age_turn.reply[:80]!r}, "
        f"{_author(age_turn)})",
    )
    birthday_ok = _verdict(
        console,
        answer_states(birthday_turn.reply, _MAY_8),
        3,
        f"the answer to {STEP_MESSAGES[3][1]!r} states May 8 ({birthday_turn.reply[:80]!r}, "
        f"{_author(birthday_turn)})",
    )
    prompt = birthday_turn.memory_prompt
    shown_ok, detail = _tags_in_prompt(age_turn.memory_prompt, tags_before)
    tags_ok = _verdict(
        console,
        shown_ok and bool(prompt_tags(prompt)),
        3,
        f"the stored tags are in the memory section of both questions ({detail})",
    )
    birthday_items = [
        d.page_content
        for d in memory.summaries.get_all(user)
        if "birthday" in d.page_content.lower() or _MAY_8.search(d.page_content)
    ]
    if not birthday_items:
        line(console, "no stored summary item mentions the birthday", style="red")
    recalled = [t for t in birthday_items if quote(t) in prompt]
    recall_ok = _verdict(
        console,
        bool(recalled),
        3,
        "a stored birthday item is recalled into the memory section for 'When is my birthday?'",
    )
    return tags_ok and recall_ok and age_ok and birthday_ok


# --------------------------------------------------------------------------- orchestrator


def step_command(
    step: int,
    *,
    data_dir: Path,
    user_id: str,
    model_name: str | None,
    embeddings: str,
    redis_url: str | None,
) -> list[str]:
    """The command line of one demo step in a fresh Python process."""
    cmd = [
        sys.executable,
        "-m",
        "langchain_tiered_memory.cli",
        "demo-step",
        str(step),
        "--data-dir",
        str(data_dir),
        "--user",
        user_id,
        "--embeddings",
        embeddings,
    ]
    if model_name is not None:
        cmd += ["--model", model_name]
    if redis_url is not None:
        cmd += ["--redis-url", redis_url]
    return cmd


def _run_step(cmd: Sequence[str]) -> int:
    """Run one step's process; on Ctrl-C stop it quietly and re-raise in this process.

    The step runs in a session of its own so that the terminal's SIGINT reaches only this
    process: a child interrupted while importing would print a traceback.
    """
    proc = subprocess.Popen(cmd, start_new_session=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()  # SIGTERM ends it without a traceback
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise


def run_demo(
    *,
    data_dir: Path | None = None,
    user_id: str = DEMO_USER,
    model_name: str | None = None,
    embeddings: str = "local",
    redis_url: str | None = None,
    keep: bool = False,
    console: Console | None = None,
    steps: Sequence[int] = (1, 2, 3),
) -> int:
    """Run the demo: each step in a process of its own; 0 if every memory step passed."""
    console = console or Console()
    t0 = time.monotonic()
    model, _ = load_chat_model(model_name)  # a bad --model fails here, once (nothing loads)
    temporary = data_dir is None
    path = Path(tempfile.mkdtemp(prefix="tiered-memory-demo-")) if data_dir is None else data_dir
    where = redis_url or os.environ.get("REDIS_URL") or f"embedded Redis in {path}"
    line(console, "tiered-memory demo: three steps, each in a new process", style="bold")
    line(console, f"model: {describe_model(model)}")
    line(console, f"memory: {where}; user: {user_id!r}; embeddings: {embeddings}")
    results: dict[int, tuple[int, float]] = {}
    try:
        for step in steps:
            cmd = step_command(
                step,
                data_dir=path,
                user_id=user_id,
                model_name=model_name,
                embeddings=embeddings,
                redis_url=redis_url,
            )
            console.file.flush()
            sys.stdout.flush()
            started = time.monotonic()
            code = _run_step(cmd)
            results[step] = (code, time.monotonic() - started)
            if code not in (0, EXIT_CHECKS_FAILED):  # an error, not a check: it would repeat
                line(console, f"step {step} could not run (above); the later steps are skipped")
                break
    finally:
        if temporary and not keep:
            EmbeddedRedis(path).shutdown_leftover()  # a crashed step's server
            shutil.rmtree(path, ignore_errors=True)
    console.rule("demo summary")
    for step, (code, seconds) in results.items():
        state = "PASS" if code == 0 else f"FAIL (exit status {code})"
        line(console, f"step {step}: {state} ({seconds:.1f}s in its own process)")
    passed = bool(results) and all(code == 0 for code, _ in results.values())
    elapsed = time.monotonic() - t0
    if passed:
        line(console, f"demo: all memory steps PASS ({elapsed:.1f}s)", style="bold green")
    else:
        line(console, f"demo: FAIL ({elapsed:.1f}s)", style="bold red")
    if not temporary or keep:
        line(
            console,
            f"data kept in {path}: tiered-memory inspect --user {user_id} --data-dir {path}",
        )
    return 0 if passed else 1
