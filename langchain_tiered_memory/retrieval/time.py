"""Time awareness: the dates a query names ("in May 2023", "last week", "三天前") as windows,
in every language whose record has a :class:`~langchain_tiered_memory.language.record.
DateGrammar` (the grammar is data; what a kind of date means is here, once).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone

import numpy as np

from langchain_tiered_memory.language.record import DateGrammar
from langchain_tiered_memory.language.registry import languages

__all__ = ["TimeWindow", "parse_time_windows", "to_epoch"]


_DAY_S = 86400.0


@dataclass(frozen=True)
class TimeWindow:
    """A span of time a query refers to: ``[start, end)`` in epoch seconds.

    ``month``/``day`` set and ``start`` ``None`` means a yearless date ("in June", "on May
    8"), matched in every year. ``scale`` (seconds) is how fast the match decays outside.
    """

    start: float | None
    end: float | None
    scale: float
    month: int | None = None
    day: int | None = None
    months: int = 1

    def match(self, epochs: np.ndarray) -> np.ndarray:
        """How well each timestamp falls in the window: 1 inside, ``exp(-d/scale)`` outside."""
        if self.start is not None and self.end is not None:
            start = np.float64(self.start)
            end = np.float64(self.end)
            dist = np.maximum(start - epochs, 0.0) + np.maximum(epochs - end, 0.0)
        else:
            years = epochs.astype("datetime64[s]").astype("datetime64[Y]").astype(np.int64)
            dist = np.full(len(epochs), np.inf)
            for offset in (-1, 0, 1):  # the same date in the item's year and its neighbours
                first = ((years + offset) * 12 + (self.month or 1) - 1).astype("datetime64[M]")
                startd = first.astype("datetime64[D]")
                if self.day is not None:
                    startd = startd + np.timedelta64(self.day - 1, "D")
                    endd = startd + np.timedelta64(1, "D")
                else:
                    endd = (first + np.timedelta64(self.months, "M")).astype("datetime64[D]")
                s = startd.astype("datetime64[s]").astype(np.float64)
                e = endd.astype("datetime64[s]").astype(np.float64)
                gap = np.maximum(s - epochs, 0.0) + np.maximum(epochs - e, 0.0)
                dist = np.minimum(dist, gap)
        return np.exp(-dist / self.scale).astype(np.float32)


def _epoch(d: date) -> float:
    return datetime(d.year, d.month, d.day, tzinfo=timezone.utc).timestamp()


def _window(start: date, end: date) -> TimeWindow:
    s, e = _epoch(start), _epoch(end)
    return TimeWindow(s, e, scale=max((e - s) / 2.0, 2 * _DAY_S))


def _add_months(year: int, month: int, n: int) -> date:
    total = year * 12 + (month - 1) + n
    return date(total // 12, total % 12 + 1, 1)


def parse_time_windows(text: str, now: datetime | None = None) -> list[TimeWindow]:
    """The time windows a query names, absolute or relative to ``now`` (default: UTC now).

    Example:
        >>> [w.start for w in parse_time_windows("what did we do on 8 May, 2023?")]
        [1683504000.0]
        >>> parse_time_windows("what is her name?")
        []
        >>> [w.month for w in parse_time_windows("我的生日是5月8日吗？")]
        [5]

    """
    out: dict[TimeWindow, None] = {}  # a date named again adds nothing: one window each
    # the characters a date already taken covers (1), so a later pattern's match over them
    # is skipped: checked and marked per match in time linear in its length (a list of the
    # taken spans, scanned per match, made a pasted document with thousands of dates
    # quadratic: minutes for one 1 MB message)
    taken: bytearray | None = None
    today: date | None = None
    for grammar in _GRAMMARS:
        if not grammar.hint_pattern.search(text):
            continue  # most queries name no date at all
        today = today or (now or datetime.now(timezone.utc)).date()
        taken = taken if taken is not None else bytearray(len(text))
        for kind, pattern in grammar.compiled:
            for m in pattern.finditer(text):
                start, end = m.span()
                if taken.find(1, start, end) >= 0:
                    continue
                window = _window_of(kind, m.groupdict(), grammar, today)
                if window is not None:
                    out[window] = None
                    taken[start:end] = b"\x01" * (end - start)
    return list(out)


_GRAMMARS = tuple(language.dates for language in languages() if language.dates is not None)


def _date_window(year: int | None, month: int, day: int | None) -> TimeWindow | None:
    """The window of a named day or month, yearless ones matched in every year.

    Raises:
        ValueError: no such date.

    """
    if not 1 <= month <= 12:
        return None
    if day is not None:
        if year is None:
            date(2000, month, day)  # validates
            return TimeWindow(None, None, 2 * _DAY_S, month=month, day=day)
        start = date(year, month, day)
        return _window(start, start + timedelta(days=1))
    if year is None:
        return TimeWindow(None, None, 15 * _DAY_S, month=month)
    return _window(date(year, month, 1), _add_months(year, month, 1))


def _window_of(
    kind: str, g: dict[str, str | None], grammar: DateGrammar, today: date
) -> TimeWindow | None:
    """The window of one match of a ``kind`` of :class:`DateGrammar` pattern."""
    try:
        if kind in ("day", "month"):
            raw = g["month"] or ""
            month = grammar.months.get(raw.lower()) or _number(raw, grammar)
            year = int(g["year"] or "") if g.get("year") else None
            day = _number(g["day"] or "", grammar) if g.get("day") else None
            return _date_window(year, month, day)
        if kind == "year":
            year = int(g["year"] or "")
            return _window(date(year, 1, 1), date(year + 1, 1, 1))
        if kind == "season":
            year = int(g["year"] or "")
            first, months = grammar.seasons[(g["season"] or "").lower()]
            return _window(date(year, first, 1), _add_months(year, first, months))
        if kind == "ago":
            days = _number(g["n"] or "", grammar) * grammar.units[(g["unit"] or "").lower()]
            center = today - timedelta(days=days)
            half = max(1, days // 4)
            return _window(center - timedelta(days=half), center + timedelta(days=half + 1))
        if kind == "relative":
            how, n = grammar.relative[" ".join((g["rel"] or "").lower().split())]
            if how == "year":
                return _window(date(today.year + n, 1, 1), date(today.year + n + 1, 1, 1))
            if how == "day":
                return _window(today - timedelta(days=n), today - timedelta(days=n - 1))
            back = n if how == "this" else 2 * n
            return _window(today - timedelta(days=back), today + timedelta(days=1))
    except (ValueError, KeyError, OverflowError):
        return None
    return None


def _number(text: str, grammar: DateGrammar) -> int:
    """A number as the grammar reads it.

    Raises:
        ValueError: not a number.
    """
    value = grammar.number(text)
    if value is None:
        raise ValueError(f"not a number: {text!r}")
    return value


def to_epoch(value: str | datetime | date) -> float:
    """Epoch seconds of an ISO-8601 timestamp or date (naive = UTC); NaN if unparseable."""
    try:
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        if not isinstance(value, datetime):
            value = datetime(value.year, value.month, value.day)
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.timestamp()
    except (ValueError, TypeError, OverflowError):
        return float("nan")
