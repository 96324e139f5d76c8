"""The memory turn's options are declared three times: ``MemoryOptions`` (what the turn
uses), ``create_memory_graph`` and ``TieredMemoryMiddleware`` (what an app calls). Issue 69
item 6: one source, the other two checked against it, so an option added to one door and
forgotten in the other (or given another default) fails here.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from langchain_tiered_memory.agent.graph import create_memory_graph
from langchain_tiered_memory.agent.middleware import TieredMemoryMiddleware
from langchain_tiered_memory.agent.turn import MemoryOptions

# what a door has of its own, not an option of the memory turn (force_tag_capture: the
# graph's older spelling of tag_capture, kept for compatibility)
GRAPH_ONLY = {"model", "tools", "checkpointer", "store", "context_schema", "name"}
GRAPH_ONLY.add("force_tag_capture")
MIDDLEWARE_ONLY = {"self", "context_schema"}


def _options() -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(MemoryOptions)}


def _door(fn: Any, own: set[str]) -> dict[str, inspect.Parameter]:
    return {n: p for n, p in inspect.signature(fn).parameters.items() if n not in own}


@pytest.mark.parametrize(
    ("door", "own"),
    [(create_memory_graph, GRAPH_ONLY), (TieredMemoryMiddleware.__init__, MIDDLEWARE_ONLY)],
    ids=["graph", "middleware"],
)
def test_each_door_takes_every_option_with_the_same_default(door: Any, own: set[str]) -> None:
    options, params = _options(), _door(door, own)
    assert sorted(params) == sorted(options), "an option one door lacks, or a door's own"
    differ = {
        n: (p.default, options[n])
        for n, p in params.items()
        if p.default is not inspect.Parameter.empty
        and options[n] is not dataclasses.MISSING
        and p.default != options[n]
    }
    assert not differ, f"defaults that differ from MemoryOptions': {differ}"
    keyword_only = [n for n, p in params.items() if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    assert keyword_only in ([], ["memory"]), "options are keyword-only"


def test_each_option_is_documented_once_where_the_middleware_points() -> None:
    """The graph documents every option; the middleware says they are the graph's."""
    doc = inspect.getdoc(create_memory_graph) or ""
    missing = [n for n in _options() if f"    {n}:" not in doc]
    assert not missing, f"options create_memory_graph does not document: {missing}"
    assert "documented there" in (inspect.getdoc(TieredMemoryMiddleware) or "")


def test_both_state_schemas_take_the_memorys_channels_from_one_definition() -> None:
    """Issue 69 item 5: the graph's and the middleware's state declared the six memory
    channels twice. Each now extends ``MemoryChannels``: the same channel objects, so one
    change reaches both doors."""
    from typing import get_type_hints

    from langchain_tiered_memory.agent.graph import MemoryState
    from langchain_tiered_memory.agent.middleware import TieredMemoryState
    from langchain_tiered_memory.agent.state import MemoryChannels

    channels = get_type_hints(MemoryChannels, include_extras=True)
    for schema in (MemoryState, TieredMemoryState):
        hints = get_type_hints(schema, include_extras=True)
        assert {n: hints[n] for n in channels} == channels
        body = inspect.getsource(schema)  # a TypedDict's annotations merge its bases'
        again = [n for n in channels if f"{n}:" in body]
        assert not again, f"{schema.__name__} declares {again} again"
