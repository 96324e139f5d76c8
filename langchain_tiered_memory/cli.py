"""``tiered-memory``: chat with, inspect and maintain the tiered memory from a shell.

Every command takes ``--redis-url`` (else ``$REDIS_URL``, else the embedded Redis),
``--data-dir`` (the embedded Redis' data and the chat threads' ``checkpoints.sqlite``;
default ``$TIERED_MEMORY_HOME`` or ``~/.local/share/langchain-tiered-memory``), ``--model``
(passed to :func:`~langchain_tiered_memory.defaults.default_chat_model`; ``fake`` is a
deterministic offline script) and ``--embeddings`` (``local`` MiniLM or ``hashing``).

Errors (a bad URL, Redis down, a bad user id) print one line to stderr and exit with
status 1; usage errors exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import textwrap
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_tiered_memory._keys import validate_user_id
from langchain_tiered_memory._redis import DATA_DIR_ENV, default_data_dir
from langchain_tiered_memory.errors import TieredMemoryError

__all__ = ["main", "build_parser"]

PROG = "tiered-memory"
EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 130

_DESCRIPTION = """\
Three-tier memory for LangChain/LangGraph agents, from the shell:
recent history (exact), tags such as name and age (exact) and
summary items recalled by similarity (fuzzy), on Redis.

With no --redis-url and no REDIS_URL, an embedded redis-server persists
everything under --data-dir. No server, API key or network is needed."""

_EPILOG = f"""\
examples:
  {PROG} demo                          the seed scenario, three processes, PASS/FAIL
  {PROG} chat --user alice             talk; /help lists the slash commands
  {PROG} inspect --user alice          what memory holds about alice
  {PROG} summarize --all               the offline summarization job
  {PROG} export --user alice > a.json  every tier of alice as JSON
  {PROG} forget --user alice           erase alice from every tier

Run '{PROG} COMMAND --help' for a command's options."""

_CHAT_HELP = """\
slash commands:
  /tags             the user's tags
  /recall QUERY     the summary items recalled for QUERY
  /summarize        summarize the unsummarized history into items now
  /prompt           the system prompt of the last turn (with the memory section)
  /forget           erase this user from every tier (asks first)
  /help             this list
  /quit             leave (also Ctrl-D)"""


# --------------------------------------------------------------------------- parser


def _para(text: str) -> str:
    return textwrap.fill(text, width=78)


def _common_options(*, top_level: bool) -> argparse.ArgumentParser:
    # The same options before or after the command. A subcommand's own defaults would
    # overwrite a value given before it, so there they default to "not given".
    unset: Any = None if top_level else argparse.SUPPRESS
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("memory and model options (every command)")
    group.add_argument(
        "--redis-url",
        metavar="URL",
        default=unset,
        help="Redis/Valkey/Redis Cluster URL (redis://, rediss://, unix://); "
        "default: $REDIS_URL, else the embedded Redis in --data-dir",
    )
    group.add_argument(
        "--data-dir",
        metavar="DIR",
        type=Path,
        default=unset,
        help=f"data dir of the embedded Redis and of the chat threads (checkpoints.sqlite); "
        f"default: ${DATA_DIR_ENV} or ~/.local/share/langchain-tiered-memory",
    )
    group.add_argument(
        "--model",
        metavar="NAME",
        default=unset,
        help="chat model (used by chat, summarize and demo): an OpenAI model name "
        "(needs OPENAI_API_KEY or OPENAI_BASE_URL) or a .gguf file; default: ChatOpenAI "
        "if configured, else SmolLM2-135M in-process; 'fake': a deterministic offline script",
    )
    group.add_argument(
        "--embeddings",
        choices=("local", "hashing"),
        default="local" if top_level else argparse.SUPPRESS,
        help="'local': the offline MiniLM model (default); "
        "'hashing': deterministic bag of words, no model (fast tests)",
    )
    return common


def _user_option(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--user", metavar="USER", required=required, help="the end user's id (e.g. alice)"
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``tiered-memory`` argument parser."""
    common = _common_options(top_level=False)
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=fmt,
        parents=[_common_options(top_level=True)],
    )
    from langchain_tiered_memory import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    sub.required = True

    chat = sub.add_parser(
        "chat",
        parents=[common],
        formatter_class=fmt,
        help="interactive chat with memory",
        description=_para(
            "Chat with the memory agent. Thread state is kept in "
            "<data dir>/checkpoints.sqlite; the memory tiers carry over to every thread."
        ),
        epilog=_CHAT_HELP,
    )
    _user_option(chat)
    chat.add_argument(
        "--thread",
        metavar="T",
        help="resume thread T of this user (default: a new thread; its id is printed)",
    )
    chat.add_argument(
        "--show-prompt",
        action="store_true",
        help="print the memory section of the system prompt before each answer",
    )
    chat.set_defaults(func=cmd_chat)

    demo = sub.add_parser(
        "demo",
        parents=[common],
        formatter_class=fmt,
        help="the seed scenario in three processes, with PASS/FAIL lines",
        description=_para(
            "Run the seed scenario in three separate processes on a temporary "
            "data dir (or --data-dir): 1) tell name, age and birthday -> tags recorded; "
            "2) restart, new thread -> tags in the prompt, summarize -> items stored; "
            "3) restart, new thread -> age and birthday questions with the tags and the "
            "recalled birthday item in the prompt. Prints the memory section of the prompt at "
            "each step and a PASS/FAIL line per memory check; exits non-zero if one fails."
        ),
    )
    demo.add_argument(
        "--user",
        metavar="USER",
        default="demo-alice",
        help="user id (default: demo-alice); step 1 erases its memory first",
    )
    demo.add_argument(
        "--keep",
        action="store_true",
        help="keep the temporary data dir (to inspect it afterwards)",
    )
    demo.set_defaults(func=cmd_demo)

    # Hidden: one step of the demo, run in a process of its own by `demo`.
    step = sub.add_parser("demo-step", parents=[common])
    step.add_argument("step", type=int, choices=(1, 2, 3))
    step.add_argument("--user", default="demo-alice")
    step.set_defaults(func=cmd_demo_step)

    inspect = sub.add_parser(
        "inspect",
        parents=[common],
        formatter_class=fmt,
        help="show a user's tags, last messages and summary items",
        description=_para(
            "Show what memory holds about a user, as tables: tags, the last "
            "messages of the history and the summary items."
        ),
    )
    _user_option(inspect)
    inspect.add_argument(
        "--last",
        metavar="N",
        type=int,
        default=10,
        help="how many of the latest messages to show (default: 10)",
    )
    inspect.set_defaults(func=cmd_inspect)

    summarize = sub.add_parser(
        "summarize",
        parents=[common],
        formatter_class=fmt,
        help="the offline summarization job",
        description=_para(
            "Summarize unsummarized history into summary items with the chat "
            "model, for one user or for every user with enough pending messages."
        ),
    )
    which = summarize.add_mutually_exclusive_group(required=True)
    which.add_argument("--user", metavar="USER", help="summarize this user")
    which.add_argument(
        "--all", action="store_true", help="summarize every user with pending messages"
    )
    summarize.add_argument(
        "--min-messages",
        metavar="N",
        type=int,
        default=1,
        help="with --all: only users with at least N unsummarized messages (default: 1)",
    )
    summarize.set_defaults(func=cmd_summarize)

    forget = sub.add_parser(
        "forget",
        parents=[common],
        formatter_class=fmt,
        help="erase a user from every tier",
        description=_para(
            "Erase a user's history, tags and summary items, and the user's chat "
            "threads in <data dir>/checkpoints.sqlite. Asks first on a terminal."
        ),
    )
    _user_option(forget)
    forget.add_argument(
        "--thread",
        metavar="T",
        help="erase only thread T: its messages, the summary items made only from it and "
        "its checkpoints (tags stay)",
    )
    forget.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    forget.set_defaults(func=cmd_forget)

    export = sub.add_parser(
        "export",
        parents=[common],
        formatter_class=fmt,
        help="print every tier of a user as JSON",
        description=_para(
            "Print a user's tags, history, summary items and watermark as JSON on stdout."
        ),
    )
    _user_option(export)
    export.set_defaults(func=cmd_export)
    return parser


# --------------------------------------------------------------------------- helpers


def _data_dir(args: argparse.Namespace) -> Path:
    return Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr)


def _open_memory(args: argparse.Namespace) -> Any:
    from langchain_tiered_memory.defaults import embeddings_for, open_memory

    return open_memory(
        redis_url=args.redis_url,
        data_dir=_data_dir(args),
        embeddings=embeddings_for(args.embeddings),
    )


def _user(args: argparse.Namespace) -> str:
    return validate_user_id(args.user)


def _esc(text: str) -> str:
    """``text`` with rich markup escaped: stored data and user input are never markup."""
    from rich.markup import escape

    return escape(text)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _tags_table(tags: dict[str, str], title: str = "tags") -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("tag", style="bold")
    table.add_column("value")
    for key, value in sorted(tags.items()):
        table.add_row(_esc(key), _esc(value))
    if not tags:
        table.add_row("[dim](none)[/dim]", "")
    return table


def _items_table(docs: Sequence[Any], title: str, *, score: bool = False) -> Any:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    if score:
        table.add_column("score", justify="right")
    table.add_column("created", no_wrap=True)
    table.add_column("source", no_wrap=True)
    table.add_column("item")
    for doc in docs:
        meta = doc.metadata
        row = [
            str(meta.get("created_at", ""))[:19],
            f"{meta.get('source_start', '')}-{meta.get('source_end', '')}"
            if "source_start" in meta
            else "",
            escape(doc.page_content)
            + (
                f" [dim](superseded by #{escape(str(meta['superseded_by']))} on "
                f"{escape(str(meta.get('valid_until', ''))[:10])})[/dim]"
                if meta.get("superseded_by")
                else ""
            ),
        ]
        if score:
            row.insert(0, f"{float(meta.get('score', 0.0)):.3f}")
        table.add_row(*row)
    if not docs:
        table.add_row(*([""] * (3 if score else 2)), "[dim](none)[/dim]")
    return table


def _messages_table(messages: Sequence[Any], first: int, title: str) -> Any:
    from langchain_core.messages import AIMessage
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("role")
    table.add_column("text")
    for i, message in enumerate(messages, start=first):
        text = message.text if isinstance(message.text, str) else str(message.content)
        if isinstance(message, AIMessage) and message.tool_calls:
            from langchain_tiered_memory.demo import format_call

            calls = "; ".join(format_call(c) for c in message.tool_calls)
            text = f"{text} [calls {calls}]".strip()
        table.add_row(str(i), message.type, escape(_short(text)))
    if not messages:
        table.add_row("", "", "[dim](none)[/dim]")
    return table


# --------------------------------------------------------------------------- commands


def cmd_inspect(args: argparse.Namespace) -> int:
    """``inspect --user U``."""
    user = _user(args)
    console = _console()
    with _open_memory(args) as memory:
        tags = memory.get_user_tags(user)
        total = memory.history.length(user)
        last = memory.load_context(user, max(args.last, 0))
        items = memory.summaries.get_all(user)
        watermark = memory.summaries.get_watermark(user)
        console.print(
            f"[bold]user[/bold] {_esc(repr(user))} on {_esc(str(memory.redis_url))}",
            highlight=False,
        )
        console.print(_tags_table(tags))
        console.print(
            _messages_table(
                last,
                max(total - len(last), 0),
                f"last {len(last)} of {total} messages (summarized up to #{watermark})",
            )
        )
        console.print(_items_table(items, f"summary items ({len(items)})"))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    """``export --user U``: JSON on stdout."""
    user = _user(args)
    with _open_memory(args) as memory:
        data = memory.export_user(user)
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    return EXIT_OK


def cmd_forget(args: argparse.Namespace) -> int:
    """``forget --user U``."""
    user = _user(args)
    console = _console()
    what = f"thread {args.thread!r} of user" if args.thread else "every memory of user"
    if not args.yes and sys.stdin.isatty():
        answer = console.input(f"Erase {_esc(what)} {_esc(repr(user))}? \\[y/N] ")
        if answer.strip().lower() not in {"y", "yes"}:
            console.print("nothing erased")
            return EXIT_ERROR
    from langchain_tiered_memory.defaults import CHECKPOINTS_FILE, open_checkpointer
    from langchain_tiered_memory.demo import forget_user_everywhere

    data_dir = _data_dir(args)
    if args.thread:
        return _forget_thread(args, user, console, data_dir)
    with _open_memory(args) as memory:
        if (data_dir / CHECKPOINTS_FILE).exists():
            with open_checkpointer(data_dir) as saver:
                removed = forget_user_everywhere(memory, user, saver)
        else:
            removed = forget_user_everywhere(memory, user)
    parts = ", ".join(f"{n} {what}" for what, n in removed.items())
    console.print(f"forgot user {_esc(repr(user))}: removed {parts}", highlight=False)
    return EXIT_OK


def _forget_thread(args: argparse.Namespace, user: str, console: Any, data_dir: Path) -> int:
    from langchain_tiered_memory.defaults import CHECKPOINTS_FILE, open_checkpointer
    from langchain_tiered_memory.demo import checkpoint_thread_id

    with _open_memory(args) as memory:
        # chat threads are recorded under a user-scoped id; an app's under its own
        thread = args.thread
        if thread not in memory.history.threads(user):
            thread = checkpoint_thread_id(user, thread)
        if (data_dir / CHECKPOINTS_FILE).exists():
            with open_checkpointer(data_dir) as saver:
                removed = memory.forget_thread(user, thread, checkpointer=saver)
        else:
            removed = memory.forget_thread(user, thread)
    parts = ", ".join(f"{n} {what}" for what, n in removed.items())
    console.print(
        f"forgot thread {_esc(repr(args.thread))} of user {_esc(repr(user))}: removed {parts}",
        highlight=False,
    )
    return EXIT_OK


def cmd_summarize(args: argparse.Namespace) -> int:
    """``summarize --user U | --all``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Table

    from langchain_tiered_memory.demo import describe_model, load_chat_model
    from langchain_tiered_memory.errors import SummarizationError
    from langchain_tiered_memory.summarizer import small_model_options

    user = _user(args) if args.user is not None else None
    console = _console()
    with _open_memory(args) as memory:
        users = [user] if user is not None else memory.pending_users(max(args.min_messages, 1))
        if not users:
            console.print("no user has unsummarized messages: nothing to do")
            return EXIT_OK
        with console.status("loading the chat model..."):
            model, small = load_chat_model(args.model)
        console.print(f"model: {_esc(describe_model(model))}", highlight=False)
        results = Table(title="summarization", title_justify="left")
        results.add_column("user")
        results.add_column("result")
        failed = 0
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("summarizing", total=len(users))
            for uid in users:
                progress.update(task, description=f"summarizing {_esc(uid)}")
                try:
                    ids = memory.summarize_history(uid, model, **small_model_options(small))
                    outcome = f"{len(ids)} item(s) stored" if ids else "nothing new"
                except SummarizationError as exc:
                    failed += 1
                    outcome = f"[red]failed[/red]: {_esc(str(exc))}"
                results.add_row(_esc(uid), outcome)
                progress.advance(task)
        console.print(results)
    return EXIT_ERROR if failed else EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """``demo``."""
    from langchain_tiered_memory.demo import run_demo

    return run_demo(
        data_dir=Path(args.data_dir).expanduser() if args.data_dir else None,
        user_id=_user(args),
        model_name=args.model,
        embeddings=args.embeddings,
        redis_url=args.redis_url,
        keep=args.keep,
        console=_console(),
    )


def cmd_demo_step(args: argparse.Namespace) -> int:
    """``demo-step N`` (hidden; run by ``demo`` in a fresh process)."""
    from langchain_tiered_memory.demo import run_demo_step

    return run_demo_step(
        args.step,
        data_dir=_data_dir(args),
        user_id=_user(args),
        model_name=args.model,
        embeddings=args.embeddings,
        redis_url=args.redis_url,
        console=_console(),
    )


def cmd_chat(args: argparse.Namespace) -> int:
    """``chat --user U [--thread T] [--show-prompt]``."""
    from langchain_tiered_memory.defaults import open_checkpointer
    from langchain_tiered_memory.demo import checkpoint_thread_id, describe_model, load_chat_model
    from langchain_tiered_memory.graph import create_memory_graph

    user = _user(args)
    console = _console()
    data_dir = _data_dir(args)
    with _open_memory(args) as memory, open_checkpointer(data_dir) as saver:
        with console.status("loading the chat model..."):
            model, force = load_chat_model(args.model)
        graph = create_memory_graph(model, memory=memory, checkpointer=saver, small_model=force)
        thread = args.thread or uuid.uuid4().hex[:8]
        session = _ChatSession(
            console=console,
            memory=memory,
            model=model,
            graph=graph,
            saver=saver,
            user=user,
            thread_id=checkpoint_thread_id(user, thread),
            show_prompt=args.show_prompt,
            small=force,
        )
        console.print(
            f"user [bold]{_esc(user)}[/bold], thread [bold]{_esc(thread)}[/bold] "
            f"(resume with --thread {_esc(thread)}); model: {_esc(describe_model(model))}; "
            f"memory: {_esc(str(memory.redis_url))}",
            highlight=False,
        )
        console.print("type /help for the slash commands, /quit to leave", style="dim")
        session.loop()
    return EXIT_OK


class _ChatSession:
    def __init__(
        self,
        *,
        console: Any,
        memory: Any,
        model: Any,
        graph: Any,
        saver: Any,
        user: str,
        thread_id: str,
        show_prompt: bool,
        small: bool = False,
    ) -> None:
        self.console = console
        self.memory = memory
        self.model = model
        self.graph = graph
        self.saver = saver
        self.user = user
        self.thread_id = thread_id
        self.show_prompt = show_prompt
        self.small = small  # a small local model: the summarizer's small-model guards

    def loop(self) -> None:
        while True:
            try:
                text = self.console.input("[bold blue]you>[/bold blue] ").strip()
            except EOFError:
                self.console.print()
                return
            if not text:
                continue
            if text.startswith("/"):
                if not self.command(text):
                    return
                continue
            self.turn(text)

    def turn(self, text: str) -> None:
        from langchain_tiered_memory.demo import (
            line,
            print_memory_section,
            print_update,
            run_turn,
        )
        from langchain_tiered_memory.graph import LOAD_MEMORY

        printer = print_update(self.console)

        def show(node: str, update: dict[str, Any]) -> None:
            if node == LOAD_MEMORY and self.show_prompt:
                print_memory_section(
                    self.console, str(update.get("memory_prompt") or ""), self.user
                )
            printer(node, update)

        with self.console.status("the model is thinking..."):
            result = run_turn(
                self.graph, user_id=self.user, thread_id=self.thread_id, text=text, on_update=show
            )
        line(self.console, f"assistant> {result.reply or '(no text)'}", style="bold")

    def command(self, text: str) -> bool:
        """Run a slash command; ``False`` to leave the chat."""
        from langchain_tiered_memory.demo import line, print_memory_section
        from langchain_tiered_memory.errors import SummarizationError
        from langchain_tiered_memory.prompt import DEFAULT_SYSTEM_PROMPT
        from langchain_tiered_memory.summarizer import small_model_options

        name, _, rest = text.partition(" ")
        name, rest = name.lower(), rest.strip()
        if name in {"/quit", "/exit", "/q"}:
            return False
        if name == "/help":
            line(self.console, _CHAT_HELP)
        elif name == "/tags":
            self.console.print(_tags_table(self.memory.get_user_tags(self.user)))
        elif name == "/recall":
            if not rest:
                line(self.console, "usage: /recall QUERY", style="red")
            else:
                docs = self.memory.recall_summaries(self.user, rest, n=5)
                self.console.print(
                    _items_table(docs, f"recalled for {_esc(repr(rest))}", score=True)
                )
        elif name == "/summarize":
            try:
                with self.console.status("summarizing..."):
                    ids = self.memory.summarize_history(
                        self.user, self.model, **small_model_options(self.small)
                    )
            except SummarizationError as exc:
                line(self.console, f"summarizing failed: {exc}", style="red")
            else:
                line(self.console, f"stored {len(ids)} item(s)" if ids else "nothing new")
        elif name == "/prompt":
            state = self.graph.get_state({"configurable": {"thread_id": self.thread_id}})
            memory_prompt = str(state.values.get("memory_prompt") or "")
            line(self.console, "base system prompt:", style="bold")
            for row in DEFAULT_SYSTEM_PROMPT.splitlines():
                line(self.console, f"  | {row}")
            print_memory_section(self.console, memory_prompt, self.user)
        elif name == "/forget":
            answer = self.console.input(f"Erase every memory of {_esc(repr(self.user))}? \\[y/N] ")
            if answer.strip().lower() in {"y", "yes"}:
                from langchain_tiered_memory.demo import forget_user_everywhere

                removed = forget_user_everywhere(self.memory, self.user, self.saver)
                parts = ", ".join(f"{n} {what}" for what, n in removed.items())
                line(self.console, f"forgot {self.user!r}: removed {parts}")
            else:
                line(self.console, "nothing erased")
        else:
            line(self.console, f"unknown command {name}; /help lists them", style="red")
        return True


# --------------------------------------------------------------------------- main


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 600 else text[:599] + "\u2026"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tiered-memory``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (TieredMemoryError, ValueError, OSError, ImportError, sqlite3.Error) as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
