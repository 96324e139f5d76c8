"""What the CLI's commands share: the memory, the model and the user's threads from the options."""

from __future__ import annotations

import argparse
from contextlib import suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote as url_quote

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver

from langchain_tiered_memory.backend.keys import validate_user_id
from langchain_tiered_memory.backend.server import default_data_dir
from langchain_tiered_memory.persistence.checkpoint import RedisSaver
from langchain_tiered_memory.testing import ScriptedChatModel

EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 130
FAKE_MODEL = "fake"

CHAT_HELP = """\
slash commands:
  /tags             the user's tags
  /recall QUERY     the summary items recalled for QUERY
  /summarize        summarize the unsummarized history into items now
  /prompt           the system prompt of the last turn (with the memory section)
  /forget           erase this user from every tier (asks first)
  /help             this list
  /quit             leave (also Ctrl-D)"""

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "FAKE_MODEL",
    "checkpoint_thread_id",
    "describe_model",
    "load_chat_model",
    "user_thread_ids",
]


def data_dir_of(args: argparse.Namespace) -> Path:
    return Path(args.data_dir).expanduser() if args.data_dir else default_data_dir()


def rich_console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr)


def open_memory(args: argparse.Namespace) -> Any:
    from langchain_tiered_memory.defaults import embeddings_for, open_memory

    return open_memory(
        redis_url=args.redis_url,
        data_dir=data_dir_of(args),
        embeddings=embeddings_for(args.embeddings),
        key_prefix=getattr(args, "key_prefix", None),
    )


def attach_server(memory: Any, args: argparse.Namespace) -> None:
    """Attach ``--langgraph-url``'s threads to ``memory`` (erase, export), as the identity
    the environment names: never a secret on the command line, where ``ps`` shows it.
    """
    url = getattr(args, "langgraph_url", None)
    if not url:
        return
    import os

    from langchain_tiered_memory.persistence.server_threads import LangGraphServerThreads

    auth = os.environ.get("TIERED_MEMORY_LANGGRAPH_AUTH")
    headers = {"Authorization": auth} if auth else None
    key = os.environ.get("LANGGRAPH_API_KEY")
    memory.attach(server=LangGraphServerThreads(url, headers=headers, api_key=key))


def user_id_of(args: argparse.Namespace) -> str:
    return validate_user_id(args.user)


def load_chat_model(name: str | None, *, seed: int | None = None) -> tuple[BaseChatModel, bool]:
    """The chat model for ``--model`` and whether it needs forced tag capture.

    ``"fake"`` is the deterministic :func:`fake_demo_model`; anything else (or ``None``) goes
    to :func:`langchain_tiered_memory.defaults.default_chat_model`. ``seed`` is the local
    model's sampling seed (ignored for other models).
    """
    if name == FAKE_MODEL:
        from langchain_tiered_memory.testing.fake_model import fake_demo_model

        return fake_demo_model(), False
    from langchain_tiered_memory.agent.policy import ModelPolicy
    from langchain_tiered_memory.defaults import default_chat_model
    from langchain_tiered_memory.local import LocalChatModel

    model = default_chat_model(name)
    if seed is not None and isinstance(model, LocalChatModel):
        model = model.model_copy(update={"seed": seed})
    return model, ModelPolicy.for_model(model).small


def describe_model(model: BaseChatModel) -> str:
    """``ClassName (model name or path)`` for the logs."""
    if isinstance(model, ScriptedChatModel):
        return "fake (deterministic rule-based script, no model; --model fake)"
    kind = type(model).__name__
    with suppress(ImportError, AttributeError):
        path = model.resolved_model_path  # type: ignore[attr-defined]
        provider = getattr(model, "provider", "local")
        return f"{kind} ({Path(path).name}, in-process {provider})"
    for attr in ("model_name", "model", "model_path"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return f"{kind} ({value})"
    return kind


def checkpoint_thread_id(user_id: str, thread: str) -> str:
    """The checkpointer's thread id of a user's thread: ``<escaped user>/<thread>``.

    Namespacing by user keeps one user from resuming another's thread, and lets
    ``forget`` find every thread of a user.
    """
    return f"{url_quote(user_id, safe='')}/{thread}"


def user_thread_ids(saver: BaseCheckpointSaver, user_id: str) -> list[str]:
    """Every checkpointer thread id of ``user_id`` (the CLI's user-namespaced threads).

    A ``RedisSaver`` lists thread ids by key prefix; any other ``BaseCheckpointSaver`` is
    read through its interface (``list`` over every thread).
    """
    prefix = f"{url_quote(user_id, safe='')}/"
    if isinstance(saver, RedisSaver):
        return sorted(saver.list_threads(prefix=prefix))
    threads = {
        str(item.config["configurable"]["thread_id"])
        for item in saver.list(None)
        if str(item.config["configurable"].get("thread_id", "")).startswith(prefix)
    }
    return sorted(threads)
