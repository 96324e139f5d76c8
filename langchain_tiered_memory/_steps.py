"""One plan, two drivers: a multi-step operation written once for sync and async.

A plan is a generator that yields :class:`Step` s (a call with its sync and its async form,
made by :func:`call` from the two methods themselves) and receives each one's result;
:func:`drive` runs the sync forms, :func:`adrive` awaits the async ones. An exception a step
raises is thrown into the plan at its ``yield``, so the plan's own ``try``/``except``/
``finally`` handle it as straight-line code would. Every plan of the package runs through
these two drivers: the stores', the savers' (``persistence/``), the summarizer's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, NamedTuple, ParamSpec, TypeVar

__all__ = ["Plan", "Step", "adrive", "call", "drive"]

_T = TypeVar("_T")
_R = TypeVar("_R")
_P = ParamSpec("_P")


class Step(NamedTuple):
    """A call a plan asks for, in both forms."""

    sync: Callable[..., Any]
    aio: Callable[..., Awaitable[Any]]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = {}  # noqa: RUF012  # never mutated: a NamedTuple default


Plan = Generator[Step, Any, _T]


def call(
    sync: Callable[_P, _R],
    aio: Callable[_P, Awaitable[_R]],
    /,
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> Step:
    """``sync(*args, **kwargs)``, awaited as ``aio(*args, **kwargs)`` by :func:`adrive`.

    Both forms are references, not names: a type checker checks the arguments against
    them and that the two take the same ones, and an IDE follows them to their code.

    Example:
        >>> class Counter:
        ...     def count(self, n: int) -> int: return n + 1
        ...     async def acount(self, n: int) -> int: return n + 1
        >>> def plan():
        ...     c = Counter()
        ...     one = yield call(c.count, c.acount, 0)
        ...     return (yield call(c.count, c.acount, one))
        >>> drive(plan())
        2
    """
    return Step(sync, aio, args, kwargs)


def drive(plan: Plan[_T]) -> _T:
    """Run ``plan`` with the sync form of each step."""
    advance: Callable[[Any], Step] = plan.send
    reply: Any = None
    while True:
        try:
            request = advance(reply)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            reply, advance = request.sync(*request.args, **request.kwargs), plan.send
        except Exception as exc:  # the plan handles it (or re-raises) at its yield
            reply, advance = exc, plan.throw


async def adrive(plan: Plan[_T]) -> _T:
    """Run ``plan`` awaiting the async form of each step."""
    advance: Callable[[Any], Step] = plan.send
    reply: Any = None
    while True:
        try:
            request = advance(reply)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        try:
            reply, advance = await request.aio(*request.args, **request.kwargs), plan.send
        except Exception as exc:
            reply, advance = exc, plan.throw
