"""``ChatLocalTransformers``: a GGUF model in-process through PyTorch and ``transformers``.

The default local backend: nothing to compile. ``transformers`` reads the GGUF file once
(de-quantizing it takes about 15 s for SmolLM2-135M on 2 cores) and the result is cached as
safetensors under ``~/.cache/langchain-tiered-memory/transformers``; later loads take well
under a second. A forced tool call is generated under the tool's JSON schema by
``llguidance`` (the constrained-decoding engine of vLLM, SGLang and llama.cpp), so its
arguments have the tool's shape, as with llama.cpp's grammars.

The prompt is the one :class:`~langchain_tiered_memory.local.ChatLocalLlama` sends (llama.cpp's
``chatml-function-calling`` template, rendered here without HTML escaping), and the sampling
defaults are llama.cpp's (top-k 40, top-p 0.95, min-p 0.05, repetition penalty 1.1), so the
SmolLM2 workarounds measured on one backend hold for the other.

Example:
    >>> from langchain_tiered_memory.local import ChatLocalTransformers
    >>> model = ChatLocalTransformers(temperature=0)  # nothing is loaded until the first call
    >>> model.invoke("Say hello.").content  # doctest: +SKIP
    'Hello! How can I help you today?'
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from langchain_tiered_memory._cache import cache_root
from langchain_tiered_memory._hf import local_weights
from langchain_tiered_memory.local._chat import LocalChatModel, new_call_id
from langchain_tiered_memory.local._smollm2 import LOCAL_EXTRA_HINT

__all__ = ["ChatLocalTransformers"]

logger = logging.getLogger(__name__)

# llama-cpp-python's ``chatml-function-calling`` template (llama_cpp/llama_chat_format.py,
# MIT licence), verbatim, so both backends show a model the same prompt.
_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message.role }}\n"
    "{% if message.role == 'system' %}"
    "{{ message.content }}"
    "{% if tool_calls %}"
    "\n\nYou have access to the following functions:\n"
    "{% for tool in tools %}"
    "\nfunctions.{{ tool.function.name }}:\n"
    "{{ tool.function.parameters | tojson }}"
    "\n{% endfor %}"
    "\n\nYou can respond to users messages with either a single message or one or more "
    "function calls."
    "\n\nTo respond with a message begin the message with 'message:', use the following format:"
    "\n\nmessage:"
    "\n<message>"
    "\n\nTo respond with one or more function calls begin the message with "
    "'functions.<function_name>:', use the following format:"
    "\n\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
    "\nfunctions.<function_name>:"
    '\n{ "arg1": "value1", "arg2": "value2" }'
    "{% endif %}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% if message.role == 'user' %}"
    "{{ message.content }}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% if message.role == 'assistant' %}"
    "{% if message.content and message.content | length > 0 %}"
    "{% if tool_calls %}"
    "message:\n"
    "{% endif %}"
    "{{ message.content }}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% if 'tool_calls' in message %}"
    "{% for tool_call in message.tool_calls %}"
    "functions.{{ tool_call.function.name }}:\n"
    "{{ tool_call.function.arguments }}"
    "{% endfor %}"
    "<|im_end|>\n"
    "{% endif %}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
_END = "<|im_end|>"
_CALL = re.compile(r"functions\.([A-Za-z0-9_.\-]+):\s*\n?")


def _import_backend() -> tuple[Any, Any]:
    """Import torch and transformers, with an install hint when one is missing."""
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the environment
        msg = (
            "ChatLocalTransformers needs `torch` and `transformers`, which are not installed. "
            f"Install them with: pip install torch==2.13.0 && {LOCAL_EXTRA_HINT}"
        )
        raise ImportError(msg) from exc
    return torch, transformers


def _closed(schema: Any) -> Any:
    """Copy a JSON schema with ``additionalProperties: false`` on each object lacking it.

    llama.cpp's grammar allows only the listed keys whether or not the schema says so (and
    the prompt shows the schema without the key, see ``_tools_for_template``); a JSON-schema
    engine reads a missing key as "any other key is allowed", and SmolLM2-135M then writes
    ``{"description": ...}`` keys of its own. Closing the objects gives llama.cpp's shape.
    """
    if isinstance(schema, Mapping):
        copy = {key: _closed(value) for key, value in schema.items()}
        if copy.get("type") == "object" and "additionalProperties" not in copy:
            copy["additionalProperties"] = False
        return copy
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


@dataclass
class _Backend:
    torch: Any
    model: Any
    tokenizer: Any
    template: Any
    guide_tokenizer: Any = None


class ChatLocalTransformers(LocalChatModel):
    """A chat model running a GGUF file in-process through ``transformers``, no compiler.

    Options as :class:`~langchain_tiered_memory.local.LocalChatModel` (all keyword-only); the
    model is loaded on the first call. ``n_threads`` sets torch's thread count for the
    process (torch has only a global one).

    Measured on the demo (2 cores, SmolLM2-135M, ``bench/local_models.py``): see the README;
    llama.cpp (:class:`~langchain_tiered_memory.local.ChatLocalLlama`) generates faster but
    needs a compiled ``llama-cpp-python``.

    Attributes:
        cache_dir: Where the de-quantized weights are kept; ``None`` means
            ``~/.cache/langchain-tiered-memory/transformers``.

    Example:
        >>> from pydantic import BaseModel
        >>> class UserTag(BaseModel):
        ...     '''Save facts the user states about themselves.'''
        ...     name: str | None = None
        ...     age: int | None = None
        >>> model = ChatLocalTransformers(temperature=0)  # no I/O yet
        >>> tagger = model.bind_tools([UserTag], tool_choice="UserTag")
        >>> msg = tagger.invoke("Hi, my name is Alice and I am 30 years old.")  # doctest: +SKIP
        >>> msg.tool_calls[0]["args"]  # doctest: +SKIP
        {'name': 'Alice', 'age': 30}
    """

    cache_dir: str | None = None

    provider: ClassVar[str] = "transformers"

    @property
    def _llm_type(self) -> str:
        return "local-transformers"

    # ----------------------------------------------------------------- loading

    def _converted_dir(self, path: str) -> Path:
        stat = os.stat(path)
        key = f"{os.path.realpath(path)}:{stat.st_size}:{stat.st_mtime_ns}"
        digest = hashlib.sha1(key.encode()).hexdigest()[:12]
        root = Path(self.cache_dir) if self.cache_dir else cache_root("transformers")
        return root / f"{Path(path).stem}-{digest}"

    def _convert(self, torch: Any, transformers: Any, path: str, target: Path) -> None:
        """De-quantize the GGUF file once into a safetensors directory, atomically."""
        from safetensors.torch import save_model

        directory, name = os.path.split(path)
        logger.info("converting %s for transformers (once) into %s", name, target)
        tokenizer = transformers.AutoTokenizer.from_pretrained(directory, gguf_file=name)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            directory, gguf_file=name, dtype=torch.float32
        )
        # The GGUF marker would make the saved copy look quantized (and unloadable).
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            staged = Path(tmp) / "model"
            staged.mkdir()
            model.config.save_pretrained(staged)
            model.generation_config.save_pretrained(staged)
            tokenizer.save_pretrained(staged)
            save_model(model, str(staged / "model.safetensors"))
            try:
                os.rename(staged, target)  # atomic: whole directory or nothing
            except OSError:
                if not (target / "model.safetensors").is_file():
                    raise  # not another process winning the race: a real error

    def _load_backend(self, path: str) -> Any:
        torch, transformers = _import_backend()
        if self.n_threads is not None:
            torch.set_num_threads(self.n_threads)
        target = self._converted_dir(path)
        with local_weights(quiet=not self.verbose):
            if not (target / "model.safetensors").is_file():
                self._convert(torch, transformers, path, target)
            tokenizer = transformers.AutoTokenizer.from_pretrained(target)
            model = transformers.AutoModelForCausalLM.from_pretrained(
                target, dtype=torch.float32, **self.model_kwargs
            ).eval()
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        # No autoescaping: message text reaches the model as typed (llama-cpp-python
        # autoescapes, which ChatLocalLlama undoes with markupsafe).
        template = ImmutableSandboxedEnvironment().from_string(_TEMPLATE)
        return _Backend(torch=torch, model=model, tokenizer=tokenizer, template=template)

    # ----------------------------------------------------------------- generation

    def _chat_completion(
        self, backend: Any, messages: list[dict[str, Any]], params: dict[str, Any]
    ) -> dict[str, Any]:
        tools = params.get("tools") or []
        choice = params.get("tool_choice")
        prompt = backend.template.render(
            messages=messages, tools=tools, tool_calls=bool(tools), add_generation_prompt=True
        )
        forced = None
        if isinstance(choice, Mapping):
            name = choice["function"]["name"]
            forced = next(t for t in tools if t["function"]["name"] == name)
            prompt += f"functions.{name}:\n"
        schema = _closed(forced["function"]["parameters"]) if forced is not None else None
        text, prompt_tokens, new_tokens, finish = self._complete(backend, prompt, params, schema)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if forced is not None:
            message["tool_calls"] = [
                {
                    "id": new_call_id(),
                    "type": "function",
                    "function": {"name": forced["function"]["name"], "arguments": text},
                }
            ]
        elif tools:  # "auto": the model wrote "message:" or "functions.<name>:" lines
            message.update(_parse_auto_reply(text))
        else:
            message["content"] = text
        return {
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": new_tokens,
                "total_tokens": prompt_tokens + new_tokens,
            },
        }

    def _complete(
        self,
        backend: _Backend,
        prompt: str,
        params: dict[str, Any],
        schema: dict[str, Any] | None,
    ) -> tuple[str, int, int, str]:
        """Generate from ``prompt``; return the text, token counts and finish reason."""
        torch, model, tokenizer = backend.torch, backend.model, backend.tokenizer
        encoded = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        n_prompt = int(encoded["input_ids"].shape[1])
        if n_prompt >= self.n_ctx:
            msg = (
                f"The prompt has {n_prompt} tokens, more than the context window of "
                f"{self.n_ctx}: shorten the history (max_context_messages) or raise n_ctx."
            )
            raise ValueError(msg)
        max_new = min(int(params.get("max_tokens") or self.max_tokens), self.n_ctx - n_prompt)
        temperature = float(params.get("temperature", self.temperature))
        options: dict[str, Any] = {
            "max_new_tokens": max_new,
            "pad_token_id": tokenizer.eos_token_id,
            "eos_token_id": tokenizer.convert_tokens_to_ids(_END),
        }
        if temperature > 0:
            options.update(
                do_sample=True, temperature=temperature, top_k=40, top_p=0.95, min_p=0.05
            )
        else:
            options.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        stop = [s for s in params.get("stop") or [] if s]
        if stop:
            options.update(stop_strings=stop, tokenizer=tokenizer)
        processors = [_recent_repetition_penalty(torch, n_prompt)]
        if schema is not None:
            processors.append(self._guide(backend, schema, n_prompt))
        options["logits_processor"] = processors
        if params.get("seed") is not None:
            torch.manual_seed(int(params["seed"]))
        with torch.inference_mode():
            output = model.generate(**encoded, **options)
        new = output[0, n_prompt:]
        text = tokenizer.decode(new, skip_special_tokens=True)
        finish = "stop"
        if len(new) >= max_new and int(new[-1]) != options["eos_token_id"]:
            finish = "length"
        for sequence in stop:  # generate() keeps the stop string; the API drops it
            if sequence in text:
                text = text[: text.index(sequence)]
                finish = "stop"
        return text, n_prompt, int(len(new)), finish

    def _guide(self, backend: _Backend, schema: dict[str, Any], n_prompt: int) -> Any:
        """A logits processor that allows only tokens continuing JSON valid for ``schema``."""
        try:
            import llguidance
            import llguidance.hf
            import llguidance.numpy as lln
            from transformers import LogitsProcessor
        except ImportError as exc:  # pragma: no cover - depends on the environment
            msg = f"Forced tool calls need `llguidance`. Install it with: {LOCAL_EXTRA_HINT}"
            raise ImportError(msg) from exc
        if backend.guide_tokenizer is None:
            backend.guide_tokenizer = llguidance.hf.from_tokenizer(backend.tokenizer)
        guide_tokenizer = backend.guide_tokenizer
        # Flexible whitespace, as llama.cpp's JSON grammars: SmolLM2-135M reads the values
        # better after the spaces it was trained on ({"name": "Alice", "age": 30} with them,
        # {"name":"Alice","age":12} without, greedy, on the demo's first message).
        grammar = llguidance.LLMatcher.grammar_from_json_schema(
            json.dumps(schema), defaults={"whitespace_flexible": True}
        )
        matcher = llguidance.LLMatcher(guide_tokenizer, grammar)
        if matcher.is_error():
            msg = f"The tool's JSON schema cannot be enforced: {matcher.get_error()}"
            raise ValueError(msg)
        end = backend.tokenizer.convert_tokens_to_ids(_END)
        mask = lln.allocate_token_bitmask(1, guide_tokenizer.vocab_size)
        torch = backend.torch

        class _Guide(LogitsProcessor):  # type: ignore[misc]
            def __call__(self, input_ids: Any, scores: Any) -> Any:
                if input_ids.shape[1] > n_prompt:
                    matcher.consume_token(int(input_ids[0, -1]))
                if matcher.is_stopped() or matcher.is_error():
                    scores[:] = -float("inf")
                    scores[:, end] = 0.0
                    return scores
                lln.fill_next_token_bitmask(matcher, mask, 0)
                return apply_bitmask(torch, scores, mask[0])

        return _Guide()


def apply_bitmask(torch: Any, scores: Any, mask: Any) -> Any:
    """Set to -inf, in place, the ``scores`` of every token whose bit in ``mask`` is 0.

    ``mask`` is llguidance's bitmask (int32 words, token ``i`` at bit ``i % 32`` of word
    ``i // 32``), as ``llguidance.numpy`` fills it. Not ``llguidance.torch``'s kernel: it
    is ``@torch.compile``d, so its first call runs a C++ compiler (g++, 150 MB of cache),
    and on a machine with none the call fails. Unpacking the bits with numpy is a few
    microseconds for SmolLM2's 49k tokens.

    Example:
        >>> import numpy as np, torch
        >>> scores = torch.zeros(1, 5)
        >>> apply_bitmask(torch, scores, np.array([0b10101], dtype=np.int32)).tolist()
        [[0.0, -inf, 0.0, -inf, 0.0]]
    """
    import numpy as np

    vocab = scores.shape[-1]
    bits = np.unpackbits(np.ascontiguousarray(mask).view(np.uint8), bitorder="little")
    blocked = np.ones(vocab, dtype=bool)  # a token past the mask's words is not allowed
    n = min(vocab, bits.size)
    blocked[:n] = bits[:n] == 0
    scores[..., torch.from_numpy(blocked).to(scores.device)] = -float("inf")
    return scores


def _recent_repetition_penalty(
    torch: Any, n_prompt: int, penalty: float = 1.1, last_n: int = 64
) -> Any:
    """llama.cpp's repetition penalty: the last ``last_n`` generated tokens, not the prompt.

    transformers' ``repetition_penalty`` penalizes every token of the prompt too, so a model
    told "age: 30" is pushed away from saying 30. On the demo's step-3 prompt (SmolLM2-135M,
    temperature 0.2, 10 seeds) the answer to "How old am I?" held the age 0/10 times with
    it, 0/10 with a penalty on the last 64 tokens of prompt and answer, 8/10 with no
    penalty, and with this one as many as with llama.cpp (see ``bench/local_models.py``).
    """
    from transformers import LogitsProcessor

    class _Penalty(LogitsProcessor):  # type: ignore[misc]
        def __call__(self, input_ids: Any, scores: Any) -> Any:
            recent = input_ids[:, n_prompt:][:, -last_n:]
            if recent.shape[1] == 0:
                return scores
            picked = torch.gather(scores, 1, recent)
            picked = torch.where(picked < 0, picked * penalty, picked / penalty)
            return scores.scatter(1, recent, picked)

    return _Penalty()


def _parse_auto_reply(text: str) -> dict[str, Any]:
    """Split a reply in the template's format into message text or tool calls."""
    stripped = text.strip()
    if not _CALL.match(stripped):
        if stripped.startswith("message:"):
            stripped = stripped[len("message:") :].strip()
        return {"content": stripped}
    calls = []
    matches = list(_CALL.finditer(stripped))
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(stripped)
        calls.append(
            {
                "id": new_call_id(),
                "type": "function",
                "function": {"name": match.group(1), "arguments": stripped[match.end() : end]},
            }
        )
    return {"content": None, "tool_calls": calls}
