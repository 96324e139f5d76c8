"""``ChatLocalTransformers`` without loading a model: the prompt, the schema, the parsing.

Generation (``_complete``) is replaced by a recorder, so what reaches the model and how its
text becomes an ``AIMessage`` are checked here; the real SmolLM2 runs in
``tests/integration_tests/test_local_model.py``. The prompt is compared with the one
llama-cpp-python itself renders, when it is installed: both backends must show the model
the same text.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from pydantic import BaseModel, Field

from langchain_tiered_memory.local import ChatLocalTransformers, hf
from langchain_tiered_memory.local._chat import _adapt_for_template, _tools_for_template
from langchain_tiered_memory.local.llamacpp import _mark_safe


class UserTag(BaseModel):
    """Record a fact the user stated about themselves."""

    name: str | None = Field(None, description="The user's name")
    age: int | None = Field(None, description="The user's age in years")


class Recorder:
    """Stands in for ``_complete``: records prompt and schema, replays canned texts."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[dict[str, Any]] = []

    def __call__(
        self, backend: Any, prompt: str, params: dict[str, Any], schema: Any
    ) -> tuple[str, int, int, str]:
        self.calls.append({"prompt": prompt, "params": params, "schema": schema})
        return (self.texts.pop(0) if self.texts else "ok"), 12, 3, "stop"


def recorded(monkeypatch: pytest.MonkeyPatch, *texts: str, **options: Any) -> tuple[Any, Recorder]:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    model = ChatLocalTransformers(**options)
    backend = hf._Backend(
        torch=None,
        model=None,
        tokenizer=None,
        template=ImmutableSandboxedEnvironment().from_string(hf._TEMPLATE),
    )
    model._backend = backend
    recorder = Recorder(*texts)
    monkeypatch.setattr(model, "_complete", recorder)
    return model, recorder


def test_plain_call(monkeypatch: pytest.MonkeyPatch) -> None:
    model, rec = recorded(monkeypatch, "Alice is 30 years old.", seed=7, max_tokens=32)
    reply = model.invoke([SystemMessage("Facts: age 30"), HumanMessage("How old am I?")])
    assert reply.content == "Alice is 30 years old."
    assert reply.tool_calls == []
    assert reply.usage_metadata == {"input_tokens": 12, "output_tokens": 3, "total_tokens": 15}
    assert reply.response_metadata["model_provider"] == "transformers"
    (call,) = rec.calls
    assert call["prompt"] == (
        "<|im_start|>system\nFacts: age 30<|im_end|>\n"
        "<|im_start|>user\nHow old am I?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert call["schema"] is None
    assert call["params"]["seed"] == 7 and call["params"]["max_tokens"] == 32


def test_text_is_not_html_escaped(monkeypatch: pytest.MonkeyPatch) -> None:
    model, rec = recorded(monkeypatch)
    model.invoke('I\'m "Bob" & <b>41</b>')
    assert 'I\'m "Bob" & <b>41</b><|im_end|>' in rec.calls[0]["prompt"]


def test_forced_call_is_constrained_to_the_closed_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    model, rec = recorded(monkeypatch, '{"name": "Alice", "age": 30}')
    reply = model.bind_tools([UserTag], tool_choice="UserTag").invoke("I'm Alice, 30.")
    assert isinstance(reply, AIMessage)
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("UserTag", {"name": "Alice", "age": 30})
    ]
    assert reply.response_metadata["finish_reason"] == "tool_calls"
    (call,) = rec.calls
    assert call["prompt"].endswith("<|im_start|>assistant\nfunctions.UserTag:\n")
    # the prompt shows the schema without additionalProperties; the constraint closes it
    assert "additionalProperties" not in call["prompt"]
    assert call["schema"]["additionalProperties"] is False
    assert set(call["schema"]["properties"]) == {"name", "age"}


def test_a_truncated_forced_call_is_an_invalid_call(monkeypatch: pytest.MonkeyPatch) -> None:
    model, _ = recorded(monkeypatch, '{"name": "Bob Bob Bob')
    reply = model.bind_tools([UserTag], tool_choice="UserTag").invoke("I'm Bob.")
    assert reply.tool_calls == []
    assert reply.invalid_tool_calls[0]["args"] == '{"name": "Bob Bob Bob'


def test_structured_output(monkeypatch: pytest.MonkeyPatch) -> None:
    model, _ = recorded(monkeypatch, '{"name": "Bob", "age": 41}')
    assert model.with_structured_output(UserTag).invoke("I'm Bob, 41.") == UserTag(
        name="Bob", age=41
    )


@pytest.mark.parametrize(
    ("text", "content", "calls"),
    [
        ("message:\nParis.", "Paris.", []),
        ("Paris.", "Paris.", []),
        ('functions.UserTag:\n{"age": 30}', "", [("UserTag", {"age": 30})]),
        (
            'functions.UserTag:\n{"age": 30}\nfunctions.UserTag:\n{"name": "A"}',
            "",
            [("UserTag", {"age": 30}), ("UserTag", {"name": "A"})],
        ),
    ],
)
def test_auto_mode_reply_is_parsed(
    monkeypatch: pytest.MonkeyPatch, text: str, content: str, calls: list[Any]
) -> None:
    model, rec = recorded(monkeypatch, text)
    reply = model.bind_tools([UserTag], tool_choice="auto").invoke("hi")
    assert reply.content == content
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == calls
    assert rec.calls[0]["schema"] is None  # auto mode is free text
    assert "functions.UserTag:" in rec.calls[0]["prompt"]  # but the tools are listed


def test_closed_schema_keeps_explicit_choices() -> None:
    schema = {
        "type": "object",
        "properties": {
            "inner": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "open": {"type": "object", "additionalProperties": True},
            "items": {"type": "array", "items": {"type": "object", "properties": {}}},
        },
    }
    closed = hf._closed(schema)
    assert closed["additionalProperties"] is False
    assert closed["properties"]["inner"]["additionalProperties"] is False
    assert closed["properties"]["open"]["additionalProperties"] is True
    assert closed["properties"]["items"]["items"]["additionalProperties"] is False
    assert "additionalProperties" not in schema  # the input is not changed


def test_init_does_no_io() -> None:
    model = ChatLocalTransformers(model_path="/does/not/exist.gguf", n_threads=2)
    assert not model.is_loaded
    with pytest.raises(FileNotFoundError, match="exist.gguf"):
        model.invoke("hi")


def test_long_prompt_is_a_clear_error() -> None:
    class Tokens:
        shape = (1, 5000)

    class Tokenizer:
        def __call__(self, *_: Any, **__: Any) -> dict[str, Any]:
            return {"input_ids": Tokens()}

    backend = hf._Backend(torch=None, model=None, tokenizer=Tokenizer(), template=None)
    model = ChatLocalTransformers(n_ctx=4096)
    with pytest.raises(ValueError, match="5000 tokens.*4096.*max_context_messages"):
        model._complete(backend, "x", {"max_tokens": 10}, None)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="needs llama-cpp")
@pytest.mark.parametrize("forced", [True, False])
def test_prompt_is_the_one_llama_cpp_renders(monkeypatch: pytest.MonkeyPatch, forced: bool) -> None:
    """The same conversation gives the same prompt text through llama-cpp-python itself."""
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from llama_cpp import llama_chat_format

    conversation = [
        SystemMessage("You remember things."),
        HumanMessage("I'm Alice, 30."),
        AIMessage("", tool_calls=[{"name": "UserTag", "args": {"name": "Alice"}, "id": "c1"}]),
        ToolMessage("Recorded: name=Alice.", tool_call_id="c1"),
        HumanMessage("How old am I?"),
    ]
    model, rec = recorded(monkeypatch, '{"age": 30}')
    choice: Any = "UserTag" if forced else None
    model.bind_tools([UserTag], tool_choice=choice).invoke(conversation)
    ours = rec.calls[0]["prompt"]

    class PromptOnly:
        verbose = False
        prompt = ""

        def create_completion(self, **kwargs: Any) -> dict[str, Any]:
            PromptOnly.prompt = kwargs["prompt"]
            choice = {"text": "{}", "index": 0, "logprobs": None, "finish_reason": "stop"}
            return {"id": "x", "object": "text_completion", "created": 0, "model": "m",
                    "choices": [choice], "usage": {}}  # fmt: skip

    from langchain_tiered_memory.local._chat import messages_to_llama_dicts

    tools = _tools_for_template([convert_to_openai_tool(UserTag)])
    dicts = _adapt_for_template(messages_to_llama_dicts(conversation), with_tools=forced)
    dicts = _mark_safe(dicts)  # as ChatLocalLlama sends them (llama-cpp-python autoescapes)
    llama_chat_format.chatml_function_calling(
        PromptOnly(),  # type: ignore[arg-type]
        messages=dicts,  # type: ignore[arg-type]
        tools=tools if forced else None,  # type: ignore[arg-type]
        tool_choice={"type": "function", "function": {"name": "UserTag"}} if forced else None,
    )
    assert ours == PromptOnly.prompt


@pytest.mark.parametrize("vocab", [1, 31, 32, 33, 1000, 49152])
def test_the_bitmask_blocks_exactly_the_tokens_whose_bit_is_zero(vocab: int) -> None:
    """Issue 33: the mask is applied without llguidance.torch's compiled kernel."""
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(vocab)
    words = (vocab + 31) // 32
    mask = rng.integers(-(2**31), 2**31 - 1, size=words, dtype=np.int64).astype(np.int32)
    scores = torch.randn(1, vocab)
    expected = scores.clone()
    for i in range(vocab):
        if not (int(mask[i // 32]) >> (i % 32)) & 1:
            expected[0, i] = -float("inf")
    assert torch.equal(hf.apply_bitmask(torch, scores, mask), expected)
    # a vocabulary longer than the mask: the tokens past it are not allowed
    longer = torch.zeros(1, words * 32 + 3)
    assert torch.isinf(hf.apply_bitmask(torch, longer, mask)[0, words * 32 :]).all()


def test_no_local_module_uses_a_compiled_torch_kernel() -> None:
    """``llguidance.torch`` is ``@torch.compile``d: its first call runs g++ (issue 33)."""
    import ast
    from pathlib import Path

    for path in Path(hf.__file__).parent.glob("*.py"):
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
                imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        assert "llguidance.torch" not in imported, path.name
