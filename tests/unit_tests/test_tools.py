"""The ``user_tag`` and ``summarize`` tools, called directly (no graph)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, Field

from langchain_tiered_memory import HashingEmbeddings, MissingUserIdError, TieredMemory
from langchain_tiered_memory.agent.tools import SummarizeTool, UserTagTool
from langchain_tiered_memory.testing import ScriptedChatModel

ALICE: RunnableConfig = {"configurable": {"user_id": "alice"}}


def tool_call(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "args": args, "id": call_id}


def summary_reply(*items: str) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[{"name": "SummaryItems", "args": {"items": list(items)}, "id": "s1"}],
    )


def seed_history(memory: TieredMemory, user: str = "alice") -> None:
    memory.add_session_log(
        user, [HumanMessage("My birthday is on May 8."), AIMessage("Noted, May 8.")]
    )


# --------------------------------------------------------------------------- user_tag schema


def model_view(tool: Any) -> dict[str, Any]:
    """The parameters JSON schema a provider sends to the model."""
    return convert_to_openai_tool(tool)["function"]["parameters"]  # type: ignore[no-any-return]


def typed(prop: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an optional property."""
    (branch,) = [b for b in prop["anyOf"] if b.get("type") != "null"]
    return branch  # type: ignore[no-any-return]


def test_user_tag_schema_the_model_sees_has_typed_constrained_fields_and_no_user_id() -> None:
    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    tool = UserTagTool(memory=memory)
    params = model_view(tool)
    assert set(params["properties"]) == {"name", "age"}
    assert params.get("required", []) == []  # every field optional: tag only what you know
    # no additionalProperties: false (llama.cpp mangles arguments with it); unknown tags are
    # refused by the tool's own validation instead
    assert "additionalProperties" not in params
    assert typed(params["properties"]["name"]) == {
        "type": "string",
        "minLength": 1,
        "maxLength": 100,
    }
    assert typed(params["properties"]["age"]) == {"type": "integer", "minimum": 0, "maximum": 150}
    assert params["properties"]["age"]["description"] == "The user's age in years."
    flat = str(params).lower()
    assert "user" not in str(list(params["properties"])) and "config" not in flat
    assert tool.tool_call_schema.model_json_schema()["properties"].keys() == {"name", "age"}


def test_a_custom_tag_schema_becomes_the_tool_schema() -> None:
    class Tags(BaseModel):
        city: str | None = Field(default=None, max_length=40, description="Home city.")
        pets: int | None = Field(default=None, ge=0, le=20)

    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings(), tag_schema=Tags)
    tool = UserTagTool(memory=memory)
    params = model_view(tool)
    assert set(params["properties"]) == {"city", "pets"}
    assert typed(params["properties"]["city"]) == {"type": "string", "maxLength": 40}
    assert typed(params["properties"]["pets"]) == {"type": "integer", "minimum": 0, "maximum": 20}
    assert tool.invoke({"city": "Oslo", "pets": 2}, config=ALICE) == "Recorded: city=Oslo, pets=2."
    assert memory.get_user_tags("alice") == {"city": "Oslo", "pets": "2"}


def test_summarize_takes_no_arguments_the_model_could_misuse() -> None:
    memory = TieredMemory.in_memory(embeddings=HashingEmbeddings())
    assert model_view(SummarizeTool(memory=memory, model=None))["properties"] == {}


# --------------------------------------------------------------------------- user_tag calls


def test_user_tag_invoked_directly_with_the_user_in_config(
    embedded_memory: TieredMemory,
) -> None:
    tool = UserTagTool(memory=embedded_memory)
    assert tool.invoke({"name": "Alice", "age": 30}, config=ALICE) == (
        "Recorded: age=30, name=Alice."
    )
    assert embedded_memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert embedded_memory.get_user_tags("bob") == {}


async def test_user_tag_ainvoke_with_the_user_in_config(embedded_memory: TieredMemory) -> None:
    tool = UserTagTool(memory=embedded_memory)
    reply = await tool.ainvoke(tool_call("user_tag", {"age": 31}), config=ALICE)
    assert isinstance(reply, ToolMessage) and reply.status == "success"
    assert reply.text == "Recorded: age=31."
    assert await embedded_memory.aget_user_tags("alice") == {"age": "31"}


@pytest.mark.parametrize(
    ("args", "stored"),
    [
        ({"name": "", "age": 30}, {"name": "Alice", "age": "30"}),
        ({"name": None, "age": 41}, {"name": "Alice", "age": "41"}),
        ({"name": "Alicia", "age": ""}, {"name": "Alicia", "age": "29"}),
        ({"name": "Alicia", "age": None}, {"name": "Alicia", "age": "29"}),
    ],
)
def test_empty_and_null_values_mean_not_given(
    embedded_memory: TieredMemory, args: dict[str, Any], stored: dict[str, str]
) -> None:
    embedded_memory.set_user_tags("alice", {"name": "Alice", "age": 29})
    reply = UserTagTool(memory=embedded_memory).invoke(tool_call("user_tag", args), config=ALICE)
    assert reply.status == "success"
    assert embedded_memory.get_user_tags("alice") == stored


@pytest.mark.parametrize("args", [{}, {"name": "", "age": None}, {"name": None}])
def test_no_values_at_all_is_an_error_message(
    embedded_memory: TieredMemory, args: dict[str, Any]
) -> None:
    embedded_memory.set_user_tags("alice", {"name": "Alice"})
    reply = UserTagTool(memory=embedded_memory).invoke(tool_call("user_tag", args), config=ALICE)
    assert reply.status == "error" and "No tag values" in reply.text
    assert embedded_memory.get_user_tags("alice") == {"name": "Alice"}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"age": "abc"}, "'age'"),
        ({"age": 999}, "less than or equal to 150"),
        ({"name": "Eve", "age": 999}, "'age'"),  # all or nothing: Eve is not written either
        ({"shoe_size": 42}, "unknown tag 'shoe_size'"),
        ({"user_id": "bob", "name": "Eve"}, "unknown tag 'user_id'"),
    ],
)
def test_invalid_values_are_reported_and_nothing_is_written(
    embedded_memory: TieredMemory, args: dict[str, Any], says: str
) -> None:
    embedded_memory.set_user_tags("alice", {"name": "Alice", "age": 30})
    reply = UserTagTool(memory=embedded_memory).invoke(tool_call("user_tag", args), config=ALICE)
    assert reply.status == "error"
    assert reply.text.startswith("NOT RECORDED: nothing was stored") and says in reply.text
    assert embedded_memory.get_user_tags("alice") == {"name": "Alice", "age": "30"}
    assert embedded_memory.get_user_tags("bob") == {}


def test_a_config_argument_from_the_model_cannot_change_the_user(
    embedded_memory: TieredMemory,
) -> None:
    args = {"name": "Eve", "config": {"configurable": {"user_id": "bob"}}}
    reply = UserTagTool(memory=embedded_memory).invoke(tool_call("user_tag", args), config=ALICE)
    assert reply.status == "success"
    assert embedded_memory.get_user_tags("alice") == {"name": "Eve"}
    assert embedded_memory.get_user_tags("bob") == {}


def test_without_a_user_id_the_tool_raises_instead_of_guessing(
    embedded_memory: TieredMemory,
) -> None:
    tool = UserTagTool(memory=embedded_memory)
    with pytest.raises(MissingUserIdError):
        tool.invoke(tool_call("user_tag", {"name": "Alice", "user_id": "alice"}))
    assert embedded_memory.history.users() == []
    assert embedded_memory.get_user_tags("alice") == {}


# --------------------------------------------------------------------------- summarize


def test_summarize_without_a_model_is_an_error_message(embedded_memory: TieredMemory) -> None:
    seed_history(embedded_memory)
    reply = SummarizeTool(memory=embedded_memory, model=None).invoke(
        tool_call("summarize", {}), config=ALICE
    )
    assert isinstance(reply, ToolMessage) and reply.status == "error"
    assert "No summarizer model" in reply.text
    assert embedded_memory.export_user("alice")["summaries"] == []
    assert embedded_memory.summaries.get_watermark("alice") == 0


@pytest.mark.parametrize(
    "bad_reply",
    [
        "OK.",  # no items at all
        summary_reply("Completely unrelated quantum chromodynamics."),  # not grounded
        summary_reply(),
        RuntimeError("provider down"),
    ],
    ids=["no items", "ungrounded", "empty list", "model raises"],
)
async def test_a_failed_summary_is_an_error_message_and_the_watermark_stays(
    embedded_memory: TieredMemory, bad_reply: Any
) -> None:
    memory = embedded_memory
    seed_history(memory)

    def reply(messages: Any) -> Any:
        if isinstance(bad_reply, Exception):
            raise bad_reply
        return bad_reply

    # grounded: the small-model guard, which refuses the ungrounded item
    tool = SummarizeTool(memory=memory, model=ScriptedChatModel(replies=[reply]), grounded=True)
    for answer in (
        tool.invoke(tool_call("summarize", {}), config=ALICE),
        await tool.ainvoke(tool_call("summarize", {}), config=ALICE),
    ):
        assert answer.status == "error"
        assert answer.text.startswith("Summarizing failed, nothing was stored")
    assert memory.summaries.get_watermark("alice") == 0
    assert memory.export_user("alice")["summaries"] == []
    assert len(memory.load_context("alice", 10)) == 2  # nothing lost


def test_summarize_stores_items_for_the_run_user_only(embedded_memory: TieredMemory) -> None:
    memory = embedded_memory
    seed_history(memory)
    seed_history(memory, "bob")
    model = ScriptedChatModel(replies=[summary_reply("The user's birthday is on May 8.")])
    tool = SummarizeTool(memory=memory, model=model)
    # a user named in the arguments is refused, never obeyed (issue 65: no arguments)
    refused = tool.invoke(tool_call("summarize", {"user_id": "bob"}), config=ALICE)
    assert refused.status == "error" and "takes no arguments (got user_id)" in refused.text
    assert memory.summaries.get_watermark("bob") == 0
    reply = tool.invoke(tool_call("summarize", {}), config=ALICE)
    assert reply.status == "success" and reply.text.startswith("Stored 1 memory item")
    assert memory.summaries.get_watermark("alice") == 2
    assert memory.summaries.get_watermark("bob") == 0
    assert [s["text"] for s in memory.export_user("alice")["summaries"]] == [
        "The user's birthday is on May 8."
    ]
    assert memory.export_user("bob")["summaries"] == []
    again = tool.invoke(tool_call("summarize", {}), config=ALICE)  # nothing new since
    assert again.status == "success" and again.text.startswith("Nothing new")
    assert len(model.prompts) == 1
