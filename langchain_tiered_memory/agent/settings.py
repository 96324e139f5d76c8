"""One model's turn settings: its row of the guards' table (``policy.GUARDS``) with the
app's options in place, and the prompt.

The prebuilt graph and the agent middleware both get theirs from
:meth:`~langchain_tiered_memory.agent.turn.MemoryOptions.build` (the graph when it is
built, the middleware when it first sees the agent's model), so the two cannot drift: a
guard added to the table reaches both through :meth:`TurnSettings.of`.

Example:
    >>> settings = TurnSettings.of(ModelPolicy(small=True))
    >>> settings.tag_capture, settings.max_context_messages, settings.reconcile
    ('forced', 0, False)
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from langchain_tiered_memory.agent.memory_query import MemoryQueryKind
from langchain_tiered_memory.agent.policy import Guards, ModelPolicy, TagCapture
from langchain_tiered_memory.agent.prompt import (
    MemoryRenderer,
    base_system_prompt,
    memory_renderer,
)

__all__ = ["TurnSettings"]

_CAPTURES = ("tool", "forced", "after_turn")


@dataclass(frozen=True)
class TurnSettings(Guards):
    """What a model's turns run with: its row of the guards' table (:class:`Guards`, the
    app's options in place of the row's values) and the prompt.

    Attributes:
        system_prompt: the base system prompt (the memory section is added to it).
        render_memory: renders tags and recalled items into the memory section.
        memory_query: the line the model writes for the recall query, or ``None``.
    """

    system_prompt: str
    render_memory: MemoryRenderer
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
        chosen: dict[str, Any] = {
            "max_context_messages": max_context_messages,
            "tag_capture": tag_capture,
            "extractive_fallback": extractive_summary_fallback,
            "search_tool": search_memory,
        }
        row = replace(policy.guards, **{k: v for k, v in chosen.items() if v is not None})
        if row.tag_capture not in _CAPTURES:
            raise ValueError(
                f"tag_capture must be 'tool', 'forced' or 'after_turn', not {row.tag_capture!r}."
            )
        return cls(
            **{f.name: getattr(row, f.name) for f in fields(Guards)},
            system_prompt=system_prompt or base_system_prompt(row.compact_prompt),
            render_memory=memory_prompt or memory_renderer(row.compact_prompt),
            memory_query=policy.memory_query(memory_query),
        )
