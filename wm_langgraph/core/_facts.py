"""Closing the 30% hole of Key Facts (SPEC §4.3): restore vanished bullets, or retire them.

After an accepted Key Facts UPDATE, an old bullet with an anchor that appears nowhere in the
new document has vanished. Usually the model dropped it by mistake, and it is restored
(appended, marked ``[restored]``). But when the new Key Facts holds a bullet that is clearly
the same fact with a changed value ("DB port 5433" -> "DB port 5432", "Owen lives in Ghent"
-> "Owen lives in Porto"), restoring the old bullet would put the stale value back next to
the current one. Such a bullet is retired instead: the merge records it in Errors &
Corrections as ``superseded: <old bullet>`` — visible, nothing lost, and not current. A
consolidated bullet ("A; B; C") is judged clause by clause: a superseded clause is retired and
the rest of the bullet is restored if it still has a vanished anchor.

"Clearly the same fact with a changed value" means, for an old bullet ``B`` and a new bullet
``N``:

* the anchors of ``B`` that vanished are values, not names of things (a path, a code
  identifier or a ticket id such as ``FACT-017`` in its place is another fact);
* every anchor of ``B`` that is still in the document is in ``N`` (same subject), and if
  none is left, only one anchor of ``B`` vanished (a single changed value);
* ``N`` is not an old Key Facts bullet (it is new this round) and has an anchor that ``B``
  does not (the new value);
* once the changed values are set aside, the remaining words of ``B`` and ``N`` (CJK: character
  bigrams) overlap by at least :data:`SUPERSEDE_MIN_OVERLAP` (Jaccard).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wm_langgraph.core._paths import CJK_CHARS
from wm_langgraph.core.sections import item_key, section_items
from wm_langgraph.core.text import extract_anchors, missing_anchors

__all__ = [
    "RESTORED_MARKER",
    "SUPERSEDED_PREFIX",
    "SUPERSEDE_MIN_OVERLAP",
    "VanishedFacts",
    "settle_vanished_facts",
]

RESTORED_MARKER = "[restored]"
"""Prefix of a Key Facts bullet brought back because its anchors vanished."""
SUPERSEDED_PREFIX = "superseded:"
"""Prefix of the Errors & Corrections item that retires an old Key Facts bullet."""
SUPERSEDE_MIN_OVERLAP = 0.6
"""Least word overlap (Jaccard, changed values set aside) of an old and a new bullet that are
the same fact with a changed value."""

_TOKEN_RE = re.compile(rf"[a-z]+|[{CJK_CHARS}]+")
_CJK_RE = re.compile(rf"[{CJK_CHARS}]")
_CLAUSE_RE = re.compile(r";\s+|；")


@dataclass(frozen=True, slots=True)
class VanishedFacts:
    """What became of the old Key Facts bullets whose anchors vanished.

    Attributes:
        body: The new Key Facts body with the restored bullets appended.
        restored: The bullets appended to Key Facts, marked ``[restored]``.
        superseded: The Errors & Corrections items (``superseded: <old bullet>``) for old
            bullets whose value the new Key Facts changed.
    """

    body: str
    restored: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()


def _tokens(text: str) -> set[str]:
    """Letter words (digits aside) and CJK character bigrams of ``text``."""
    out: set[str] = set()
    for run in _TOKEN_RE.findall(text.casefold()):
        if _CJK_RE.match(run):
            out.update(run[i : i + 2] for i in range(max(1, len(run) - 1)))
        else:
            out.add(run)
    return out


def _anchor_tokens(anchors: Iterable[str]) -> set[str]:
    return set().union(*(_tokens(a) for a in anchors))


def _unmarked(item: str) -> str:
    return item[len(RESTORED_MARKER) :].lstrip() if item.startswith(RESTORED_MARKER) else item


_ENTITY_RE = re.compile(r"#\d+|[a-z]{2,}-\d+[a-z0-9-]*")


def _names_an_entity(anchor: str) -> bool:
    """Paths, code identifiers and ticket ids (``src/db.py``, ``parse_config``, ``fact-017``,
    ``#42``) name a thing; another one in its place is another fact, not a changed value."""
    return "/" in anchor or "_" in anchor or _ENTITY_RE.fullmatch(anchor) is not None


def _changed_value(old: str, old_anchors: set[str], lost: set[str], new: str) -> bool:
    """True when ``new`` is ``old`` with a changed value (see the module docstring)."""
    if any(_names_an_entity(anchor) for anchor in lost):
        return False
    if len(lost) > 1 and not old_anchors - lost:  # nothing left to say whose value it was
        return False
    fresh = extract_anchors(new, include_markers=False) - old_anchors
    if not fresh or missing_anchors(old_anchors - lost, new):
        return False
    lost_words, fresh_words = _anchor_tokens(lost), _anchor_tokens(fresh)
    before = _tokens(old) - (lost_words - fresh_words)
    after = _tokens(new) - (fresh_words - lost_words)
    union = before | after
    if not union:
        return False
    return len(before & after) / len(union) >= SUPERSEDE_MIN_OVERLAP


def _retire(item: str, lost: set[str], candidates: Sequence[str]) -> tuple[str, list[str]]:
    """Split ``item`` into what is still to restore and the clauses a candidate superseded.

    A consolidated bullet ("A; B; C") is judged clause by clause, so that one changed value
    inside it is retired without restoring the stale clause next to its new value.
    """
    clauses = [c.strip() for c in _CLAUSE_RE.split(_unmarked(item)) if c.strip()]
    keep: list[str] = []
    retired: list[str] = []
    for clause in clauses:
        anchors = extract_anchors(clause, include_markers=False)
        gone = anchors & lost
        if gone and any(_changed_value(clause, anchors, gone, new) for new in candidates):
            retired.append(clause)
        else:
            keep.append(clause)
    if not retired:
        return item, []
    rest = "; ".join(keep)
    return (rest if extract_anchors(rest, include_markers=False) & lost else ""), retired


def settle_vanished_facts(
    old_items: Sequence[str],
    new_body: str,
    new_document: str,
    *,
    supersede: bool = True,
) -> VanishedFacts:
    """Restore or retire the old Key Facts bullets whose anchors vanished from the document.

    Every old bullet with an anchor (decision markers aside) that appears nowhere in
    ``new_document`` is either retired — when ``supersede`` is on and a bullet of ``new_body``
    is the same fact with a changed value — or appended to ``new_body`` as
    ``- [restored] <bullet>``. An anchor kept anywhere in the new document counts as kept, so a
    value the model itself moved to Errors & Corrections as superseded is neither.

    Args:
        old_items: The old Key Facts bullets (sentinel lines left out).
        new_body: The accepted Key Facts body.
        new_document: The whole new document (all seven sections, ``new_body`` included).
        supersede: Look for changed values (False: restore every vanished bullet).
    """
    per_item: list[tuple[str, set[str]]] = []
    for item in old_items:
        anchors = extract_anchors(item, include_markers=False)
        if anchors:
            per_item.append((item, anchors))
    if not per_item:
        return VanishedFacts(new_body)
    known = set().union(*(a for _, a in per_item))
    lost = missing_anchors(known, new_document)
    current = section_items(new_body)
    old_keys = {item_key(item) for item in old_items}
    candidates = [item for item in current if item_key(item) not in old_keys]
    wanted: list[str] = []
    retired: list[str] = []
    for item, anchors in per_item:
        if not anchors & lost:
            continue
        if supersede and candidates:
            item, clauses = _retire(item, lost, candidates)  # noqa: PLW2901
            retired.extend(f"{SUPERSEDED_PREFIX} {clause}" for clause in clauses)
            if not item:
                continue
        wanted.append(item if item.startswith(RESTORED_MARKER) else f"{RESTORED_MARKER} {item}")
    seen = {item_key(item) for item in current}
    restored: list[str] = []
    for item in wanted:
        key = item_key(item)
        if key not in seen:
            seen.add(key)
            restored.append(item)
    body = new_body
    if restored:
        lines = "\n".join(f"- {item}" for item in restored)
        body = f"{new_body.rstrip()}\n{lines}" if new_body.strip() else lines
    return VanishedFacts(body, tuple(restored), tuple(dict.fromkeys(retired)))
