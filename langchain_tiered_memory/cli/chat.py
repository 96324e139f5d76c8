"""``tiered-memory chat``: a terminal chat on the memory graph, with slash commands."""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from langchain_tiered_memory.cli.common import (
    CHAT_HELP,
    EXIT_OK,
    checkpoint_thread_id,
    describe_model,
    load_chat_model,
    open_memory,
    rich_console,
    user_id_of,
)
from langchain_tiered_memory.cli.render import (
    esc,
    items_table,
    line,
    print_memory_section,
    print_update,
    tags_table,
)

__all__ = ["cmd_chat"]


def cmd_chat(args: argparse.Namespace) -> int:
    """``chat --user U [--thread T] [--show-prompt]``."""
    from langchain_tiered_memory.agent.graph import create_memory_graph
    from langchain_tiered_memory.defaults import open_checkpointer

    user = user_id_of(args)
    console = rich_console()
    with open_memory(args) as memory, open_checkpointer(memory) as saver:
        with console.status("loading the chat model..."):
            model, force = load_chat_model(args.model)
        # as an app's graph would: the history is summarized in the background once a
        # user has this many unsummarized messages, so recall works without /summarize
        graph = create_memory_graph(
            model,
            memory=memory,
            checkpointer=saver,
            small_model=force,
            auto_summarize_after=args.summarize_after or None,
        )
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
            f"user [bold]{esc(user)}[/bold], thread [bold]{esc(thread)}[/bold] "
            f"(resume with --thread {esc(thread)}); model: {esc(describe_model(model))}; "
            f"memory: {esc(str(memory.redis_url))}",
            highlight=False,
        )
        console.print("type /help for the slash commands, /quit to leave", style="dim")
        try:
            session.loop()
        finally:
            with console.status("finishing the background summarization..."):
                memory.wait_for_background()
        if not args.no_summary_at_exit:
            session.keep_what_was_said()
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
        self.memory_section = ""  # the last turn's memory section (/prompt shows it)
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
        from langchain_tiered_memory.agent.graph import LOAD_MEMORY
        from langchain_tiered_memory.cli.demo import run_turn

        printer = print_update(self.console)

        def show(node: str, update: dict[str, Any]) -> None:
            if node == LOAD_MEMORY:
                # the turn's memory section: loaded each turn, not kept in the thread
                self.memory_section = str(update.get("memory_prompt") or "")
                if self.show_prompt:
                    print_memory_section(self.console, self.memory_section, self.user)
            printer(node, update)

        with self.console.status("the model is thinking..."):
            result = run_turn(
                self.graph, user_id=self.user, thread_id=self.thread_id, text=text, on_update=show
            )
        line(self.console, f"assistant> {result.reply or '(no text)'}", style="bold")
        # as the demo does: a small model's template or report is not the model's answer
        who = "the package wrote this reply" if result.by_package else "the model's reply"
        line(self.console, f"  [{who}]", style="dim")

    def keep_what_was_said(self) -> None:
        """At the end of a session, summarize what the history holds unsummarized, so that
        what the user said in this chat is known in the next one (a newcomer does not
        know /summarize); a model that gives no usable item keeps the user's own
        statements.
        """
        from langchain_tiered_memory.agent.policy import ModelPolicy
        from langchain_tiered_memory.errors import SummarizationError

        options = {**ModelPolicy(small=self.small).summary_options, "extractive_fallback": True}
        try:
            with self.console.status("keeping what you said for your next chat..."):
                ids = self.memory.summarize_history(self.user, self.model, **options)
        except SummarizationError as exc:
            line(self.console, f"could not keep this chat in memory: {exc}", style="red")
            return
        if ids:
            line(self.console, f"kept {len(ids)} item(s) for your next chat", style="dim")

    def command(self, text: str) -> bool:
        """Run a slash command; ``False`` to leave the chat."""
        from langchain_tiered_memory.agent.policy import ModelPolicy
        from langchain_tiered_memory.agent.prompt import base_system_prompt
        from langchain_tiered_memory.errors import SummarizationError

        name, _, rest = text.partition(" ")
        name, rest = name.lower(), rest.strip()
        if name in {"/quit", "/exit", "/q"}:
            return False
        if name == "/help":
            line(self.console, CHAT_HELP)
        elif name == "/tags":
            self.console.print(tags_table(self.memory.get_user_tags(self.user)))
        elif name == "/recall":
            if not rest:
                line(self.console, "usage: /recall QUERY", style="red")
            else:
                docs = self.memory.recall_summaries(self.user, rest, n=5)
                self.console.print(items_table(docs, f"recalled for {esc(repr(rest))}", score=True))
        elif name == "/summarize":
            try:
                with self.console.status("summarizing..."):
                    ids = self.memory.summarize_history(
                        self.user, self.model, **ModelPolicy(small=self.small).summary_options
                    )
            except SummarizationError as exc:
                line(self.console, f"summarizing failed: {exc}", style="red")
            else:
                line(self.console, f"stored {len(ids)} item(s)" if ids else "nothing new")
        elif name == "/prompt":
            # what the graph sent this model on the last turn (chat builds it with
            # small_model=self.small)
            line(self.console, "base system prompt:", style="bold")
            for row in base_system_prompt(self.small).splitlines():
                line(self.console, f"  | {row}")
            print_memory_section(self.console, self.memory_section, self.user)
        elif name == "/forget":
            answer = self.console.input(f"Erase every memory of {esc(repr(self.user))}? \\[y/N] ")
            if answer.strip().lower() in {"y", "yes"}:
                removed = self.memory.forget_user(self.user)
                parts = ", ".join(f"{n} {what}" for what, n in removed.items())
                line(self.console, f"forgot {self.user!r}: removed {parts}")
            else:
                line(self.console, "nothing erased")
        else:
            line(self.console, f"unknown command {name}; /help lists them", style="red")
        return True


# --------------------------------------------------------------------------- main
