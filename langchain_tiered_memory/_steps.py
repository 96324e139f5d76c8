"""One plan, two drivers: a multi-step operation written once for sync and async.

A plan is a generator that yields :class:`Step` s (a call with its sync and its async form,
made by :func:`call` from the two methods themselves) and receives each one's result;
:func:`drive` runs the sync forms, :func:`adrive` awaits the async ones. An exception a step
raises is thrown into the plan at its ``yield``, so the plan's own ``try``/``except``/
``finally`` handle it as straight-line code would. Every plan of the package runs through
these two drivers: the stores', the savers' (``persistence/``), the summarizer's.

:class:`paired` turns a method that returns a plan into a method pair written once: the
decorated name runs it with :func:`drive`, and ``aname = name.aio`` in the class body
awaits it with :func:`adrive` (one signature, one docstring; the async one says so).
:func:`twin` is the async form of a method that does no I/O (the in-memory stores');
:func:`threaded` the default async form of a store contract's method, for a backend that has
only sync I/O (the sync method in a worker thread, as LangChain's own bases default).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, Concatenate, Generic, NamedTuple, ParamSpec, TypeVar, overload

__all__ = ["Plan", "Step", "adrive", "call", "drive", "paired", "threaded", "twin"]

_T = TypeVar("_T")
_R = TypeVar("_R")
_S = TypeVar("_S")
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
        # the plan handles it (or re-raises) at its yield; KeyboardInterrupt too, so that
        # its finally settles what it began
        except BaseException as exc:
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
        # CancelledError too: a cancelled summarization left its queue entry unsettled,
        # its finally never run; thrown in, the plan's finally runs and it re-raises
        except BaseException as exc:
            reply, advance = exc, plan.throw


def _name_async(aio: Callable[..., Any], method: Callable[..., Any]) -> None:
    """Name and document ``aio`` as ``method``'s async twin (``aname``, "Async :meth:")."""
    name = method.__name__
    aio.__name__ = f"a{name}"
    aio.__qualname__ = method.__qualname__.rsplit(".", 1)[0] + f".a{name}"
    aio.__doc__ = f"Async :meth:`{name}`."


class paired(Generic[_S, _P, _T]):  # noqa: N801  # used as a decorator, as property is
    """A sync and an async method from one method that returns a :data:`Plan`.

    The decorated name is the sync method (:func:`drive`); ``.aio`` is the async one
    (:func:`adrive`), bound in the class body as ``aname = name.aio``: one signature and
    one docstring for both, checked by a type checker as any method is.

    Example:
        >>> class Doubler:
        ...     @paired
        ...     def double(self, n: int) -> Plan[int]:
        ...         \"\"\"Twice ``n``.\"\"\"
        ...         return 2 * (yield call(abs, _aabs, n))
        ...     adouble = double.aio
        >>> async def _aabs(n: int) -> int: return abs(n)
        >>> Doubler().double(-2)
        4
        >>> import asyncio; asyncio.run(Doubler().adouble(-2))
        4
        >>> Doubler.adouble.__doc__
        'Async :meth:`double`.'
    """

    def __init__(self, plan: Callable[Concatenate[_S, _P], Plan[_T]]) -> None:

        @functools.wraps(plan)
        def sync(obj: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
            return drive(plan(obj, *args, **kwargs))

        @functools.wraps(plan)
        async def aio(obj: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
            return await adrive(plan(obj, *args, **kwargs))

        _name_async(aio, plan)
        # help() and IDEs show what the method returns, not the plan's generator type
        signature = inspect.signature(plan)
        returns = signature.return_annotation
        if isinstance(returns, str) and returns.startswith("Plan[") and returns.endswith("]"):
            signature = signature.replace(return_annotation=returns[len("Plan[") : -1])
        sync.__signature__ = signature  # type: ignore[attr-defined]
        aio.__signature__ = signature  # type: ignore[attr-defined]
        self.sync: Callable[Concatenate[_S, _P], _T] = sync
        self.aio: Callable[Concatenate[_S, _P], Coroutine[Any, Any, _T]] = aio

    @overload
    def __get__(
        self, obj: None, objtype: type | None = None
    ) -> Callable[Concatenate[_S, _P], _T]: ...
    @overload
    def __get__(self, obj: _S, objtype: type | None = None) -> Callable[_P, _T]: ...
    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        # the class gets the plain function (documentation tools read it as a method)
        return self.sync if obj is None else types.MethodType(self.sync, obj)


class twin(Generic[_S, _P, _T]):  # noqa: N801  # used in a class body, as property is
    """The async twin of a method that does no I/O (a process-local store): ``aname =
    twin(name)`` in the class body. It runs the method in the event loop, which is right
    only because the method never blocks.

    Example:
        >>> class Box:
        ...     def size(self, extra: int = 0) -> int:
        ...         \"\"\"How many.\"\"\"
        ...         return 3 + extra
        ...     asize = twin(size)
        >>> import asyncio; asyncio.run(Box().asize(extra=1))
        4
        >>> Box.asize.__doc__
        'Async :meth:`size`.'
    """

    def __init__(self, method: Callable[Concatenate[_S, _P], _T]) -> None:
        @functools.wraps(method)
        async def aio(obj: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
            return method(obj, *args, **kwargs)

        _name_async(aio, method)
        self.aio: Callable[Concatenate[_S, _P], Coroutine[Any, Any, _T]] = aio

    @overload
    def __get__(
        self, obj: None, objtype: type | None = None
    ) -> Callable[Concatenate[_S, _P], Coroutine[Any, Any, _T]]: ...
    @overload
    def __get__(
        self, obj: _S, objtype: type | None = None
    ) -> Callable[_P, Coroutine[Any, Any, _T]]: ...
    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        return self.aio if obj is None else types.MethodType(self.aio, obj)


class threaded(twin[_S, _P, _T]):  # noqa: N801  # used in a class body, as property is
    """The default async form of a contract's method: ``aname = threaded(name)`` in a base
    class runs ``name`` *as the subclass defines it* in a worker thread
    (:func:`asyncio.to_thread`, which carries the context), so a backend written with sync
    I/O only is complete and never blocks the event loop. A backend with async I/O
    overrides ``aname``. LangChain's ``BaseChatMessageHistory`` and ``BaseRetriever``
    default their async methods the same way.

    Example:
        >>> from abc import ABC, abstractmethod
        >>> class Base(ABC):
        ...     @abstractmethod
        ...     def size(self) -> int:
        ...         \"\"\"How many.\"\"\"
        ...     asize = threaded(size)
        >>> class Three(Base):
        ...     def size(self) -> int: return 3
        >>> import asyncio; asyncio.run(Three().asize())
        3
    """

    def __init__(self, method: Callable[Concatenate[_S, _P], _T]) -> None:
        name = method.__name__

        @functools.wraps(method)
        async def aio(obj: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
            sync: Callable[_P, _T] = getattr(obj, name)  # the subclass's, not the base's
            return await asyncio.to_thread(sync, *args, **kwargs)

        # wraps copied the abstract mark; the default itself is concrete
        aio.__dict__.pop("__isabstractmethod__", None)
        _name_async(aio, method)
        self.aio = aio
