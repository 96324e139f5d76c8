"""One model's turn settings: built once from its :class:`ModelPolicy` and the app's options.

The prebuilt graph and the agent middleware both get theirs from
:meth:`~langchain_tiered_memory.agent.turn.MemoryOptions.build` (the graph when it is
built, the middleware when it first sees the agent's model), so the two cannot drift: a
switch added to the policy reaches both through :meth:`TurnSettings.of`.

Example:
    >>> settings = TurnSettings.of(ModelPolicy(small=True))
    >>> settings.tag_capture, settings.max_context_messages, settings.reconcile
    ('forced', 0, False)
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_tiered_memory.agent.memory_query import MemoryQueryKind
from langchain_tiered_memory.agent.policy import ModelPolicy, TagCapture
from langchain_tiered_memory.agent.prompt import (
    MemoryRenderer,
    base_system_prompt,
    memory_renderer,
)

__all__ = ["TurnSettings"]

_CAPTURES = ("tool", "forced", "after_turn")


@dataclass(frozen=True)
class TurnSettings:
    """What a model's turns run with.

    Attributes:
        system_prompt: the base system prompt (the memory section is added to it).
        render_memory: renders tags and recalled items into the memory section.
        max_context_messages: history messages loaded on a thread's first turn.
        current_turn_only: send the current turn only, not the thread before it.
        tag_capture: how stated facts reach the tag store (``"tool"``, ``"forced"``,
            ``"after_turn"``).
        scripted_replies: a request to summarize runs the tool and the reply is its report.
        search_tool: offer ``search_memory``.
        extractive_fallback: keep the user's own statements when a summary is unusable.
        grounded: keep only tag values and items grounded in the user's own words.
        reconcile: compare new summary items with stored ones (the update step).
        memory_query: the line the model writes for the recall query, or ``None``.
    """

    system_prompt: str
    render_memory: MemoryRenderer
    max_context_messages: int
    current_turn_only: bool
    tag_capture: TagCapture
    scripted_replies: bool
    search_tool: bool
    extractive_fallback: bool
    grounded: bool
    reconcile: bool
    memory_query: MemoryQueryKind | None = None

    @classmethod
    def of(
        cls,
        policy: ModelPolicy,
        *,
        system_prompt: str | None = None,
        memory_prompt: MemoryRenderer | None = None,
        max_context_messages: int | None = None,
        tag_capture: TagCapture | None = None,
        extractive_summary_fallback: bool | None = None,
        search_memory: bool | None = None,
        memory_query: MemoryQueryKind | None = None,
    ) -> TurnSettings:
        """The settings of a model with ``policy``; each option the app gave (not
        ``None``) wins over the policy's choice.

        Raises:
            ValueError: an unknown ``tag_capture`` or ``memory_query``.
        """
        capture = policy.tag_capture if tag_capture is None else tag_capture
        if capture not in _CAPTURES:
            raise ValueError(
                f"tag_capture must be 'tool', 'forced' or 'after_turn', not {capture!r}."
            )
        fallback = extractive_summary_fallback
        context = max_context_messages
        return cls(
            system_prompt=system_prompt or base_system_prompt(policy.compact_prompt),
            render_memory=memory_prompt or memory_renderer(policy.compact_prompt),
            max_context_messages=policy.max_context_messages if context is None else context,
            current_turn_only=policy.current_turn_only,
            tag_capture=capture,
            scripted_replies=policy.scripted_requests,
            search_tool=policy.search_tool if search_memory is None else search_memory,
            extractive_fallback=policy.extractive_fallback if fallback is None else fallback,
            grounded=policy.grounded,
            reconcile=policy.reconcile,
            memory_query=policy.memory_query(memory_query),
        )

    @property
    def summary_options(self) -> dict[str, bool]:
        """The summarizer's switches (``summarize_history``'s and ``SummarizeTool``'s
        keyword arguments), the same for the tool and the background summaries.

        Example:
            >>> TurnSettings.of(ModelPolicy(small=False)).summary_options
            {'extractive_fallback': False, 'grounded': False, 'reconcile': True}
        """
        return {
            "extractive_fallback": self.extractive_fallback,
            "grounded": self.grounded,
            "reconcile": self.reconcile,
        }
