"""Long-term exact memory: typed tags validated by a pydantic schema, all or nothing."""

from __future__ import annotations

import re
from datetime import date
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field
from support import MemoryFactory, raw_client

from langchain_tiered_memory import DefaultTags, InvalidTagError, InvalidUserIdError, TieredMemory
from langchain_tiered_memory.stores.tags import MAX_TAG_VALUE_CHARS


class TravelTags(BaseModel):
    """A custom schema: no name or age, other types and constraints."""

    city: str | None = Field(default=None, max_length=50)
    vegetarian: bool | None = None
    birthday: date | None = None
    seat: Literal["aisle", "window"] | None = None
    notes: str | None = None  # unbounded by the schema: the store's own cap applies


def test_default_schema_is_name_and_age(memory: TieredMemory) -> None:
    assert memory.tags.schema is DefaultTags
    assert set(DefaultTags.model_fields) == {"name", "age"}
    assert memory.set_user_tags("alice", {"name": "Alice", "age": 30}) == {
        "name": "Alice",
        "age": "30",
    }
    assert memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert memory.get_user_tag("alice", "name") == "Alice"
    assert memory.get_user_tag("alice", "age") == "30"
    assert memory.get_user_tag("bob", "name") is None
    assert memory.get_user_tags("bob") == {}


@pytest.mark.parametrize(("given", "stored"), [("30", "30"), (30, "30"), (30.0, "30"), (0, "0")])
def test_age_is_coerced_to_its_canonical_text(
    memory: TieredMemory, given: Any, stored: str
) -> None:
    assert memory.set_user_tags("u", {"age": given}) == {"age": stored}
    assert memory.get_user_tag("u", "age") == stored


def test_updates_merge_and_overwrite(memory: TieredMemory) -> None:
    memory.set_user_tags("u", {"name": "Al", "age": 30})
    memory.set_user_tags("u", {"age": 31})
    assert memory.get_user_tags("u") == {"name": "Al", "age": "31"}
    assert memory.set_user_tags("u", {}) == {}
    assert memory.get_user_tags("u") == {"name": "Al", "age": "31"}


@pytest.mark.parametrize(
    "mapping",
    [
        {"nickname": "Al"},
        {"age": 999},
        {"age": 151},
        {"age": -1},
        {"age": "abc"},
        {"age": 30.5},
        {"age": True},
        {"age": None},
        {"age": [30]},
        {"name": ""},
        {"name": 42},
        {"name": "Bob\x00"},
        {"name": "\x1b[31mBob"},
        {"name": "Bob\x7f"},
        {"name": "B" * 101},
        {"name": "x" * 1_000_000},
        {"name": "lone \ud800"},
        {1: "x"},
        {"name": "Bob", "age": 999},  # one bad value spoils the batch
        {"age": 40, "unknown": "x"},
    ],
    # plain ASCII ids: tools that pass node ids back to pytest (mutmut) can find them
    ids=lambda m: re.sub(
        r"[^A-Za-z0-9_=.-]", "_", "-".join(f"{k}={str(v)[:12]!r}" for k, v in m.items())
    ),
)
def test_invalid_tags_raise_and_write_nothing(memory: TieredMemory, mapping: Any) -> None:
    memory.set_user_tags("u", {"name": "Alice", "age": 30})
    with pytest.raises(InvalidTagError) as info:
        memory.set_user_tags("u", mapping)
    assert isinstance(info.value, ValueError)
    assert memory.get_user_tags("u") == {"name": "Alice", "age": "30"}


@pytest.mark.parametrize(
    ("mapping", "stored"),
    [
        ({"age": 150}, {"age": "150"}),
        ({"age": 0}, {"age": "0"}),
        ({"name": "B" * 100}, {"name": "B" * 100}),
        ({"name": "B"}, {"name": "B"}),
    ],
    ids=["age-150", "age-0", "name-100", "name-1"],
)
def test_the_edges_of_the_default_schema_are_accepted(
    memory: TieredMemory, mapping: dict[str, Any], stored: dict[str, str]
) -> None:
    assert memory.set_user_tags("u", mapping) == stored
    assert memory.get_user_tags("u") == stored


def test_batch_with_a_bad_value_on_a_new_user_writes_nothing(memory: TieredMemory) -> None:
    with pytest.raises(InvalidTagError):
        memory.set_user_tags("new", {"name": "Bob", "age": 999})
    assert memory.get_user_tags("new") == {}
    assert memory.get_user_tag("new", "name") is None


@pytest.mark.parametrize("mapping", [[("name", "Bob")], "name=Bob", None, 5])
def test_non_mapping_is_rejected(memory: TieredMemory, mapping: Any) -> None:
    with pytest.raises(InvalidTagError):
        memory.set_user_tags("u", mapping)
    assert memory.get_user_tags("u") == {}


def test_error_messages_say_what_is_wrong(memory: TieredMemory) -> None:
    with pytest.raises(InvalidTagError, match="nickname") as info:
        memory.set_user_tags("u", {"nickname": "Al"})
    assert "age" in str(info.value) and "name" in str(info.value)  # the known tags
    with pytest.raises(InvalidTagError, match="age"):
        memory.set_user_tags("u", {"age": 999})


def test_unicode_and_tabs_are_fine(memory: TieredMemory) -> None:
    memory.set_user_tags("u", {"name": "Zoë 日本 🎉"})
    assert memory.get_user_tag("u", "name") == "Zoë 日本 🎉"


def test_custom_schema(memory_factory: MemoryFactory) -> None:
    memory = memory_factory(tag_schema=TravelTags)
    assert memory.tags.schema is TravelTags
    written = memory.set_user_tags(
        "u", {"city": "Lyon", "vegetarian": True, "birthday": "2000-05-08", "seat": "aisle"}
    )
    assert written == {
        "city": "Lyon",
        "vegetarian": "True",
        "birthday": "2000-05-08",
        "seat": "aisle",
    }
    assert memory.get_user_tags("u") == written
    for bad in (
        {"name": "Al"},  # a default tag is not a tag of this schema
        {"seat": "middle"},
        {"birthday": "yesterday"},
        {"city": "x" * 51},
        {"notes": "y" * (MAX_TAG_VALUE_CHARS + 1)},
    ):
        with pytest.raises(InvalidTagError):
            memory.set_user_tags("u", bad)
    assert memory.get_user_tags("u") == written
    assert memory.set_user_tags("u", {"notes": "n" * MAX_TAG_VALUE_CHARS})["notes"] == (
        "n" * MAX_TAG_VALUE_CHARS
    )


def test_clear(memory: TieredMemory) -> None:
    memory.set_user_tags("u", {"name": "A", "age": 1})
    memory.set_user_tags("v", {"name": "V"})
    assert memory.tags.clear("u") == 2
    assert memory.get_user_tags("u") == {}
    assert memory.get_user_tags("v") == {"name": "V"}
    assert memory.tags.clear("u") == 0


@pytest.mark.parametrize("bad", ["", None, 3, "x" * 257], ids=["empty", "none", "int", "long"])
async def test_invalid_user_id_raises(memory: TieredMemory, bad: Any) -> None:
    for call in (
        lambda: memory.set_user_tags(bad, {"name": "A"}),
        lambda: memory.get_user_tags(bad),
        lambda: memory.get_user_tag(bad, "name"),
        lambda: memory.tags.clear(bad),
    ):
        with pytest.raises(InvalidUserIdError):
            call()
    for acall in (
        lambda: memory.aset_user_tags(bad, {"name": "A"}),
        lambda: memory.aget_user_tags(bad),
        lambda: memory.aget_user_tag(bad, "name"),
    ):
        with pytest.raises(InvalidUserIdError):
            await acall()


def test_redis_stores_one_hash_field_per_tag(embedded_memory: TieredMemory) -> None:
    embedded_memory.set_user_tags("alice", {"name": "Alice", "age": "30"})
    assert embedded_memory.redis_url is not None
    client = raw_client(embedded_memory.redis_url)
    key = embedded_memory.tags.key("alice")  # type: ignore[attr-defined]
    assert client.type(key) == b"hash"
    assert client.hgetall(key) == {b"name": b"Alice", b"age": b"30"}
    client.close()


async def test_async_parity(memory_factory: MemoryFactory) -> None:
    sync_memory, async_memory = memory_factory(), memory_factory()
    steps: list[dict[str, Any]] = [
        {"name": "Alice", "age": "30"},
        {"age": 31},
        {"age": 999},
        {"nickname": "x"},
        {"name": "Al"},
    ]
    sync_log: list[Any] = []
    async_log: list[Any] = []
    for mapping in steps:
        try:
            sync_log.append(sync_memory.set_user_tags("u", mapping))
        except InvalidTagError as exc:
            sync_log.append(type(exc))
        try:
            async_log.append(await async_memory.aset_user_tags("u", mapping))
        except InvalidTagError as exc:
            async_log.append(type(exc))
        sync_log.append(sync_memory.get_user_tags("u"))
        async_log.append(await async_memory.aget_user_tags("u"))
        sync_log.append(sync_memory.get_user_tag("u", "age"))
        async_log.append(await async_memory.aget_user_tag("u", "age"))
    assert async_log == sync_log
    assert sync_log[-2] == {"name": "Al", "age": "31"}
    assert await async_memory.tags.aclear("u") == sync_memory.tags.clear("u") == 2
