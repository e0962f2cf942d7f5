"""Repair of a create reply before it is normalised (behaviour §5.5: create output is validated).

Small real models answer the create prompt with documents that normalisation alone would
accept in a broken shape: the seven headers written ``## Session Title: Fixing X`` (the value on
the header line), one level too deep (``### Files & Context``) or as bold labels, the prompt's
own instructions copied back (a ``## Rules`` section, the per-section descriptions), and HTML
entities (``&amp;``, ``&#39;``) that an escaping chat template put into the prompt. Normalised as
is, such a reply leaves Title, Current State and Task empty and folds everything else into Key
Facts under ``###`` headings.

:func:`repair_created_document` brings the section headers to the top level, drops the lines
copied from the prompt template (never a line the conversation itself contains), unescapes the
entities the conversation did not contain, and drops a one-line preamble ("Here is the Working
Memory:"). What is left may still be no Working Memory (no header, or only empty sections
once the echo is gone): the caller rejects such a reply as a failed create.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

from wm_langgraph.document.sections import DOCUMENT_TITLE, _canonical_name

__all__ = ["drop_echoed_lines", "repair_created_document", "template_lines"]

# Any Markdown heading, or a line that is only a bold/plain label, naming a section; an optional
# value may follow a colon or dash ("## Session Title: Fixing X", "**Current State:** ...").
_HEADING_RE = re.compile(r"^(?P<hashes>#{1,6})[ \t]+(?P<text>.+?)[ \t#]*$")
_LABEL_RE = re.compile(
    r"^(?:[-*+][ \t]+)?(?:\*\*|__)(?P<name>[^*_:\n]+?)(?::)?(?:\*\*|__)[ \t]*:?[ \t]*(?P<rest>.*)$"
)
_PLAIN_LABEL_RE = re.compile(r"^(?P<name>[A-Za-z][A-Za-z &]+?)[ \t]*:[ \t]*(?P<rest>.*)$")
_VALUE_SPLIT_RE = re.compile(r"^(?P<name>[^:\n]+?)[ \t]*(?::|[ \t][-–—][ \t])[ \t]*(?P<rest>.*)$")
_ENTITY_RE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_MARKER_RE = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])[ \t]+")
_PLACEHOLDER_RE = re.compile(r"\{\{\w+\}\}")
# A template line shorter than this is echoed only as a heading or a tag, not as prose.
_MIN_ECHO_CHARS = 24
_MAX_PREAMBLE_CHARS = 160
# A line this similar to a template line (difflib ratio of their keys) is a reworded copy of it.
_ECHO_SIMILARITY = 0.85
# A line whose longest verbatim run shared with one template line is at least this share of
# the line is that template line in other words ("The session has grown too large (an empty
# block means every section is within its limits)").
_ECHO_RUN_SHARE = 0.5


def _key(line: str) -> str:
    """Comparison key of a line: no bullet marker or emphasis, spacing and case folded."""
    text = _MARKER_RE.sub("", line.strip(), count=1)
    text = re.sub(r"[*_`]+", "", text)
    return re.sub(r"\s+", " ", text).strip().casefold()


def template_lines(template: str) -> frozenset[str]:
    """The lines of a prompt template a reply may copy back (keys of :func:`_key`).

    The skeleton's own header lines and the placeholder lines are not included: a reply is
    supposed to contain the former, and the latter are filled with the conversation.
    """
    found: set[str] = set()
    raws = template.splitlines()
    for index, raw in enumerate(raws):
        line = raw.strip()
        if not line or _PLACEHOLDER_RE.search(line) or line == DOCUMENT_TITLE:
            continue
        heading = _HEADING_RE.match(line)
        if heading and _canonical_name(heading.group("text")) is not None:
            continue
        is_markup = bool(heading) or (line.startswith("<") and line.endswith(">"))
        before = raws[index - 1].strip() if index else ""
        after = raws[index + 1].strip() if index + 1 < len(raws) else ""
        is_caption = not before and not after  # a paragraph of one line: the prompt's headings
        if is_markup or is_caption or len(line) >= _MIN_ECHO_CHARS:
            found.add(_key(line))
    return frozenset(found)


@lru_cache(maxsize=8)
def _runs(echo: frozenset[str]) -> dict[str, frozenset[str]]:
    """Every ``_MIN_ECHO_CHARS``-long run of the template lines -> the lines that hold it."""
    out: dict[str, set[str]] = {}
    for line in echo:
        for start in range(len(line) - _MIN_ECHO_CHARS + 1):
            out.setdefault(line[start : start + _MIN_ECHO_CHARS], set()).add(line)
    return {run: frozenset(lines) for run, lines in out.items()}


def _copied_run(key: str, echo: frozenset[str]) -> int:
    """The longest verbatim run ``key`` shares with one template line (0 below
    ``_MIN_ECHO_CHARS``); candidate lines are found through their runs, not a scan."""
    runs = _runs(echo)
    lines: set[str] = set()
    for start in range(len(key) - _MIN_ECHO_CHARS + 1):
        lines.update(runs.get(key[start : start + _MIN_ECHO_CHARS], ()))
    best = 0
    for line in lines:
        match = SequenceMatcher(None, key, line, autojunk=False).find_longest_match(
            0, len(key), 0, len(line)
        )
        best = max(best, match.size)
    return best


def _is_echo(key: str, echo: frozenset[str]) -> bool:
    """The line (its key) is a template line, copied verbatim or nearly so, or reworded around
    a verbatim run of one that makes up at least ``_ECHO_RUN_SHARE`` of it."""
    if key in echo:
        return True
    if len(key) < _MIN_ECHO_CHARS:
        return False
    for line in echo:
        if abs(len(line) - len(key)) <= len(line) * (1 - _ECHO_SIMILARITY):
            matcher = SequenceMatcher(None, key, line, autojunk=False)
            if matcher.real_quick_ratio() >= _ECHO_SIMILARITY <= matcher.ratio():
                return True
    return _copied_run(key, echo) >= _ECHO_RUN_SHARE * len(key)


def _is_title_line(line: str) -> bool:
    """``# Working Memory`` at any heading level (``## Working Memory``, ``### Working Memory:``)"""
    heading = _HEADING_RE.match(line.strip())
    return (
        heading is not None and heading.group("text").strip(" :*_").casefold() == "working memory"
    )


def _unescape(text: str, source: str) -> str:
    """Unescape HTML entities, except those the conversation itself contains."""
    kept = set(_ENTITY_RE.findall(source))

    def replace(match: re.Match[str]) -> str:
        entity = match.group(0)
        return entity if entity in kept else html.unescape(entity)

    return _ENTITY_RE.sub(replace, text)


def _section_header(line: str) -> tuple[str, str] | None:
    """``(section, value)`` when ``line`` is meant as a section header, else ``None``."""
    stripped = line.strip()
    heading = _HEADING_RE.match(stripped)
    candidates: list[tuple[str, str]] = []
    if heading:
        text = heading.group("text")
        candidates.append((text, ""))
        split = _VALUE_SPLIT_RE.match(text)
        if split:
            candidates.append((split.group("name"), split.group("rest")))
    else:
        for pattern in (_LABEL_RE, _PLAIN_LABEL_RE):
            label = pattern.match(stripped)
            if label:
                candidates.append((label.group("name"), label.group("rest")))
                break
    for name, value in candidates:
        section = _canonical_name(name)
        if section is not None:
            return section, value.strip().strip("*_").strip()
    return None


def _drop_preamble(lines: list[str]) -> list[str]:
    """Drop one short introductory line ending in a colon before the first header."""
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        if line.startswith("## ") or line.strip() == DOCUMENT_TITLE:
            return lines
        text = line.strip()
        if text.endswith(":") and len(text) <= _MAX_PREAMBLE_CHARS and index + 1 < len(lines):
            rest = lines[index + 1 :]
            if any(r.startswith("## ") or r.strip() == DOCUMENT_TITLE for r in rest):
                return lines[:index] + rest
        return lines
    return lines


def repair_created_document(reply: str, *, template: str = "", source: str = "") -> str:
    """Bring a create reply's sections to the top level and drop what it copied from the prompt.

    Args:
        reply: The model's reply (code fence already removed).
        template: The create prompt template the model was given (placeholders unfilled); its
            lines are what a reply must not copy. ``""`` skips that check.
        source: The conversation text and prior summary the prompt carried: a line or entity
            found there is content, never an echo.

    Returns:
        The reply with its section headers as ``## <Section>`` lines, ready for
        ``normalise_working_memory``; without any header when the reply named no section
        (the caller decides whether that is a Working Memory at all).
    """
    text = _unescape(reply.replace("\r\n", "\n").replace("\r", "\n"), source)
    echo = template_lines(template) if template else frozenset()
    said = re.sub(r"\s+", " ", re.sub(r"[*_`]+", "", source)).casefold()
    lines: list[str] = []
    found = False
    for line in text.split("\n"):
        key = _key(line)
        if key and key not in said and _is_echo(key, echo):
            continue  # a line of the prompt's own instructions, copied back
        if _is_title_line(line):
            if not lines:
                lines.append(DOCUMENT_TITLE)
            continue
        header = _section_header(line)
        if header is None:
            lines.append(line)
            continue
        section, value = header
        lines.append(f"## {section}")
        found = True
        if value and _key(value) not in echo:
            lines.append(value)
    if found:
        lines = _drop_preamble(lines)
    return "\n".join(lines).strip() + "\n"


def drop_echoed_lines(
    ops: Mapping[str, Any], *, template: str, source: str
) -> tuple[dict[str, Any], dict[str, int]]:
    """The update ops without the lines a writer copied from its own prompt.

    The update path's counterpart of the echo filter of :func:`repair_created_document`: an
    UPDATE's content loses its lines that are lines of ``template`` (verbatim or nearly so),
    an APPEND its items that are; a line ``source`` (the Working Memory and the messages the
    prompt carried) itself contains is content, never echo. Other ops pass as they are.

    Args:
        ops: Section name -> op object, as read from the update tool call.
        template: The update prompt template the writer was given (placeholders unfilled).
        source: The Working Memory and the messages text of the prompt.

    Returns:
        The filtered ops and, per section, how many lines were dropped (sections without any
        are left out).
    """
    echo = template_lines(template)
    said = re.sub(r"\s+", " ", re.sub(r"[*_`]+", "", source)).casefold()

    def echoed(line: str) -> bool:
        key = _key(line)
        return bool(key) and key not in said and _is_echo(key, echo)

    out: dict[str, Any] = {}
    dropped: dict[str, int] = {}
    for name, raw in ops.items():
        out[name] = raw
        if not isinstance(raw, Mapping):
            continue
        content, items = raw.get("content"), raw.get("items")
        if isinstance(content, str):
            lines = content.splitlines()
            kept = [line for line in lines if not echoed(line)]
            if len(kept) < len(lines):
                dropped[name] = len(lines) - len(kept)
                out[name] = {**raw, "content": "\n".join(kept)}
        elif isinstance(items, list | tuple):
            kept_items = [i for i in items if not (isinstance(i, str) and echoed(i))]
            if len(kept_items) < len(items):
                dropped[name] = len(items) - len(kept_items)
                out[name] = {**raw, "items": kept_items}
    return out, dropped
