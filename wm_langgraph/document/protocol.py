"""The update protocol (behaviour §3, §5.3): the ``update_working_memory`` tool, tolerant parsing of
its arguments into per-section ops, and the section-size warnings of the update prompt
(behaviour §5.3).

Pure, no I/O. The argument parser itself lives in the private ``document.arguments`` (with the JSON
repair in ``document.json_repair``) and is re-exported here. Canonical ops, as
``parse_update_arguments`` returns them and ``merge_working_memory`` consumes them::

    {"op": "KEEP"}
    {"op": "UPDATE", "content": "<full new body>"}
    {"op": "APPEND", "items": ["item", ...]}

Size thresholds shared with the Key Facts guard (one ``SectionLimits`` value from
``document.guards``, so the prompt's warnings and the guard's limits cannot drift apart): a
section is *oversized* when it has more than ``limits.bullets`` items or more than
``limits.tokens`` tokens (``section_size`` measures both the same way for everyone); the seed's
``BULLET_THRESHOLD`` / ``TOKEN_THRESHOLD`` at its default size of 12,000 tokens.
"""

from __future__ import annotations

import copy
from typing import Any

from wm_langgraph.document.arguments import (
    UpdateReading,
    parse_update_arguments,
    read_update_arguments,
)
from wm_langgraph.document.guards import (
    OVERSIZE_BULLETS,
    OVERSIZE_TOKENS,
    SEED_LIMITS,
    SectionLimits,
    SectionSize,
    section_limits,
    section_size,
)
from wm_langgraph.document.sections import SECTIONS, parse_working_memory
from wm_langgraph.document.tokens import count_tokens

__all__ = [
    "APPEND_ONLY_SECTIONS",
    "BULLET_THRESHOLD",
    "EMPTY_SECTION_SIZE_WARNINGS",
    "TARGET_SHARES",
    "TARGET_WARN_SHARE",
    "TOKEN_THRESHOLD",
    "UPDATE_TOOL_NAME",
    "UPDATE_WORKING_MEMORY_TOOL",
    "SectionSize",
    "UpdateReading",
    "parse_update_arguments",
    "read_update_arguments",
    "section_size",
    "section_size_warnings",
    "update_tool_schema",
]

UPDATE_TOOL_NAME = "update_working_memory"

BULLET_THRESHOLD = OVERSIZE_BULLETS
"""The seed's bullet threshold (behaviour §2.6, §4.3), at the default size of 12,000 tokens."""
TOKEN_THRESHOLD = OVERSIZE_TOKENS
"""The seed's token threshold (``count_tokens`` of a body), at the default size."""
APPEND_ONLY_SECTIONS: frozenset[str] = frozenset({"Errors & Corrections"})
"""Sections that only grow; they never get a consolidation warning."""
EMPTY_SECTION_SIZE_WARNINGS = "<section_size_warnings></section_size_warnings>"
"""What the update prompt shows in place of the warnings block when there are none."""
TARGET_SHARES: dict[str, float] = {
    "Session Title": 0.05,
    "Current State": 0.10,
    "Task & Goals": 0.10,
    "Key Facts & Decisions": 0.35,
    "Files & Context": 0.15,
    "Errors & Corrections": 0.15,
    "Open Issues": 0.10,
}
"""Each section's share of the document's size target: over the target, a section holding
more than its share is asked to consolidate (append-only sections never are)."""
TARGET_WARN_SHARE = 0.9
"""The share of the size target from which the engine's update prompt starts the target's
consolidation warnings (``section_size_warnings(..., warn_from=...)``)."""

_TOOL_DESCRIPTION = (
    "Record what changed in the Working Memory. Give a decision for every one of the seven "
    "sections: KEEP (unchanged, byte for byte), UPDATE (the complete new section body, previous "
    "content plus the changes, without the ## header line) or APPEND (new bullet items, without "
    "bullet markers). Then give each archive of the new messages its abstract."
)
_CONTENT_DESCRIPTION = (
    "The complete new body of the section in Markdown, without the '## <Section>' header line."
)
_ITEMS_DESCRIPTION = "New items to add at the end of the section, one fact each, no bullet marker."
_ABSTRACTS_DESCRIPTION = (
    "One short abstract per archive of the new messages (each archive starts at a line "
    "'[archive <id>]'): who, what and when, in the words a later question would use (topics, "
    "names, places, dates, categories, outcomes); one line of at most about 60 words each."
)
_ABSTRACT_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "archive_id": {"type": "string", "description": "The id from the archive's marker line."},
        "abstract": {"type": "string", "description": "The archive's abstract, one line."},
    },
    "required": ["archive_id", "abstract"],
    "additionalProperties": False,
}


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _single(op: str) -> dict[str, Any]:
    return {"type": "string", "enum": [op]}


def _tool(section_value: dict[str, Any], *, strict: bool = False) -> dict[str, Any]:
    """The function tool whose ``sections`` object has one ``section_value`` per section,
    and the archives' ``abstracts`` after it (optional in the reference form; required but
    nullable in the strict one, which requires every property)."""
    sections = _closed({name: copy.deepcopy(section_value) for name in SECTIONS})
    abstracts: dict[str, Any] = {
        "type": ["array", "null"] if strict else "array",
        "items": copy.deepcopy(_ABSTRACT_ITEM),
        "description": _ABSTRACTS_DESCRIPTION + (" Null when there is none." if strict else ""),
    }
    parameters = _closed({"sections": sections, "abstracts": abstracts})
    if not strict:
        parameters["required"] = ["sections"]
    function: dict[str, Any] = {
        "name": UPDATE_TOOL_NAME,
        "description": _TOOL_DESCRIPTION,
        "parameters": parameters,
    }
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _reference_tool() -> dict[str, Any]:
    section_value = {
        "oneOf": [
            _closed({"op": _single("KEEP")}),
            _closed(
                {
                    "op": _single("UPDATE"),
                    "content": {"type": "string", "description": _CONTENT_DESCRIPTION},
                }
            ),
            _closed(
                {
                    "op": _single("APPEND"),
                    "items": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": _ITEMS_DESCRIPTION,
                    },
                }
            ),
        ]
    }
    return _tool(section_value)


def _strict_tool() -> dict[str, Any]:
    section_value = _closed(
        {
            "op": {"type": "string", "enum": ["KEEP", "UPDATE", "APPEND"]},
            "content": {
                "type": ["string", "null"],
                "description": _CONTENT_DESCRIPTION + " Required for UPDATE, null otherwise.",
            },
            "items": {
                "type": ["array", "null"],
                "items": {"type": "string"},
                "description": _ITEMS_DESCRIPTION + " Required for APPEND, null otherwise.",
            },
        }
    )
    return _tool(section_value, strict=True)


UPDATE_WORKING_MEMORY_TOOL: dict[str, Any] = _reference_tool()
"""The OpenAI-format function tool of behaviour §3.1 (each section ``oneOf`` KEEP / UPDATE /
APPEND), with the folded archives' optional ``abstracts`` (``document.abstracts``)."""


def update_tool_schema(*, strict: bool = False) -> dict[str, Any]:
    """Return a fresh copy of the ``update_working_memory`` tool definition.

    Args:
        strict: ``False`` gives the reference form (``oneOf`` per section). ``True`` gives the
            variant OpenAI strict mode accepts: no ``oneOf`` and no ``default``, every object
            closed with all its properties required; each section is a flat object
            ``{op: KEEP|UPDATE|APPEND, content: string|null, items: string[]|null}`` and the
            function carries ``"strict": true``; ``abstracts`` is required there and may be
            null. Both parse to the same ops.

    Returns:
        An OpenAI-format ``{"type": "function", "function": {...}}`` dict the caller may mutate.
    """
    return _strict_tool() if strict else copy.deepcopy(UPDATE_WORKING_MEMORY_TOOL)


# --------------------------------------------------------------------------- size warnings


def section_size_warnings(
    wm: str,
    *,
    target_tokens: int | None = None,
    warn_from: int | None = None,
    limits: SectionLimits | None = None,
) -> str:
    """Build the ``<section_size_warnings>`` block of the update prompt (behaviour §5.3, §2.7).

    Every section except the append-only Errors & Corrections that has more than
    ``limits.bullets`` items or more than ``limits.tokens`` tokens gets one warning line
    with its item count and token estimate, telling the model to consolidate it with UPDATE.
    The limits follow the size target (``section_limits(target_tokens)``; the seed's 25 bullets
    / 1,500 tokens at the default target of 12,000 and without a target).
    With ``target_tokens`` (the document's size target, see ``document.compaction``), a document
    over the target also warns each such section holding more than its share of the target
    (:data:`TARGET_SHARES`), with the section's own token goal. With ``warn_from`` those
    warnings start once the document is over ``warn_from`` tokens instead (the engine starts at
    :data:`TARGET_WARN_SHARE` of the target, so that a document consolidates before it crosses
    its target rather than after).

    Args:
        wm: The current Working Memory document (anything that is not a string counts as empty).
        target_tokens: The whole document's size target; ``None`` checks the fixed limits only.
        warn_from: The document size from which the target's warnings start; ``None`` (the
            default) starts them above ``target_tokens``. Ignored without ``target_tokens``.
        limits: The section thresholds; ``None`` takes ``section_limits(target_tokens)``, or
            the seed's without a target.

    Returns:
        The block ``<section_size_warnings>\\n- …\\n</section_size_warnings>``, or ``""`` when
        no section is oversized (the update prompt then shows ``EMPTY_SECTION_SIZE_WARNINGS``).
    """
    if not isinstance(wm, str) or not wm.strip():
        return ""
    if limits is None:
        limits = SEED_LIMITS if target_tokens is None else section_limits(target_tokens)
    bodies = parse_working_memory(wm)
    total = count_tokens(wm) if target_tokens is not None else 0
    over_target = False
    if target_tokens is not None:
        over_target = total > (
            target_tokens if warn_from is None else min(warn_from, target_tokens)
        )
    lines: list[str] = []
    for name in SECTIONS:
        if name in APPEND_ONLY_SECTIONS:
            continue
        size = section_size(bodies[name])
        if limits.oversized(size):
            bullets, tokens = limits.bullets, limits.tokens
        elif over_target and target_tokens is not None:
            share = int(TARGET_SHARES[name] * target_tokens)
            if name == "Session Title" or size.tokens <= share:
                continue
            bullets, tokens = min(limits.bullets, max(1, size.bullets * 2 // 3)), share
        else:
            continue
        line = (
            f"- {name}: {size.bullets} bullets, about {size.tokens:,} tokens "
            f"(limits: {limits.bullets} bullets, {limits.tokens:,} tokens). You MUST "
            f"consolidate this section with UPDATE: merge related bullets, grouped by topic, "
            f"keeping every name, date and exact value; target at most {bullets} "
            f"bullets and {tokens:,} tokens. Keep each bullet within {limits.item_tokens:,} "
            "tokens: start another bullet rather than join more onto a full one."
        )
        if over_target and target_tokens is not None:
            line += (
                f" The whole Working Memory is about {total:,} tokens "
                f"(target {target_tokens:,} tokens)."
                if total > target_tokens
                else f" The whole Working Memory is about {total:,} tokens, close to its "
                f"target of {target_tokens:,} tokens: consolidate before it is reached."
            )
        lines.append(line)
    if not lines:
        return ""
    return "<section_size_warnings>\n" + "\n".join(lines) + "\n</section_size_warnings>"
