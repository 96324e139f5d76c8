"""The package's on-disk cache: files derived once from packaged weights."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

__all__ = ["cache_root"]

logger = logging.getLogger(__name__)


def cache_root(kind: str) -> Path:
    """Return (and create) ``~/.cache/langchain-tiered-memory/<kind>``.

    ``$XDG_CACHE_HOME`` replaces ``~/.cache``. When that is not writable (a read-only home in
    a container), a per-user directory under the system's temporary directory is used.

    Args:
        kind: The sub-directory, one per kind of derived file (``"onnx"``, ...).

    Returns:
        The directory, which exists.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    root = Path(base) / "langchain-tiered-memory" / kind
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        uid = os.getuid() if hasattr(os, "getuid") else "user"
        root = Path(tempfile.gettempdir()) / f"langchain-tiered-memory-{kind}-{uid}"
        root.mkdir(parents=True, exist_ok=True)
        logger.warning("the cache is not writable; using %s", root)
    return root
