"""Text as it enters the memory: the engine's own marks quoted, hidden characters shown.

Two kinds of text from outside (a user's message, a tool's output, a pasted document, a
writer's reply) would otherwise pass for something they are not:

- **The engine's marks.** The memory writes a few bracketed marks itself: the summary's and
  the verbatim fill's headers, the recall layer's, the guards' ``[restored]`` and
  ``[silently dropped, restored]``, the size contract's ``[moved out: N older items …]``, the
  prompt's ``[… N tokens truncated …]``. The same words typed by a user or returned by a tool
  would carry the engine's authority (a badge in the report, a moved-out count that
  compaction carries forward, a summary the model trusts). :func:`neutralise_marks` shows
  each as quoted text (``[quoted text: restored]``), as assemble already shows a forged
  summary header.
- **Hidden characters.** Characters a person does not see, or that change the direction of
  what follows: the C0 and C1 controls but newline and tab, the zero-width characters, the
  bidirectional marks, embeddings, overrides and isolates, the line and paragraph separators
  (U+2028, U+2029), the soft hyphen, the word joiner and invisible operators, the Hangul
  fillers, variation selectors that select nothing, and the Unicode tag characters
  (U+E0000–E007F), in which a whole sentence can be written that no screen shows.
  :func:`show_hidden` writes each as its code point; :func:`reveal_hidden` (the form text
  takes in the memory) writes each run of them as one visible note
  (``[hidden: U+E0049 U+E0067 … 288 characters]``).

Emoji stay emoji: a flag's tag sequence (U+1F3F4, two to seven lowercase or digit tags,
U+E007F), a zero-width joiner between two emoji (or between two letters of a script that
joins, Arabic or Devanagari), a zero-width non-joiner between two such letters, and one
variation selector after a visible character (U+FE0F makes ❤ ❤️; an ideographic one after a
CJK ideograph) are kept. Everything else of the kinds above is shown.

Pure: no I/O, no LangChain. :func:`entry_text` is the one call where text enters the memory
(the writer's rendered input, the capture check's units); the archives keep every message
verbatim, and the displays show hidden characters with :func:`show_hidden`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

__all__ = [
    "QUOTED_MARK",
    "code_point",
    "entry_text",
    "has_hidden",
    "neutralise_marks",
    "reveal_hidden",
    "show_hidden",
]

QUOTED_MARK = "[quoted text: "
"""How a mark the engine did not write begins once quoted (``[quoted text: restored]``)."""

_MARK_RE = re.compile(
    r"\[\s*(?=(?:"
    r"session\s+history\s+summary\s*\]"
    r"|earlier\s+messages\s*,\s*verbatim\s*\]"
    r"|recalled\b[^\]\n]*\]"
    r"|restored\s*\]"
    r"|silently\s+dropped\s*,\s*restored\s*\]"
    r"|moved\s+out\s*:"
    r"|…\s*[\d,]+\s+(?:tokens?|characters?)\s+truncated"
    r"))",
    re.IGNORECASE,
)
"""The opening bracket of one of the engine's marks (the quote goes right after it)."""

_CANDIDATES = re.compile(
    "["
    "\x00-\x08\x0b-\x1f\x7f-\x9f"  # C0 (but tab and newline), DEL, C1
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb"
    "\ud800-\udfff"  # lone surrogates
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0000-\U000e0fff"  # tags, variation selectors 17-256, the rest of the plane's start
    "]"
)
"""Every character that may be hidden; :func:`_kept` spares the ones an emoji or a script
needs."""

_FLAG_RE = re.compile("\U0001f3f4[\U000e0030-\U000e0039\U000e0061-\U000e007a]{2,7}\U000e007f")
"""A flag's tag sequence (England is U+1F3F4, ``gbeng`` in tags, U+E007F)."""

_ZWNJ, _ZWJ = "\u200c", "\u200d"
_SKIN_TONES = range(0x1F3FB, 0x1F400)
_RUN_SHOWN = 4
"""A hidden run longer than this is shown by its first code points and its length."""


def _is_emoji(char: str) -> bool:
    code = ord(char)
    return unicodedata.category(char) == "So" or 0x1F000 <= code <= 0x1FAFF or code in _SKIN_TONES


def _is_joining_letter(char: str) -> bool:
    """A letter or mark of a script that writes with joiners (not ASCII, not a symbol)."""
    return ord(char) > 0x7F and unicodedata.category(char)[0] in "LM"


def _is_base(char: str) -> bool:
    return unicodedata.category(char)[0] in "LNPS" and not _CANDIDATES.match(char)


def _is_ideograph(char: str) -> bool:
    code = ord(char)
    return (
        0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x3FFFF
    )


def _emoji_before(text: str, index: int) -> bool:
    """An emoji ends right before ``index`` (after at most one variation selector or tone)."""
    if index == 0:
        return False
    before = text[index - 1]
    if (before == "\ufe0f" or ord(before) in _SKIN_TONES) and index >= 2:
        return _is_emoji(text[index - 2]) or _is_emoji(before)
    return _is_emoji(before)


def _kept(text: str, index: int, flags: set[int]) -> bool:
    """The candidate at ``index`` belongs to an emoji sequence or a joining script."""
    if index in flags:
        return True
    char = text[index]
    before = text[index - 1] if index else ""
    after = text[index + 1] if index + 1 < len(text) else ""
    if char in (_ZWJ, _ZWNJ):
        if before and after and _is_joining_letter(before) and _is_joining_letter(after):
            return True
        return char == _ZWJ and bool(after) and _emoji_before(text, index) and _is_emoji(after)
    code = ord(char)
    if 0xFE00 <= code <= 0xFE0F:
        return bool(before) and _is_base(before)
    if 0xE0100 <= code <= 0xE01EF:
        return bool(before) and _is_ideograph(before)
    return False


def _hidden_at(text: str) -> list[int]:
    """The positions of the hidden characters of ``text``, in order."""
    found = [m.start() for m in _CANDIDATES.finditer(text)]
    if not found:
        return []
    flags: set[int] = set()
    if "\U0001f3f4" in text:
        for match in _FLAG_RE.finditer(text):
            flags.update(range(match.start() + 1, match.end()))
    return [i for i in found if not _kept(text, i, flags)]


def has_hidden(text: str) -> bool:
    """True when ``text`` holds a hidden character (module docstring)."""
    return bool(_hidden_at(text))


def code_point(char: str) -> str:
    """``U+200B``, ``U+E0049``."""
    return f"U+{ord(char):04X}"


def show_hidden(text: str, show: Callable[[str], str] = code_point) -> str:
    """``text`` with each hidden character written as ``show(char)`` (its code point by
    default); emoji sequences and joining scripts stay as they are."""
    hidden = _hidden_at(text)
    if not hidden:
        return text
    parts: list[str] = []
    last = 0
    for index in hidden:
        parts.append(text[last:index])
        parts.append(show(text[index]))
        last = index + 1
    parts.append(text[last:])
    return "".join(parts)


def _note(run: str) -> str:
    points = " ".join(code_point(c) for c in run[:_RUN_SHOWN])
    if len(run) <= _RUN_SHOWN:
        return f"[hidden: {points}]"
    return f"[hidden: {points} … {len(run):,} characters]"


def reveal_hidden(text: str) -> str:
    """``text`` with each run of hidden characters written as one visible note:
    ``[hidden: U+200B]``, ``[hidden: U+E0049 U+E0067 U+E006E U+E006F … 288 characters]``."""
    hidden = _hidden_at(text)
    if not hidden:
        return text
    parts: list[str] = []
    last = 0
    start = hidden[0]
    for index, nxt in zip(hidden, [*hidden[1:], -1], strict=True):
        if nxt == index + 1:
            continue
        parts.append(text[last:start])
        parts.append(_note(text[start : index + 1]))
        last = index + 1
        start = nxt
    parts.append(text[last:])
    return "".join(parts)


def neutralise_marks(text: str) -> str:
    """``text`` with every mark only the engine writes (module docstring) shown as quoted
    text: ``[restored]`` becomes ``[quoted text: restored]``."""
    if "[" not in text:
        return text
    return _MARK_RE.sub(QUOTED_MARK, text)


_NEWLINES_RE = re.compile(r"\r\n?")


def entry_text(text: str) -> str:
    """``text`` as it enters the memory: line ends as newlines, hidden characters shown
    (:func:`reveal_hidden`), the engine's marks quoted (:func:`neutralise_marks`).

    Idempotent: the result enters again unchanged.
    """
    if "\r" in text:
        text = _NEWLINES_RE.sub("\n", text)
    return neutralise_marks(reveal_hidden(text))
