"""``tiered-memory ui``: a local web console to see and fix what the agent remembers.

Server-rendered pages (Starlette and Jinja2, no script, every asset in the wheel) over the
same store as everything else. Install the ``[ui]`` extra.

Example:
    >>> from langchain_tiered_memory.console import create_app, check_bind
    >>> check_bind("127.0.0.1", None)
    >>> app = create_app(memory)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_tiered_memory.console.app import create_app
    from langchain_tiered_memory.console.security import check_bind

__all__ = ["check_bind", "create_app"]


def __getattr__(name: str) -> Any:
    # loaded on first use: `tiered-memory mcp --http` reads console.security's loopback
    # check with the [mcp] extra alone, which brings Starlette but not Jinja2
    if name == "create_app":
        from langchain_tiered_memory.console.app import create_app

        return create_app
    if name == "check_bind":
        from langchain_tiered_memory.console.security import check_bind

        return check_bind
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
