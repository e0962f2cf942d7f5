"""Tolerant reading of ``update_working_memory`` arguments into canonical ops
(behaviour §3.3, §3.4).

Private helper of ``document.protocol``, which re-exports :func:`parse_update_arguments`. The
layers, tried in order: structured values (dict / list / JSON text repaired by
``json_repair``), wrappers (``sections``, ``raw``, ``arguments``, ...), per-section op
normalisation (reference and strict shapes, lowercase and synonym op names, section-name
variants), and a last-resort regex salvage per section.

:func:`read_update_arguments` also says what could *not* be read: whether the arguments were
complete, which sections were present but unreadable (or, in a cut-off reply, never reached),
and which section's op the cut went through.

What survives of an op that the end of the reply cut off (owner decision: truncated content is
salvaged, then judged by the guards like any op). A reply cut at the model's output limit ends
inside one string, an UPDATE body or an APPEND item, and its complete part is kept:

- an APPEND keeps its complete items (the cut item is dropped);
- an UPDATE of a list-like section keeps its complete lines (the cut line is dropped);
- an UPDATE of a single-line or paragraph section (Session Title, Current State) whose text has
  no complete line keeps its text;
- a degenerate tail — one short unit repeated to the limit (``1111…``, ``KEEP, KEEP, …``), as
  weak grammar-forced models produce when they loop — is not content and is removed first.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from wm_langgraph.document.json_repair import CUT_MARK, decode_string_literal, repair_json_partial
from wm_langgraph.document.sections import SECTIONS, section_items

__all__ = ["UpdateReading", "parse_update_arguments", "read_update_arguments"]


PARAGRAPH_SECTIONS: frozenset[str] = frozenset({"Session Title", "Current State"})
"""Sections written as one line or one paragraph: a cut-off body keeps its text."""

_MAX_UNIT = 40  # longest repeated unit looked for
_MIN_REPEATS = 5  # a unit repeated this many times at the very end is a loop
_MIN_RUN_CHARS = 16  # ... and the loop covers at least this many characters


def strip_runaway(text: str) -> str:
    """``text`` without a looping tail (a short unit repeated to the end of the text).

    The end may stop inside a unit (the reply was cut there); the loop is removed whole, with
    its first occurrence, since a model that loops has stopped writing content.
    """
    size = len(text)
    best = size
    for unit in range(1, min(_MAX_UNIT, size // _MIN_REPEATS) + 1):
        start = size
        while start - unit - 1 >= 0 and text[start - 1] == text[start - 1 - unit]:
            start -= 1
        # text[start - unit:] is periodic with period ``unit``
        run = size - (start - unit)
        if run >= unit * _MIN_REPEATS and run >= _MIN_RUN_CHARS:
            best = min(best, start - unit)
    return text[:best].rstrip() if best < size else text


def complete_part(section: str, text: str) -> str | None:
    """The part of a cut-off UPDATE body that was written completely, or None for nothing.

    Args:
        section: The section the body belongs to.
        text: The body as far as the reply got (without the cut marker).
    """
    kept = strip_runaway(text)
    if "\n" in kept:
        kept = kept[: kept.rfind("\n")]
    elif section not in PARAGRAPH_SECTIONS:
        return None  # a list section's only line is cut: nothing of it is complete
    kept = kept.rstrip()
    return kept if kept.strip() else None


logger = logging.getLogger("wm_langgraph")

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
_ABSTRACT_KEYS = ("abstracts", "archive_abstracts")
_ITEM_MARKER_RE = re.compile(r"^(?:[-*+•])[ \t]+")
_MAX_DEPTH = 6
# An op the model named but that does not exist ("DELETE"): behaviour §3.3 makes it KEEP, and unlike
# an unreadable value it is not retried.
_UNKNOWN_OP: dict[str, Any] = {"op": "UNKNOWN"}


@dataclass
class _Notes:
    """What one reading found besides the ops."""

    complete: bool = True
    unreadable: set[str] = field(default_factory=set)
    abstracts: object = None


@dataclass(frozen=True, slots=True)
class UpdateReading:
    """The result of :func:`read_update_arguments`.

    Attributes:
        ops: ``{section: op}`` in section order (as :func:`parse_update_arguments` returns).
        complete: The arguments were whole (a parsed object, or JSON text that closed).
        unreadable: Sections without a usable decision: present with a value that could not be
            read, or — when the arguments were cut off — never reached. A complete reply that
            leaves a section out means KEEP (behaviour §3.5) and does not list it.
        cut: The section whose op the cut went through (its complete part, if any, is in
            ``ops``), or None.
        abstracts: The raw value of the call's ``abstracts`` argument (``None`` when it has
            none), read by ``document.abstracts.read_abstracts``; the ops never depend on it.
    """

    ops: dict[str, dict[str, Any]]
    complete: bool = True
    unreadable: tuple[str, ...] = ()
    cut: str | None = None
    abstracts: object = None


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
    if not isinstance(value, str) or CUT_MARK in value:
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
            return _op_from_value(repair_json_partial(value).value, depth + 1)
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
        if isinstance(raw_op, str) and CUT_MARK in raw_op:
            return None  # the op name itself was cut off: unreadable
        return _UNKNOWN_OP  # an unknown op means KEEP
    if name in ("UPDATE", None) and content is not None:
        return {"op": "UPDATE", "content": content}
    if items is None and content is not None:
        items = section_items(content)  # APPEND given as text: one item per line
    if items is not None and (name == "APPEND" or items):
        return {"op": "APPEND", "items": items}
    return None


def _ops_from_sections(value: Any, depth: int, notes: _Notes) -> dict[str, dict[str, Any]]:
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
        if op is None:
            notes.unreadable.add(name)
        elif op is not _UNKNOWN_OP:
            found[name] = op
    return found


def _from_object(value: Any, depth: int, notes: _Notes) -> dict[str, dict[str, Any]]:
    if depth > _MAX_DEPTH:
        return {}
    if isinstance(value, (str, bytes, bytearray)):
        return _from_text(value, depth + 1, notes)
    if isinstance(value, (list, tuple)):
        found = _ops_from_sections(value, depth, notes)
        for entry in value:
            for name, op in _from_object(entry, depth + 1, notes).items():
                found.setdefault(name, op)
        return found
    if not isinstance(value, Mapping):
        return {}
    keys = {str(k).strip().lower(): v for k, v in value.items()}
    for name in _ABSTRACT_KEYS:
        if notes.abstracts is None and keys.get(name) is not None:
            notes.abstracts = keys[name]
    found = {}
    if "sections" in keys:
        inner = keys["sections"]
        found = (
            _from_text(inner, depth + 1, notes)
            if isinstance(inner, (str, bytes, bytearray))
            else _ops_from_sections(inner, depth, notes) or _from_object(inner, depth + 1, notes)
        )
    for name, op in _ops_from_sections(value, depth, notes).items():  # bare section keys
        found.setdefault(name, op)
    if not found:
        for key in _WRAPPER_KEYS:
            if key in keys:
                found = _from_object(keys[key], depth + 1, notes)
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
_SALVAGE_CONTENT_OPEN_RE = re.compile(
    r"""["'\u201c\u201d]?content["'\u201c\u201d]?\s*[:=]\s*["\u201c](?P<body>.*)\Z""", re.I | re.S
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
            opened = _SALVAGE_CONTENT_OPEN_RE.search(segment) if stop == len(text) else None
            if content:
                found[name] = {"op": "UPDATE", "content": _quoted_value(content)}
            elif opened:  # the text ends inside this body: mark it as cut off
                body = opened["body"].removesuffix("\\")
                found[name] = {"op": "UPDATE", "content": decode_string_literal(body) + CUT_MARK}
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


def _from_text(
    raw: str | bytes | bytearray, depth: int, notes: _Notes
) -> dict[str, dict[str, Any]]:
    text = raw.decode("utf-8", "replace") if isinstance(raw, (bytes, bytearray)) else raw
    text = text.strip().lstrip("\ufeff")
    if not text or depth > _MAX_DEPTH:
        notes.complete = notes.complete and bool(text)
        return {}
    if text.startswith('"'):  # the arguments JSON-encoded twice
        try:
            decoded = json.loads(text)
        except ValueError:
            decoded = None
        if isinstance(decoded, str):
            return _from_text(decoded, depth + 1, notes)
    repaired = repair_json_partial(text)
    parsed = repaired.value
    notes.complete = notes.complete and repaired.complete
    found = _from_object(parsed, depth + 1, notes) if isinstance(parsed, (Mapping, list)) else {}
    return found or _salvage(text.replace(CUT_MARK, ""))


def _ordered(found: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: found[name] for name in SECTIONS if name in found}


_LONE_HIGH_SURROGATE_RE = re.compile("[\ud800-\udbff]\\Z")


def _settle_cut(ops: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Keep the complete part of the op that carries the cut marker; drop the marker."""
    settled: dict[str, dict[str, Any]] = {}
    cut: str | None = None
    for name, op in ops.items():
        if op["op"] == "UPDATE" and CUT_MARK in op["content"]:
            cut = name
            text = op["content"].replace(CUT_MARK, "")
            kept = complete_part(name, _LONE_HIGH_SURROGATE_RE.sub("", text))
            if kept is not None:
                settled[name] = {"op": "UPDATE", "content": kept}
        elif op["op"] == "APPEND" and any(CUT_MARK in item for item in op["items"]):
            cut = name
            # A model that loops to its limit repeats itself ("KEEP", "KEEP", ...): in a cut-off
            # APPEND an op name is not an item, nor is the same item twice.
            items = [
                item
                for item in dict.fromkeys(op["items"])
                if CUT_MARK not in item and _op_name(item) is None
            ]
            if items:
                settled[name] = {"op": "APPEND", "items": items}
        else:
            settled[name] = op
    return settled, cut


def read_update_arguments(raw: object, *, cut_off: bool = False) -> UpdateReading:
    """Read an ``update_working_memory`` call's arguments and say what could not be read.

    Args:
        raw: The tool call's arguments, as the provider returned them (any type is accepted).
        cut_off: The provider reported that the reply stopped at its output limit (whatever
            the arguments look like, the reply is then incomplete).

    Returns:
        The ops (exactly :func:`parse_update_arguments`), whether the arguments were complete,
        the unreadable sections and the section the cut went through. Never raises.
    """
    notes = _Notes()
    try:
        if raw is None:
            return UpdateReading({}, complete=not cut_off, unreadable=())
        found = _from_object(raw, 0, notes)
    except Exception:
        logger.warning("update_working_memory: could not parse tool arguments", exc_info=True)
        return UpdateReading({}, complete=False, unreadable=SECTIONS)
    ops, cut = _settle_cut(_ordered(found))
    complete = notes.complete and not cut_off and cut is None
    missing = set(notes.unreadable)
    if not complete:
        missing |= set(SECTIONS)  # a cut-off reply never reached the sections it lacks
    if cut is not None:
        missing.add(cut)
    unreadable = tuple(name for name in SECTIONS if name in missing and name not in ops)
    return UpdateReading(
        ops, complete=complete, unreadable=unreadable, cut=cut, abstracts=notes.abstracts
    )


def parse_update_arguments(raw: object) -> dict[str, dict[str, Any]]:
    """Read an ``update_working_memory`` call's arguments into canonical per-section ops.

    Accepts the reference and the strict tool shapes and, in order of the behaviour §5.4 fallback
    chain: a JSON string or a dict; a ``{"raw": "..."}`` wrapper (also ``arguments`` / ``args``);
    bare section keys without the outer ``sections``; truncated JSON (closed at the last
    complete value; the op the cut went through keeps only its complete part — whole APPEND
    items, whole lines of an UPDATE body, the text of a one-line/paragraph section); raw
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
    return read_update_arguments(raw).ops
