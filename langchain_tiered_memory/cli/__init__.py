"""``tiered-memory``: chat with, inspect and maintain the tiered memory from a shell.

Every command takes ``--redis-url`` (else ``$REDIS_URL``, else the embedded Redis),
``--data-dir`` (the embedded Redis' data, which holds the chat threads too;
default ``$TIERED_MEMORY_HOME`` or ``~/.local/share/langchain-tiered-memory``), ``--model``
(passed to :func:`~langchain_tiered_memory.defaults.default_chat_model`; ``fake`` is a
deterministic offline script) and ``--embeddings`` (``local``: multilingual-e5-small, or
``hashing``).

Errors (a bad URL, Redis down, a bad user id) print one line to stderr and exit with
status 1; usage errors exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import textwrap
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_tiered_memory.backend.server import DATA_DIR_ENV
from langchain_tiered_memory.cli.chat import cmd_chat
from langchain_tiered_memory.cli.commands import (
    cmd_attachments,
    cmd_demo,
    cmd_demo_step,
    cmd_export,
    cmd_forget,
    cmd_inspect,
    cmd_mcp,
    cmd_reembed,
    cmd_reindex,
    cmd_summarize,
    cmd_ui,
    cmd_upgrade,
    cmd_worker,
)
from langchain_tiered_memory.cli.common import CHAT_HELP, EXIT_ERROR, EXIT_INTERRUPTED
from langchain_tiered_memory.errors import TieredMemoryError

__all__ = ["main", "build_parser"]

PROG = "tiered-memory"

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
  {PROG} worker --concurrency 8        the same job as a worker on the Redis queue
  {PROG} export --user alice > a.json  every tier of alice as JSON
  {PROG} forget --user alice           erase alice from every tier

Run '{PROG} COMMAND --help' for a command's options."""


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
        "--key-prefix",
        metavar="PREFIX",
        default=unset,
        help="the memory's key prefix, for an app's memory made with key_prefix=; "
        "default: $TIERED_MEMORY_KEY_PREFIX, else the package's",
    )
    group.add_argument(
        "--data-dir",
        metavar="DIR",
        type=Path,
        default=unset,
        help=f"data dir of the embedded Redis (memory and chat threads); "
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
        type=_embeddings_name,
        metavar="NAME",
        default="local" if top_level else argparse.SUPPRESS,
        help="'local': the offline multilingual-e5-small (default); 'minilm': "
        "all-MiniLM-L6-v2 (English only, 0.1's default); 'openai:MODEL': OpenAI's (or an "
        "OpenAI-compatible server's, OPENAI_BASE_URL) embeddings; 'st:MODEL': a "
        "sentence-transformers model by name or path; "
        "'hashing': deterministic bag of words, no model (fast tests)",
    )
    return common


def _embeddings_name(value: str) -> str:
    from langchain_tiered_memory.defaults import EMBEDDINGS_CHOICES, EMBEDDINGS_PREFIXES

    if value in EMBEDDINGS_CHOICES or (
        value.startswith(EMBEDDINGS_PREFIXES) and value.partition(":")[2].strip()
    ):
        return value
    raise argparse.ArgumentTypeError(
        f"unknown embeddings {value!r}: use {', '.join(EMBEDDINGS_CHOICES)}, "
        "openai:MODEL or st:MODEL"
    )


def _user_option(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--user", metavar="USER", required=required, help="the end user's id (e.g. alice)"
    )


# Commands the CLI runs for itself (``demo`` runs each step in a process of its own): not
# in the help, nor in the list a mistyped command gets.
_HIDDEN_COMMANDS = frozenset({"demo-step"})


class _Parser(argparse.ArgumentParser):
    """An argument parser whose error for a mistyped command lists only the commands a
    user may run (a newcomer's ``tiered-memory chta`` listed the hidden ``demo-step``).
    """

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if action.dest == "command" and isinstance(choices, dict) and value not in choices:
            visible = ", ".join(repr(name) for name in choices if name not in _HIDDEN_COMMANDS)
            raise argparse.ArgumentError(
                action, f"invalid choice: {value!r} (choose from {visible})"
            )
        super()._check_value(action, value)  # type: ignore[misc]


def build_parser() -> argparse.ArgumentParser:
    """The ``tiered-memory`` argument parser."""
    common = _common_options(top_level=False)
    fmt = argparse.RawDescriptionHelpFormatter
    parser: argparse.ArgumentParser = _Parser(
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
            "the same Redis as the memory; the memory tiers carry over to every thread."
        ),
        epilog=CHAT_HELP,
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
    chat.add_argument(
        "--summarize-after",
        metavar="N",
        type=int,
        default=10,
        help="summarize in the background once N messages are unsummarized, as the "
        "graph's auto_summarize_after does (default: 10; 0: only on request)",
    )
    chat.add_argument(
        "--no-summary-at-exit",
        action="store_true",
        help="do not summarize what is unsummarized when the chat ends (by default it "
        "is, so that what you said is known in your next chat)",
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

    worker = sub.add_parser(
        "worker",
        parents=[common],
        formatter_class=fmt,
        help="summarize queued users until stopped (run many, anywhere)",
        description=_para(
            "The offline summarization job as a worker on the Redis Streams queue: "
            "summarizes the users whose turns left them with enough unsummarized "
            "messages, N at a time, until SIGTERM (which finishes the users in "
            "progress). Run as many workers as you like on one Redis; a dead worker's "
            "users are taken over by the others."
        ),
    )
    worker.add_argument(
        "--concurrency",
        metavar="N",
        type=int,
        default=8,
        help="users summarized at the same time (default: 8)",
    )
    worker.add_argument(
        "--once", action="store_true", help="drain the queue and exit (the cron form)"
    )
    worker.add_argument(
        "--min-messages",
        metavar="N",
        type=int,
        default=20,
        help="a user is due with N unsummarized messages (default: 20)",
    )
    worker.add_argument(
        "--claim-after",
        metavar="S",
        type=float,
        default=300.0,
        help="take over a user another worker has held S seconds (default: 300)",
    )
    worker.set_defaults(func=cmd_worker)

    forget = sub.add_parser(
        "forget",
        parents=[common],
        formatter_class=fmt,
        help="erase a user from every tier",
        description=_para(
            "Erase a user's history, tags and summary items, and the user's chat "
            "threads (kept in the same Redis). Asks first on a terminal."
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
    _server_option(forget)
    forget.set_defaults(func=cmd_forget)

    mcp = sub.add_parser(
        "mcp",
        parents=[common],
        formatter_class=fmt,
        help="serve one user's memory to MCP clients (stdio or HTTP)",
        description=_para(
            "Serve the memory of --user as an MCP server: add, search, list, get and delete "
            "memories, get and set tags, export and forget. The user is this configuration, "
            "never a tool argument: --user, or with --http --tokens the user of each "
            "request's bearer token. stdio (default) for clients that start the server; "
            "--http serves streamable HTTP (127.0.0.1 unless --host, which needs --tokens)."
        ),
    )
    _user_option(mcp, required=False)
    mcp.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    mcp.add_argument("--host", default="127.0.0.1", help="HTTP address (default: 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8765, help="HTTP port (default: 8765)")
    mcp.add_argument(
        "--tokens",
        metavar="FILE",
        help="HTTP: a JSON file of bearer token -> user id; one server for many users, each "
        "token reaching only its own (instead of --user; needed beyond 127.0.0.1)",
    )
    mcp.set_defaults(func=cmd_mcp)

    ui = sub.add_parser(
        "ui",
        parents=[common],
        formatter_class=fmt,
        help="a local web console: see and fix every user's memory",
        description=_para(
            "Serve a web console over the memory: the users, one user's tags (with their "
            "history), summary items, recent history and threads, each fixable; export, "
            "forget, and a recall playground showing the memory section the graph would "
            "build. Binds 127.0.0.1; another address needs --token (or "
            "TIERED_MEMORY_CONSOLE_TOKEN)."
        ),
    )
    ui.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    ui.add_argument("--port", type=int, default=8766, help="port (default: 8766)")
    ui.add_argument("--token", help="access token, required to bind beyond loopback")
    ui.add_argument("--read-only", action="store_true", help="show, never change")
    ui.set_defaults(func=cmd_ui)

    reembed = sub.add_parser(
        "reembed",
        parents=[common],
        formatter_class=fmt,
        help="re-embed stored summary items with the --embeddings model",
        description=_para(
            "Convert every user's summary items (or one user's) to the --embeddings model, "
            "after changing it. New vectors are staged beside the old ones and swapped in per "
            "user, so processes on the old model keep serving until the swap; a killed run "
            "resumes where it stopped. Restart the app with the new model afterwards."
        ),
    )
    _user_option(reembed, required=False)
    reembed.set_defaults(func=cmd_reembed)

    attachments = sub.add_parser(
        "attachments",
        parents=[common],
        formatter_class=fmt,
        help="list (or --clear) what apps attached, as every process's erasure reads it",
        description=_para(
            "The checkpointers and stores apps attached to this memory, recorded beside the "
            "data so that an erasure from any process reaches the memory's own store and says "
            "what it cannot reach. --clear forgets the record (an app that attached something "
            "records it again when it runs): after an app stopped using a saver, forget no "
            "longer reports it as unreached."
        ),
    )
    attachments.add_argument("--clear", action="store_true", help="forget the record")
    attachments.set_defaults(func=cmd_attachments)

    reindex = sub.add_parser(
        "reindex",
        parents=[common],
        formatter_class=fmt,
        help="index users stored before the console's user directory existed",
        description=_para(
            "Add every user a key scan finds to the console's directory (users by last "
            "activity), for data written by a version without it. Turns index their user "
            "themselves; running it again is harmless."
        ),
    )
    reindex.set_defaults(func=cmd_reindex)

    upgrade = sub.add_parser(
        "upgrade",
        parents=[common],
        formatter_class=fmt,
        help="bring data written by an earlier release to this one's stored format",
        description=_para(
            "Strip what releases before 0.2 kept in checkpoints and no reader needs (the "
            "memory section, the carried history), index every user in the console's "
            "directory, rewrite the embedded server's files, then record the format. Safe "
            "to run again (an interrupted upgrade is finished by running it again) and "
            "beside running processes of this version; --dry-run only reports."
        ),
    )
    upgrade.add_argument("--dry-run", action="store_true", help="report, write nothing")
    upgrade.set_defaults(func=cmd_upgrade)

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
    _server_option(export)
    export.set_defaults(func=cmd_export)
    return parser


def _server_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--langgraph-url",
        metavar="URL",
        help="a LangGraph server that runs the memory graph: its threads of the user are "
        "reached through its API, as the identity in $TIERED_MEMORY_LANGGRAPH_AUTH (the "
        "Authorization header's value, e.g. 'Bearer <token>') or $LANGGRAPH_API_KEY",
    )


# --------------------------------------------------------------------------- helpers


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 600 else text[:599] + "\u2026"


def _interrupted(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _from_model_client(exc: BaseException) -> bool:
    """Whether ``exc`` is the model client's (``openai``, ``httpx`` beneath it)."""
    return any(c.__module__.split(".")[0] in ("openai", "httpx") for c in type(exc).__mro__)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``tiered-memory``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    previous = None
    if threading.current_thread() is threading.main_thread():
        # SIGTERM (a service manager's stop, `docker stop`) ends a command as Ctrl-C does:
        # its `with` blocks close the memory, so an embedded server it started is saved and
        # shut down, not left running. Under `ui` and `mcp --http`, uvicorn shuts its server
        # down first and then raises the signal again, which lands here.
        previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        if args.command != "demo-step":  # a demo's step: the demo itself says it once
            print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (TieredMemoryError, ValueError, OSError, ImportError) as exc:
        print(f"{PROG}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        if not _from_model_client(exc):
            raise
        # a model server that is down, or a wrong URL or key: one line, not 50 frames
        where = os.environ.get("OPENAI_BASE_URL") or "the OpenAI API"
        print(
            f"{PROG}: error: the chat model at {where} failed: {_one_line(exc).rstrip('.')}. Check "
            "OPENAI_BASE_URL, OPENAI_API_KEY and --model, and that the server is running.",
            file=sys.stderr,
        )
        return EXIT_ERROR
    finally:
        if previous is not None:  # main() called in a process of the caller's
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
