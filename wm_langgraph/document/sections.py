"""The Working Memory document: the seven sections, parsing, rendering, normalisation.

Pure functions, no I/O. Every other module reads and writes the document through here, so
the rules of behaviour §2 (exact section names, header neutralisation, item splitting, template
lines) live in one place.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from wm_langgraph.document.text.entry import reveal_hidden

__all__ = [
    "DOCUMENT_TITLE",
    "SECTIONS",
    "SectionName",
    "is_template_line",
    "is_working_memory",
    "item_key",
    "neutralise_body",
    "normalise_working_memory",
    "parse_working_memory",
    "render_working_memory",
    "section_items",
]

SectionName = str

SECTIONS: tuple[str, ...] = (
    "Session Title",
    "Current State",
    "Task & Goals",
    "Key Facts & Decisions",
    "Files & Context",
    "Errors & Corrections",
    "Open Issues",
)

DOCUMENT_TITLE = "# Working Memory"

# Where orphan text (before the first header, or under an unknown header) is folded so that
# normalisation never drops it. Key Facts is cumulative, so guards protect what lands there.
_ORPHAN_SECTION = "Key Facts & Decisions"

# A section header: a line starting with "## " (exactly two hashes, then blank space).
_HEADER_RE = re.compile(r"^##[ \t]+(?P<name>\S.*?)[ \t#]*$")
# Any line another parser (or a model reading the document) could take for a section break:
# "##" then blank space or nothing, after any leading blank space ("   ## Open Issues").
_HEADER_LIKE_RE = re.compile(r"^\s*##(?:\s|$)")
_BULLET_RE = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])[ \t]+")
_TEMPLATE_RE = re.compile(r"^_[^_\n].*_$|^_$")


def _canonical_name(raw: str) -> str | None:
    """Map a header text to one of SECTIONS, tolerating case, spacing and 'and' for '&'."""
    text = re.sub(r"\s+", " ", raw.strip().strip("*_ ").lower())
    text = re.sub(r"\band\b", "&", text).replace(" & ", "&").replace("&", " & ")
    text = re.sub(r"\s+", " ", text).strip()
    for name in SECTIONS:
        if name.lower() == text:
            return name
    return None


def _split(text: str) -> tuple[dict[str, list[str]], list[str]]:
    """Split a document into known-section bodies and orphan lines (nothing is dropped).

    Orphan lines are the text before the first header (except the ``# Working Memory`` title)
    and the content of unknown ``##`` headers, whose header line is demoted to ``###``.
    """
    bodies: dict[str, list[str]] = {name: [] for name in SECTIONS}
    orphans: list[str] = []
    current: list[str] | None = None
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        match = _HEADER_RE.match(line)
        if match:
            name = _canonical_name(match.group("name"))
            if name is not None:
                current = bodies[name]
                if current and current[-1].strip():
                    current.append("")  # a repeated header: keep both bodies, apart
                continue
            current = orphans
            orphans.append("#" + line)  # demote the unknown header, keep its text
            continue
        if current is None:
            if line.strip() == DOCUMENT_TITLE:
                continue
            orphans.append(line)
        else:
            current.append(line)
    return bodies, orphans


def parse_working_memory(text: str) -> dict[str, str]:
    """Parse a Working Memory document into its seven section bodies.

    Args:
        text: The Markdown document. Any string is accepted.

    Returns:
        A dict with exactly the seven names of ``SECTIONS`` as keys, in order; each value is
        the section body without its header line, stripped (``""`` when the section is absent).
        A section that appears twice has both bodies, in document order.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_working_memory expects a str, got {type(text).__name__}")
    bodies, _ = _split(text)
    return {name: "\n".join(lines).strip() for name, lines in bodies.items()}


def neutralise_body(body: str) -> str:
    """Make a section body safe to embed: no line of it can start a new section.

    Lines that would parse as a ``## `` header, indented with blank space or not, are demoted to
    ``###`` so the document keeps exactly seven sections (header injection, behaviour §2.4, §4.7). A
    ``# Working Memory`` line is demoted the same way. The text itself is kept.
    """
    out: list[str] = []
    # Strip first: stripping after the check would turn " ## X" (or "\f## X") on the first
    # line into a real header.
    # Nothing hidden stands in the document unseen, whoever wrote it (document.text.entry).
    for line in reveal_hidden(body.replace("\r\n", "\n").replace("\r", "\n")).strip().split("\n"):
        if _HEADER_LIKE_RE.match(line) or line.strip() == DOCUMENT_TITLE:
            out.append(("### " + line.strip().lstrip("#").strip()).rstrip())
        else:
            out.append(line)
    return "\n".join(out).strip()


def render_working_memory(sections: Mapping[str, str]) -> str:
    """Render the canonical document: ``# Working Memory`` and all seven ``##`` sections.

    Args:
        sections: Section name -> body. Missing sections render empty. Bodies are neutralised
            so that they cannot inject headers.

    Raises:
        ValueError: a key is not one of ``SECTIONS`` (nothing would silently vanish).
        TypeError: a body is not a string.
    """
    unknown = [key for key in sections if key not in SECTIONS]
    if unknown:
        raise ValueError(
            f"unknown Working Memory section(s) {unknown!r}; expected names from SECTIONS: "
            f"{list(SECTIONS)!r}"
        )
    parts = [DOCUMENT_TITLE, ""]
    for name in SECTIONS:
        body = sections.get(name, "")
        if not isinstance(body, str):
            raise TypeError(f"section {name!r} body must be a str, got {type(body).__name__}")
        parts.append(f"## {name}")
        clean = neutralise_body(body)
        if clean:
            parts.append(clean)
        parts.append("")
    return "\n".join(parts).rstrip("\n") + "\n"


def is_working_memory(text: object) -> bool:
    """True when ``text`` is a v2 Working Memory: it has at least one of the seven headers.

    Anything that is not a string is not a Working Memory (``False``, never an error)."""
    if not isinstance(text, str):
        return False
    for line in text.splitlines():
        match = _HEADER_RE.match(line)
        if match and _canonical_name(match.group("name")) is not None:
            return True
    return False


def normalise_working_memory(text: str) -> str:
    """Return the canonical seven-section document for ``text`` without dropping any text.

    Text before the first header and content under unknown headers is folded into
    Key Facts & Decisions (unknown header lines demoted to ``###``). A text with no header at
    all (a legacy summary) lands there entirely.
    """
    bodies, orphans = _split(text)
    sections = {name: "\n".join(lines).strip() for name, lines in bodies.items()}
    orphan_text = "\n".join(orphans).strip()
    if orphan_text:
        target = sections[_ORPHAN_SECTION]
        sections[_ORPHAN_SECTION] = f"{target}\n{orphan_text}".strip() if target else orphan_text
    return render_working_memory(sections)


def is_template_line(line: str) -> bool:
    """True for the italic one-line description a create prompt may ask for (``_…_``)."""
    return bool(_TEMPLATE_RE.match(line.strip())) and len(line.strip()) > 1


def section_items(body: str) -> list[str]:
    """Split a section body into items (behaviour §2.3).

    Bullet lines (``- ``, ``* ``, ``1. ``, ``2) ``) give their text without the marker; any
    other non-blank line that is not a heading or a template line is an item by itself.
    """
    items: list[str] = []
    for raw in body.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or is_template_line(line):
            continue
        line = _BULLET_RE.sub("", line, count=1).strip()
        if line:
            items.append(line)
    return items


def item_key(item: str) -> str:
    """Comparison key for whole-item dedup: case-folded, whitespace-collapsed, no bullet marker,
    no surrounding punctuation or emphasis. Two items are the same item when their keys are equal
    (a stricter test than substring search, which finds "fix" inside "prefix")."""
    text = _BULLET_RE.sub("", item.strip(), count=1)
    text = re.sub(r"\s+", " ", text).strip().casefold()
    return text.strip(" \t.;,:!?*_`'\"")


DURABLE_SECTIONS: tuple[str, ...] = (
    "Task & Goals",
    "Key Facts & Decisions",
    "Files & Context",
    "Errors & Corrections",
    "Open Issues",
)
"""Sections that carry facts forward (owner decision, behaviour §4.6): only these count when a guard
asks whether an anchor or item is kept elsewhere — never Current State (rewritten every commit)
or the Session Title."""


def has_content(body: str) -> bool:
    """True when ``body`` has at least one item that is not an italic template line."""
    return bool(section_items(body))
