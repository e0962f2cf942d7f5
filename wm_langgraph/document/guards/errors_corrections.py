"""The Errors & Corrections guard (behaviour §4.5): the section is append-only — for what the
writer wrote. An item our code added (the error trail) is not: a later UPDATE that leaves it out
drops it, and the decision says so."""

from __future__ import annotations

from collections.abc import Collection

from wm_langgraph.document.ops import KEEP, GuardOutcome, SectionOp, count, new_items
from wm_langgraph.document.sections import item_key, section_items
from wm_langgraph.document.text.match import item_present

__all__ = ["guard_errors_corrections"]


def guard_errors_corrections(
    old_body: str, op: SectionOp, *, removable: Collection[str] = ()
) -> GuardOutcome:
    """Behaviour §4.5: append-only. UPDATE becomes an APPEND of its new items; none new -> KEEP.

    Args:
        old_body: The section body before this round.
        op: The requested op.
        removable: Items code added (their :func:`item_key`); an UPDATE that no longer holds
            one drops it (the rest of the old body stays, the UPDATE's new items are added).
    """
    if op.kind != "UPDATE":
        return GuardOutcome(op)
    wanted = section_items(op.content)
    fresh = new_items(old_body, wanted)
    keys = set(removable)
    old = section_items(old_body)
    dropped = [i for i in old if item_key(i) in keys and not item_present(i, wanted)]
    if dropped:
        kept = [i for i in old if i not in dropped]
        body = "\n".join(f"- {item}" for item in [*kept, *fresh])
        reason = (
            f"append-only section: kept the writer's items, dropped "
            f"{count(len(dropped), 'item')} code had added ({'; '.join(dropped)[:200]})"
        )
        if fresh:
            reason += f"; appended {count(len(fresh), 'new item')}"
        return GuardOutcome(SectionOp("UPDATE", content=body), reason)
    if not fresh:
        return GuardOutcome(KEEP, "append-only section: UPDATE has no new items")
    reason = f"append-only section: UPDATE demoted to APPEND of {count(len(fresh), 'new item')}"
    return GuardOutcome(SectionOp("APPEND", items=tuple(fresh)), reason)
