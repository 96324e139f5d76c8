"""How the CLI shows memory: rich tables, the memory section, tool calls."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    ToolMessage,
)
from rich.console import Console
from rich.text import Text

__all__ = ["format_call", "line", "print_memory_section", "print_update", "visible"]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    r"""``text`` with every control character but newline and tab shown as ``\xNN``:
    stored text is what users typed, and an ESC sequence in it (clear the screen, OSC 52
    clipboard write) must not reach the terminal.

    Example:
        >>> visible("hi" + chr(27) + "[2J" + chr(7))
        'hi\\x1b[2J\\x07'
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def esc(text: str) -> str:
    """``text`` with rich markup escaped and control characters shown (:func:`visible`):
    stored data and user input are never markup nor terminal commands.
    """
    from rich.markup import escape

    return escape(visible(text))


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def tags_table(tags: dict[str, str], title: str = "tags") -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("tag", style="bold")
    table.add_column("value")
    for key, value in sorted(tags.items()):
        table.add_row(esc(key), esc(value))
    if not tags:
        table.add_row("[dim](none)[/dim]", "")
    return table


def items_table(docs: Sequence[Any], title: str, *, score: bool = False) -> Any:
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
            position_range(int(meta["source_start"]), int(meta.get("source_end", 0)))
            if "source_start" in meta
            else "",
            esc(doc.page_content)
            + (
                f" [dim](superseded by #{esc(str(meta['superseded_by']))} on "
                f"{esc(str(meta.get('valid_until', ''))[:10])})[/dim]"
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


def position_range(start: int, end: int) -> str:
    """Message positions ``start`` (inclusive) to ``end`` (exclusive) as people read them:
    ``#0-#3`` (an item's source, what a watermark of 4 covers), ``#5``, or ``none``.
    """
    if end <= start:
        return "none"
    return f"#{start}" if end - start == 1 else f"#{start}-#{end - 1}"


def messages_table(messages: Sequence[Any], first: int, title: str) -> Any:
    from langchain_core.messages import AIMessage
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("role")
    table.add_column("text")
    for i, message in enumerate(messages, start=first):
        text = message.text if isinstance(message.text, str) else str(message.content)
        if isinstance(message, AIMessage) and message.tool_calls:
            calls = "; ".join(format_call(c) for c in message.tool_calls)
            text = f"{text} [calls {calls}]".strip()
        table.add_row(str(i), message.type, esc(_short(text)))
    if not messages:
        table.add_row("", "", "[dim](none)[/dim]")
    return table


# --------------------------------------------------------------------------- commands


def format_call(call: Mapping[str, Any]) -> str:
    """``user_tag(name='Alice', age=30)``."""
    args = ", ".join(f"{k}={v!r}" for k, v in (call.get("args") or {}).items())
    return f"{call.get('name')}({args})"


def print_update(console: Console) -> Callable[[str, dict[str, Any]], None]:
    """An ``on_update`` for :func:`run_turn` that prints tool calls and their results."""

    def show(node: str, update: dict[str, Any]) -> None:
        for message in update.get("messages") or []:
            if isinstance(message, AIMessage):
                for call in message.tool_calls:
                    line(console, f"  [tool call] {format_call(call)}", style="cyan")
            elif isinstance(message, ToolMessage):
                status = "error" if message.status == "error" else "result"
                line(console, f"  [tool {status}] {message.name}: {message.text}", style="cyan")

    return show


def line(console: Console, text: str, style: str | None = None) -> None:
    """Print ``text`` as data: no markup, no highlighting, no wrapping."""
    console.print(Text(visible(text), style=style or ""), soft_wrap=True, highlight=False)


def print_memory_section(console: Console, memory_prompt: str, user_id: str) -> None:
    """Print the memory section of the system prompt, indented."""
    line(console, "memory section of the system prompt:", style="bold")
    if not memory_prompt.strip():
        line(console, f"  (empty: memory knows nothing about {user_id!r} yet)", style="dim")
        return
    for row in memory_prompt.splitlines():
        line(console, f"  | {row}", style="green")


# --------------------------------------------------------------------------- one step


def clip(text: str, limit: int = 400) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit} more characters)"
