"""The order in which Phase 2 folded a thread's archives, shared by the invariant checks."""

from __future__ import annotations

from typing import Any

__all__ = ["fold_order"]


def fold_order(records: list[Any]) -> list[Any]:
    """Archives in the order Phase 2 folded them: the timeline order, except that an archive
    deferred and folded late (behaviour §6.6) comes where it was folded — before the first archive
    folded in order after it (by the time each was marked done)."""
    late = sorted(
        (r for r in records if r.status == "done" and (r.metadata or {}).get("late")),
        key=lambda r: r.updated_at,
    )
    ordered: list[Any] = []
    for record in (r for r in records if r not in late):
        while late and record.status == "done" and record.updated_at > late[0].updated_at:
            ordered.append(late.pop(0))
        ordered.append(record)
    return ordered + late
