"""Loading Hugging Face weights that are already on disk (the packaged MiniLM, SmolLM2)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["local_weights"]


@contextmanager
def local_weights(*, quiet: bool = True) -> Iterator[None]:
    """Load weights from disk: offline, and quiet while loading.

    The weights are on disk, so a cache miss must never reach for the network (the
    environment variables are set only if the app has not set them). ``quiet`` hides
    transformers' progress bars and warnings while loading — in the chat and the demo they
    land in the middle of the conversation — and restores the app's settings afterwards.

    Example:
        >>> with local_weights():  # doctest: +SKIP
        ...     model = AutoModel.from_pretrained("/path/on/disk")
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    if not quiet:
        yield
        return
    from transformers.utils import logging as hf_logging

    bars, level = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(level)
        if bars:
            hf_logging.enable_progress_bar()
