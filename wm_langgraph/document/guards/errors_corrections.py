"""The Errors & Corrections guard (behaviour §4.5): the section is append-only."""

from __future__ import annotations

from wm_langgraph.document.ops import KEEP, GuardOutcome, SectionOp, count, new_items
from wm_langgraph.document.sections import section_items

__all__ = ["guard_errors_corrections"]


def guard_errors_corrections(old_body: str, op: SectionOp) -> GuardOutcome:
    """Behaviour §4.5: append-only. UPDATE becomes an APPEND of its new items; none new -> KEEP."""
    if op.kind != "UPDATE":
        return GuardOutcome(op)
    fresh = new_items(old_body, section_items(op.content))
    if not fresh:
        return GuardOutcome(KEEP, "append-only section: UPDATE has no new items")
    reason = f"append-only section: UPDATE demoted to APPEND of {count(len(fresh), 'new item')}"
    return GuardOutcome(SectionOp("APPEND", items=tuple(fresh)), reason)
