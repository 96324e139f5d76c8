"""``_steps.paired``: a method pair written once, and the facade built from it (issue 58
item 3)."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from langchain_tiered_memory import TieredMemory
from langchain_tiered_memory._steps import Plan, call, paired


async def _aneg(n: int) -> int:
    if n == 0:
        raise ZeroDivisionError("zero")
    return -n


def _neg(n: int) -> int:
    if n == 0:
        raise ZeroDivisionError("zero")
    return -n


class _Counter:
    def __init__(self) -> None:
        self.caught = 0

    @paired
    def twice_negated(self, n: int, *, offset: int = 0) -> Plan[int]:
        """``-2n + offset``; a zero is caught by the plan and counted."""
        try:
            once = yield call(_neg, _aneg, n)
        except ZeroDivisionError:
            self.caught += 1
            return offset
        return 2 * once + offset

    atwice_negated = twice_negated.aio


def test_both_doors_run_the_one_plan_with_the_same_arguments() -> None:
    counter = _Counter()
    assert counter.twice_negated(3, offset=1) == -5
    assert asyncio.run(counter.atwice_negated(3, offset=1)) == -5
    # an exception a step raises reaches the plan's own except, in both forms
    assert counter.twice_negated(0, offset=7) == 7
    assert asyncio.run(counter.atwice_negated(0, offset=7)) == 7
    assert counter.caught == 2


def test_the_async_door_is_a_coroutine_method_with_the_sync_signature() -> None:
    assert inspect.iscoroutinefunction(_Counter.atwice_negated)
    assert not inspect.iscoroutinefunction(_Counter.twice_negated)
    sync, aio = (
        inspect.signature(_Counter.twice_negated),
        inspect.signature(_Counter.atwice_negated),
    )
    assert sync == aio
    assert sync.return_annotation == "int"  # what the caller gets, not the generator
    assert _Counter.atwice_negated.__name__ == "atwice_negated"
    assert _Counter.atwice_negated.__doc__ == "Async :meth:`twice_negated`."
    bound = _Counter().twice_negated
    assert inspect.ismethod(bound)
    assert list(inspect.signature(bound).parameters) == ["n", "offset"]


def _io_methods() -> list[str]:
    """TieredMemory's public sync methods that have an async twin."""
    names = {n for n in dir(TieredMemory) if not n.startswith("_")}
    return sorted(n for n in names if f"a{n}" in names)


def test_every_pair_of_the_facade_is_written_once() -> None:
    pairs = _io_methods()
    assert len(pairs) >= 20
    written_twice = [
        name
        for name in pairs
        if getattr(TieredMemory, f"a{name}").__doc__ != f"Async :meth:`{name}`."
        or inspect.signature(getattr(TieredMemory, name))
        != inspect.signature(getattr(TieredMemory, f"a{name}"))
    ]
    # checkpointer/acheckpointer hand out two different savers: not one method twice
    assert written_twice == ["checkpointer"]


@pytest.mark.parametrize("name", ["load", "recall_summaries", "forget_user", "close"])
def test_a_facade_method_keeps_its_documentation(name: str) -> None:
    method = getattr(TieredMemory, name)
    assert method.__doc__ and len(method.__doc__) > 60
    assert "Plan" not in str(inspect.signature(method))
