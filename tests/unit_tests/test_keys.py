"""The key builder: layout, injective escaping, validation of user ids and prefixes."""

from __future__ import annotations

import fnmatch
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from langchain_tiered_memory import InvalidUserIdError
from langchain_tiered_memory.backend.keys import (
    KINDS,
    MAX_USER_ID_LENGTH,
    KeyBuilder,
    escape_user_id,
    validate_prefix,
    validate_user_id,
)

# Text without lone surrogates (those are invalid ids, tested separately).
user_ids = st.text(
    alphabet=st.characters(exclude_categories=["Cs"]), min_size=1, max_size=MAX_USER_ID_LENGTH
)
NASTY_IDS = [
    "alice",
    "{alice}",
    "a}b{c",
    "a:b",
    "tm:{alice}:tags",
    "*",
    "a*b?c[d]",
    "100%",
    "%41",  # must not decode to "A"
    "A",
    "with space",
    "line\nbreak",
    "tab\there",
    "\x00nul",
    "ünïcødé",
    "日本語",
    "emoji 🎉",
    "back\\slash",
    "-._~@",
]
_HASH_TAG = re.compile(r"\{([^{}]*)\}")


def test_layout() -> None:
    keys = KeyBuilder("app")
    assert keys.key("alice", "history") == "app:{alice}:history"
    assert keys.key("alice", "tags") == "app:{alice}:tags"
    assert keys.key("alice", "meta") == "app:{alice}:meta"
    assert KeyBuilder().key("alice", "tags").startswith("tm:{alice}:")


def test_all_keys_cover_every_kind_in_one_hash_tag() -> None:
    keys = KeyBuilder("app")
    all_keys = keys.all_keys("a:b{c}")
    assert len(all_keys) == len(KINDS) == len(set(all_keys))
    tags = {_HASH_TAG.findall(k)[0] for k in all_keys}
    assert tags == {escape_user_id("a:b{c}")}
    for k, kind in zip(all_keys, KINDS):
        assert k.endswith(":" + kind)


@pytest.mark.parametrize("user_id", NASTY_IDS)
def test_nasty_ids_stay_inside_one_clean_hash_tag(user_id: str) -> None:
    keys = KeyBuilder("tm")
    key = keys.key(user_id, "history")
    # exactly one pair of braces: the hash tag, so Redis Cluster slots by the user alone
    assert key.count("{") == key.count("}") == 1
    escaped = _HASH_TAG.findall(key)[0]
    assert not set(escaped) & set("{}:*?[]\\ \n\t\x00")
    assert escaped.isascii() and escaped.isprintable()
    assert keys.user_from_key(key) == user_id
    assert keys.user_from_key(key.encode()) == user_id


def test_percent_is_escaped_so_encoded_lookalikes_differ() -> None:
    keys = KeyBuilder()
    assert keys.key("%41", "tags") != keys.key("A", "tags")
    assert keys.key("a%20b", "tags") != keys.key("a b", "tags")


@given(user_ids, user_ids)
def test_distinct_ids_get_distinct_keys(a: str, b: str) -> None:
    keys = KeyBuilder("tm")
    for kind in KINDS:
        assert (keys.key(a, kind) == keys.key(b, kind)) == (a == b)


@given(user_ids)
def test_user_from_key_inverts_key(user_id: str) -> None:
    keys = KeyBuilder("tm")
    for kind in KINDS:
        assert keys.user_from_key(keys.key(user_id, kind)) == user_id


@given(user_ids)
def test_scan_pattern_matches_every_user_and_only_the_kind(user_id: str) -> None:
    keys = KeyBuilder("tm")
    pattern = keys.scan_pattern("history")
    assert fnmatch.fnmatchcase(keys.key(user_id, "history"), pattern)
    assert not fnmatch.fnmatchcase(keys.key(user_id, "tags"), pattern)
    assert not fnmatch.fnmatchcase(KeyBuilder("other").key(user_id, "history"), pattern)


def test_user_from_key_rejects_foreign_keys() -> None:
    keys = KeyBuilder("tm")
    assert keys.user_from_key("other:{alice}:tags") is None
    assert keys.user_from_key("tm:alice:tags") is None
    assert keys.user_from_key("tm:{alice") is None
    assert keys.user_from_key("tm:{alice}x") is None
    assert keys.user_from_key("tm:{%FF}:tags") is None  # not UTF-8 once decoded
    assert keys.user_from_key(b"tm:{\xff}:tags") is None
    assert keys.user_from_key("tm:{}:tags") is None  # the empty id is not an id
    # a non-canonical spelling of "ab" is not a key this builder writes
    assert keys.user_from_key("tm:{a%62}:tags") is None


@pytest.mark.parametrize(
    "bad",
    ["", None, 42, b"alice", ["alice"], "x" * (MAX_USER_ID_LENGTH + 1), "lone\ud800surrogate"],
    ids=["empty", "none", "int", "bytes", "list", "too-long", "lone-surrogate"],
)
def test_invalid_user_ids_raise(bad: object) -> None:
    with pytest.raises(InvalidUserIdError) as info:
        validate_user_id(bad)
    assert isinstance(info.value, ValueError)
    with pytest.raises(InvalidUserIdError):
        KeyBuilder().key(bad, "tags")  # type: ignore[arg-type]


def test_longest_valid_id_is_accepted() -> None:
    longest = "é" * MAX_USER_ID_LENGTH
    assert validate_user_id(longest) == longest
    assert KeyBuilder().user_from_key(KeyBuilder().key(longest, "tags")) == longest


@pytest.mark.parametrize(
    "prefix",
    ["", "a{b", "a}b", "a*", "a?", "a[b]", "a b", "a\nb", "a\tb", "a\x00b", "a\\b", None, 42],
)
def test_bad_prefixes_are_rejected(prefix: object) -> None:
    with pytest.raises(ValueError):
        validate_prefix(prefix)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        KeyBuilder(prefix)  # type: ignore[arg-type]


@pytest.mark.parametrize("prefix", ["tm", "my-app:v2", "a.b_c", "é"])
def test_good_prefixes_are_kept(prefix: str) -> None:
    assert KeyBuilder(prefix).key("u", "tags") == f"{prefix}:{{u}}:tags"


def test_prefixes_do_not_overlap() -> None:
    """Keys of one prefix are never read as keys of another, even a prefix of it."""
    short, long_ = KeyBuilder("tm"), KeyBuilder("tm:x")
    assert short.user_from_key(long_.key("u", "tags")) is None
    assert long_.user_from_key(short.key("u", "tags")) is None


def test_a_validated_user_id_is_a_plain_str_everywhere() -> None:
    import json

    from langchain_tiered_memory.backend.keys import UserId, validate_user_id

    user = validate_user_id("a b/ç")
    assert isinstance(user, UserId) and isinstance(user, str)
    assert user == "a b/ç" and hash(user) == hash("a b/ç")
    assert json.dumps({"u": user}) == json.dumps({"u": "a b/ç"})
    assert user.escaped == "a%20b%2F%C3%A7"
    assert validate_user_id(user) is user  # validated once: later checks are free
    assert KeyBuilder("tm").key(user, "tags") == KeyBuilder("tm").key("a b/ç", "tags")


def test_a_graph_turn_validates_the_user_id_once_per_node(
    monkeypatch: pytest.MonkeyPatch, embedded_memory: Any
) -> None:
    from langchain_core.messages import HumanMessage

    from langchain_tiered_memory import create_memory_graph
    from langchain_tiered_memory.backend.keys import UserId
    from langchain_tiered_memory.testing import ScriptedChatModel

    graph = create_memory_graph(ScriptedChatModel(replies=["Hi."]), memory=embedded_memory)
    made: list[str] = []
    original = UserId.__new__

    def counting(cls: type[UserId], value: str) -> UserId:
        made.append(value)
        return original(cls, value)

    monkeypatch.setattr(UserId, "__new__", counting)
    graph.invoke({"messages": [HumanMessage("hello")]}, context={"user_id": "alice"})
    # the load and save nodes each resolve the run's user id; the stores reuse it
    assert made == ["alice", "alice"]


def test_thread_keys_share_one_slot_and_are_never_a_users() -> None:
    from redis.crc import key_slot

    keys = KeyBuilder("tm")
    thread_keys = keys.thread_keys("alice/t 1")
    assert len({key_slot(k.encode()) for k in thread_keys}) == 1
    assert all(keys.user_from_key(k) is None for k in thread_keys)
    assert keys.thread_from_key(thread_keys[0]) == "alice/t 1"
    # a SCAN for one user's threads matches only ids with that prefix, globs escaped
    pattern = keys.thread_scan_pattern("a*b/")
    assert pattern == "tm:{cp:a%2Ab%2F*}:cp:ids"
    with pytest.raises(ValueError, match="thread_id must be a non-empty string"):
        keys.thread_key("", "cp:ids")
