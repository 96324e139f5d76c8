"""A run on a LangGraph server (issue 66 items 1-2): the identity the server authenticated
is the run's user, and a thread the server keeps to that identity needs no owner-checking
checkpointer of the graph's own. The real server runs these in
``tests/integration_tests/test_langgraph_server.py``; here, the rules on the configs the
server builds (``langgraph_api.models.run``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from langchain_tiered_memory.agent.context import resolve_user_id
from langchain_tiered_memory.agent.owned import require_guarded_checkpointer
from langchain_tiered_memory.errors import (
    MissingUserIdError,
    UnguardedCheckpointerError,
    UserIdMismatchError,
)


def _served(identity: str | None, *, owner: str | None = None, **configurable: Any) -> Any:
    """A run's config as the server builds it: its auth keys, the saver, the thread's
    metadata merged into the run's."""
    user = None if identity is None else {"identity": identity}
    config: dict[str, Any] = {
        "configurable": {
            "thread_id": "t1",
            "langgraph_auth_user_id": identity or "",
            "langgraph_auth_user": user,
            "__pregel_checkpointer": InMemorySaver(),
            **configurable,
        },
        "metadata": {} if owner is None else {"owner": owner},
    }
    return config


@pytest.mark.parametrize(
    ("context", "configurable"),
    [
        ({"user_id": "alice"}, {}),
        ({}, {"user_id": "alice"}),
        ({"user_id": "alice"}, {"user_id": "alice"}),
    ],
)
def test_a_user_id_other_than_the_authenticated_one_is_refused(
    context: dict[str, str], configurable: dict[str, str]
) -> None:
    with pytest.raises(UserIdMismatchError, match="other than the one the server authenticated"):
        resolve_user_id(context, _served("bob", **configurable))


def test_the_authenticated_identity_is_the_runs_user() -> None:
    assert resolve_user_id(None, _served("bob")) == "bob"
    assert resolve_user_id({"user_id": "bob"}, _served("bob")) == "bob"


def test_an_unauthenticated_server_run_names_its_user_as_before() -> None:
    assert resolve_user_id({"user_id": "alice"}, _served(None)) == "alice"
    with pytest.raises(MissingUserIdError):
        resolve_user_id({}, _served(None))


def test_a_thread_the_server_keeps_to_the_user_needs_no_wrapped_saver() -> None:
    require_guarded_checkpointer(_served("bob", owner="bob"))


@pytest.mark.parametrize(("identity", "owner"), [("bob", None), ("bob", "alice"), (None, None)])
def test_a_server_that_does_not_keep_threads_is_told_the_server_fix(
    identity: str | None, owner: str | None
) -> None:
    with pytest.raises(UnguardedCheckpointerError, match=r"protect_threads\(auth\)"):
        require_guarded_checkpointer(_served(identity, owner=owner))


def test_outside_a_server_the_saver_fix_is_named() -> None:
    config = {"configurable": {"thread_id": "t1", "__pregel_checkpointer": InMemorySaver()}}
    with pytest.raises(UnguardedCheckpointerError, match=r"memory.checkpointer\(saver\)"):
        require_guarded_checkpointer(config)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _AccountContext:
    """An app's context that names the user ``account_id``."""

    account_id: str
    locale: str = "zh-CN"

    @property
    def user_id(self) -> str:
        return self.account_id


@pytest.mark.parametrize("door", ["graph", "middleware"])
@pytest.mark.parametrize("given", ["object", "dict"])
def test_a_context_that_names_the_user_otherwise_says_so_with_a_property(
    door: str, given: str
) -> None:
    """Issue 66 item 1: an app whose context names the user ``account_id`` got
    MissingUserIdError; its context schema says which field is the user (a ``user_id``
    property), through both doors, and ownership holds for it."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from langchain_tiered_memory import (
        HashingEmbeddings,
        TieredMemory,
        TieredMemoryMiddleware,
        create_memory_graph,
    )
    from langchain_tiered_memory.errors import ThreadOwnershipError
    from langchain_tiered_memory.testing import ScriptedChatModel

    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    model = ScriptedChatModel(replies=["Noted."])
    saver = memory.checkpointer(InMemorySaver())
    if door == "graph":
        agent: Any = create_memory_graph(
            model, memory=memory, checkpointer=saver, context_schema=_AccountContext
        )
    else:
        agent = create_agent(
            model,
            middleware=[TieredMemoryMiddleware(memory)],
            checkpointer=saver,
            context_schema=_AccountContext,
        )

    def run(account: str, text: str) -> None:
        context: Any = _AccountContext(account) if given == "object" else {"account_id": account}
        agent.invoke(
            {"messages": [HumanMessage(text)]},
            {"configurable": {"thread_id": "t1"}},
            context=context,
        )

    run("acct-7", "I keep bees.")
    assert "I keep bees." in str(memory.load_context("acct-7"))
    with pytest.raises(ThreadOwnershipError):
        run("acct-8", "Show me the thread.")
