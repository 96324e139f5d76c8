"""Channel versions as the Redis checkpointers write them: short, and ordered as strings.

A counter in base 36 after a letter that says how many digits it has (``a`` one, ``b``
two, ...), then a 6-character random tie-breaker: ``"b16.k3f9zq"``. See
``BaseRedisSaver.get_next_version`` for why.
"""

from __future__ import annotations

import random

__all__ = ["next_version", "version_counter"]

_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(n: int, width: int = 0) -> str:
    digits = ""
    while n:
        n, r = divmod(n, 36)
        digits = _B36[r] + digits
    return digits.rjust(width, "0") or "0"


def version_counter(version: str | int | None) -> int:
    """The counter of a channel version of any scheme this package wrote (or an int)."""
    if version is None:
        return 0
    if isinstance(version, int):
        return version
    head = str(version).split(".")[0]
    if head[:1].isalpha():  # "<length letter><base 36>"
        return int(head[1:], 36)
    return int(head)  # "<zero-padded decimal>" (before the short scheme)


def next_version(current: str | int | None) -> str:
    """The version after ``current`` (see ``BaseRedisSaver.get_next_version``).

    Example:
        >>> next_version("0000000000000041.0.5103196368858631")[:4]
        'b16.'
        >>> version_counter(next_version("b16.k3f9zq"))
        43
    """
    digits = _base36(version_counter(current) + 1)
    return f"{chr(ord('a') + len(digits) - 1)}{digits}.{_base36(random.getrandbits(31), 6)}"
