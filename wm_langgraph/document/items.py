"""What a model-written item may be. Used by the merge on every APPEND item and on every line of
an UPDATE body, with or without the guards (structural safety). Small real writers stored
"## Tests passed." as an item and filled empty sections with "None" or "N/A", which then
counted as facts.

* A leading Markdown header marker is not part of an item: ``## Tests passed.`` becomes
  ``Tests passed.`` (never stored as ``- ## Tests passed.``); in an UPDATE body a bullet
  ``- ## x`` becomes ``- x``. Header lines of their own are left to the section rules
  (``sections.neutralise_body`` demotes them).
* Placeholders are not items: ``None``, ``N/A``, ``-``, ``**None**``, ``(none)``, ``TBD``, fillers
  such as ``nothing yet`` / ``no open issues``, ``无`` / ``暂无`` / ``没有``, a lone
  ``[item]`` or ``<unresolved question>`` slot, and a copied section name (``Open Issues``,
  ``**Open Issues**:``).
"""

from __future__ import annotations

import re

from wm_langgraph.document.sections import SECTIONS
from wm_langgraph.document.text.paths import words

__all__ = ["clean_item", "clean_update_body", "is_placeholder"]

_BULLET_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>(?:[-*+•]|\d{1,3}[.)])[ \t]+)")
_HEADER_MARK_RE = re.compile(r"^(?:#{1,6}(?:[ \t]+|$))+")
_WRAPPER_RE = re.compile(r"^[\s*_~`\"'“”(（\[]+|[\s*_~`\"'“”)）\].。:：!！]+$")
_PLACEHOLDERS = words(
    "none n/a na n.a nil null empty nothing tbd 无 暂无 没有 无内容 暂无内容 不适用"
) | frozenset(
    line.strip()
    for line in """none yet
    nothing yet
    nothing new
    nothing to report
    not applicable
    no issues
    no open issues
    no errors
    no files
    no facts
    no changes
    none so far""".splitlines()
)
_SLOT_RE = re.compile(r"^(?:\[[^\]\n]{1,40}\]|<[^>\n]{1,60}>)$")
_SECTION_NAMES = frozenset(name.casefold() for name in SECTIONS)


def _bare(text: str) -> str:
    previous = None
    while previous != text:
        previous = text
        text = _WRAPPER_RE.sub("", text.strip())
    return re.sub(r"\s+", " ", text).casefold()


def is_placeholder(item: str) -> bool:
    """True for a filler that holds no information (module docstring)."""
    text = item.strip()
    if not text or not any(ch.isalnum() for ch in text):
        return True
    if _SLOT_RE.match(text) and not re.search(r"\d", text):
        return True
    bare = _bare(text)
    return bare in _PLACEHOLDERS or bare in _SECTION_NAMES or not bare


def clean_item(item: str) -> str:
    """An APPEND item without a leading header marker; ``""`` when it is a placeholder."""
    text = _HEADER_MARK_RE.sub("", item.strip()).strip()
    return "" if is_placeholder(text) else text


def clean_update_body(body: str) -> str:
    """An UPDATE body whose bullets carry no header marker and no placeholder bullets/lines."""
    out: list[str] = []
    for line in body.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        match = _BULLET_RE.match(line)
        if match:
            rest = _HEADER_MARK_RE.sub("", line[match.end() :].strip()).strip()
            if is_placeholder(rest):
                continue
            out.append(f"{match['indent']}{match['marker']}{rest}")
        elif line.strip() and not line.lstrip().startswith("#") and is_placeholder(line):
            continue
        else:
            out.append(line)
    return "\n".join(out)
