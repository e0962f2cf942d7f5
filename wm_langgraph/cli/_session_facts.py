"""Ground truth of a recorded session, and whether a Working Memory still holds it.

Private helper of ``wm-langgraph demo --careless``. From the session's messages it collects
what must never be lost, with fixed rules (no model involved):

- file paths: the ``path`` argument of every tool call;
- errors: the message of every failure in a tool result (pytest's ``FAILED <test> - <message>``
  summary lines and ``E   <Name>Error: …`` lines);
- open issues: every ``TODO: …`` and ``Still open: …`` sentence of the conversation.

:func:`check_retention` then looks each one up in the section of the Working Memory where it
belongs (whitespace and case ignored), so the demo's closing line is computed, not asserted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from wm_langgraph.document.sections import parse_working_memory

__all__ = ["Retention", "SessionFacts", "check_retention", "session_facts"]

_FAILED_RE = re.compile(r"^FAILED \S+ - (.+)$")
_E_LINE_RE = re.compile(r"^E\s+((?:\w+\.)*\w*(?:Error|Exception)\b.*)$")
_ISSUE_RE = re.compile(r"\b(?:TODO|Still open):.*?\.(?=\s|$)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class SessionFacts:
    """What a session must leave in the Working Memory, in order of first appearance."""

    paths: tuple[str, ...]
    errors: tuple[str, ...]
    open_issues: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Retention:
    """How many facts of one kind the Working Memory's section still holds."""

    kind: str
    section: str
    found: tuple[str, ...] = ()
    missing: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total(self) -> int:
        """Number of facts of this kind in the session."""
        return len(self.found) + len(self.missing)


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for item in items if item))


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def session_facts(messages: Sequence[BaseMessage]) -> SessionFacts:
    """Collect the file paths, errors and open issues of a session (see the module docstring)."""
    paths: list[str] = []
    errors: list[str] = []
    issues: list[str] = []
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                path = call["args"].get("path")
                if isinstance(path, str):
                    paths.append(path.strip())
        if isinstance(message, ToolMessage):
            for line in message.text.splitlines():
                match = _FAILED_RE.match(line.strip()) or _E_LINE_RE.match(line.strip())
                if match:
                    errors.append(match.group(1).strip())
        elif isinstance(message, AIMessage | HumanMessage):
            issues.extend(m.group(0).strip() for m in _ISSUE_RE.finditer(message.text))
    return SessionFacts(_unique(paths), _unique(errors), _unique(issues))


def check_retention(facts: SessionFacts, working_memory: str) -> list[Retention]:
    """Look every fact up in its section of ``working_memory`` (whitespace and case ignored).

    Returns:
        One :class:`Retention` each for file paths (Files & Context), errors (Errors &
        Corrections) and open issues (Open Issues), in that order.
    """
    sections = parse_working_memory(working_memory)
    out: list[Retention] = []
    for kind, section, items in (
        ("file paths", "Files & Context", facts.paths),
        ("errors", "Errors & Corrections", facts.errors),
        ("open issues", "Open Issues", facts.open_issues),
    ):
        body = _norm(sections[section])
        found = tuple(i for i in items if _norm(i).rstrip(".") in body)
        missing = tuple(i for i in items if i not in found)
        out.append(Retention(kind, section, found, missing))
    return out


def retention_lines(retention: Sequence[Retention], *, cut_off: Sequence[str] = ()) -> list[str]:
    """Report lines: one per kind (found / total, what is missing), then the verdict.

    Args:
        retention: The result of :func:`check_retention`.
        cut_off: Per truncated update call, the text of the ops it made unreadable; a
            missing fact found in one is reported as lost with it (no guard sees an op the
            engine could not read).
    """
    lines: list[str] = []
    tails = [_norm(tail) for tail in cut_off]
    for item in retention:
        line = f"  {item.kind} ({item.section}): {len(item.found)}/{item.total}"
        for fact in item.missing:
            key = _norm(fact)[:40]
            where = (
                "it was only in an op that truncated JSON made unreadable; no guard sees what "
                "the engine could not read"
                if any(key in tail for tail in tails)
                else "not found"
            )
            line += f"\n    missing: {fact!r} ({where})"
        lines.append(line)
    complete = ", ".join(item.kind.removesuffix("s") for item in retention if not item.missing)
    verdict = (
        f"every {_and(complete)} from the session is still in the Working Memory"
        if complete
        else "nothing of the session is complete in the Working Memory"
    )
    missing = [f"{len(i.missing)} of {i.total} {i.kind}" for i in retention if i.missing]
    if missing:
        verdict += f"; missing: {_and(', '.join(missing))}"
    lines.append(f"=> {verdict}")
    return lines


def _and(listing: str) -> str:
    head, sep, tail = listing.rpartition(", ")
    return f"{head} and {tail}" if sep else listing
