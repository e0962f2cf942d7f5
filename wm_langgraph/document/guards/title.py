"""The Session Title guard (behaviour §4.1): title stability, one line, grounded in the
conversation.

* A title is one line. Its text is read by its words even when it is written as a heading
  (``### Billing migration``) or a bullet, so a heading-like old title is protected like any.
* APPEND is refused when there is a title (it would grow the title into a list); an empty
  title takes the first appended line as its title.
* UPDATE must share a meaningful word with the old title (no old meaningful word: anything).
* When the merge is given the conversation, a new title must also share a meaningful word with
  the conversation or the old document — a title copied from a prompt's example, or invented,
  is refused.
* A title with a control, bidirectional-override or zero-width character is refused (it could
  show one text and hold another), and a title longer than :data:`MAX_TITLE_CHARS` is cut at a
  word boundary.
"""

from __future__ import annotations

import re

from wm_langgraph.document.ops import KEEP, GuardOutcome, SectionOp
from wm_langgraph.document.sections import is_template_line
from wm_langgraph.document.text import meaningful_words, shares_meaningful_word

__all__ = [
    "MAX_TITLE_CHARS",
    "TitleVerdict",
    "guard_session_title",
    "has_invisible_characters",
    "judge_title",
    "title_text",
]

MAX_TITLE_CHARS = 160
"""The longest title kept (characters); a longer one is cut at a word boundary."""

# C0/C1 controls (tab aside: it is spacing), bidirectional embeddings, overrides and isolates,
# the implicit direction marks, zero-width characters, word joiner and invisible operators, BOM.
_INVISIBLE_RE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)

_MARKER_RE = re.compile(r"^(?:#{1,6}[ \t]+|#{1,6}$|(?:[-*+•]|\d{1,3}[.)])[ \t]+)+")

TitleVerdict = tuple[str | None, str]
"""(new title to write, or None to keep the old one; reason, "" when the op passes as asked)."""


def _lines(body: str) -> list[str]:
    out: list[str] = []
    for raw in body.splitlines():
        line = _MARKER_RE.sub("", raw.strip()).strip()
        if line and not is_template_line(line) and line.strip("#").strip():
            out.append(line)
    return out


def has_invisible_characters(text: str) -> bool:
    """True when ``text`` holds a control, bidirectional or zero-width character."""
    return _INVISIBLE_RE.search(text) is not None


def _bounded(title: str) -> str:
    """``title`` cut to :data:`MAX_TITLE_CHARS` at a word boundary (a hard cut without one)."""
    if len(title) <= MAX_TITLE_CHARS:
        return title
    head = title[: MAX_TITLE_CHARS + 1]
    space = head.rfind(" ")
    cut = head[:space] if space >= MAX_TITLE_CHARS // 2 else head[:MAX_TITLE_CHARS]
    return cut.rstrip(" ,;:-–—")


def title_text(body: str) -> str:
    """The title's words: its lines without heading or bullet markers, joined by spaces."""
    return " ".join(_lines(body))


def judge_title(
    old_body: str,
    kind: str,
    content: str,
    items: tuple[str, ...],
    *,
    conversation: str | None = None,
    old_document: str = "",
) -> TitleVerdict:
    """Judge a Session Title op (module docstring). ``kind`` is ``UPDATE`` or ``APPEND``."""
    old = title_text(old_body)
    notes: list[str] = []
    if kind == "APPEND":
        if old:
            return None, "a title is one line: APPEND refused"
        first = next((line for item in items for line in _lines(item)), "")
        if not first:
            return None, "APPEND to an empty title without text"
        new_lines = [first]
        notes.append("APPEND to an empty title: its first line became the title")
    else:
        new_lines = _lines(content)
        if len(new_lines) > 1:
            notes.append(f"a title is one line: kept the first of {len(new_lines)}")
    new = new_lines[0] if new_lines else ""
    if not new:
        return None, "empty UPDATE of a non-empty section" if old else "empty title"
    if has_invisible_characters(new):
        return None, "the new title holds invisible or control characters: refused"
    if len(new) > MAX_TITLE_CHARS:
        new = _bounded(new)
        notes.append(f"a title is at most {MAX_TITLE_CHARS} characters: cut")
    if old and not shares_meaningful_word(old, new):
        return None, "title drift: the new title shares no meaningful word with the old"
    if conversation is not None and not (
        meaningful_words(new) & meaningful_words(f"{conversation}\n{old_document}")
    ):
        return None, "the new title shares no meaningful word with the conversation"
    return new, "; ".join(notes)


def guard_session_title(
    old_body: str, op: SectionOp, *, conversation: str | None = None, old_document: str = ""
) -> GuardOutcome:
    """Behaviour §4.1: title stability, one line, grounded in the conversation.

    An UPDATE sharing no meaningful word (CJK: no bigram) with the old title is rejected; an
    old title without meaningful words accepts any UPDATE. The old title is read by its words
    even when written as a heading. APPEND is refused when there is a title (an empty title
    takes the first appended line). With ``conversation`` (the folded messages), a new title
    must also share a meaningful word with the conversation or ``old_document``.
    """
    if op.kind not in {"UPDATE", "APPEND"}:
        return GuardOutcome(op)
    new, reason = judge_title(
        old_body,
        op.kind,
        op.content,
        op.items,
        conversation=conversation,
        old_document=old_document,
    )
    if new is None:
        return GuardOutcome(KEEP, reason)
    if op.kind == "UPDATE" and new == op.content.strip():
        return GuardOutcome(op, reason)
    return GuardOutcome(SectionOp("UPDATE", content=new), reason or "title written as one line")
