"""Language helpers of the offline heuristic summariser: CJK detection, sentences, similarity.

Private to ``wm_langgraph.writer.offline``. Pure functions, deterministic, English and Chinese
aware.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from wm_langgraph.document.text import anchor_in_text, extract_anchors
from wm_langgraph.document.text.units import sentence_parts

Language = Literal["en", "zh"]

_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_WORD_RE = re.compile(r"[A-Za-z0-9_]+")
# English sentence ends only before blank space (so "v2.3.1" and "app.py" stay whole);
# CJK sentence ends need no space after them.
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？；])|\n+")
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS = _wordset(
    """a an the and or but of to in on for with by at from as is are was were be been being it
    its this that these those i you he she we they me my your our their them us do does did
    done have has had will would can could should shall may might must not no yes so if then
    than there here what which who whom how when where why please just also very let lets let's
    ok okay now all any some into about over after before up down out again more most such
    only own same too s t don't i'm it's we'll i'll you're that's"""
)


def cjk_ratio(text: str) -> float:
    """Share of CJK characters among the non-space characters of ``text``."""
    letters = [ch for ch in text if not ch.isspace()]
    if not letters:
        return 0.0
    return len(_CJK_RE.findall(text)) / len(letters)


def detect_language(text: str) -> Language:
    """``"zh"`` when CJK characters make up a noticeable share of the text, else ``"en"``."""
    return "zh" if cjk_ratio(text) >= 0.15 else "en"


def has_cjk(text: str) -> bool:
    """True when the text contains any CJK character."""
    return _CJK_RE.search(text) is not None


def sentences(text: str) -> list[str]:
    """Split text into sentences (English and CJK punctuation, line breaks); bullets stripped."""
    out: list[str] = []
    for part in sentence_parts(text, _SENTENCE_SPLIT_RE):  # "Dr. Okafor" stays one name
        clean = _BULLET_RE.sub("", part).strip()
        if clean and any(ch.isalnum() for ch in clean):
            out.append(clean)
    return out


def first_sentence(text: str) -> str:
    """The first sentence of ``text`` (``""`` when it has none)."""
    parts = sentences(text)
    return parts[0] if parts else ""


def keywords(text: str) -> list[str]:
    """Meaningful lower-case words (stopwords dropped, crude plural stem) plus CJK character
    bigrams, in order of first appearance."""
    return list(_keywords(text))


@lru_cache(maxsize=8192)
def _keywords(text: str) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for word in _WORD_RE.findall(text):
        low = word.lower()
        if low in STOPWORDS:
            continue
        if len(low) > 3 and low.endswith("s") and not low.endswith("ss"):
            low = low[:-1]  # a crude plural stem: "limits" and "limit" compare equal
        if len(low) >= 2 and low not in STOPWORDS:
            found.setdefault(low)
    for run in re.findall(r"[\u3400-\u4dbf\u4e00-\u9fff]+", text):
        for i in range(max(1, len(run) - 1)):
            found.setdefault(run[i : i + 2])
    return tuple(found)


def similar(a: str, b: str, *, threshold: float = 0.6) -> bool:
    """True when two items say nearly the same thing (keyword-set overlap ≥ ``threshold``).

    The overlap is measured against the smaller keyword set, so a short item contained in a
    longer one counts as similar.
    """
    ka, kb = set(keywords(a)), set(keywords(b))
    if not ka or not kb:
        return a.strip().casefold() == b.strip().casefold()
    return len(ka & kb) / min(len(ka), len(kb)) >= threshold


def repeats(item: str, old: str, *, threshold: float = 0.8) -> bool:
    """True when ``item`` adds nothing to ``old``: similar wording and no anchor (name, number,
    path, date…) that ``old`` lacks. Dedup never drops a detail."""
    if not similar(item, old, threshold=threshold):
        return False
    return not lost_anchors(item_anchors(item), old)


@lru_cache(maxsize=4096)
def item_anchors(text: str) -> frozenset[str]:
    """The anchors of ``text`` without decision markers (cached: items are compared often)."""
    return frozenset(extract_anchors(text, include_markers=False))


@lru_cache(maxsize=4096)
def _all_anchors(text: str) -> frozenset[str]:
    return frozenset(extract_anchors(text))


def lost_anchors(anchors: frozenset[str] | set[str], text: str) -> set[str]:
    """The ``anchors`` that ``text`` does not carry (``document.text.missing_anchors``, cached)."""
    if not anchors:
        return set()
    found = set(_all_anchors(text))
    return {anchor for anchor in anchors if not anchor_in_text(anchor, text, found)}
