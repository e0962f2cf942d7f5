"""Constraint, preference and decision phrase anchors (go-further anchor kinds, behaviour §4.3).

Rules such as "never push directly to main", "tests must never call the real gateway", "Owen
cannot drive" or "不要直接推送到主分支" often carry no name, number or path, so the other
anchor kinds give them nothing to protect. Here the anchor is the negation / obligation marker
together with the first content word it governs, with the marker reduced to its class so that
ordinary rewording keeps it:

* negative: never, do/does not, don't, must not, cannot, should not, will not, … -> ``never``
* obligation: always, must, have to, has to -> ``always``
* restriction: only (not "the only", "not only", "if only") -> ``only``
* avoidance and allergy: avoid(s), allergic to -> ``avoid`` / ``allergic``
* Chinese: 不要/不能/不许/不准/不得/不可以/禁止/千万别/别 -> ``不要``; 必须/务必/一定 -> ``必须``;
  只能/只可以 -> ``只能`` (Japanese 必ず -> ``必須``), followed by the next two CJK characters
  or the next ASCII word.

So "Never push to main" and "don't push directly to main" both give ``never push``;
"Tests must never call the gateway" gives ``never call``; "不要直接推送" gives ``不要推送``.

Decisions are anchored the same way: the decision markers (behaviour §4.3) say that a decision
exists, not which one, so "chose PostgreSQL because ops runs it" also gives ``decided
postgresql`` and ``because ops`` (markers: because; decided, chose, agreed -> ``decided``).

These phrases protect a rule or a decision that vanished from the document (the restore pass
counts them); the layer-2 coverage check of a consolidation leaves them out, so that rewording
a rule never makes a clean consolidation fail.
"""

from __future__ import annotations

import re

from wm_langgraph.document.text.paths import words

__all__ = ["phrase_anchors"]

_NEGATIVE = "never"
_OBLIGATION = "always"

# Multi-word markers first (the longest match wins at a position).
_EN_MARKERS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("must", "not"), _NEGATIVE),
    (("do", "not"), _NEGATIVE),
    (("does", "not"), _NEGATIVE),
    (("can", "not"), _NEGATIVE),
    (("should", "not"), _NEGATIVE),
    (("will", "not"), _NEGATIVE),
    (("may", "not"), _NEGATIVE),
    (("have", "to"), _OBLIGATION),
    (("has", "to"), _OBLIGATION),
    (("allergic", "to"), "allergic"),
    (("never",), _NEGATIVE),
    (("don't",), _NEGATIVE),
    (("doesn't",), _NEGATIVE),
    (("mustn't",), _NEGATIVE),
    (("cannot",), _NEGATIVE),
    (("can't",), _NEGATIVE),
    (("shouldn't",), _NEGATIVE),
    (("won't",), _NEGATIVE),
    (("always",), _OBLIGATION),
    (("must",), _OBLIGATION),
    (("only",), "only"),
    (("avoid",), "avoid"),
    (("avoids",), "avoid"),
    (("avoiding",), "avoid"),
    (("allergic",), "allergic"),
    (("because",), "because"),
    (("decided",), "decided"),
    (("chose",), "decided"),
    (("agreed",), "decided"),
)
_STRENGTH = {_NEGATIVE: 3, _OBLIGATION: 1, "because": 0, "decided": 0}

# Words between a marker and the content word it governs ("never *ever* push", "must *be*
# reversible", "never *use* requests").
_SKIP = words(
    """a an the to be been being ever even really actually just any anything anyone it its this
    that these those them we you i he she they our your their his her my me us use using used
    let do make get go have has had so also still again yet at all more too"""
)
_NOT_ONLY_AFTER = frozenset({"the", "not", "if", "an", "a", "my", "our", "your", "their"})

_CLAUSE_RE = re.compile(r"[^.;:,!?()\[\]{}<>\"“”—–\n]+")
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9_'\-]*")

_CJK_MARKERS: tuple[tuple[str, str], ...] = (
    ("千万不要", "不要"),
    ("千万别", "不要"),
    ("永远不要", "不要"),
    ("绝对不要", "不要"),
    ("不可以", "不要"),
    ("只可以", "只能"),
    ("一定要", "必须"),
    ("一定得", "必须"),
    ("不要", "不要"),
    ("不能", "不要"),
    ("不许", "不要"),
    ("不准", "不要"),
    ("不得", "不要"),
    ("禁止", "不要"),
    ("必须", "必须"),
    ("务必", "必须"),
    ("一定", "必须"),
    ("只能", "只能"),
    ("必ず", "必須"),
)
# A bare 别 ("别打扰" don't disturb) is a negation, but not inside 特别 / 区别 / 别人 ….
_BIE = "(?<![特区分类级性告差识辨离道个级鉴派])别(?![人的处名称致墅])"
_CJK_MARKER_RE = re.compile("|".join(re.escape(m) for m, _ in _CJK_MARKERS) + "|" + _BIE)
_CJK_CANON = dict(_CJK_MARKERS)
# Function characters and adverbs skipped after a CJK marker ("不要*直接*推送", "必须*在*周五前").
_CJK_SKIP_RE = re.compile(
    "^(?:使用|直接|随便|总是|再|在|把|给|对|跟|向|从|去|要|会|是|也|都|就|还|用|于)+"
)
_CJK_RUN_RE = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]{1,2}|[A-Za-z][A-Za-z0-9_\-.]*|\d[\w.]*"
)


def _stem(word: str) -> str:
    """A light English stem, so that "reads"/"read" and "flies"/"fly" give one anchor."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith(("shes", "ches", "sses", "xes")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


_BY_FIRST: dict[str, list[tuple[tuple[str, ...], str]]] = {}
for _seq, _kind in _EN_MARKERS:
    _BY_FIRST.setdefault(_seq[0], []).append((_seq, _kind))


def _marker_at(words: list[str], i: int) -> tuple[int, str] | None:
    """(length, class) of the marker starting at ``words[i]``, or None."""
    for seq, kind in _BY_FIRST.get(words[i], ()):
        if tuple(words[i : i + len(seq)]) == seq:
            if kind == "only" and i and words[i - 1] in _NOT_ONLY_AFTER:
                return None
            return len(seq), kind
    return None


def _english(text: str) -> set[str]:
    anchors: set[str] = set()
    lowered = text.casefold().replace("’", "'")
    for clause in _CLAUSE_RE.findall(lowered):
        words = _WORD_RE.findall(clause)
        i = 0
        while i < len(words):
            found = _marker_at(words, i)
            if found is None:
                i += 1
                continue
            length, kind = found
            j = i + length
            steps = 0
            while j < len(words) and steps < 4:
                chained = _marker_at(words, j)
                if chained is not None:  # "must never", "always avoid"
                    if _STRENGTH.get(chained[1], 2) >= _STRENGTH.get(kind, 2):
                        kind = chained[1]
                    j += chained[0]
                    continue
                word = words[j].strip("'-")
                if word and word not in _SKIP:
                    anchors.add(f"{kind} {_stem(word)}")
                    break
                j += 1
                steps += 1
            i = j
    return anchors


def _chinese(text: str) -> set[str]:
    anchors: set[str] = set()
    for match in _CJK_MARKER_RE.finditer(text):
        rest = re.split(r"[\n.;:,!?()，。；：！？、（）]", text[match.end() : match.end() + 24])[0]
        rest = _CJK_SKIP_RE.sub("", rest.lstrip(" \t")).lstrip(" \t")
        following = _CJK_RUN_RE.match(rest)
        if following is None:
            continue
        canon = _CJK_CANON.get(match.group(), "不要")
        anchors.add(f"{canon}{following.group().casefold()}")
    return anchors


def phrase_anchors(text: str) -> set[str]:
    """The constraint / preference and decision phrase anchors of ``text`` (module docstring)."""
    return _english(text) | _chinese(text)
