"""Shortening a statement at a word boundary, never inside a parenthesis. Pure, no I/O.

The offline writer, the chat units and the capture check's items added by code keep
statements short: "I went hiking last week (the week before 25 August 2023) and got into a
bad …". A plain cut at the word limit could fall
inside the resolved date the text carries in parentheses and leave "(the week before 25 …",
half a date. A cut that falls inside a parenthesis finishes it when it closes within
:data:`PARENTHESIS_GRACE` more words, else it cuts before the parenthesis opens; only a text
that opens with one (nothing before it to keep) is cut inside it, and the cut closes it.
A character bound, when given, keeps fewer words by the same rule. CJK text is cut by
characters.
"""

from __future__ import annotations

import re

__all__ = ["PARENTHESIS_GRACE", "shorten"]

PARENTHESIS_GRACE = 8
"""How many words past the limit a cut goes to finish a parenthesis it fell into."""

_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_SPACE_RE = re.compile(r"\s+")


def shorten(
    text: str, *, max_words: int = 40, max_cjk: int = 90, max_chars: int | None = None
) -> str:
    """``text`` with its whitespace squashed, cut after ``max_words`` words (``max_cjk``
    characters when it has CJK text) with an ellipsis; never inside a parenthesis (see the
    module docstring). With ``max_chars``, fewer words are kept until the result fits, and a
    single word longer than that is cut by characters. A text within the limits comes back
    whole."""
    text = _SPACE_RE.sub(" ", text).strip()
    if _CJK_RE.search(text):
        limit = max_cjk if max_chars is None else min(max_cjk, max_chars - 1)
        return text if len(text) <= limit else text[:limit].rstrip() + "…"
    words = text.split(" ")
    out = _by_words(text, words, max(1, max_words))
    if max_chars is None or len(out) <= max_chars:
        return out
    for limit in range(min(max_words, len(words)) - 1, 0, -1):
        out = _by_words(text, words, limit)
        if len(out) <= max_chars:
            return out
    return text[: max_chars - 1] + "…"


def _by_words(text: str, words: list[str], max_words: int) -> str:
    if len(words) <= max_words:
        return text
    end, unclosed = _cut(words, max_words)
    if end >= len(words):
        return text
    return " ".join(words[:end]).rstrip(",;:") + " …" + ")" * unclosed


def _cut(words: list[str], end: int) -> tuple[int, int]:
    """Where to cut ``words`` near ``end`` so that no parenthesis is left open, and how many
    parentheses the cut closes itself (only when one opens at the first word)."""
    opened: list[int] = []
    for n, word in enumerate(words[:end]):
        for char in word:
            if char == "(":
                opened.append(n)
            elif char == ")" and opened:
                opened.pop()
    if not opened:
        return end, 0
    depth = len(opened)
    for n in range(end, min(len(words), end + PARENTHESIS_GRACE)):
        depth += words[n].count("(") - words[n].count(")")
        if depth <= 0:
            return n + 1, 0
    if opened[0] > 0:
        return opened[0], 0
    return end, len(opened)
