"""The ``tiered-memory`` CLI: help, inspect/export/forget/summarize/chat on an embedded data
dir with HashingEmbeddings and the fake model, and one-line errors without tracebacks.

Commands run in-process through ``main(argv)`` (fast); the error cases run the real entry
point in a subprocess, since what matters there is exactly what reaches stderr.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from langchain_tiered_memory import HashingEmbeddings, TieredMemory
from langchain_tiered_memory.cli import build_parser, main
from langchain_tiered_memory.cli.common import checkpoint_thread_id, user_thread_ids
from langchain_tiered_memory.cli.demo import fake_demo_model, prompt_tags
from langchain_tiered_memory.cli.render import position_range
from langchain_tiered_memory.persistence.checkpoint import RedisSaver

COMMON = ("--redis-url", "--key-prefix", "--data-dir", "--model", "--embeddings")
SUBCOMMAND_OPTIONS = {
    "chat": ("--user", "--thread", "--show-prompt"),
    "demo": ("--user", "--keep"),
    "inspect": ("--user", "--last"),
    "summarize": ("--user", "--all", "--min-messages"),
    "forget": ("--user", "--yes"),
    "export": ("--user",),
}


@contextlib.contextmanager
def cli_saver(data_dir: Path) -> Iterator[RedisSaver]:
    """The checkpointer the CLI keeps its threads in: the memory's own Redis."""
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        yield memory.checkpointer()


def run_cli(
    capsys: pytest.CaptureFixture[str], *argv: str, stdin: str | None = None
) -> tuple[int, str, str]:
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        code = main(list(argv))
    finally:
        sys.stdin = old_stdin
    out, err = capsys.readouterr()
    return code, out, err


def run_entry_point(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "langchain_tiered_memory.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env=full_env,
    )


@pytest.fixture
def seeded(data_dir: Path) -> Path:
    """An embedded data dir holding alice's tags, 4 messages and one summary item."""
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        memory.set_user_tags("alice", {"name": "Alice", "age": 30})
        memory.add_session_log(
            "alice",
            [
                HumanMessage("Hi, I am Alice and my birthday is on May 8."),
                AIMessage("Nice to meet you, Alice."),
                HumanMessage("I like hiking in the Alps."),
                AIMessage("Sounds great."),
            ],
        )
        memory.add_summaries("alice", ["The user's birthday is on May 8."])
        memory.set_user_tags("bob", {"name": "Bob"})
    return data_dir


def opts(data_dir: Path) -> list[str]:
    return ["--data-dir", str(data_dir), "--embeddings", "hashing"]


# ----------------------------------------------------------------------------- help


def test_top_level_help_lists_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for command in SUBCOMMAND_OPTIONS:
        assert command in out
    assert "demo-step" not in out  # internal
    assert "==SUPPRESS==" not in out


@pytest.mark.parametrize("command", sorted(SUBCOMMAND_OPTIONS))
def test_subcommand_help_lists_its_options(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for option in (*SUBCOMMAND_OPTIONS[command], *COMMON):
        assert option in out, f"{command} --help does not mention {option}"


def test_entry_point_help_runs() -> None:
    proc = run_entry_point("--help")
    assert proc.returncode == 0, proc.stderr
    assert "usage: tiered-memory" in proc.stdout


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["inspect"])  # --user missing
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["summarize", "--user", "a", "--all"])  # mutually exclusive
    assert exc.value.code == 2


def test_every_command_has_the_common_options() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, command in sub.choices.items():  # type: ignore[union-attr]
        flags = {f for action in command._actions for f in action.option_strings}
        assert set(COMMON) <= flags, name


# ----------------------------------------------------------------------------- data commands


def test_export_prints_every_tier_as_json(capsys: pytest.CaptureFixture[str], seeded: Path) -> None:
    code, out, err = run_cli(capsys, "export", "--user", "alice", *opts(seeded))
    assert code == 0, err
    data = json.loads(out)
    assert data["user_id"] == "alice"
    assert data["tags"] == {"name": "Alice", "age": "30"}
    assert len(data["history"]["messages"]) == 4
    assert [s["text"] for s in data["summaries"]] == ["The user's birthday is on May 8."]


def test_inspect_shows_tags_messages_and_items(
    capsys: pytest.CaptureFixture[str], seeded: Path
) -> None:
    code, out, err = run_cli(capsys, "inspect", "--user", "alice", "--last", "3", *opts(seeded))
    assert code == 0, err
    flat = " ".join(out.split())
    assert "Alice" in flat and "30" in flat
    assert "last 3 of 4 kept messages (4 written; summarized: none)" in flat
    assert "Alps" in flat
    assert "May 8" in flat
    assert "summary items (1)" in flat


def test_inspect_never_sends_stored_control_characters_to_the_terminal(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    """Issue 32 item 11: what an end user typed (clear screen, an OSC 52 clipboard write)
    is shown as text, not run by the terminal."""
    attack = "hi\x1b[2J\x1b]52;c;ZWNobyBwd25lZA==\x07 there"
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        memory.add_session_log("eve", [HumanMessage(attack)])
    code, out, err = run_cli(capsys, "inspect", "--user", "eve", *opts(data_dir))
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b[2J" in out and "\\x07" in out  # shown, escaped


def test_inspect_unknown_user_is_empty_not_an_error(
    capsys: pytest.CaptureFixture[str], seeded: Path
) -> None:
    code, out, _ = run_cli(capsys, "inspect", "--user", "nobody", *opts(seeded))
    assert code == 0
    assert "no memory of this user here" in out  # issue 68: not three empty tables


def test_forget_erases_only_that_user(capsys: pytest.CaptureFixture[str], seeded: Path) -> None:
    code, out, err = run_cli(capsys, "forget", "--user", "alice", "--yes", *opts(seeded))
    assert code == 0, err
    assert "forgot user 'alice'" in out
    _, out, _ = run_cli(capsys, "export", "--user", "alice", *opts(seeded))
    data = json.loads(out)
    assert data["tags"] == {} and data["history"]["messages"] == [] and data["summaries"] == []
    _, out, _ = run_cli(capsys, "export", "--user", "bob", *opts(seeded))
    assert json.loads(out)["tags"] == {"name": "Bob"}


def test_forget_one_thread_keeps_the_rest(capsys: pytest.CaptureFixture[str], seeded: Path) -> None:
    with TieredMemory.embedded(seeded, embeddings=HashingEmbeddings()) as memory:
        memory.add_session_log(
            "alice", [HumanMessage("My secret plan.", id="s1")], thread_id="t9", thread_position=0
        )
    code, out, err = run_cli(
        capsys, "forget", "--user", "alice", "--thread", "t9", "--yes", *opts(seeded)
    )
    assert code == 0, err
    assert "forgot thread 't9' of user 'alice': removed 1 messages, 0 summaries" in out
    _, out, _ = run_cli(capsys, "export", "--user", "alice", *opts(seeded))
    data = json.loads(out)
    texts = [m["data"]["content"] for m in data["history"]["messages"]]
    assert "My secret plan." not in texts and len(texts) == 4
    assert data["tags"] == {"name": "Alice", "age": "30"} and data["threads"] == []


def test_counts_agree_after_every_thread_is_forgotten(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    """After forget --thread, inspect and forget --user count what is there, and an
    item's source range reads as the watermark does (#0-#3: the four summarized).
    """
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        for t in range(4):
            memory.add_session_log(
                "ann",
                [HumanMessage(f"question {t}", id=f"h{t}"), AIMessage(f"answer {t}", id=f"a{t}")],
                thread_id="t1",
                thread_position=2 * t,
            )
        memory.summaries.add(
            "ann",
            ["The user asks questions."],
            metadata={"source_start": 0, "source_end": 4},
            watermark=(0, 4),
        )
    run_cli(capsys, "forget", "--user", "ann", "--thread", "t1", "--yes", *opts(data_dir))
    code, out, err = run_cli(capsys, "inspect", "--user", "ann", *opts(data_dir))
    assert code == 0, err
    flat = " ".join(out.split())
    assert "last 0 of 0 kept messages (8 written; summarized: #0-#3)" in flat
    assert "#0-#3" in flat.split("summary items")[1]  # the item's source, same reading
    code, out, err = run_cli(capsys, "forget", "--user", "ann", "--yes", *opts(data_dir))
    assert code == 0, err
    assert "0 history" in out  # the thread's messages were already gone


def test_an_items_source_reads_as_inclusive_positions() -> None:
    assert position_range(0, 4) == "#0-#3"
    assert position_range(5, 6) == "#5"
    assert position_range(3, 3) == "none"


def test_summarize_one_user_and_all(capsys: pytest.CaptureFixture[str], seeded: Path) -> None:
    code, out, err = run_cli(
        capsys, "summarize", "--user", "alice", "--model", "fake", *opts(seeded)
    )
    assert code == 0, err
    assert "item(s) stored" in out
    _, out, _ = run_cli(capsys, "export", "--user", "alice", *opts(seeded))
    data = json.loads(out)
    assert data["watermark"] == 4
    assert any("Alps" in s["text"] for s in data["summaries"])
    # nothing pending any more
    code, out, _ = run_cli(capsys, "summarize", "--all", "--model", "fake", *opts(seeded))
    assert code == 0
    assert "nothing to do" in out


def test_chat_with_piped_input_records_tags_and_runs_slash_commands(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    script = "\n".join(
        [
            "Hi, my name is Alice and I am 30 years old. My birthday is on May 8.",
            "/tags",
            "/summarize",
            "/recall birthday",
            "/prompt",
            "/nonsense",
            "How old am I?",
            "/quit",
        ]
    )
    code, out, err = run_cli(
        capsys,
        "chat",
        "--user",
        "alice",
        "--thread",
        "t1",
        "--show-prompt",
        "--model",
        "fake",
        *opts(data_dir),
        stdin=script + "\n",
    )
    assert code == 0, err
    flat = " ".join(out.split())
    assert "user_tag(name='Alice', age=30)" in flat
    assert "stored 2 item(s)" in flat
    assert "The user's birthday is on May 8." in flat
    assert "unknown command /nonsense" in flat
    assert "assistant> You are 30 years old." in flat
    assert '{"age": "30", "name": "Alice"}' in flat  # --show-prompt / /prompt
    # the thread is checkpointed under the user's namespace; forget removes it too
    with cli_saver(data_dir) as saver:
        assert user_thread_ids(saver, "alice") == [checkpoint_thread_id("alice", "t1")]
    code, out, _ = run_cli(capsys, "forget", "--user", "alice", "--yes", *opts(data_dir))
    assert code == 0
    assert "1 threads" in out
    with cli_saver(data_dir) as saver:
        assert user_thread_ids(saver, "alice") == []


def test_chat_ends_on_eof(capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    code, _, err = run_cli(
        capsys, "chat", "--user", "alice", "--model", "fake", *opts(data_dir), stdin=""
    )
    assert code == 0, err


# ----------------------------------------------------------------------------- errors


def assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert_one_line(proc.returncode, proc.stderr, *needles)


def assert_one_line(code: int, stderr: str, *needles: str) -> None:
    assert code != 0
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("tiered-memory: error: ")
    for needle in needles:
        assert needle in lines[0]


# One process per command (what reaches a terminal, the entry point included); the other
# error cases run main() in this process: the same handler prints the line (issue 58).


@pytest.mark.parametrize("command", ["inspect", "chat", "forget"])
def test_unreachable_redis_url_is_one_line(command: str, tmp_path: Path) -> None:
    proc = run_entry_point(
        command,
        "--user",
        "alice",
        *(["--yes"] if command == "forget" else []),
        "--redis-url",
        "redis://127.0.0.1:1",
        "--data-dir",
        str(tmp_path),
        "--embeddings",
        "hashing",
    )
    assert_one_line_error(proc, "redis://127.0.0.1:1", "unreachable")


def test_options_before_the_command_are_not_overridden(tmp_path: Path) -> None:
    from langchain_tiered_memory.cli import build_parser

    parser = build_parser()
    before = parser.parse_args(
        [
            "--redis-url",
            "redis://h:1",
            "--data-dir",
            str(tmp_path),
            "--embeddings",
            "hashing",
            "inspect",
            "--user",
            "a",
        ]
    )
    after = parser.parse_args(
        [
            "inspect",
            "--user",
            "a",
            "--redis-url",
            "redis://h:1",
            "--data-dir",
            str(tmp_path),
            "--embeddings",
            "hashing",
        ]
    )
    neither = parser.parse_args(["inspect", "--user", "a"])
    for args in (before, after):
        assert (args.redis_url, args.data_dir, args.embeddings) == (
            "redis://h:1",
            tmp_path,
            "hashing",
        )
    assert (neither.redis_url, neither.data_dir, neither.embeddings) == (None, None, "local")


def test_options_before_the_command_reach_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ("--redis-url", "redis://127.0.0.1:1", "--data-dir", str(tmp_path), "inspect")
    code, _, err = run_cli(capsys, *argv, "--user", "alice")
    assert_one_line(code, err, "redis://127.0.0.1:1", "unreachable")


def test_redis_url_from_environment_is_used(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    code, _, err = run_cli(capsys, "export", "--user", "alice", "--data-dir", str(tmp_path))
    assert_one_line(code, err, "redis://127.0.0.1:1/0")


def test_malformed_redis_url_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ("inspect", "--user", "alice", "--redis-url", "http://nope")
    code, _, err = run_cli(capsys, *argv, "--data-dir", str(tmp_path))
    assert_one_line(code, err, "not a Redis URL")


@pytest.mark.parametrize("user", ["", "x" * 300])
def test_bad_user_id_is_one_line(
    capsys: pytest.CaptureFixture[str], user: str, tmp_path: Path
) -> None:
    code, _, err = run_cli(capsys, "export", "--user", user, "--data-dir", str(tmp_path))
    assert_one_line(code, err, "user_id")


def test_unwritable_data_dir_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, _, err = run_cli(capsys, "export", "--user", "a", "--data-dir", str(blocker / "sub"))
    assert_one_line(code, err)


# ----------------------------------------------------------------------------- fake model


def test_fake_demo_model_answers_only_from_its_prompt() -> None:
    from langchain_core.messages import SystemMessage

    model = fake_demo_model()
    call = model.invoke([HumanMessage("Hi, my name is Alice and I am 30 years old.")])
    assert call.tool_calls[0]["name"] == "user_tag"
    assert call.tool_calls[0]["args"] == {"name": "Alice", "age": 30}
    memory_prompt = '<user_tags>\n{"age": "30", "name": "Alice"}\n</user_tags>'
    assert prompt_tags(memory_prompt) == {"age": "30", "name": "Alice"}
    answer = model.invoke([SystemMessage(memory_prompt), HumanMessage("How old am I?")])
    assert answer.text == "You are 30 years old."
    assert model.invoke([HumanMessage("How old am I?")]).text == "I don't know your age."


def test_run_turn_ends_when_a_model_keeps_calling_tools(data_dir: Path) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from langchain_tiered_memory.agent.graph import create_memory_graph
    from langchain_tiered_memory.cli.demo import run_turn
    from langchain_tiered_memory.testing import ScriptedChatModel

    looping = AIMessage(
        content="", tool_calls=[{"name": "user_tag", "args": {"age": 30}, "id": "c1"}]
    )
    model = ScriptedChatModel(replies=[looping])
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        graph = create_memory_graph(
            model, memory=memory, checkpointer=InMemorySaver(), max_tool_rounds=2
        )
        result = run_turn(graph, user_id="alice", thread_id="t", text="I am 30.")
        assert len(model.prompts) == 3  # max_tool_rounds + 1 model calls
        # the turn ended and was saved: every call answered, no pending call last
        history = memory.load_context("alice", 50)
        assert history[0].text == "I am 30."
        assert isinstance(history[-1], AIMessage) and not history[-1].tool_calls
        calls = [str(c["id"]) for m in history if isinstance(m, AIMessage) for c in m.tool_calls]
        answered = [m.tool_call_id for m in history if isinstance(m, ToolMessage)]
        assert sorted(calls) == sorted(answered)
        assert result.called("user_tag")
        # the thread goes on normally
        model.replies.append("fine")
        model.replies.remove(looping)
        assert run_turn(graph, user_id="alice", thread_id="t", text="hello").reply == "fine"


def test_chat_forget_erases_the_user_and_its_threads(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    script = "Hi, my name is Alice and I am 30 years old.\n/forget\ny\n/tags\n/quit\n"
    code, out, err = run_cli(
        capsys,
        "chat",
        "--user",
        "alice",
        "--thread",
        "t1",
        "--model",
        "fake",
        *opts(data_dir),
        stdin=script,
    )
    assert code == 0, err
    flat = " ".join(out.split())
    assert "forgot 'alice': removed 1 threads" in flat
    with cli_saver(data_dir) as saver:
        assert user_thread_ids(saver, "alice") == []
    _, out, _ = run_cli(capsys, "export", "--user", "alice", *opts(data_dir))
    assert json.loads(out)["tags"] == {}


@pytest.mark.parametrize("small", [True, False])
def test_the_prompt_command_shows_the_base_prompt_the_model_is_sent(small: bool) -> None:
    """/prompt printed DEFAULT_SYSTEM_PROMPT while a small model was sent the small one."""
    from io import StringIO

    from langchain_core.messages import SystemMessage
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.memory import InMemorySaver
    from rich.console import Console

    from langchain_tiered_memory import TieredMemory
    from langchain_tiered_memory.agent.graph import create_memory_graph
    from langchain_tiered_memory.agent.prompt import (
        DEFAULT_SYSTEM_PROMPT,
        SMALL_MODEL_SYSTEM_PROMPT,
    )
    from langchain_tiered_memory.cli.chat import _ChatSession
    from langchain_tiered_memory.testing import ScriptedChatModel

    model = ScriptedChatModel(replies=["Hello Alice."])
    memory = TieredMemory.in_memory()
    graph = create_memory_graph(
        model, memory=memory, checkpointer=InMemorySaver(), small_model=small
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    graph.invoke({"messages": [("user", "Hi, I am Alice.")]}, config, context={"user_id": "alice"})
    sent = [p[0] for p in model.prompts if isinstance(p[0], SystemMessage)]
    out = StringIO()
    console = Console(file=out, width=200)
    session = _ChatSession(
        console=console,
        memory=memory,
        model=model,
        graph=graph,
        saver=None,
        user="alice",
        thread_id="t",
        show_prompt=False,
        small=small,
    )
    session.command("/prompt")
    shown = out.getvalue()
    expected = SMALL_MODEL_SYSTEM_PROMPT if small else DEFAULT_SYSTEM_PROMPT
    other = DEFAULT_SYSTEM_PROMPT if small else SMALL_MODEL_SYSTEM_PROMPT
    assert any(str(m.content).startswith(expected.splitlines()[0]) for m in sent)
    assert all(f"| {row}" in shown for row in expected.splitlines() if row)
    assert f"| {other.splitlines()[0]}" not in shown


def test_chat_summarizes_by_itself_after_summarize_after_messages(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    """Issue 33 item 3: ``chat`` summarizes as the graph's ``auto_summarize_after`` does,
    with no /summarize; the items are stored when the chat ends."""
    script = "\n".join(
        [
            "Hi, my name is Alice and I am 30 years old.",
            "My birthday is on May 8.",
            "I keep bees on the roof.",
            "/quit",
        ]
    )
    args = ["chat", "--user", "alice", "--model", "fake", "--summarize-after", "4"]
    code, _, err = run_cli(capsys, *args, *opts(data_dir), stdin=script + "\n")
    assert code == 0, err
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        items = [d.page_content for d in memory.summaries.get_all("alice")]
        assert memory.summaries.get_watermark("alice") >= 4
    assert any("May 8" in item for item in items), items
    # 0 switches it off (and the summary at the chat's end, issue 59, is off here too)
    off = ["chat", "--user", "bob", "--model", "fake", "--summarize-after", "0"]
    off.append("--no-summary-at-exit")
    code, _, err = run_cli(capsys, *off, *opts(data_dir), stdin=script + "\n")
    assert code == 0, err
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        assert memory.summaries.get_all("bob") == []


def _content(client: Any, key: bytes) -> Any:
    """A key's value read by its type (a DUMP after a restart may order fields otherwise)."""
    kind = client.type(key)
    read = {
        b"string": lambda: client.get(key),
        b"hash": lambda: client.hgetall(key),
        b"list": lambda: client.lrange(key, 0, -1),
        b"set": lambda: sorted(client.smembers(key)),
        b"zset": lambda: client.zrange(key, 0, -1, withscores=True),
    }[kind]
    return kind, read(), client.pttl(key) > 0


def test_forget_reaches_the_apps_threads_and_store_items(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    """Issue 43 items 3 and 7 from the CLI: `tiered-memory forget` erases the thread an
    app's graph kept in the memory's checkpointer and the items an app kept in the
    memory's own LangGraph store; SCAN + DUMP and the data dir's files show nothing of
    the user left and every other key as it was."""
    from langchain_tiered_memory import create_memory_graph
    from langchain_tiered_memory.testing import ScriptedChatModel

    secret = "LOCKER8812"
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        graph: Any = create_memory_graph(
            ScriptedChatModel(replies=["Noted."]), memory=memory, checkpointer=memory.checkpointer()
        )
        for user in ("alice", "bob"):
            graph.invoke(
                {
                    "messages": [
                        HumanMessage(f"My locker code is {secret if user == 'alice' else 'bob1'}.")
                    ]
                },
                {"configurable": {"thread_id": f"{user}-app-thread"}},
                context={"user_id": user},
            )
            memory.store().put(("memories", user), "m1", {"content": f"{user} code {secret}"})
        client = memory.history.connection.sync  # type: ignore[attr-defined]
        client.config_set("rdbcompression", "no")
        before = {k: _content(client, k) for k in client.scan_iter(count=1000) if b"bob" in k}
    code, out, err = run_cli(capsys, "forget", "--user", "alice", "--yes", *opts(data_dir))
    assert code == 0, err
    said = " ".join(out.split())
    assert "1 threads" in said and "1 store_items" in said
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings()) as memory:
        client = memory.history.connection.sync  # type: ignore[attr-defined]
        keys = list(client.scan_iter(count=1000))
        assert not [k for k in keys if b"alice" in k]
        assert not [
            k for k in keys if secret.encode() in (client.dump(k) or b"") and b"bob" not in k
        ]
        # a restarted server may DUMP a hash's fields in another order: compare contents
        assert {k: _content(client, k) for k in keys if b"bob" in k} == before
        assert memory.store().search(("memories", "alice")) == []
    files = [
        p for p in data_dir.rglob("*") if p.is_file() and b"alice-app-thread" in p.read_bytes()
    ]
    assert files == []


def test_mcp_without_its_extra_names_the_extra(
    capsys: pytest.CaptureFixture[str], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 46 item 8: it printed a bare "No module named 'mcp'"."""
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "mcp", None)  # what an environment without it gives
    code, _, err = run_cli(capsys, "mcp", "--user", "ann", *opts(data_dir))
    assert code == 1
    assert "[mcp] extra" in err and "pip install" in err


def test_a_model_server_that_is_down_is_one_line(data_dir: Path) -> None:
    """Issue 59 item 5: a wrong OPENAI_BASE_URL crashed chat with a 50-frame traceback."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "OPENAI_API_KEY")}
    env.update(OPENAI_BASE_URL="http://127.0.0.1:9/v1", OPENAI_API_KEY="sk-test")
    proc = subprocess.run(
        [sys.executable, "-m", "langchain_tiered_memory.cli", "chat", "--user", "alice"]
        + ["--model", "some-model", *opts(data_dir)],
        input="Hello!\n",
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert_one_line_error(proc, "http://127.0.0.1:9/v1", "OPENAI_BASE_URL")


@pytest.mark.parametrize(
    ("said", "asked", "fact"),
    [
        ("My birthday is on May 8.", "When is my birthday?", "May 8"),
        ("我的生日是5月8日。", "我的生日是哪天？", "5月8日"),
        ("Mi cumpleaños es el 8 de mayo.", "¿Cuándo es mi cumpleaños?", "8 de mayo"),
    ],
)
def test_what_a_user_says_in_one_chat_is_known_in_the_next(
    capsys: pytest.CaptureFixture[str], data_dir: Path, said: str, asked: str, fact: str
) -> None:
    """Issue 59 item 2: a fact told in one chat session was lost in the next unless the
    user knew to summarize. The session summarizes what is unsummarized when it ends; the
    next session's memory section holds it. Each reply says who wrote it."""
    args = ("chat", "--user", "ann", "--model", "fake", "--summarize-after", "0", *opts(data_dir))
    code, out, err = run_cli(capsys, *args, stdin=f"{said}\n")
    assert code == 0, err
    assert "[the model's reply]" in out or "[the package wrote this reply]" in out
    assert "kept 1 item(s) for your next chat" in out
    code, out, err = run_cli(capsys, *args, "--show-prompt", stdin=f"{asked}\n")
    assert code == 0, err
    assert fact in out.split("assistant>")[0]  # in the memory section before the answer


def test_a_memory_with_a_key_prefix_of_its_own_is_reached(
    capsys: pytest.CaptureFixture[str], data_dir: Path
) -> None:
    """Issue 66 item 16: an app's memory made with key_prefix= could not be inspected or
    erased by the CLI (no flag, no variable)."""
    with TieredMemory.embedded(data_dir, embeddings=HashingEmbeddings(), key_prefix="app") as m:
        m.set_user_tags("alice", {"name": "Alice"})
    code, out, err = run_cli(capsys, "export", "--user", "alice", *opts(data_dir))
    assert code == 0, err
    assert json.loads(out)["tags"] == {}  # the package's own prefix holds nothing of hers
    code, out, err = run_cli(
        capsys, "export", "--user", "alice", "--key-prefix", "app", *opts(data_dir)
    )
    assert code == 0, err
    assert json.loads(out)["tags"] == {"name": "Alice"}


def test_mcp_tokens_naming_a_token_twice_are_refused(
    capsys: pytest.CaptureFixture[str], data_dir: Path, tmp_path: Path
) -> None:
    """Issue 66 item 16: the last of two entries won (Alice's token acted as Bob)."""
    tokens = tmp_path / "tokens.json"
    token = "t" * 32
    tokens.write_text(f'{{"{token}": "alice", "{token}": "bob"}}')
    code, _, err = run_cli(capsys, "mcp", "--http", "--tokens", str(tokens), *opts(data_dir))
    assert code != 0 and "given twice" in err
