"""``tiered-memory ui``: a local web console to see and fix what the agent remembers.

Server-rendered pages (Starlette and Jinja2, no script, every asset in the wheel) over the
same store as everything else. Install the ``[ui]`` extra.

Example:
    >>> from langchain_tiered_memory.console import create_app, check_bind
    >>> check_bind("127.0.0.1", None)
    >>> app = create_app(memory)  # doctest: +SKIP
"""

from langchain_tiered_memory.console.app import create_app
from langchain_tiered_memory.console.security import check_bind

__all__ = ["check_bind", "create_app"]
