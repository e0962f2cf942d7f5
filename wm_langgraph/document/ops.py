"""Section ops and guard outcomes: the values every guard takes and returns. Re-exported by
``document.guards``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from wm_langgraph.document.sections import item_key, section_items

__all__ = ["KEEP", "GuardOutcome", "OpKind", "SectionOp", "count", "new_items"]

OpKind = Literal["KEEP", "UPDATE", "APPEND"]


@dataclass(frozen=True, slots=True)
class SectionOp:
    """One section's op: ``KEEP``, ``UPDATE`` with ``content``, or ``APPEND`` with ``items``."""

    kind: OpKind
    content: str = ""
    items: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GuardOutcome:
    """The op a guard lets through and why ("" when the requested op passes unchanged).

    ``written`` names the items of ``op`` that the guard wrote itself, as it wrote them (a
    restored item, the consolidation sentinel): the merge records those that reach the
    document in the section's decision, so that a display can tell the guard's marks from the
    same words written by anyone else.
    """

    op: SectionOp
    reason: str = ""
    written: tuple[str, ...] = ()


KEEP = SectionOp("KEEP")
"""The op that leaves a section as it was."""


def new_items(old_body: str, candidates: Iterable[str]) -> list[str]:
    """The candidates that are not already items of ``old_body`` (whole-item, not substring).

    Order is kept and repeated candidates are kept once. Candidates are compared with
    :func:`~wm_langgraph.document.sections.item_key`, so "Fact 1" is new next to "Fact 10".
    """
    seen = {item_key(item) for item in section_items(old_body)}
    out: list[str] = []
    for candidate in candidates:
        key = item_key(candidate)
        if key and key not in seen:
            seen.add(key)
            out.append(candidate.strip())
    return out


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
