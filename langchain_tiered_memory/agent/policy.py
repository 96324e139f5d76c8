"""Which guards a chat model gets: decided once, from a marker on the model.

Small in-process models (the package's :mod:`~langchain_tiered_memory.local` models,
langchain-community's ``ChatLlamaCpp``) cannot judge when to call a tool, compare notes or
follow a long prompt; a capable model must never get the guards that help them. The graph
and the middleware both ask :meth:`ModelPolicy.for_model`, so they switch the same guards,
and neither imports a local model: a model class marks itself with a class attribute
``small_local_model = True``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal, TypeVar

from langchain_core.runnables import RunnableBinding

from langchain_tiered_memory.agent.memory_query import MEMORY_QUERY_KINDS

__all__ = ["ModelPolicy", "is_small_model"]

TagCapture = Literal["tool", "forced", "after_turn"]
_Kind = TypeVar("_Kind", bound=str)

logger = logging.getLogger(__name__)


def is_small_model(model: object) -> bool:
    """Whether ``model`` (or the model a ``bind``/``bind_tools`` wraps) is a small local one.

    Example:
        >>> from langchain_tiered_memory.testing import ScriptedChatModel
        >>> is_small_model(ScriptedChatModel(replies=["hi"]))
        False
    """
    while isinstance(model, RunnableBinding):
        model = model.bound
    if getattr(type(model), "small_local_model", False) is True:
        return True
    return type(model).__name__ == "ChatLlamaCpp"  # by name: no langchain-community import


@dataclass(frozen=True)
class ModelPolicy:
    """The guards for one model: all on for a small local model, all off for the rest.

    Attributes:
        small: whether the model is a small local one.

    Example:
        >>> from langchain_tiered_memory.testing import ScriptedChatModel
        >>> ModelPolicy.for_model(ScriptedChatModel(replies=["hi"])).tag_capture
        'after_turn'
        >>> ModelPolicy(small=True).max_context_messages
        0
    """

    small: bool

    @classmethod
    def for_model(cls, model: object, *, small: bool | None = None) -> ModelPolicy:
        """The policy of ``model``; ``small`` overrides what its marker says."""
        return cls(small=is_small_model(model) if small is None else small)

    @property
    def tag_capture(self) -> TagCapture:
        """Small: the tag tool is forced on every turn; else a forced pass after the turn."""
        return "forced" if self.small else "after_turn"

    @property
    def forced_capture(self) -> bool:
        """Whether the middleware forces the tag tool (it has no after-turn pass)."""
        return self.small

    @property
    def max_context_messages(self) -> int:
        """Recent messages in the prompt: small models see the current turn only."""
        return 0 if self.small else 20

    @property
    def grounded(self) -> bool:
        """Keep only tag values and summary items grounded in the user's own words; the
        summarizer then also keeps, as the user said it, each sentence of theirs with a fact
        no item holds (a small model's items drop facts: ``summarization.uncovered``).
        """
        return self.small

    @property
    def reconcile(self) -> bool:
        """Ask the model to compare new notes with stored ones (a small one cannot)."""
        return not self.small

    @property
    def extractive_fallback(self) -> bool:
        """Keep the user's own statements when the model's summary is unusable."""
        return self.small

    @property
    def summary_options(self) -> dict[str, bool]:
        """The summarizer's switches (keyword arguments of ``summarize_history``): for a
        small model the extractive fallback and the grounding guard on and the update step
        off; the reverse otherwise.

        Example:
            >>> ModelPolicy(small=True).summary_options
            {'extractive_fallback': True, 'grounded': True, 'reconcile': False}
        """
        return {
            "extractive_fallback": self.extractive_fallback,
            "grounded": self.grounded,
            "reconcile": self.reconcile,
        }

    @property
    def compact_prompt(self) -> bool:
        """The short system prompt and the one-line-per-fact memory section."""
        return self.small

    @property
    def current_turn_only(self) -> bool:
        """Send the current turn only, not the thread before it."""
        return self.small

    @property
    def search_tool(self) -> bool:
        """Offer ``search_memory`` (a capable model writes its own queries; a small one
        would call it on every turn, or never).
        """
        return not self.small

    def memory_query(self, asked: _Kind | None) -> _Kind | None:
        """The memory query the model writes before each reply (``asked``, opt-in), or
        ``None``: a small model's line would mislead the recall, so it writes none. The
        graph and the middleware both ask here, so both refuse an unknown kind.

        Example:
            >>> ModelPolicy(small=False).memory_query("note")
            'note'
            >>> ModelPolicy(small=True).memory_query(None) is None
            True
        """
        if asked not in (None, *MEMORY_QUERY_KINDS):
            raise ValueError(
                f"memory_query must be one of {MEMORY_QUERY_KINDS} or None, not {asked!r}."
            )
        if asked is not None and self.small:
            logger.warning(
                "memory_query=%r is for capable models: a small local model writes no memory "
                "query (pass small_model=False if this model is a capable one)",
                asked,
            )
            return None
        return asked

    @property
    def scripted_requests(self) -> bool:
        """A request to summarize runs the tool and the reply is its report (a small model
        does not call the tool reliably, nor report it faithfully).
        """
        return self.small
