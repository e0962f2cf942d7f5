"""The update protocol (SPEC §3, §5): the ``update_working_memory`` tool, tolerant parsing of
its arguments into per-section ops, and the section-size warnings of the update prompt (§4.3).

Pure, no I/O. Canonical ops, as ``parse_update_arguments`` returns them and
``merge_working_memory`` consumes them::

    {"op": "KEEP"}
    {"op": "UPDATE", "content": "<full new body>"}
    {"op": "APPEND", "items": ["item", ...]}

Size thresholds shared with the Key Facts guard (``core.guards`` imports them from here, so
the prompt's warnings and the guard's limits cannot drift apart): a section is *oversized*
when it has more than ``BULLET_THRESHOLD`` items or more than ``TOKEN_THRESHOLD`` tokens
(``section_size`` measures both the same way for everyone).
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from wm_langgraph.core._json_repair import decode_string_literal, repair_json
from wm_langgraph.core.sections import SECTIONS, parse_working_memory, section_items
from wm_langgraph.core.tokens import count_tokens

__all__ = [
    "APPEND_ONLY_SECTIONS",
    "BULLET_THRESHOLD",
    "EMPTY_SECTION_SIZE_WARNINGS",
    "TOKEN_THRESHOLD",
    "UPDATE_TOOL_NAME",
    "UPDATE_WORKING_MEMORY_TOOL",
    "SectionSize",
    "parse_update_arguments",
    "section_size",
    "section_size_warnings",
    "update_tool_schema",
]

logger = logging.getLogger("wm_langgraph")

UPDATE_TOOL_NAME = "update_working_memory"

BULLET_THRESHOLD = 25
"""A section with more items than this is oversized (SPEC §2, §4.3)."""
TOKEN_THRESHOLD = 1500
"""A section with more tokens (``count_tokens`` of its body) than this is oversized."""
APPEND_ONLY_SECTIONS: frozenset[str] = frozenset({"Errors & Corrections"})
"""Sections that only grow; they never get a consolidation warning."""
EMPTY_SECTION_SIZE_WARNINGS = "<section_size_warnings></section_size_warnings>"
"""What the update prompt shows in place of the warnings block when there are none."""

_TOOL_DESCRIPTION = (
    "Record what changed in the Working Memory. Give a decision for every one of the seven "
    "sections: KEEP (unchanged, byte for byte), UPDATE (the complete new section body, previous "
    "content plus the changes, without the ## header line) or APPEND (new bullet items, without "
    "bullet markers)."
)
_CONTENT_DESCRIPTION = (
    "The complete new body of the section in Markdown, without the '## <Section>' header line."
)
_ITEMS_DESCRIPTION = "New items to add at the end of the section, one fact each, no bullet marker."


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _single(op: str) -> dict[str, Any]:
    return {"type": "string", "enum": [op]}


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
    sections = _closed({name: copy.deepcopy(section_value) for name in SECTIONS})
    return {
        "type": "function",
        "function": {
            "name": UPDATE_TOOL_NAME,
            "description": _TOOL_DESCRIPTION,
            "parameters": _closed({"sections": sections}),
        },
    }


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
    sections = _closed({name: copy.deepcopy(section_value) for name in SECTIONS})
    return {
        "type": "function",
        "function": {
            "name": UPDATE_TOOL_NAME,
            "description": _TOOL_DESCRIPTION,
            "parameters": _closed({"sections": sections}),
            "strict": True,
        },
    }


UPDATE_WORKING_MEMORY_TOOL: dict[str, Any] = _reference_tool()
"""The OpenAI-format function tool of SPEC §3 (each section ``oneOf`` KEEP / UPDATE / APPEND)."""


def update_tool_schema(*, strict: bool = False) -> dict[str, Any]:
    """Return a fresh copy of the ``update_working_memory`` tool definition.

    Args:
        strict: ``False`` gives the reference form (``oneOf`` per section). ``True`` gives the
            variant OpenAI strict mode accepts: no ``oneOf`` and no ``default``, every object
            closed with all its properties required; each section is a flat object
            ``{op: KEEP|UPDATE|APPEND, content: string|null, items: string[]|null}`` and the
            function carries ``"strict": true``. Both parse to the same ops.

    Returns:
        An OpenAI-format ``{"type": "function", "function": {...}}`` dict the caller may mutate.
    """
    return _strict_tool() if strict else copy.deepcopy(UPDATE_WORKING_MEMORY_TOOL)


# --------------------------------------------------------------------------- parsing

_OP_SYNONYMS = {
    "KEEP": "KEEP",
    "NOOP": "KEEP",
    "NONE": "KEEP",
    "UNCHANGED": "KEEP",
    "NO_CHANGE": "KEEP",
    "UPDATE": "UPDATE",
    "REPLACE": "UPDATE",
    "REWRITE": "UPDATE",
    "APPEND": "APPEND",
    "ADD": "APPEND",
}
_OP_KEYS = ("op", "operation", "action")
_WRAPPER_KEYS = ("arguments", "args", "raw", "input", "parameters", "tool_input")
_ITEM_MARKER_RE = re.compile(r"^(?:[-*+•])[ \t]+")
_MAX_DEPTH = 6


def _norm_name(text: str) -> str:
    text = text.lower().replace("&amp;", " and ").replace("&", " and ")
    return " ".join(re.sub(r"[^0-9a-z]+", " ", text).split())


_SECTION_KEYS: dict[str, str] = {_norm_name(name): name for name in SECTIONS}
_SECTION_KEYS.update(
    {
        _norm_name(alias): name
        for name, aliases in {
            "Session Title": ("title", "session"),
            "Current State": ("state", "status", "current status"),
            "Task & Goals": ("task", "tasks", "goals", "tasks and goals", "task goals"),
            "Key Facts & Decisions": ("key facts", "facts", "decisions", "facts and decisions"),
            "Files & Context": ("files", "context", "files context", "file and context"),
            "Errors & Corrections": ("errors", "corrections", "errors corrections"),
            "Open Issues": ("issues", "open issue", "open questions"),
        }.items()
        for alias in aliases
    }
)


def _section_name(key: Any) -> str | None:
    return _SECTION_KEYS.get(_norm_name(key)) if isinstance(key, str) else None


def _op_name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return _OP_SYNONYMS.get(value.strip().strip("\"'`").strip().upper().replace(" ", "_"))


def _clean_items(value: Any) -> list[str] | None:
    """Items as a list of non-empty strings without bullet markers; None when not a list."""
    if isinstance(value, str):
        return section_items(value)
    if not isinstance(value, (list, tuple)):
        return None
    items: list[str] = []
    for item in value:
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            item = str(item)  # noqa: PLW2901 - a number is a fact too
        if not isinstance(item, str):
            logger.debug("update_working_memory: dropped non-string APPEND item %r", item)
            continue
        text = _ITEM_MARKER_RE.sub("", item.strip(), count=1).strip()
        if text:
            items.append(text)
    return items


def _content(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return "\n".join(f"- {v.strip()}" for v in value if v.strip())
    return None


def _op_from_value(value: Any, depth: int) -> dict[str, Any] | None:
    """One section's value -> canonical op, or None (absent = KEEP for the merge)."""
    if isinstance(value, str):
        name = _op_name(value)
        if name == "KEEP":
            return {"op": "KEEP"}
        if value.lstrip().startswith("{") and depth < _MAX_DEPTH:
            return _op_from_value(repair_json(value), depth + 1)
        return None  # a bare text is ambiguous: do not guess, keep the section
    if isinstance(value, (list, tuple)):
        items = _clean_items(value)
        return {"op": "APPEND", "items": items} if items else None
    if not isinstance(value, Mapping):
        return None
    keys = {str(k).strip().lower(): v for k, v in value.items()}
    raw_op = next((keys[k] for k in _OP_KEYS if keys.get(k) is not None), None)
    name = _op_name(raw_op)
    content = _content(keys.get("content"))
    items = _clean_items(keys.get("items"))
    if name == "KEEP":
        return {"op": "KEEP"}
    if raw_op is not None and name is None:
        return None  # an unknown op means KEEP
    if name in ("UPDATE", None) and content is not None:
        return {"op": "UPDATE", "content": content}
    if items is None and content is not None:
        items = section_items(content)  # APPEND given as text: one item per line
    if items is not None and (name == "APPEND" or items):
        return {"op": "APPEND", "items": items}
    return None


def _ops_from_sections(value: Any, depth: int) -> dict[str, dict[str, Any]]:
    """``{section: value}`` (or a list of ``{"section": name, "op": ...}``) -> ops."""
    found: dict[str, dict[str, Any]] = {}
    pairs: list[tuple[Any, Any]]
    if isinstance(value, Mapping):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)):
        pairs = []
        for entry in value:
            if isinstance(entry, Mapping):
                label = entry.get("section", entry.get("name"))
                pairs.append((label, entry))
    else:
        return found
    for key, section_value in pairs:
        name = _section_name(key)
        if name is None or name in found:
            continue
        op = _op_from_value(section_value, depth)
        if op is not None:
            found[name] = op
    return found


def _from_object(value: Any, depth: int) -> dict[str, dict[str, Any]]:
    if depth > _MAX_DEPTH:
        return {}
    if isinstance(value, (str, bytes, bytearray)):
        return _from_text(value, depth + 1)
    if isinstance(value, (list, tuple)):
        found = _ops_from_sections(value, depth)
        for entry in value:
            for name, op in _from_object(entry, depth + 1).items():
                found.setdefault(name, op)
        return found
    if not isinstance(value, Mapping):
        return {}
    keys = {str(k).strip().lower(): v for k, v in value.items()}
    found = {}
    if "sections" in keys:
        inner = keys["sections"]
        found = (
            _from_text(inner, depth + 1)
            if isinstance(inner, (str, bytes, bytearray))
            else _ops_from_sections(inner, depth)
        )
    for name, op in _ops_from_sections(value, depth).items():  # bare section keys
        found.setdefault(name, op)
    if not found:
        for key in _WRAPPER_KEYS:
            if key in keys:
                found = _from_object(keys[key], depth + 1)
                if found:
                    break
    return found


_SALVAGE_OP_RE = re.compile(
    r"""["'\u201c\u201d]?(?:op|operation|action)["'\u201c\u201d]?\s*[:=]\s*["'\u201c\u201d]?(\w+)""",
    re.I,
)
_SALVAGE_LEAD_OP_RE = re.compile(r"""^[\s"'\u201c\u201d{]*(keep|update|append)\b""", re.I)
# A quoted string; the closing quote must match the opening one (a curly quote inside a
# straight-quoted body is text, not the end of it).
_QUOTED = (
    r'"(?P<dq>(?:[^"\\]|\\.)*)"'
    r"|\u201c(?P<cq>(?:[^\u201d\\]|\\.)*)\u201d"
    r"|'(?P<sq>(?:[^'\\]|\\.)*)'"
)
_SALVAGE_CONTENT_RE = re.compile(
    r"""["'\u201c\u201d]?content["'\u201c\u201d]?\s*[:=]\s*(?:""" + _QUOTED + ")", re.I | re.S
)
_SALVAGE_ITEMS_RE = re.compile(r"""["'\u201c\u201d]?items["'\u201c\u201d]?\s*[:=]\s*\[""", re.I)
_SALVAGE_ITEM_RE = re.compile(r"\s*,?\s*(?:" + _QUOTED + ")", re.S)


def _quoted_value(match: re.Match[str]) -> str:
    body = next(group for group in (match["dq"], match["cq"], match["sq"]) if group is not None)
    return decode_string_literal(body)


def _section_key_pattern(name: str) -> str:
    words = [re.escape(w) for w in name.replace("&", " & ").split()]
    body = r"[\s_\-]*".join(r"(?:&|and|&amp;)" if w == "\\&" else w for w in words)
    return rf"""(?:^|(?<=[\s{{,"'\u201c\u201d#*]))(?P<name>{body})["'\u201c\u201d*]?\s*[:=]"""


_SALVAGE_KEY_RES = {name: re.compile(_section_key_pattern(name), re.I) for name in SECTIONS}


def _salvage(text: str) -> dict[str, dict[str, Any]]:
    """Last resort: find each section key and read its op / content / items with regexes."""
    starts: list[tuple[int, int, str]] = []
    for name, pattern in _SALVAGE_KEY_RES.items():
        match = pattern.search(text)
        if match:
            starts.append((match.start(), match.end(), name))
    starts.sort()
    found: dict[str, dict[str, Any]] = {}
    for index, (_, end, name) in enumerate(starts):
        stop = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        segment = text[end:stop]
        op_match = _SALVAGE_OP_RE.search(segment) or _SALVAGE_LEAD_OP_RE.match(segment)
        op = _op_name(op_match.group(1)) if op_match else None
        if op == "KEEP":
            found[name] = {"op": "KEEP"}
        elif op == "UPDATE":
            content = _SALVAGE_CONTENT_RE.search(segment)
            if content:  # only a content string that was closed: never half a body
                found[name] = {"op": "UPDATE", "content": _quoted_value(content)}
        elif op == "APPEND":
            opening = _SALVAGE_ITEMS_RE.search(segment)
            items: list[str] = []
            pos = opening.end() if opening else len(segment)
            while opening and (item := _SALVAGE_ITEM_RE.match(segment, pos)):
                items.append(_quoted_value(item))
                pos = item.end()
            cleaned = _clean_items(items)
            if cleaned:
                found[name] = {"op": "APPEND", "items": cleaned}
    return found


def _from_text(raw: str | bytes | bytearray, depth: int) -> dict[str, dict[str, Any]]:
    text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else raw
    text = text.strip().lstrip("\ufeff")
    if not text or depth > _MAX_DEPTH:
        return {}
    if text.startswith('"'):  # the arguments JSON-encoded twice
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, str):
            return _from_text(decoded, depth + 1)
    parsed = repair_json(text)
    found = _from_object(parsed, depth + 1) if isinstance(parsed, (Mapping, list)) else {}
    return found or _salvage(text)


def _ordered(found: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: found[name] for name in SECTIONS if name in found}


def parse_update_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Read an ``update_working_memory`` call's arguments into canonical per-section ops.

    Accepts the reference and the strict tool shapes and, in order of the SPEC §5 fallback
    chain: a JSON string or a dict; a ``{"raw": "..."}`` wrapper (also ``arguments`` / ``args``);
    bare section keys without the outer ``sections``; truncated JSON (closed at the last
    complete value; a half-written string is dropped, never taken as a whole body); raw
    newlines inside strings; curly or single quotes; trailing commas; lowercase op names;
    section-name variants (case, ``and`` for ``&``, short forms such as ``Key Facts``); and
    finally a per-section regex salvage of KEEP / UPDATE content / APPEND items.

    Args:
        raw: The tool call's arguments, as the provider returned them (any type is accepted).

    Returns:
        ``{section: op}`` in section order, with ops ``{"op": "KEEP"}``,
        ``{"op": "UPDATE", "content": str}`` or ``{"op": "APPEND", "items": [str, ...]}``.
        Sections that cannot be recovered are absent (the merge keeps them); ``{}`` when
        nothing can be recovered. Never raises.
    """
    try:
        if raw is None:
            return {}
        return _ordered(_from_object(raw, 0))
    except Exception:
        logger.warning("update_working_memory: could not parse tool arguments", exc_info=True)
        return {}


# --------------------------------------------------------------------------- size warnings


class SectionSize(NamedTuple):
    """How big a section body is: item count (template lines ignored) and tokens."""

    bullets: int
    tokens: int

    @property
    def oversized(self) -> bool:
        """More than ``BULLET_THRESHOLD`` items or more than ``TOKEN_THRESHOLD`` tokens."""
        return self.bullets > BULLET_THRESHOLD or self.tokens > TOKEN_THRESHOLD


def section_size(body: str) -> SectionSize:
    """Measure a section body: ``section_items`` count and ``count_tokens`` of the body."""
    return SectionSize(len(section_items(body)), count_tokens(body))


def section_size_warnings(wm: str) -> str:
    """Build the ``<section_size_warnings>`` block of the update prompt (SPEC §4.3).

    Every section except the append-only Errors & Corrections that has more than
    ``BULLET_THRESHOLD`` items or more than ``TOKEN_THRESHOLD`` tokens gets one warning line
    with its item count and token estimate, telling the model to consolidate it with UPDATE.

    Args:
        wm: The current Working Memory document (anything that is not a string counts as empty).

    Returns:
        The block ``<section_size_warnings>\\n- …\\n</section_size_warnings>``, or ``""`` when
        no section is oversized (the update prompt then shows ``EMPTY_SECTION_SIZE_WARNINGS``).
    """
    if not isinstance(wm, str) or not wm.strip():
        return ""
    bodies = parse_working_memory(wm)
    lines: list[str] = []
    for name in SECTIONS:
        if name in APPEND_ONLY_SECTIONS:
            continue
        size = section_size(bodies[name])
        if not size.oversized:
            continue
        lines.append(
            f"- {name}: {size.bullets} bullets, about {size.tokens:,} tokens "
            f"(limits: {BULLET_THRESHOLD} bullets, {TOKEN_THRESHOLD:,} tokens). You MUST "
            f"consolidate this section with UPDATE: merge related bullets, grouped by topic, "
            f"keeping every name, date and exact value; target at most {BULLET_THRESHOLD} "
            f"bullets and {TOKEN_THRESHOLD:,} tokens."
        )
    if not lines:
        return ""
    return "<section_size_warnings>\n" + "\n".join(lines) + "\n</section_size_warnings>"
