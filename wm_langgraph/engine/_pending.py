"""Which pending archives assemble reads (private to ``engine.memory``).

Archives whose Phase 2 is not done go into assemble's layer 2, older than every live message,
so only the newest of them can ever fit. They are read newest first and only until their
stored token counts fill the room the live messages and the WM's share leave; older records
are never fetched or deserialised.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.engine.assemble import compute_budgets
from wm_langgraph.storage.archives import ArchiveStore

__all__ = ["pending_messages"]


def pending_messages(
    archives: ArchiveStore,
    config: WorkingMemoryConfig,
    thread_id: str,
    pending_ids: Sequence[str],
    *,
    live_tokens: int,
    document_tokens: int,
) -> list[BaseMessage]:
    """The messages of the pending archives that assemble could show, in archive order.

    Args:
        archives: The thread's archive store.
        config: Its budgets.
        thread_id: The thread.
        pending_ids: The pending archive ids, oldest first.
        live_tokens: Tokens of the live messages.
        document_tokens: Tokens of the current WM (0 without one).
    """
    if not pending_ids:
        return []
    budgets = compute_budgets(
        config.token_budget, config.reserve_tokens, config.archive_memory_tokens
    )
    room = budgets.usable - min(document_tokens, budgets.archive) - live_tokens
    records, complete = archives.get_recent_archives(thread_id, pending_ids, room)
    messages = [m for record in records for m in record.messages]
    if not complete:
        # Messages before the first user message belong to a turn that starts in an archive
        # not read; that turn is larger than the room, so it cannot be shown: drop them.
        first = next((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), None)
        messages = messages[first:] if first is not None else []
    return messages
