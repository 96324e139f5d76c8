"""Issue 77 item 2: ``protect_threads`` covers every resource of LangGraph's ``Auth``,
and keeps an app's own handlers for a resource as they are (the real server runs it in
``tests/integration_tests/test_langgraph_server_scope.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph_sdk import Auth

from langchain_tiered_memory.deploy import protect_threads


def test_every_resource_has_a_handler() -> None:
    # a resource-wide handler covers every action the server dispatches for it (the
    # server's own start-up check, run on the real server in the integration test)
    handlers = protect_threads(Auth())._handlers
    assert {("threads", "*"), ("assistants", "*"), ("crons", "*"), ("store", "*")} <= set(handlers)


def test_an_apps_own_assistant_handler_is_kept(caplog: pytest.LogCaptureFixture) -> None:
    auth = Auth()

    @auth.on.assistants
    async def mine(ctx: Any, value: Any) -> bool:
        return False

    protect_threads(auth)  # registering assistants handlers again would raise
    assert auth._handlers[("assistants", "*")] == [mine]
    assert ("assistants", "create") not in auth._handlers
    assert ("store", "*") in auth._handlers and ("crons", "create") in auth._handlers
    assert "app's own assistants handlers are kept" in caplog.text
