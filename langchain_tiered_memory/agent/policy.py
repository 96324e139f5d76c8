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

__all__ = ["GUARDS", "Guards", "ModelPolicy", "is_small_model"]

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
class Guards:
    """What a kind of model's turns run with: one row of :data:`GUARDS`.

    Attributes:
        tag_capture: how stated facts reach ``user_tag``: forced on every turn (small), or
            an extraction after the reply when the model made no call.
        max_context_messages: recent history messages loaded on a thread's first turn.
        current_turn_only: send the current turn only, not the thread before it.
        compact_prompt: the short system prompt and the one-line-per-fact memory section.
        scripted_replies: a request to summarize runs the tool and the reply is its report
            (a small model does not call the tool reliably, nor report it faithfully).
        search_tool: offer ``search_memory`` (a capable model writes its own queries; a
            small one would call it on every turn, or never).
        extractive_fallback: keep the user's own statements when a summary is unusable.
        grounded: keep only tag values and summary items grounded in the user's own words;
            the summarizer then also keeps, as the user said it, each sentence of theirs
            with a fact no item holds (``summarization.uncovered``).
        reconcile: compare new summary items with stored ones (a small model cannot).
    """

    tag_capture: TagCapture
    max_context_messages: int
    current_turn_only: bool
    compact_prompt: bool
    scripted_replies: bool
    search_tool: bool
    extractive_fallback: bool
    grounded: bool
    reconcile: bool

    @property
    def summary_options(self) -> dict[str, bool]:
        """The summarizer's switches (keyword arguments of ``summarize_history`` and
        ``SummarizeTool``), the same for the tool and the background summaries.

        Example:
            >>> GUARDS[True].summary_options
            {'extractive_fallback': True, 'grounded': True, 'reconcile': False}
        """
        return {
            "extractive_fallback": self.extractive_fallback,
            "grounded": self.grounded,
            "reconcile": self.reconcile,
        }


GUARDS: dict[bool, Guards] = {
    # a small local model: every guard on
    True: Guards(
        tag_capture="forced",
        max_context_messages=0,
        current_turn_only=True,
        compact_prompt=True,
        scripted_replies=True,
        search_tool=False,
        extractive_fallback=True,
        grounded=True,
        reconcile=False,
    ),
    # any other model: none
    False: Guards(
        tag_capture="after_turn",
        max_context_messages=20,
        current_turn_only=False,
        compact_prompt=False,
        scripted_replies=False,
        search_tool=True,
        extractive_fallback=False,
        grounded=False,
        reconcile=True,
    ),
}
"""The one table of the guards, by whether the model is a small local one
(``TurnSettings.of`` takes a row; the app's options win)."""


@dataclass(frozen=True)
class ModelPolicy:
    """The guards for one model: all on for a small local model, all off for the rest
    (:data:`GUARDS`).

    Attributes:
        small: whether the model is a small local one.

    Example:
        >>> from langchain_tiered_memory.testing import ScriptedChatModel
        >>> ModelPolicy.for_model(ScriptedChatModel(replies=["hi"])).guards.tag_capture
        'after_turn'
        >>> ModelPolicy(small=True).guards.max_context_messages
        0
    """

    small: bool

    @classmethod
    def for_model(cls, model: object, *, small: bool | None = None) -> ModelPolicy:
        """The policy of ``model``; ``small`` overrides what its marker says."""
        return cls(small=is_small_model(model) if small is None else small)

    @property
    def guards(self) -> Guards:
        """This model's row of :data:`GUARDS`."""
        return GUARDS[self.small]

    @property
    def summary_options(self) -> dict[str, bool]:
        """The summarizer's switches for this model (:attr:`Guards.summary_options`).

        Example:
            >>> ModelPolicy(small=True).summary_options
            {'extractive_fallback': True, 'grounded': True, 'reconcile': False}
        """
        return self.guards.summary_options

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
