"""One plan, two drivers (``_steps``): the sync and the async driver run the same plan alike.

A step's exception reaches the plan at its ``yield`` (so its ``except`` and ``finally``
work, a ``finally`` may itself ask for steps), and what the plan does not handle reaches
the caller.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from langchain_tiered_memory._steps import Plan, Step, adrive, call, drive


class Log:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def put(self, name: str) -> str:
        self.calls.append(f"sync {name}")
        if name == "bad":
            raise KeyError(name)
        return name.upper()

    async def aput(self, name: str) -> str:
        self.calls.append(f"async {name}")
        if name == "bad":
            raise KeyError(name)
        return name.upper()


def plan(log: Log, names: list[str]) -> Plan[list[str]]:
    out = []
    try:
        for name in names:
            try:
                out.append((yield call(log.put, log.aput, name)))
            except KeyError:
                out.append("handled")
                if name == "bad" and "fatal" in names:
                    raise
    finally:
        yield call(log.put, log.aput, "cleanup")
    return out


@pytest.mark.parametrize("names", [["a", "b"], ["a", "bad", "c"], [], ["bad", "fatal"]])
def test_both_drivers_give_the_same_result_and_the_same_calls(names: list[str]) -> None:
    sync_log, async_log = Log(), Log()
    outcomes: list[Any] = []
    for log, runner in (
        (sync_log, lambda p: drive(p)),
        (async_log, lambda p: asyncio.run(adrive(p))),
    ):
        try:
            outcomes.append(runner(plan(log, names)))
        except KeyError as exc:
            outcomes.append(f"raised {exc}")
    assert outcomes[0] == outcomes[1]
    assert [c.split()[1] for c in sync_log.calls] == [c.split()[1] for c in async_log.calls]
    assert all(c.startswith("sync") for c in sync_log.calls)
    assert all(c.startswith("async") for c in async_log.calls)
    assert sync_log.calls[-1] == "sync cleanup"  # the finally ran its own step
    if names == ["a", "bad", "c"]:
        assert outcomes[0] == ["A", "handled", "C"]
    if "fatal" in names:
        assert outcomes[0] == "raised 'bad'"


def test_a_call_holds_its_two_forms_and_its_arguments() -> None:
    log = Log()
    made = call(log.put, log.aput, "x")
    assert made == Step(log.put, log.aput, ("x",), {})
    assert drive(iter_one(made)) == "X" and log.calls == ["sync x"]


def iter_one(made: Step) -> Plan[str]:
    return (yield made)  # type: ignore[no-any-return]


def test_every_step_is_made_by_call_whose_arguments_are_type_checked() -> None:
    """Issue 48 item 6: a raw ``Step(sync, aio, (args,))`` is not checked against the two
    functions it names; ``call`` is. Only ``_steps.py`` builds one."""
    import ast
    from pathlib import Path

    package = Path(__file__).parents[2] / "langchain_tiered_memory"
    raw = []
    for path in package.rglob("*.py"):
        if path.name == "_steps.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Step":
                raw.append(f"{path.relative_to(package)}:{node.lineno}")
    assert raw == []


async def test_a_cancelled_plan_runs_its_finally_and_stays_cancelled() -> None:
    """Issue 66 item 15: ``adrive`` caught ``Exception`` only, so a cancelled plan never
    ran its ``finally`` (a summarization's queue entry stayed unsettled)."""
    settled: list[str] = []
    started = asyncio.Event()

    async def slow() -> None:
        started.set()
        await asyncio.sleep(60)

    async def settle() -> None:
        settled.append("settled")

    def plan() -> Any:
        try:
            yield call(lambda: None, slow)
        finally:
            yield call(lambda: None, settle)

    task = asyncio.create_task(adrive(plan()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert settled == ["settled"]


def test_an_interrupted_sync_plan_runs_its_finally() -> None:
    settled: list[str] = []

    def interrupted() -> None:
        raise KeyboardInterrupt

    async def ainterrupted() -> None:  # the async form, never run here
        raise KeyboardInterrupt

    async def asettle() -> None:
        settled.append("settled")

    def plan() -> Any:
        try:
            yield call(interrupted, ainterrupted)
        finally:
            yield call(lambda: settled.append("settled"), asettle)

    with pytest.raises(KeyboardInterrupt):
        drive(plan())
    assert settled == ["settled"]
