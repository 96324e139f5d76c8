"""``ModelPolicy``: one decision, from a marker on the model, for the graph and the middleware."""

from __future__ import annotations

from dataclasses import fields

import pytest

from langchain_tiered_memory.agent.policy import GUARDS, Guards, ModelPolicy, is_small_model
from langchain_tiered_memory.local import ChatLocalTransformers
from langchain_tiered_memory.testing import ScriptedChatModel


def test_a_capable_model_gets_no_guard() -> None:
    policy = ModelPolicy.for_model(ScriptedChatModel(replies=["hi"]))
    guards = policy.guards
    assert not policy.small and guards.reconcile and not guards.grounded
    assert guards.tag_capture == "after_turn" and guards.max_context_messages == 20


def test_a_marked_local_model_gets_every_guard_also_when_bound() -> None:
    model = ChatLocalTransformers()  # nothing loads until the first call
    for candidate in (model, model.bind_tools([]), model.bind(stop=["x"])):
        policy = ModelPolicy.for_model(candidate)
        guards = policy.guards
        assert policy.small and guards.grounded and not guards.reconcile
        assert guards.tag_capture == "forced" and guards.max_context_messages == 0


def test_the_caller_overrides_the_marker_and_llamacpp_is_known_by_name() -> None:
    assert not ModelPolicy.for_model(ChatLocalTransformers(), small=False).small
    assert ModelPolicy.for_model(ScriptedChatModel(replies=["hi"]), small=True).small

    class ChatLlamaCpp:  # langchain-community's class, recognized without importing it
        pass

    assert is_small_model(ChatLlamaCpp())
    assert not is_small_model(object())


def test_every_guard_is_on_for_a_small_model_and_off_for_a_capable_one() -> None:
    """One table (issue 78 review: eleven properties of ``self.small`` were copied field
    by field into TurnSettings): each guard's two values side by side."""
    small, capable = ModelPolicy(small=True).guards, ModelPolicy(small=False).guards
    for guard in fields(Guards):
        assert getattr(small, guard.name) != getattr(capable, guard.name), guard.name
    assert {True: small, False: capable} == GUARDS


def test_the_settings_are_the_policys_row_and_the_flag_reaches_only_the_policy() -> None:
    """TurnSettings is a row of the table (every guard, none copied by hand), and the
    graph passes its raw ``small_model`` bool only to ModelPolicy.for_model (a guard
    switched on by the flag would bypass the one decision)."""
    import ast
    import inspect

    from langchain_tiered_memory.agent import graph
    from langchain_tiered_memory.agent.settings import TurnSettings

    for small in (True, False):
        settings = TurnSettings.of(ModelPolicy(small=small))
        assert all(
            getattr(settings, f.name) == getattr(GUARDS[small], f.name) for f in fields(Guards)
        )
    tree = ast.parse(inspect.getsource(graph.create_memory_graph))
    names = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == "small_model"]
    assert len(names) == 1  # passed once, to ModelPolicy.for_model


def test_the_graph_and_the_middleware_read_one_settings_object() -> None:
    """Issue 48 item 2: the policy is turned into turn settings in one place
    (TurnSettings.of); neither door reads a policy switch itself, so they cannot drift."""
    import ast
    from pathlib import Path

    agent = Path(__file__).parents[2] / "langchain_tiered_memory" / "agent"
    switches = {
        name
        for name, value in vars(ModelPolicy).items()
        if isinstance(value, property) or (callable(value) and not name.startswith("_"))
    } - {"for_model"}
    for module in ("graph.py", "middleware.py", "nodes.py"):
        tree = ast.parse((agent / module).read_text(encoding="utf-8"))
        read = {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and node.attr in switches
            and not (isinstance(node.value, ast.Name) and node.value.id == "settings")
            and not (isinstance(node.value, ast.Attribute) and node.value.attr == "settings")
        }
        assert not read, f"{module} reads policy switches {sorted(read)} itself"
    # both doors build their turn with MemoryOptions.build (test_two_doors.py: equal turns)
    for module in ("graph.py", "middleware.py"):
        assert "MemoryOptions(" in (agent / module).read_text(encoding="utf-8")


@pytest.mark.parametrize("small", [True, False])
def test_turn_settings_follow_the_policy_and_the_apps_options_win(small: bool) -> None:
    from langchain_tiered_memory.agent.settings import TurnSettings

    policy = ModelPolicy(small=small)
    settings = TurnSettings.of(policy)
    assert settings.summary_options == policy.summary_options
    assert settings.tag_capture == policy.guards.tag_capture
    assert settings.search_tool is policy.guards.search_tool
    assert settings.max_context_messages == policy.guards.max_context_messages
    chosen = TurnSettings.of(
        policy, tag_capture="tool", search_memory=not small, max_context_messages=7
    )
    assert (chosen.tag_capture, chosen.search_tool, chosen.max_context_messages) == (
        "tool",
        not small,
        7,
    )
    with pytest.raises(ValueError, match="tag_capture"):
        TurnSettings.of(policy, tag_capture="sometimes")  # type: ignore[arg-type]
