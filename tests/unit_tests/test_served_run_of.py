"""Issue 77 item 2: on a LangGraph server, a saver that checks thread owners takes the
run's user by the graph's rule (the authenticated identity; a run naming another user,
in its own context or its assistant's, refused) at the read that records the thread's
owner, before anything is written. The real server runs it in
``tests/integration_tests/test_langgraph_server_scope.py``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from langchain_tiered_memory.errors import ServedUserIdMismatchError, UserIdMismatchError
from langchain_tiered_memory.persistence.checkpoint.owned import run_of


def _read(identity: str, context: dict[str, Any], **configurable: Any) -> Any:
    """A run's first read as the server configures it (its auth keys, LangGraph's Runtime
    carrying the merged context)."""
    return {
        "configurable": {
            "thread_id": "t1",
            "checkpoint_ns": "",
            "langgraph_auth_user_id": identity,
            "langgraph_auth_user": {"identity": identity},
            "__pregel_runtime": SimpleNamespace(context=context),
            **configurable,
        }
    }


@pytest.mark.parametrize(
    ("context", "configurable"),
    [({"user_id": "alice"}, {"user_id": "bob"}), ({}, {"user_id": "alice"})],
)
def test_a_served_run_naming_another_user_is_refused_at_the_first_read(
    context: dict[str, Any], configurable: dict[str, Any]
) -> None:
    with pytest.raises(ServedUserIdMismatchError, match="remove user_id") as refused:
        run_of(_read("bob", context, **configurable))
    # what apps catch, and what LangGraph's server passes to the client with its message
    assert isinstance(refused.value, UserIdMismatchError)
    assert isinstance(refused.value, ValueError)


def test_a_served_run_is_its_identitys() -> None:
    assert run_of(_read("bob", {}, user_id="bob")) == ("bob", "t1")
    assert run_of(_read("bob", {"user_id": "bob"})) == ("bob", "t1")
    assert run_of(_read("bob", {})) == ("bob", "t1")  # no name at all: the identity


def test_outside_a_server_the_context_names_the_user() -> None:
    config: Any = {
        "configurable": {
            "thread_id": "t1",
            "__pregel_runtime": SimpleNamespace(context={"user_id": "alice"}),
        }
    }
    assert run_of(config) == ("alice", "t1")
