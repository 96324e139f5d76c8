"""A chat model's connection error, told with the server it was calling.

``ChatOpenAI`` against a server that is down ends in ``APIConnectionError: Connection
error.`` with no URL and no fix, 130 lines of traceback below the app's call. Where the
package calls the model (the graph's model node, the middleware's model call), such an
error keeps its type and gets a note that names the base URL and what to check.

Example:
    >>> class Down(ConnectionError): ...
    >>> try:
    ...     with naming_the_server(None):
    ...         raise Down("Connection error.")
    ... except Down as exc:
    ...     "did not answer" in " ".join(getattr(exc, "__notes__", ["did not answer"]))
    True
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["naming_the_server"]


def _base_url(model: Any) -> str | None:
    for _ in range(5):  # a model bound to tools is a RunnableBinding around it
        for name in ("openai_api_base", "base_url"):
            url = getattr(model, name, None)
            if isinstance(url, str) and url:
                return url
        model = getattr(model, "bound", None)
        if model is None:
            break
    return os.environ.get("OPENAI_BASE_URL")


def _connection_error(exc: BaseException) -> bool:
    names = {c.__name__ for c in type(exc).__mro__}
    return isinstance(exc, ConnectionError) or bool(
        names & {"APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout"}
    )


@contextmanager
def naming_the_server(model: Any) -> Iterator[None]:
    """Add a note naming the model's server to a connection error raised inside."""
    try:
        yield
    except Exception as exc:
        if _connection_error(exc) and hasattr(exc, "add_note"):  # notes: Python 3.11+
            where = _base_url(model) or "its server"
            exc.add_note(
                f"langchain-tiered-memory: the chat model at {where} did not answer: check "
                "that its server runs and that base_url (OPENAI_BASE_URL) and the API key "
                "are right."
            )
        raise
