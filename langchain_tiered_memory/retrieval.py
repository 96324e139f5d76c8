"""Ranking of recalled summary items: hybrid lexical + dense retrieval with time awareness.

One :class:`HybridIndex` holds one user's items in search-ready form and is maintained
incrementally as items are added:

- **dense**: the items' unit embeddings in FAISS. Below ``RetrievalConfig.exact_limit`` items
  every item is scored exactly; above it an inverted-file index (``IndexIVFFlat``, trained
  on the user's own vectors and retrained as the user grows) proposes candidates, which are
  then rescored exactly. The query is *centered*: a fraction of the mean of the user's item
  vectors is subtracted from it, which removes what all of a user's items share (their
  names, their usual topics) and stops "hub" items that resemble everything from crowding
  out specific ones.
- **lexical**: Okapi BM25 over stemmed, stop-word-free tokens, with numpy posting lists
  that grow as items arrive (an incremental index scores exactly as a rebuilt one). It
  catches what small embedding models miss: names, rare words, numbers, titles.
- **time**: a query naming a date ("on 8 May, 2023", "in June", "in 2022", "last week",
  "3 days ago") favours items created inside that window, decaying outside it.
- **diversity**: the top ``k`` are picked by maximal marginal relevance among the best
  ``max(4k, 20)``, so ``k`` results are not ``k`` restatements of one fact.

The score of an item (``metadata["score"]``) is a weighted mean in [-1, 1]::

    score = (cos(q', x) + wl * lexical + wt * time) / (1 + wl + wt)

- ``cos(q', x)``: cosine of the item and the centered query ``q' = q - c * m`` (``m``: the
  mean of the user's item vectors, ``c``: ``centering`` shrunk for users with few items);
- ``lexical``: the item's BM25 score divided by the best BM25 score for this query, in [0, 1];
- ``time``: how well the item's ``created_at`` falls in the dates the query names, in [0, 1];
- ``wl``/``wt``: ``lexical_weight``/``time_weight``, each counted only when the query has
  that signal (words found in the user's items; a date), so a perfect match scores 1.

Higher is better; scores rank items for one query. Each hit also carries ``similarity``,
the plain cosine of query and item embeddings (what a bare vector store would report).
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone

import faiss
import numpy as np

from langchain_tiered_memory.text import is_cjk, stem, tokenize

__all__ = [
    "RetrievalConfig",
    "HybridIndex",
    "Hit",
    "LexicalIndex",
    "TimeWindow",
    "tokenize",
    "stem",
    "parse_time_windows",
    "to_epoch",
]

# ----------------------------------------------------------------------------- config


@dataclass(frozen=True)
class RetrievalConfig:
    """How recall ranks a user's items. The defaults are general, not tuned to a data set.

    Attributes:
        lexical_weight: weight of the max-normalized BM25 score added to the cosine.
        centering: fraction of the user's mean item vector subtracted from the query
            (0 = plain cosine). Has no effect on the order of one or two items.
        time_weight: added for an item created inside a date window the query names.
        diversity: weight of redundancy in maximal marginal relevance: each next result
            maximizes ``(1 - diversity) * score - diversity * max cosine to those chosen``
            (0 = plain top-k).
        exact_limit: score every item exactly up to this many items; above, an IVF index
            proposes candidates that are rescored exactly.
        candidates: how many candidates each retriever proposes in IVF mode (at least
            ``4 * k``).
        bm25_k1: BM25 term-frequency saturation.
        bm25_b: BM25 length normalization.

    Example:
        >>> RetrievalConfig.dense_only().lexical_weight
        0.0

    """

    lexical_weight: float = 0.25
    centering: float = 0.5
    time_weight: float = 0.1
    diversity: float = 0.2
    exact_limit: int = 8192
    candidates: int = 100
    bm25_k1: float = 1.2
    bm25_b: float = 0.75

    @classmethod
    def dense_only(cls) -> RetrievalConfig:
        """Plain cosine top-k (the behaviour of a bare vector index), for comparison."""
        return cls(lexical_weight=0.0, centering=0.0, time_weight=0.0, diversity=0.0)


# ----------------------------------------------------------------------------- text

# ----------------------------------------------------------------------------- growable


class _Grow:
    """A 1-D numpy array with amortized O(1) appends."""

    def __init__(self, dtype: type | np.dtype, capacity: int = 64) -> None:
        self._buf = np.zeros(capacity, dtype=dtype)
        self.n = 0

    def extend(self, values: Sequence[float] | np.ndarray) -> None:
        m = len(values)
        if self.n + m > len(self._buf):
            new = np.zeros(max(2 * len(self._buf), self.n + m), dtype=self._buf.dtype)
            new[: self.n] = self._buf[: self.n]
            self._buf = new
        self._buf[self.n : self.n + m] = values
        self.n += m

    @property
    def view(self) -> np.ndarray:
        return self._buf[: self.n]


# ----------------------------------------------------------------------------- lexical


@dataclass
class _Posting:
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    tfs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    pending_ids: list[int] = field(default_factory=list)
    pending_tfs: list[int] = field(default_factory=list)
    # BM25 term weights of ``ids`` (without IDF), valid while the collection has
    # ``weights_for`` documents (they depend on the average length).
    weights: np.ndarray | None = None
    weights_for: int = -1

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self.pending_ids:
            self.ids = np.concatenate([self.ids, np.asarray(self.pending_ids, dtype=np.int32)])
            self.tfs = np.concatenate([self.tfs, np.asarray(self.pending_tfs, dtype=np.float32)])
            self.pending_ids.clear()
            self.pending_tfs.clear()
        return self.ids, self.tfs


class LexicalIndex:
    """Okapi BM25 over a growing list of documents (positions 0, 1, ...).

    Adding documents updates posting lists, document frequencies and lengths in place;
    scores always equal those of an index built from scratch on the same documents.

    Example:
        >>> lex = LexicalIndex()
        >>> lex.add(["Alice adopted a cat", "Bob likes dogs"])
        >>> [round(float(s), 3) for s in lex.scores(tokenize("cat"))]
        [0.693, 0.0]

    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._lengths = _Grow(np.float32)
        self._total_length = 0
        self._postings: dict[str, _Posting] = {}

    def __len__(self) -> int:
        return self._lengths.n

    def add(self, texts: Iterable[str]) -> None:
        """Append documents."""
        lengths: list[int] = []
        for text in texts:
            doc = self._lengths.n + len(lengths)
            tokens = tokenize(text)
            lengths.append(len(tokens))
            counts: dict[str, int] = {}
            for token in tokens:
                counts[token] = counts.get(token, 0) + 1
            for token, tf in counts.items():
                posting = self._postings.get(token)
                if posting is None:
                    posting = self._postings[token] = _Posting()
                posting.pending_ids.append(doc)
                posting.pending_tfs.append(tf)
        self._lengths.extend(lengths)
        self._total_length += sum(lengths)

    def idf(self, term: str) -> float:
        """Lucene's BM25 IDF, ``log(1 + (N - df + 0.5) / (df + 0.5))``."""
        posting = self._postings.get(term)
        df = 0 if posting is None else len(posting.ids) + len(posting.pending_ids)
        n = len(self)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """BM25 score of every document for the query ``terms`` (repeats count once)."""
        n = len(self)
        out = np.zeros(n, dtype=np.float32)
        if n == 0:
            return out
        for term in dict.fromkeys(terms):
            posting = self._postings.get(term)
            if posting is None:
                continue
            if posting.weights_for != n or posting.pending_ids:
                ids, tfs = posting.arrays()
                avg = self._total_length / n if self._total_length else 1.0
                norm = self.k1 * (1.0 - self.b + self.b * self._lengths.view[ids] / avg)
                posting.weights = (tfs * (self.k1 + 1.0) / (tfs + norm)).astype(np.float32)
                posting.weights_for = n
            assert posting.weights is not None
            out[posting.ids] += self.idf(term) * posting.weights
        return out


# ----------------------------------------------------------------------------- time

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
# A bare month name needs a preposition before it ("in May"): "may" and "march" are verbs.
_LEAD = r"(?:in|during|of|since|until|till|by|before|after|around|early|late|mid|on|from|through)"
_SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11)}
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a few": 3,
    "several": 3,
}

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("iso_day", re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})\b")),
    ("day", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?(?:\s+{_YEAR})?\b", re.I)),
    ("day", re.compile(rf"\b{_MONTH}\s+{_DAY}(?!\d)(?:,?\s+{_YEAR})?\b", re.I)),
    ("month", re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b", re.I)),
    (
        "season",
        re.compile(
            rf"\b(?P<season>spring|summer|autumn|fall|winter),?\s+(?:of\s+)?{_YEAR}\b", re.I
        ),
    ),
    ("month", re.compile(rf"\b{_LEAD}\s+(?:the\s+)?(?:month\s+of\s+)?{_MONTH}(?![\w-])", re.I)),
    ("year", re.compile(rf"\b(?:{_LEAD}|year|the\s+year)\s+{_YEAR}\b", re.I)),
    (
        "ago",
        re.compile(
            r"\b(?P<n>\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|"
            r"a few|several)\s+(?P<unit>day|week|month|year)s?\s+ago\b",
            re.I,
        ),
    ),
    ("relative", re.compile(r"\b(?P<rel>yesterday|today|tonight)\b", re.I)),
    (
        "relative",
        re.compile(r"\b(?P<rel>(?:last|this|past)\s+(?:week(?:end)?|month|year))\b", re.I),
    ),
]

_DAY_S = 86400.0
# Cheap pre-checks on the query's words decide which patterns can match at all.
_WORDS = re.compile(r"[a-z]+")
_DIGIT = re.compile(r"\d")
_SEASON_WORDS = frozenset(["spring", "summer", "autumn", "fall", "winter"])
_RELATIVE_WORDS = frozenset(["yesterday", "today", "tonight", "last", "this", "past"])
_TIME_WORDS = _SEASON_WORDS | _RELATIVE_WORDS | {"ago"}
# Centering subtracts ``n / (n + this)`` of the configured share of the mean: the mean of a
# handful of items is mostly those items themselves, not what a user's items have in common.
CENTERING_PRIOR_ITEMS = 10


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
    words = set(_WORDS.findall(text.lower()))
    has_digit = _DIGIT.search(text) is not None
    has_month = not words.isdisjoint(_MONTHS)
    if not (has_digit or has_month or not words.isdisjoint(_TIME_WORDS) or _ZH_HINT.search(text)):
        return []
    now = now or datetime.now(timezone.utc)
    today = now.date()
    out: list[TimeWindow] = []
    taken: list[tuple[int, int]] = []
    if any(is_cjk(c) for c in text):
        out.extend(_parse_zh(text, today, taken))
    for kind, pattern in _PATTERNS:
        # skip patterns that cannot match (most queries name no date at all)
        if kind in ("iso_day", "year") and not has_digit:
            continue
        if kind in ("day", "month") and not has_month:
            continue
        if kind == "season" and (not has_digit or words.isdisjoint(_SEASON_WORDS)):
            continue
        if kind == "ago" and "ago" not in words:
            continue
        if kind == "relative" and words.isdisjoint(_RELATIVE_WORDS):
            continue
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            window = _one_window(kind, m, today)
            if window is not None:
                out.append(window)
                taken.append(m.span())
    return out


# Chinese dates: "2023年5月8日", "5月8号", "五月八日", "2023年5月", "2023年", "去年", "上周",
# "上个月", "昨天", "3天前", "两周前". Hand-written like the English ones: dateparser (measured:
# 0.3-1.5 ms a query) returns points without their granularity and read "5月8日" as June 23.
_ZH_NUM = "零〇一二两三四五六七八九十"
_ZH_HINT = re.compile(r"[年月日号號周週天前]|星期|礼拜")
_ZH_N = rf"(?:\d+|[{_ZH_NUM}]+)"
_ZH_PATTERNS = [
    (
        "day",
        re.compile(
            rf"(?:(?P<year>\d{{4}})\s*年\s*)?(?P<month>{_ZH_N})\s*月\s*(?P<day>{_ZH_N})\s*[日号號]"
        ),
    ),
    ("month", re.compile(rf"(?:(?P<year>\d{{4}})\s*年\s*)?(?P<month>{_ZH_N})\s*(?:个)?月(?!前)")),
    ("year", re.compile(r"(?P<year>\d{4})\s*年")),
    (
        "ago",
        re.compile(rf"(?P<n>{_ZH_N}|几)\s*(?:个)?(?P<unit>天|日|周|週|星期|礼拜|月|年)(?:以)?前"),
    ),
    (
        "relative",
        re.compile(
            r"(?P<rel>去年|前年|今年|明年|上个?星期|上个?礼拜|上个?周|上週|本周|这个?星期|这周|上个?月|这个?月|本月|昨天|前天|今天)"
        ),
    ),
]
_ZH_UNITS = {"天": 1, "日": 1, "周": 7, "週": 7, "星期": 7, "礼拜": 7, "月": 30, "年": 365}


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


def _zh_int(text: str) -> int:
    """``"12"``, ``"十二"``, ``"二十三"``, ``"两"`` as an int."""
    if text.isdigit():
        return int(text)
    digits = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "两": 2}
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (digits[tens] if tens else 1) * 10 + (digits[ones] if ones else 0)
    value = 0
    for char in text:
        value = value * 10 + digits[char]
    return value


def _parse_zh(text: str, today: date, taken: list[tuple[int, int]]) -> list[TimeWindow]:
    out = []
    for kind, pattern in _ZH_PATTERNS:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            window = _zh_window(kind, m.groupdict(), today)
            if window is not None:
                out.append(window)
                taken.append(m.span())
    return out


def _zh_window(kind: str, g: dict[str, str | None], today: date) -> TimeWindow | None:
    try:
        if kind in ("day", "month"):
            month = _zh_int(g["month"] or "")
            year = int(g["year"] or "") if g.get("year") else None
            day = _zh_int(g["day"] or "") if g.get("day") else None
            return _date_window(year, month, day)
        if kind == "year":
            year = int(g["year"] or "")
            return _window(date(year, 1, 1), date(year + 1, 1, 1))
        if kind == "ago":
            n = 3 if g["n"] == "几" else _zh_int(g["n"] or "")
            days = n * _ZH_UNITS[g["unit"] or ""]
            center = today - timedelta(days=days)
            half = max(1, days // 4)
            return _window(center - timedelta(days=half), center + timedelta(days=half + 1))
        rel = g["rel"] or ""
        years = {"去年": -1, "前年": -2, "今年": 0, "明年": 1}
        if rel in years:
            year = today.year + years[rel]
            return _window(date(year, 1, 1), date(year + 1, 1, 1))
        if rel in ("今天", "昨天", "前天"):
            back = {"今天": 0, "昨天": 1, "前天": 2}[rel]
            return _window(today - timedelta(days=back), today - timedelta(days=back - 1))
        span = 30 if rel.endswith("月") else 7
        if rel.startswith(("这", "本")):
            return _window(today - timedelta(days=span), today + timedelta(days=1))
        return _window(today - timedelta(days=2 * span), today + timedelta(days=1))
    except (ValueError, KeyError, OverflowError):
        return None


def _one_window(kind: str, m: re.Match[str], today: date) -> TimeWindow | None:
    g = m.groupdict()
    try:
        if kind in ("iso_day", "day", "month"):
            month = int(g["month"]) if g["month"].isdigit() else _MONTHS[g["month"].lower()]
            year = int(g["year"]) if g.get("year") else None
            day = int(g["day"]) if g.get("day") else None
            return _date_window(year, month, day)
        if kind == "season":
            year = int(g["year"])
            if g["season"].lower() == "winter":
                return _window(date(year, 12, 1), _add_months(year, 12, 3))
            first, last = _SEASONS[g["season"].lower()]
            return _window(date(year, first, 1), _add_months(year, last, 1))
        if kind == "year":
            year = int(g["year"])
            return _window(date(year, 1, 1), date(year + 1, 1, 1))
        if kind == "ago":
            raw = g["n"].lower()
            n = int(raw) if raw.isdigit() else _NUMBERS.get(raw, 1)
            days = n * _UNITS[g["unit"].lower()]
            center = today - timedelta(days=days)
            half = max(1, days // 4)
            return _window(center - timedelta(days=half), center + timedelta(days=half + 1))
        if kind == "relative":
            rel = " ".join(g["rel"].lower().split())
            if rel in ("today", "tonight"):
                return _window(today, today + timedelta(days=1))
            if rel == "yesterday":
                return _window(today - timedelta(days=1), today)
            unit = rel.split()[1]
            span = {"week": 7, "weekend": 7, "month": 30, "year": 365}[unit]
            if rel.startswith("this"):
                return _window(today - timedelta(days=span), today + timedelta(days=1))
            return _window(today - timedelta(days=2 * span), today + timedelta(days=1))
    except (ValueError, KeyError, OverflowError):
        return None
    return None


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


# ----------------------------------------------------------------------------- hybrid


@dataclass
class Hit:
    """One ranked item: its position in the index, its score and the score's parts."""

    position: int
    score: float
    similarity: float
    lexical: float
    time: float


class HybridIndex:
    """One user's items: FAISS (exact, or IVF when large) + BM25 + timestamps.

    Thread-safe: adds and searches may run from several threads.

    Example:
        >>> import numpy as np
        >>> idx = HybridIndex(dim=2)
        >>> idx.add(["likes tea", "likes coffee"], np.eye(2, dtype="float32"), [0.0, 0.0])
        >>> [h.position for h in idx.search("coffee", np.array([0.6, 0.8], "float32"), 1)]
        [1]

    """

    def __init__(self, dim: int, config: RetrievalConfig | None = None) -> None:
        self.dim = dim
        self.config = config or RetrievalConfig()
        self.lexical = LexicalIndex(k1=self.config.bm25_k1, b=self.config.bm25_b)
        self._flat: faiss.IndexFlatIP | None = faiss.IndexFlatIP(dim)
        self._ivf: faiss.IndexIVFFlat | None = None
        self._ivf_trained_on = 0
        self._sum = np.zeros(dim, dtype=np.float64)
        self._epochs = _Grow(np.float64)
        self._times_sorted = True
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return self._epochs.n

    # ----- writes -----

    def add(self, texts: Sequence[str], vectors: np.ndarray, epochs: Sequence[float]) -> None:
        """Append items: texts, unit vectors (rows) and creation times (epoch seconds)."""
        if not len(texts):
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), self.dim)
        with self._lock:
            if self._ivf is not None:
                self._ivf.add(vectors)
            else:
                assert self._flat is not None
                self._flat.add(vectors)
            self._sum += vectors.sum(axis=0, dtype=np.float64)
            # an unknown time never matches a window
            new = np.nan_to_num(np.asarray(epochs, dtype=np.float64), nan=-1e15)
            last = self._epochs.view[-1] if len(self) else -np.inf
            if len(new) and (new[0] < last or np.any(np.diff(new) < 0)):
                self._times_sorted = False  # items usually arrive in time order
            self._epochs.extend(new)
            self.lexical.add(texts)
            self._maybe_train()

    def _maybe_train(self) -> None:
        n = len(self)
        if n <= self.config.exact_limit:
            return
        if self._ivf is not None and n < 4 * self._ivf_trained_on:
            return
        vectors = self.vectors()
        nlist = max(16, int(2 * math.sqrt(n)))
        quantizer = faiss.IndexFlatIP(self.dim)
        ivf = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
        ivf.cp.niter = 10
        ivf.cp.max_points_per_centroid = 32
        ivf.cp.seed = 1234
        ivf.train(vectors)
        ivf.add(vectors)
        ivf.set_direct_map_type(faiss.DirectMap.Array)  # type: ignore[attr-defined]
        ivf.nprobe = max(8, nlist // 16)
        self._ivf, self._flat, self._ivf_trained_on = ivf, None, n

    # ----- reads -----

    def vectors(self, positions: np.ndarray | None = None) -> np.ndarray:
        """Stored vectors (all, or the rows at ``positions``), a copy."""
        with self._lock:
            if self._flat is not None:
                all_rows = faiss.rev_swig_ptr(self._flat.get_xb(), len(self) * self.dim)
                matrix = np.asarray(all_rows).reshape(len(self), self.dim)
                return (matrix if positions is None else matrix[positions]).copy()
            assert self._ivf is not None
            if positions is None:
                return self._ivf.reconstruct_n(0, len(self))
            return self._ivf.reconstruct_batch(np.asarray(positions, dtype=np.int64))

    def nearest(self, vectors: np.ndarray) -> np.ndarray:
        """Best cosine similarity of each row against the stored items (-1 if none)."""
        with self._lock:
            index = self._flat if self._flat is not None else self._ivf
            if index is None or len(self) == 0 or len(vectors) == 0:
                return np.full(len(vectors), -1.0, dtype=np.float32)
            scores, _ = index.search(np.ascontiguousarray(vectors, dtype=np.float32), 1)
            return scores[:, 0]

    def search(
        self,
        query: str,
        vector: np.ndarray,
        k: int,
        *,
        now: datetime | None = None,
        exclude: np.ndarray | None = None,
    ) -> list[Hit]:
        """The ``k`` best items for the query text and its unit embedding, best first.

        ``exclude`` (a boolean mask over positions) hides items, e.g. superseded ones.
        """
        n = len(self)
        if n == 0 or k <= 0:
            return []
        cfg = self.config
        q = np.asarray(vector, dtype=np.float32).reshape(self.dim)
        terms = tokenize(query) if cfg.lexical_weight else []
        windows = parse_time_windows(query, now) if cfg.time_weight else []
        with self._lock:
            qc = q
            shrink = cfg.centering * n / (n + CENTERING_PRIOR_ITEMS)
            if shrink:
                qc = (q - shrink * (self._sum / n)).astype(np.float32)
                norm = float(np.linalg.norm(qc))
                qc = qc / norm if norm > 0 else q
            lex_all = self.lexical.scores(terms) if terms else None
            best_lex = float(lex_all.max()) if lex_all is not None else 0.0
            if best_lex <= 0:
                lex_all = None
            epochs = self._epochs.view
            if self._flat is not None:  # exact: every item is a candidate
                positions = None
                matrix = np.asarray(faiss.rev_swig_ptr(self._flat.get_xb(), n * self.dim)).reshape(
                    n, self.dim
                )
                lex = None if lex_all is None else lex_all / best_lex
            else:  # large: candidates from each signal, then exact scores for them only
                positions = self._candidates(qc, lex_all, windows, k)
                matrix = self.vectors(positions)
                lex = None if lex_all is None else lex_all[positions] / best_lex
                epochs = epochs[positions]
            tmatch = np.max([w.match(epochs) for w in windows], axis=0) if windows else None
            dense = matrix @ qc
            score = dense.astype(np.float32, copy=True)
            total = 1.0
            if lex is not None:
                score += cfg.lexical_weight * lex
                total += cfg.lexical_weight
            if tmatch is not None:
                score += cfg.time_weight * tmatch
                total += cfg.time_weight
            score /= total
            if exclude is not None:
                score[exclude if positions is None else exclude[positions]] = -np.inf
            order = _top(score, max(4 * k, 20))
            order = order[np.isfinite(score[order])]
            chosen = self._diverse(order, score, matrix, k)
            raw = matrix[chosen] @ q
            hits = []
            for j, i in enumerate(chosen):
                pos = int(i) if positions is None else int(positions[i])
                hits.append(
                    Hit(
                        position=pos,
                        score=float(score[i]),
                        similarity=float(raw[j]),
                        lexical=float(lex[i]) if lex is not None else 0.0,
                        time=float(tmatch[i]) if tmatch is not None else 0.0,
                    )
                )
            return hits

    def _candidates(
        self, qc: np.ndarray, lex: np.ndarray | None, windows: list[TimeWindow], k: int
    ) -> np.ndarray:
        """IVF mode: the best ``candidates`` by dense score (approximate), by BM25, and the
        items inside a named date window (when few enough to single out).
        """
        assert self._ivf is not None
        c = max(self.config.candidates, 4 * k)
        _, ids = self._ivf.search(qc.reshape(1, -1), c)
        parts = [ids[0][ids[0] >= 0]]
        if lex is not None:
            parts.append(_top(lex, c)[: int(np.count_nonzero(lex))])
        epochs = self._epochs.view
        for w in windows:
            if w.start is not None and w.end is not None and self._times_sorted:
                lo = int(np.searchsorted(epochs, w.start - w.scale, side="left"))
                hi = int(np.searchsorted(epochs, w.end + w.scale, side="right"))
                if hi - lo <= 4 * c:  # a broader window singles out nothing
                    parts.append(np.arange(lo, hi))
            else:
                match = w.match(epochs)
                top = _top(match, c)
                parts.append(top[match[top] >= 0.5])
        return np.unique(np.concatenate(parts).astype(np.int64))

    def _diverse(
        self, order: np.ndarray, score: np.ndarray, matrix: np.ndarray, k: int
    ) -> list[int]:
        """Maximal marginal relevance over the best candidates (``order``, best first)."""
        weight = self.config.diversity
        if weight <= 0.0 or k <= 1:
            return [int(i) for i in order[:k]]
        vecs = matrix[order]
        penalty = weight * np.maximum(vecs @ vecs.T, 0.0)
        base = (1.0 - weight) * score[order]
        # value = (1 - weight) * score - weight * max(0, best similarity to a chosen item)
        value = base.copy()
        chosen: list[int] = []
        for _ in range(min(k, len(order))):
            j = int(np.argmax(value))
            chosen.append(int(order[j]))
            value = np.minimum(value, base - penalty[j])
            value[j] = -np.inf
        return chosen


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest scores, best first (ties: lower position first)."""
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    return part[np.lexsort((part, -scores[part]))]
