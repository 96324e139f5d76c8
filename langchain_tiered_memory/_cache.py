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
        # what it costs, and where it goes: the local models' files are ~0.5 GB, left there
        logger.warning(
            "%s is not writable; the derived model files (about 0.5 GB for the local "
            "models) go to %s, which stays until removed: set XDG_CACHE_HOME to a writable "
            "directory to keep them there instead",
            Path(base),
            root,
        )
    return root
