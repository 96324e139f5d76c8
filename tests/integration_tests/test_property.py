"""Property-based tests (hypothesis) of bad and odd input on a real Redis.

Every input either gets a clear error that subclasses ``ValueError`` (from
``langchain_tiered_memory.errors``) with nothing written, or is stored and read back
exactly. A bystander user's data is compared before and after every example: nobody's
bad input changes anybody else's memory.

Example counts are bounded (``max_examples``) so the file runs in well under a minute.
"""

from __future__ import annotations

import contextlib
import json
import math
import unicodedata
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.fakes import EchoSummarizer, RandomEmbeddings, turn
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from langchain_tiered_memory import (
    InvalidMessageError,
    InvalidSummaryError,
    InvalidTagError,
    InvalidUserIdError,
    SummarizationError,
    TieredMemory,
)
from langchain_tiered_memory.backend.keys import KINDS, MAX_USER_ID_LENGTH, KeyBuilder
from langchain_tiered_memory.summarization.summarizer import MAX_ITEMS
from langchain_tiered_memory.testing import ScriptedChatModel

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
BYSTANDER = "bystander"
SPECIAL = ["{", "}", ":", "*", "?", "\n", "{a}", "a}:{b", "*:*", "%7B", "%", " ", "\x00", "\r\n"]

# Any unicode, lone surrogates included (st.text() leaves them out by default).
any_char = st.characters(codec=None, exclude_categories=())
user_ids = st.one_of(
    st.text(any_char, max_size=40),
    st.sampled_from(SPECIAL),
    st.text(st.sampled_from("{}:*?\n[]\\%"), min_size=1, max_size=8),
    st.integers(MAX_USER_ID_LENGTH - 2, MAX_USER_ID_LENGTH + 2).map(lambda n: "é" * n),
    st.one_of(st.none(), st.integers(), st.binary(max_size=4), st.lists(st.text(max_size=3))),
)


@pytest.fixture(scope="module")
def memory(redis_server_url: str) -> Iterator[TieredMemory]:
    prefix = f"prop{uuid.uuid4().hex[:6]}"
    with TieredMemory.from_url(
        redis_server_url, key_prefix=prefix, embeddings=RandomEmbeddings()
    ) as mem:
        mem.add_session_log(BYSTANDER, turn(0, 0))
        mem.set_user_tags(BYSTANDER, {"name": "Bea", "age": 50})
        mem.add_summaries(BYSTANDER, ["Bea grows tomatoes on her balcony."])
        yield mem


@pytest.fixture(scope="module")
def bystander(memory: TieredMemory) -> dict[str, Any]:
    return memory.export_user(BYSTANDER)


def assert_bystander_unchanged(memory: TieredMemory, before: dict[str, Any]) -> None:
    assert memory.export_user(BYSTANDER) == before, "another user's input changed the bystander"


def valid_user(user_id: object) -> bool:
    try:
        KeyBuilder("x").key(user_id, "tags")  # type: ignore[arg-type]
    except InvalidUserIdError:
        return False
    return True


# =========================================================================== user ids


@SETTINGS
@given(user_id=user_ids)
@example(user_id="")
@example(user_id="x" * (MAX_USER_ID_LENGTH + 1))
@example(user_id="\ud800")
@example(user_id=BYSTANDER + "\n")
@example(user_id=BYSTANDER.upper())
def test_user_ids_are_rejected_or_fully_isolated(
    memory: TieredMemory, bystander: dict[str, Any], user_id: Any
) -> None:
    if not valid_user(user_id):
        for call in (
            lambda: memory.add_session_log(user_id, turn(1, 0)),
            lambda: memory.set_user_tags(user_id, {"age": 1}),
            lambda: memory.add_summaries(user_id, ["An item."]),
            lambda: memory.load(user_id, "q"),
            lambda: memory.load_context(user_id),
            lambda: memory.get_user_tags(user_id),
            lambda: memory.recall_summaries(user_id, "q"),
            lambda: memory.export_user(user_id),
            lambda: memory.forget_user(user_id),
        ):
            with pytest.raises(InvalidUserIdError) as info:
                call()
            assert isinstance(info.value, ValueError) and "user_id" in str(info.value)
        assert_bystander_unchanged(memory, bystander)
        return
    if user_id == BYSTANDER:
        return
    memory.forget_user(user_id)
    written = turn(1, 0)
    memory.add_session_log(user_id, written)
    memory.set_user_tags(user_id, {"name": "Zed", "age": 7})
    ids = memory.add_summaries(user_id, ["Zed collects old maps of Lisbon."])
    snap = memory.load(user_id, "old maps", max_messages=10, k=3)
    assert snap.history == written
    assert snap.tags == {"name": "Zed", "age": "7"}
    assert [d.id for d in snap.recalled] == ids
    exported = memory.export_user(user_id)
    assert json.loads(json.dumps(exported)) == exported
    assert exported["user_id"] == user_id
    assert user_id in memory.history.users()  # SCAN finds it and decodes the key back
    assert_bystander_unchanged(memory, bystander)
    removed = memory.forget_user(user_id)
    # the memory's own LangGraph store is erased too (issue 43): nothing of the user's there
    assert removed == {
        "threads": 0,
        "history": len(written),
        "tags": 2,
        "summaries": 1,
        "store_items": 0,
    }
    assert memory.load(user_id, "old maps").tags == {}
    assert_bystander_unchanged(memory, bystander)


def _variants(base: str) -> list[str]:
    out = {
        base,
        base.upper(),
        base.lower(),
        base.swapcase(),
        unicodedata.normalize("NFC", base),
        unicodedata.normalize("NFD", base),
        unicodedata.normalize("NFKC", base),
        unicodedata.normalize("NFKD", base),
    }
    return sorted(u for u in out if valid_user(u))


@SETTINGS
@given(base=st.text(st.sampled_from("aAéÉe\u0301ﬁſK\u212aß{}:*?Å\u212b"), min_size=1, max_size=6))
@example(base="Émile")
@example(base="ﬁle")
def test_ids_differing_by_case_or_normalization_are_different_users(
    memory: TieredMemory, bystander: dict[str, Any], base: str
) -> None:
    ids = _variants(base)
    for uid in ids:
        memory.forget_user(uid)
    for i, uid in enumerate(ids):
        memory.set_user_tags(uid, {"age": i})
        memory.add_session_log(uid, [HumanMessage(f"I am variant {i}")])
    for i, uid in enumerate(ids):
        assert memory.get_user_tags(uid) == {"age": str(i)}
        assert [m.content for m in memory.load_context(uid, 5)] == [f"I am variant {i}"]
    for uid in ids:
        memory.forget_user(uid)
    assert_bystander_unchanged(memory, bystander)


@settings(max_examples=400, deadline=None, database=None)
@given(a=st.text(any_char, max_size=20), b=st.text(any_char, max_size=20))
@example(a="a}:{b", b="a")
@example(a="%41", b="A")
@example(a="é", b="e\u0301")
def test_distinct_ids_never_share_a_key(a: str, b: str) -> None:
    keys = KeyBuilder("tm")
    if not (valid_user(a) and valid_user(b)):
        return
    ka, kb = set(keys.all_keys(a)), set(keys.all_keys(b))
    assert (ka == kb) == (a == b)
    assert a == b or not ka & kb
    for key in ka:
        assert keys.user_from_key(key) == a
        tag = key[key.index("{") + 1 : key.index("}")]
        assert not set(tag) & set("{}*?[]\\:\n ")  # no hash-tag or glob escape
    assert len(ka) == len(KINDS)


# =========================================================================== tags

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(any_char)
)
tag_values = st.one_of(
    json_scalars,
    st.integers(-5, 200),
    st.text(st.characters(codec="utf-8"), min_size=1, max_size=120),
    st.text(st.characters(max_codepoint=40), max_size=10),  # control characters
    st.integers(2000, 5000).map(lambda n: "x" * n),  # huge
    st.binary(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.decimals(allow_nan=False, allow_infinity=False, places=1, max_value=200, min_value=-5),
)
tag_names = st.one_of(
    st.sampled_from(["name", "age"]),
    st.sampled_from(["Name", "AGE", "name ", "", "__class__", "model_config"]),
    st.text(any_char, max_size=8),
    st.integers(),
    st.none(),
)


@SETTINGS
@given(mapping=st.dictionaries(tag_names, tag_values, max_size=3))
@example(mapping={"age": True})
@example(mapping={"age": "30"})
@example(mapping={"name": "Ann\x07"})
@example(mapping={"name": "x" * 10**6})
@example(mapping={"name": "Ann", "age": 999})  # one bad value: nothing of the batch
def test_tags_are_validated_all_or_nothing(
    memory: TieredMemory, bystander: dict[str, Any], mapping: dict[Any, Any]
) -> None:
    user = "tagger"
    memory.forget_user(user)
    memory.set_user_tags(user, {"name": "Before", "age": 1})
    try:
        stored = memory.set_user_tags(user, mapping)
    except InvalidTagError as exc:
        assert isinstance(exc, ValueError) and str(exc)
        assert memory.get_user_tags(user) == {"name": "Before", "age": "1"}, "partial write"
    else:
        assert set(stored) == set(mapping) <= {"name", "age"}
        expected = {"name": "Before", "age": "1", **stored}
        assert memory.get_user_tags(user) == expected
        for name, value in mapping.items():
            assert memory.get_user_tag(user, name) == stored[name]
            if name == "name":
                assert stored[name] == value, "a name was stored other than given"
            else:
                assert not isinstance(value, bool)
                number = float(value)
                assert number == int(stored[name]) and 0 <= number <= 150
    assert_bystander_unchanged(memory, bystander)


@pytest.mark.parametrize("mapping", [None, "age=3", ["age", 3], 42, [("age", 3)]])
def test_tags_that_are_not_a_mapping(
    memory: TieredMemory, bystander: dict[str, Any], mapping: Any
) -> None:
    with pytest.raises(InvalidTagError):
        memory.set_user_tags("tagger2", mapping)
    assert memory.get_user_tags("tagger2") == {}
    assert_bystander_unchanged(memory, bystander)


# =========================================================================== messages

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(st.characters(codec="utf-8"), max_size=20),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
blocks = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=30),
    st.builds(lambda t: {"type": "text", "text": t}, st.text(max_size=30)),
    st.builds(lambda u: {"type": "image_url", "image_url": {"url": u}}, st.text(max_size=20)),
    st.dictionaries(st.text(min_size=1, max_size=6), json_values, min_size=1, max_size=3),
)
contents = st.one_of(
    st.text(any_char, max_size=200),
    st.lists(blocks, max_size=4),
    st.just(""),
    st.just([]),
)


def _message(kind: int, content: Any, extra: dict[str, Any]) -> BaseMessage:
    if kind == 0:
        return HumanMessage(content=content, additional_kwargs=extra)
    if kind == 1:
        return AIMessage(content=content, additional_kwargs=extra)
    return ToolMessage(content=content, tool_call_id="call-1", additional_kwargs=extra)


messages = st.builds(
    _message,
    st.integers(0, 2),
    contents,
    st.dictionaries(st.text(st.characters(codec="utf-8"), max_size=5), json_values, max_size=2),
)


def _positions(memory: TieredMemory, user: str) -> list[BaseMessage]:
    return memory.history.since(user, 0)[1]


@SETTINGS
@given(batch=st.lists(messages, min_size=1, max_size=4))
@example(batch=[HumanMessage("")])
@example(batch=[HumanMessage("x" * 2**20)])  # 1 MB
@example(batch=[AIMessage("y" * (5 * 2**20))])  # over the 4 MB cap
@example(batch=[HumanMessage("ok"), HumanMessage("\udc80")])  # bad second message
@example(batch=[HumanMessage("ok", additional_kwargs={"raw": b"\x00"})])
@example(
    batch=[
        HumanMessage(
            [
                {"type": "text", "text": "hi"},
                "plain",
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ]
        )
    ]
)
def test_messages_are_stored_exactly_or_refused_whole(
    memory: TieredMemory, bystander: dict[str, Any], batch: list[BaseMessage]
) -> None:
    user = "talker"
    memory.forget_user(user)
    memory.add_session_log(user, [HumanMessage("before")])
    try:
        memory.add_session_log(user, batch)
    except InvalidMessageError as exc:
        assert isinstance(exc, ValueError) and str(exc)
        assert _positions(memory, user) == [HumanMessage("before")], "part of a turn stored"
    else:
        assert _positions(memory, user) == [HumanMessage("before"), *batch]
    assert_bystander_unchanged(memory, bystander)


@pytest.mark.parametrize(
    "batch",
    [
        ["a plain string"],
        [{"type": "human", "content": "dict"}],
        [None],
        [HumanMessage("ok"), 42],
        [HumanMessage("ok", additional_kwargs={"when": {1, 2}})],
        [HumanMessage("ok", additional_kwargs={"nan": math.nan, "o": object()})],
    ],
)
def test_non_messages_are_refused_and_nothing_is_written(
    memory: TieredMemory, bystander: dict[str, Any], batch: list[Any]
) -> None:
    user = "talker2"
    memory.forget_user(user)
    with pytest.raises(InvalidMessageError):
        memory.add_session_log(user, batch)
    assert memory.history.length(user) == 0
    assert_bystander_unchanged(memory, bystander)


# =========================================================================== summaries

summary_items = st.one_of(
    st.text(any_char, max_size=60),
    st.just(""),
    st.just("   \n\t"),
    st.integers(1995, 2005).map(lambda n: "word " * (n // 5) + "w" * (n % 5)),
    st.integers(),
    st.none(),
    st.binary(max_size=4),
)


@SETTINGS
@given(items=st.lists(summary_items, max_size=4))
@example(items=[""])
@example(items=["fine item", ""])  # one bad item: nothing of the batch
@example(items=["z" * 10**6])
@example(items=["a" * 2000])
@example(items=["\udc80 bad"])
def test_summary_items_are_stored_exactly_or_refused_whole(
    memory: TieredMemory, bystander: dict[str, Any], items: list[Any]
) -> None:
    user = "summer"
    memory.forget_user(user)
    memory.add_summaries(user, ["Before: the user likes jazz."])
    try:
        ids = memory.add_summaries(user, items)
    except InvalidSummaryError as exc:
        assert isinstance(exc, ValueError) and str(exc)
        assert [d.page_content for d in memory.summaries.get_all(user)] == [
            "Before: the user likes jazz."
        ]
    else:
        stored = {d.id: d.page_content for d in memory.summaries.get_all(user)}
        texts = [i.strip() for i in items]
        assert all(0 < len(t) <= 2000 for t in texts)
        # new ids hold the (stripped) texts in order; repeats of a stored text are skipped
        assert [stored[i] for i in ids] == [t for t in dict.fromkeys(texts) if t != stored["0"]]
        assert set(stored.values()) == {"Before: the user likes jazz.", *texts}
    assert_bystander_unchanged(memory, bystander)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"items": "one string, not a list"},
        {"items": ["ok"], "created_at": "last tuesday"},
        {"items": ["ok"], "created_at": 12345},
        {"items": ["ok"], "metadata": {"f": object()}},
    ],
)
def test_summary_arguments_that_are_refused(
    memory: TieredMemory, bystander: dict[str, Any], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(InvalidSummaryError):
        memory.add_summaries("summer2", **kwargs)
    assert memory.summaries.get_all("summer2") == []
    assert_bystander_unchanged(memory, bystander)


# =========================================================================== retention


def _failing() -> ScriptedChatModel:
    return ScriptedChatModel(replies=[TimeoutError("the model timed out")])


ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 5)),
        st.tuples(st.just("tools"), st.just(0)),  # a turn with no text: nothing to summarize
        st.tuples(st.just("summarize"), st.integers(1, 12)),
        st.tuples(st.just("fail"), st.integers(1, 12)),
        st.tuples(st.just("trim"), st.integers(0, 8)),
    ),
    max_size=25,
)


@settings(
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(retention=st.one_of(st.none(), st.integers(0, 8)), steps=ops)
@example(retention=0, steps=[("append", 3), ("summarize", 3), ("tools", 0), ("summarize", 9)])
# 21 messages unsummarized at the end: more echo items than a summary keeps (MAX_ITEMS)
@example(retention=None, steps=[("append", n) for n in (1, 1, 1, 3, 5, 5, 5)])
def test_retention_never_drops_unsummarized_messages(
    memory: TieredMemory, retention: int | None, steps: list[tuple[str, int]]
) -> None:
    user = f"grow-{uuid.uuid4().hex[:8]}"
    memory.history_retention = retention
    appended: list[BaseMessage] = []
    model: BaseChatModel = EchoSummarizer()
    floor = retention  # fewest messages any retention step was allowed to keep
    try:
        for op, n in steps:
            if op == "append":
                batch: list[BaseMessage] = [
                    (HumanMessage if i % 2 == 0 else AIMessage)(f"growth m{len(appended) + i}")
                    for i in range(n)
                ]
                memory.add_session_log(user, batch)
                appended += batch
            elif op == "tools":
                call_id = f"c{len(appended)}"
                batch = [
                    AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": call_id}]),
                    ToolMessage("done", tool_call_id=call_id),
                ]
                memory.add_session_log(user, batch)
                appended += batch
            elif op == "summarize":
                memory.summarize_history(user, model, max_messages=n)
            elif op == "fail":
                before = memory.summaries.get_watermark(user)
                with contextlib.suppress(SummarizationError):
                    memory.summarize_history(user, _failing(), max_messages=n)
                batch = appended[before : before + n]
                if any(m.content for m in batch if not isinstance(m, ToolMessage)):
                    assert memory.summaries.get_watermark(user) == before
                # else: nothing to summarize, the model is not asked and the watermark
                # may step over the tool traffic
            else:
                memory.history.trim(
                    user, keep_last=n, not_after=memory.summaries.get_watermark(user)
                )
                floor = n if floor is None else min(floor, n)
            _check_retention(memory, user, appended, floor)
        # in batches of at most MAX_ITEMS messages (the echo writes one item per message;
        # a summary keeps MAX_ITEMS), everything gets summarized, tool-only turns included
        for _ in range(len(appended) // MAX_ITEMS + 1):
            memory.summarize_history(user, model, max_messages=MAX_ITEMS)
        assert memory.summaries.get_watermark(user) == len(appended)
        _check_retention(memory, user, appended, floor)
    finally:
        memory.history_retention = None
        memory.forget_user(user)


def _check_retention(
    memory: TieredMemory, user: str, appended: list[BaseMessage], floor: int | None
) -> None:
    length = memory.history.length(user)
    watermark = memory.summaries.get_watermark(user)
    first, kept = memory.history.since(user, 0)
    assert length == len(appended)
    assert 0 <= watermark <= length
    assert first <= watermark, f"unsummarized messages {first}..{watermark} were dropped"
    assert first + len(kept) == length
    assert kept == appended[first:]
    if floor is None:
        assert first == 0, "messages were dropped without a retention policy"
    else:
        assert len(kept) >= min(floor, length), "retention kept fewer messages than asked"
    # every summarized user message has exactly one item, pointing at its position; an
    # assistant message's echo is kept only if grounded in the user's words
    items = {d.page_content: d.metadata for d in memory.summaries.get_all(user)}
    for pos in range(watermark):
        message = appended[pos]
        if isinstance(message, ToolMessage) or not message.content:
            continue
        key = f"remembered: {message.content}"
        meta = items.pop(key) if isinstance(message, HumanMessage) else items.pop(key, None)
        if meta is not None:
            assert meta["source_start"] <= pos < meta["source_end"] <= watermark
    assert not items, f"items for unsummarized or unknown messages: {list(items)[:3]}"
