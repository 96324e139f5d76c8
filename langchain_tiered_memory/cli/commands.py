"""The maintenance commands: inspect, export, forget, summarize, and the demo's entry points."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from langchain_tiered_memory.cli.common import (
    EXIT_ERROR,
    EXIT_OK,
    attach_server,
    checkpoint_thread_id,
    data_dir_of,
    describe_model,
    load_chat_model,
    open_memory,
    rich_console,
    user_id_of,
)
from langchain_tiered_memory.cli.render import (
    esc,
    items_table,
    messages_table,
    position_range,
    tags_table,
)
from langchain_tiered_memory.errors import InvalidArgumentError

__all__ = [
    "cmd_demo",
    "cmd_demo_step",
    "cmd_export",
    "cmd_forget",
    "cmd_inspect",
    "cmd_summarize",
    "cmd_ui",
]


def cmd_inspect(args: argparse.Namespace) -> int:
    """``inspect --user U``."""
    user = user_id_of(args)
    console = rich_console()
    with open_memory(args) as memory:
        tags = memory.get_user_tags(user)
        total = memory.history.length(user)  # positions: every message ever written
        kept = len(memory.history.since(user, 0)[1])  # not trimmed, not forgotten
        last = memory.load_context(user, max(args.last, 0))
        items = memory.summaries.get_all(user)
        watermark = memory.summaries.get_watermark(user)
        console.print(
            f"[bold]user[/bold] {esc(repr(user))} on {esc(str(memory.redis_url))}",
            highlight=False,
        )
        if not (tags or total or items):
            console.print(
                "no memory of this user here: no tags, messages or summary items (check "
                "the user id, --data-dir / --redis-url and --key-prefix)",
                highlight=False,
            )
            return EXIT_OK
        console.print(tags_table(tags))
        console.print(
            messages_table(
                last,
                max(total - len(last), 0),
                f"last {len(last)} of {kept} kept messages ({total} written; summarized: "
                f"{position_range(0, watermark)})",
            )
        )
        console.print(items_table(items, f"summary items ({len(items)})"))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    """``export --user U``: JSON on stdout."""
    user = user_id_of(args)
    with open_memory(args) as memory:
        attach_server(memory, args)
        data = memory.export_user(user)
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")
    return EXIT_OK


def cmd_mcp(args: argparse.Namespace) -> int:
    """``mcp --user U [--http --port P]``: runs until the client (or Ctrl-C) ends it."""
    try:
        # the module imports the SDK only when a server is made: ask for it here, so that
        # a missing extra is named, not a bare "No module named 'mcp'"
        import mcp.server.fastmcp  # noqa: F401

        from langchain_tiered_memory.mcp_server import create_mcp_server
    except ImportError as exc:
        raise ImportError(
            "tiered-memory mcp needs the [mcp] extra: pip install 'langchain-tiered-memory[mcp]' "
            "(from a clone: pip install -e '.[mcp]')"
        ) from exc
    from mcp.server.transport_security import TransportSecuritySettings

    from langchain_tiered_memory.console.security import is_loopback  # Starlette: with mcp

    tokens = _mcp_tokens(args)
    user = None if tokens else user_id_of(args)
    with open_memory(args) as memory:
        server = create_mcp_server(memory, user_id=user, tokens=tokens or None)
        if not args.http:
            _serve_stdio(server, memory)
            return EXIT_OK
        host = args.host
        if is_loopback(host):
            # the names this server is reached by (127.0.0.2 too), against DNS rebinding
            names = dict.fromkeys([host, "127.0.0.1", "localhost", "[::1]"])
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=[f"{n}:*" for n in names],
                allowed_origins=[f"http://{n}:*" for n in names],
            )
        else:  # reached by other names; every request needs a token anyway
            security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        server.settings.transport_security = security
        whose = f"user {user!r}" if user else f"{len(set(tokens.values()))} users by token"
        _serve_http(server, host, args.port, f"MCP server for {whose}")
    return EXIT_OK


def _serve_http(server: Any, host: str, port: int, what: str) -> None:
    """Serve streamable HTTP; say the URL once the port is bound, never before (a client
    would send its bearer token to whatever holds a busy port).
    """
    import uvicorn

    class Announcing(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets=sockets)
            if self.started:
                shown = f"[{host}]" if ":" in host else host
                print(f"{what}: http://{shown}:{port}/mcp", file=sys.stderr, flush=True)

    config = uvicorn.Config(server.streamable_http_app(), host=host, port=port, log_level="warning")
    Announcing(config).run()  # a port already in use: uvicorn logs it and exits 1


def _serve_stdio(server: Any, memory: Any) -> None:
    """Serve over stdio until the client closes stdin, or one Ctrl-C or SIGTERM.

    The SDK reads stdin in a thread that no cancellation reaches: after a signal the
    process waited for the client's next line. So a signal closes the memory (its
    embedded server with it) and ends the process at once.
    """
    import os
    import signal

    def stop(signum: int, frame: Any) -> None:
        try:
            memory.close()
        finally:
            sys.stderr.flush()
            os._exit(EXIT_OK)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.run("stdio")  # stdout carries the protocol: nothing else is printed there
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _one_each(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are each given once: a token named twice (the last one
    would win: Alice's token acting as Bob) is refused.
    """
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"the token {key[:4]}... is given twice; give each token once")
        seen[key] = value
    return seen


def _mcp_tokens(args: argparse.Namespace) -> dict[str, str]:
    """``--tokens FILE`` ({token: user} as JSON) for HTTP; a bind beyond loopback needs it."""
    from langchain_tiered_memory.console.security import is_loopback

    if args.tokens is None:
        if args.http and not is_loopback(args.host):
            raise InvalidArgumentError(
                f"--host {args.host} is reachable from other machines: give --tokens FILE "
                "(a JSON object of bearer token -> user id), or bind 127.0.0.1."
            )
        if args.user is None:
            raise InvalidArgumentError("give --user (one user) or, with --http, --tokens FILE.")
        return {}
    if not args.http:
        raise InvalidArgumentError("--tokens needs --http: over stdio the client is the user.")
    if args.user is not None:
        raise InvalidArgumentError("give --user or --tokens, not both.")
    try:
        tokens = json.loads(
            Path(args.tokens).read_text(encoding="utf-8"), object_pairs_hook=_one_each
        )
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError(f"--tokens {args.tokens}: {exc}") from exc
    if not isinstance(tokens, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in tokens.items()
    ):
        raise InvalidArgumentError(
            f"--tokens {args.tokens}: a JSON object of bearer token -> user id, e.g. "
            '{"<token>": "alice"}.'
        )
    return tokens


def cmd_ui(args: argparse.Namespace) -> int:
    """``ui [--host H --port P --token T --read-only]``: serves until Ctrl-C."""
    try:
        import uvicorn

        from langchain_tiered_memory.console import check_bind, create_app
    except ImportError as exc:  # pragma: no cover - the extra is missing
        raise ImportError(
            "tiered-memory ui needs the [ui] extra: pip install 'langchain-tiered-memory[ui]' "
            "(from a clone: pip install -e '.[ui]')"
        ) from exc
    import os

    token = args.token or os.environ.get("TIERED_MEMORY_CONSOLE_TOKEN") or None
    check_bind(args.host, token)  # before opening anything: a refused bind leaves no trace
    with open_memory(args) as memory:
        app = create_app(memory, host=args.host, token=token, read_only=args.read_only)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning")
        server = uvicorn.Server(config)
        shown = f"[{args.host}]" if ":" in args.host else args.host
        address = f"http://{shown}:{server.config.port}/"
        if token:
            address += "?token=<your token>"
        mode = " (read-only)" if args.read_only else ""
        print(f"memory console{mode}: {address}  (Ctrl-C stops it)", file=sys.stderr, flush=True)
        from langchain_tiered_memory.console.views import store_label

        # an app on $REDIS_URL opened without it shows an empty console: say which store
        print(f"reading: {store_label(memory)}", file=sys.stderr, flush=True)
        server.run()
    return EXIT_OK


def cmd_reembed(args: argparse.Namespace) -> int:
    """``reembed [--user U]``: a progress bar on stderr, one line per user on stdout."""
    from rich.progress import Progress

    users = [user_id_of(args)] if args.user else None
    console = rich_console()
    with open_memory(args) as memory, Progress(console=rich_console(stderr=True)) as bar:
        task = bar.add_task("re-embedding", total=None)

        def report(user: str, done: int, total: int) -> None:
            bar.update(task, description=f"user {user!r}", completed=done, total=total)

        converted = memory.reembed(users, progress=report)
    for user, n in converted.items():
        console.print(f"{esc(repr(user))}: {n} items", highlight=False)
    console.print(f"re-embedded {len(converted)} users", highlight=False)
    return EXIT_OK


def cmd_reindex(args: argparse.Namespace) -> int:
    """``reindex``: index users written before the console's directory index existed."""
    from langchain_tiered_memory.stores.directory import RedisUserDirectory

    console = rich_console()
    with open_memory(args) as memory:
        directory = RedisUserDirectory.of(memory.history)
        if directory is None:
            console.print("nothing to index: this memory is not on Redis", highlight=False)
            return EXIT_OK
        added = directory.reindex()
    console.print(f"indexed {added} users not in the directory before", highlight=False)
    return EXIT_OK


def cmd_upgrade(args: argparse.Namespace) -> int:
    """``upgrade [--dry-run]``: data of an earlier format brought to this release's."""
    from langchain_tiered_memory.upgrade import upgrade

    console = rich_console()
    with open_memory(args) as memory:
        report = upgrade(memory, dry_run=args.dry_run)
    found = report["from_format"]
    if found is None:
        console.print(f"no data yet: recorded as format {report['to_format']}", highlight=False)
        return EXIT_OK
    verb = "would strip" if args.dry_run else "stripped"
    console.print(
        f"format {found} -> {report['to_format']}: {verb} {report['fields']} stored values "
        f"no reader needs from {report['threads']} threads; indexed "
        f"{report['users_indexed']} users"
        + (" (dry run: nothing written)" if args.dry_run else ""),
        highlight=False,
    )
    return EXIT_OK


def cmd_attachments(args: argparse.Namespace) -> int:
    """``attachments [--clear]``: what apps attached, as every process's erasure reads it."""
    console = rich_console()
    with open_memory(args) as memory:
        record = memory.tiers.attachment_record()
        if record is None:
            console.print("nothing recorded: this memory is not on Redis", highlight=False)
            return EXIT_OK
        if args.clear:
            console.print(f"cleared {record.clear()} entries", highlight=False)
            return EXIT_OK
        found = record.read()
    for template in found.own_store_namespaces:
        console.print(f"own store namespace {esc(repr(template))}", highlight=False)
    for other in sorted(found.others):
        console.print(f"{esc(other)} (reached only by a process that holds it)", highlight=False)
    if not found.own_store_namespaces and not found.others:
        console.print("nothing attached", highlight=False)
    return EXIT_OK


def cmd_forget(args: argparse.Namespace) -> int:
    """``forget --user U``."""
    user = user_id_of(args)
    console = rich_console()
    what = f"thread {args.thread!r} of user" if args.thread else "every memory of user"
    if not args.yes and sys.stdin.isatty():
        answer = console.input(f"Erase {esc(what)} {esc(repr(user))}? \\[y/N] ")
        if answer.strip().lower() not in {"y", "yes"}:
            console.print("nothing erased")
            return EXIT_ERROR
    if args.thread:
        return _forget_thread(args, user, console)
    # the one erasure: every tier, the user's threads in the memory's checkpointer and
    # items in its store, the server's files
    with open_memory(args) as memory:
        attach_server(memory, args)
        removed = memory.forget_user(user)
    unreached = removed.pop("unreached", 0)
    parts = ", ".join(f"{n} {what}" for what, n in removed.items())
    console.print(f"forgot user {esc(repr(user))}: removed {parts}", highlight=False)
    if unreached:  # the app attached savers or stores this process does not hold
        console.print(
            f"[red]not complete:[/red] the app attached {unreached} checkpointer(s), "
            "store(s) or LangGraph server(s) this command cannot reach (the log names "
            "them): erase the user from the app's own process too (memory.forget_user), "
            "where they are attached; for a LangGraph server's threads, run this again "
            "with --langgraph-url URL and $TIERED_MEMORY_LANGGRAPH_AUTH.",
            highlight=False,
        )
        return EXIT_ERROR
    return EXIT_OK


def _forget_thread(args: argparse.Namespace, user: str, console: Any) -> int:
    with open_memory(args) as memory:
        attach_server(memory, args)
        # chat threads are recorded under a user-scoped id; an app's under its own
        thread = args.thread
        if thread not in memory.history.threads(user):
            thread = checkpoint_thread_id(user, thread)
        removed = memory.forget_thread(user, thread)
    parts = ", ".join(f"{n} {what}" for what, n in removed.items())
    console.print(
        f"forgot thread {esc(repr(args.thread))} of user {esc(repr(user))}: removed {parts}",
        highlight=False,
    )
    return EXIT_OK


def cmd_summarize(args: argparse.Namespace) -> int:
    """``summarize --user U | --all``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Table

    from langchain_tiered_memory.agent.policy import ModelPolicy
    from langchain_tiered_memory.errors import SummarizationError

    user = user_id_of(args) if args.user is not None else None
    console = rich_console()
    with open_memory(args) as memory:
        users = [user] if user is not None else memory.pending_users(max(args.min_messages, 1))
        if not users:
            console.print("no user has unsummarized messages: nothing to do")
            return EXIT_OK
        with console.status("loading the chat model..."):
            model, small = load_chat_model(args.model)
        console.print(f"model: {esc(describe_model(model))}", highlight=False)
        results = Table(title="summarization", title_justify="left")
        results.add_column("user")
        results.add_column("result")
        failed = 0
        columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
        with Progress(*columns, console=console, transient=True) as progress:
            task = progress.add_task("summarizing", total=len(users))
            for uid in users:
                progress.update(task, description=f"summarizing {esc(uid)}")
                try:
                    ids = memory.summarize_history(
                        uid, model, **ModelPolicy(small=small).summary_options
                    )
                    outcome = f"{len(ids)} item(s) stored" if ids else "nothing new"
                except SummarizationError as exc:
                    failed += 1
                    outcome = f"[red]failed[/red]: {esc(str(exc))}"
                results.add_row(esc(uid), outcome)
                progress.advance(task)
        console.print(results)
    return EXIT_ERROR if failed else EXIT_OK


def cmd_worker(args: argparse.Namespace) -> int:
    """``worker [--concurrency N] [--once] [--claim-after S]``."""
    import asyncio
    import signal

    from langchain_tiered_memory.agent.policy import ModelPolicy
    from langchain_tiered_memory.summarization.worker import SummaryWorker, WorkerStats

    console = rich_console(stderr=True)
    with open_memory(args) as memory:
        memory.summarize_after = args.min_messages
        with console.status("loading the chat model..."):
            model, small = load_chat_model(args.model)
        options = ModelPolicy(small=small).summary_options
        worker = SummaryWorker(
            memory,
            model,
            concurrency=args.concurrency,
            claim_after=args.claim_after,
            extractive_fallback=options["extractive_fallback"],
            grounded=options["grounded"],
            reconcile=options["reconcile"],
        )
        console.print(
            f"worker {worker.consumer}: model {esc(describe_model(model))}, "
            f"{args.concurrency} at a time, memory {esc(str(memory.redis_url))}",
            highlight=False,
        )
        last = [0.0]

        def progress(stats: WorkerStats) -> None:
            import time

            now = time.monotonic()
            if now - last[0] >= 1.0:
                last[0] = now
                queue = stats.queue
                console.print(
                    f"done {stats.done}  failed {stats.failed}  claimed {stats.claimed}  "
                    f"items {stats.items}  ({stats.rate:.1f} users/s)  queued "
                    f"{queue.get('queued', '?')}  pending {queue.get('pending_users', '?')}  "
                    f"lag {queue.get('lag_s', '?')} s",
                    highlight=False,
                )

        async def main() -> WorkerStats:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                # finish the users in progress, then return (a second signal kills)
                loop.add_signal_handler(sig, worker.stop)
            try:
                return await worker.run(once=args.once, on_progress=progress)
            finally:
                await memory.aclose()

        stats = asyncio.run(main())
        last[0] = 0.0
        progress(stats)
    return EXIT_ERROR if stats.failed else EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    """``demo``."""
    from langchain_tiered_memory.cli.demo import run_demo

    return run_demo(
        data_dir=Path(args.data_dir).expanduser() if args.data_dir else None,
        user_id=user_id_of(args),
        model_name=args.model,
        embeddings=args.embeddings,
        redis_url=args.redis_url,
        keep=args.keep,
        console=rich_console(),
    )


def cmd_demo_step(args: argparse.Namespace) -> int:
    """``demo-step N`` (hidden; run by ``demo`` in a fresh process)."""
    from langchain_tiered_memory.cli.demo import run_demo_step

    return run_demo_step(
        args.step,
        data_dir=data_dir_of(args),
        user_id=user_id_of(args),
        model_name=args.model,
        embeddings=args.embeddings,
        redis_url=args.redis_url,
        console=rich_console(),
    )
