"""Merge a model's per-section ops into the old document, through the guards (SPEC §3-§4).

PROVISIONAL: the guard-aware merge is being written (issue 2); this version applies ops
without guards so the engine can be built against the final signature.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from wm_langgraph.core.sections import SECTIONS, parse_working_memory, render_working_memory

__all__ = ["GuardDecision", "MergeResult", "OpName", "merge_working_memory"]

OpName = Literal["KEEP", "UPDATE", "APPEND"]


@dataclass(frozen=True, slots=True)
class GuardDecision:
    """What happened to one section's op: asked for ``requested``, applied ``applied``."""

    section: str
    requested: str
    applied: str
    reason: str = ""

    def as_dict(self) -> dict[str, str]:
        """JSON-plain form for logs, store metadata and tracing."""
        return {
            "section": self.section,
            "requested": self.requested,
            "applied": self.applied,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class MergeResult:
    """The merged canonical document and one decision per section, in section order."""

    text: str
    decisions: list[GuardDecision] = field(default_factory=list)


def merge_working_memory(old: str, ops: Mapping[str, Any] | None) -> MergeResult:
    """Apply per-section ops to ``old`` and return the new canonical document."""
    sections = parse_working_memory(old or "")
    decisions: list[GuardDecision] = []
    for name in SECTIONS:
        op = (ops or {}).get(name)
        kind = str(op.get("op", "KEEP")).upper() if isinstance(op, Mapping) else "KEEP"
        if kind == "UPDATE" and isinstance(op, Mapping) and isinstance(op.get("content"), str):
            sections[name] = op["content"]
        elif kind == "APPEND" and isinstance(op, Mapping) and isinstance(op.get("items"), list):
            lines = [f"- {item}" for item in op["items"] if isinstance(item, str) and item.strip()]
            sections[name] = "\n".join([sections[name], *lines]).strip()
        else:
            kind = "KEEP"
        decisions.append(GuardDecision(name, kind, kind))
    return MergeResult(render_working_memory(sections), decisions)
