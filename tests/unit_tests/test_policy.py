"""``ModelPolicy``: one decision, from a marker on the model, for the graph and the middleware."""

from __future__ import annotations

from langchain_tiered_memory.agent.policy import ModelPolicy, is_small_model
from langchain_tiered_memory.local import ChatLocalTransformers
from langchain_tiered_memory.testing import ScriptedChatModel


def test_a_capable_model_gets_no_guard() -> None:
    policy = ModelPolicy.for_model(ScriptedChatModel(replies=["hi"]))
    assert not policy.small and policy.reconcile and not policy.grounded
    assert policy.tag_capture == "after_turn" and not policy.forced_capture
    assert policy.max_context_messages == 20


def test_a_marked_local_model_gets_every_guard_also_when_bound() -> None:
    model = ChatLocalTransformers()  # nothing loads until the first call
    for candidate in (model, model.bind_tools([]), model.bind(stop=["x"])):
        policy = ModelPolicy.for_model(candidate)
        assert policy.small and policy.forced_capture and policy.grounded
        assert policy.tag_capture == "forced" and not policy.reconcile
        assert policy.max_context_messages == 0


def test_the_caller_overrides_the_marker_and_llamacpp_is_known_by_name() -> None:
    assert not ModelPolicy.for_model(ChatLocalTransformers(), small=False).small
    assert ModelPolicy.for_model(ScriptedChatModel(replies=["hi"]), small=True).small

    class ChatLlamaCpp:  # langchain-community's class, recognized without importing it
        pass

    assert is_small_model(ChatLlamaCpp())
    assert not is_small_model(object())


GUARDS = ("extractive_fallback", "compact_prompt", "current_turn_only", "scripted_requests")


def test_every_guard_the_graph_reads_follows_the_one_decision() -> None:
    small, capable = ModelPolicy(small=True), ModelPolicy(small=False)
    for guard in GUARDS:
        assert getattr(small, guard) is True, guard
        assert getattr(capable, guard) is False, guard


def test_the_graph_takes_its_guards_from_the_policy_not_from_the_flag() -> None:
    """create_memory_graph reads ModelPolicy's properties (a guard switched on by a raw
    ``small_model`` bool would bypass the one decision)."""
    import ast
    import inspect

    from langchain_tiered_memory.agent import graph

    tree = ast.parse(inspect.getsource(graph.create_memory_graph))
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert set(GUARDS) <= read
    names = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "small_model"]
    assert len(names) == 1  # passed once, to ModelPolicy.for_model


def test_the_middleware_reads_every_guard_the_graph_reads() -> None:
    """Issue 35: the middleware and the graph switch the same guards, from the policy."""
    import ast
    import inspect

    from langchain_tiered_memory.agent import middleware

    tree = ast.parse(inspect.getsource(middleware.TieredMemoryMiddleware))
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert set(GUARDS) <= read, set(GUARDS) - read
