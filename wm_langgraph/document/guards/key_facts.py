"""The Key Facts & Decisions guard (behaviour §4.3): controlled consolidation, anti-bloat, and the
closing of the 30% hole (restore vanished bullets, or retire them).

:func:`guard_key_facts` judges the op itself: an UPDATE is rejected below 15% of the old bullets
(layer 1) or 70% of the old anchors (layer 2) and then salvaged clause by clause; an APPEND to
an oversized section is capped, and in emergency only the consolidation sentinel is appended.
:func:`settle_key_facts` runs after the whole new document is known:

Everything is judged per clause (a bullet split at ``;`` and sentence ends: judged whole, a
consolidated bullet came back whole when one of its facts vanished, repeating the kept facts).
After an accepted Key Facts UPDATE, an old clause has vanished when one of its anchors appears
nowhere in the durable sections of the new document, or when no clause there holds its anchors
together as the same fact (see ``_Keepers.holds``). Usually the model dropped it by mistake,
and it is restored (appended, marked ``[restored]``; the restored clauses of one bullet
together, a fact held by two old bullets once). But when the new Key Facts holds a bullet
that is clearly the same fact with a changed value ("DB port 5433" -> "DB port 5432",
"Owen lives in Ghent" -> "Owen lives in Porto"), restoring the old bullet would put the
stale value back next to the current one. Such a bullet is retired instead: the merge
records it in Errors & Corrections as ``superseded: <old clause>`` — visible, nothing lost,
and not current.

From a rejected UPDATE, :func:`salvage_clauses` appends only the clauses that bring an anchor
or text the section lacks, so a regrouping of old facts is not appended a second time. When the
folded conversation is known, a clause whose new value neither the conversation nor the old
document holds (``port 5432`` mis-copied as ``port 5423``) is not salvaged: a rejected UPDATE
is the writer's mistake, and the value was never said. Such a value does not retire an old one
either (it is no candidate for a changed value, below).

A consolidation may drop a subject its bullet already names: ``Priya booked the studio;
picked linocut over etching`` still holds the old fact ``Priya picked linocut over etching``.
An old clause is held by a new bullet whose clause has all of its words and no other anchor,
when the anchors that clause lacks are in the bullet's first clause (its subject).

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

from wm_langgraph.document.guards.sizes import (
    SEED_LIMITS,
    SectionLimits,
    is_emergency,
    is_oversized,
    join_clauses,
    pack_clauses,
)
from wm_langgraph.document.ops import KEEP as _KEEP
from wm_langgraph.document.ops import GuardOutcome, SectionOp, new_items
from wm_langgraph.document.ops import count as _count
from wm_langgraph.document.sections import item_key, section_items
from wm_langgraph.document.text import ANCHOR_STOPWORDS, extract_anchors, missing_anchors
from wm_langgraph.document.text.match import item_core, join_texts, term_in, terms_in_texts
from wm_langgraph.document.text.paths import CJK_CHARS, words
from wm_langgraph.document.text.units import sentence_parts
from wm_langgraph.document.tokens import TokenCounter, count_tokens

__all__ = [
    "ANCHOR_MIN_COVERAGE",
    "CONSOLIDATION_SENTINEL",
    "LAYER1_MIN_RATIO",
    "RESTORED_MARKER",
    "SUPERSEDED_PREFIX",
    "SUPERSEDE_MIN_OVERLAP",
    "VanishedFacts",
    "clauses",
    "guard_key_facts",
    "held_by",
    "restore_vanished_facts",
    "salvage_clauses",
    "settle_key_facts",
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
_CLAUSE_RE = re.compile(r";\s+|；|(?<=[.!?])\s+(?=\S)|(?<=[。！？])")


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


def clauses(item: str) -> list[str]:
    """The clauses of a bullet: split at ``;`` and at sentence ends, never after an
    abbreviation (restore markers removed, also from clauses that a consolidation joined:
    ``A; [restored] B``)."""
    parts = sentence_parts(item, _CLAUSE_RE)  # "Dr. Okafor" is one name, not two clauses
    return [_unmarked(c.strip()) for c in parts if c.strip()]


_join = join_clauses


def _packed(parts: Sequence[str], max_tokens: int | None, prefix: str = "") -> list[str]:
    """``parts`` as one item, or, with a bound, as items of at most ``max_tokens`` tokens each
    (``prefix`` in front of each, counted): no item grows without bound (``pack_clauses``)."""
    if not parts:
        return []
    if max_tokens is None:
        return [prefix + _join(parts)]
    return pack_clauses(parts, max_tokens, prefix=prefix)


_SUPERSEDED_RE = re.compile(r"^(?:\[[^\]\n]*\]\s*)*superseded\b", re.IGNORECASE)
_NEW_VALUE_RE = re.compile(r"\s*[(（]?\s*(?:changed to|replaced by|now|→|->|=>)", re.IGNORECASE)


def _retired_part(clause: str) -> str:
    """A ``superseded: <old> (changed to <new>)`` record keeps the old fact, not the new one:
    the current value must be stated as current somewhere else."""
    if not _SUPERSEDED_RE.match(clause):
        return clause
    return _NEW_VALUE_RE.split(clause, maxsplit=1)[0]


class _ClauseIndex:
    """Clauses of some items (one per distinct text), indexed by anchor."""

    def __init__(self, items: Iterable[str]) -> None:
        distinct: dict[str, str] = {}
        for item in items:
            for clause in clauses(item):
                part = _retired_part(clause)
                distinct.setdefault(item_core(part), part)
        self.cores = list(distinct)
        self.clauses = list(distinct.values())
        self._where: dict[str, set[int]] = {}
        for i, clause in enumerate(self.clauses):
            for anchor in extract_anchors(clause):
                self._where.setdefault(anchor, set()).add(i)
        self._looked: set[str] = set()
        self._words: dict[int, set[str]] = {}
        self._starts, self._joined = join_texts(self.clauses)

    def _ids(self, anchor: str) -> set[int]:
        # A literal occurrence the extraction did not give (only looked for when extraction
        # found the anchor nowhere; missing one makes a restore more likely, never a loss).
        if anchor not in self._where and anchor not in self._looked:
            self._looked.add(anchor)
            self._where[anchor] = terms_in_texts(anchor, self.clauses, self._starts, self._joined)
        return self._where.get(anchor, set())

    def holding(self, anchors: set[str]) -> set[int]:
        """The clauses that hold all of ``anchors``."""
        ids: set[int] | None = None
        for anchor in anchors:
            ids = set(self._ids(anchor)) if ids is None else ids & self._ids(anchor)
            if not ids:
                return set()
        return ids or set()

    def words(self, i: int) -> set[str]:
        if i not in self._words:
            self._words[i] = _plain_words(self.clauses[i])
        return self._words[i]


class _Keepers:
    """Is an old fact still held by the new durable sections?"""

    def __init__(self, document: str, old_items: Iterable[str]) -> None:
        items = section_items(document)
        self._new = _ClauseIndex(items)
        self._old = _ClauseIndex(old_items)
        old = set(self._old.cores)
        self._was_old = {i for i, core in enumerate(self._new.cores) if core in old}
        self._items = items
        self._bullets: list[tuple[frozenset[str], list[tuple[frozenset[str], set[str]]]]] | None
        self._bullets = None

    def _consolidated(self) -> list[tuple[frozenset[str], list[tuple[frozenset[str], set[str]]]]]:
        """Per bullet of two clauses or more: its first clause's anchors (the subject) and, for
        each later clause, its anchors and words (built when first asked for)."""
        if self._bullets is None:
            self._bullets = []
            for item in self._items:
                parts = clauses(item)
                if len(parts) < 2:
                    continue
                head = frozenset(extract_anchors(parts[0], include_markers=False))
                rest = [
                    (frozenset(extract_anchors(part, include_markers=False)), _plain_words(part))
                    for part in parts[1:]
                ]
                self._bullets.append((head, rest))
        return self._bullets

    def held_in_bullet(self, anchors: set[str], need: set[str]) -> bool:
        """True when a consolidated bullet states the fact with its subject said once: a later
        clause of it has every word of ``need`` (forms alike) and no anchor but ``anchors`` (some
        of them when ``need`` is empty), and the anchors it lacks are in the bullet's first
        clause. "Priya booked the studio;
        picked linocut over etching" holds "Priya picked linocut over etching"."""
        for head, rest in self._consolidated():
            for part_anchors, part_words in rest:
                if not part_anchors <= anchors or not anchors - part_anchors <= head:
                    continue
                if not need and not part_anchors:
                    continue  # an old clause of anchors alone needs them stated here
                if all(_same_word(word, part_words) for word in need):
                    return True
        return False

    def holds(self, anchors: set[str], words: set[str]) -> bool:
        """True when one clause of the new document holds all of ``anchors`` and is the same
        fact. An old clause (it stood next to this one before, so it is another fact) must
        have all of ``words``: "Aiko's first driving lesson on 2024-01-08" does not hold
        "Aiko's chess tournament on 2024-01-08". A clause written this round may reword; when
        the anchors name several old facts (a person's name) it must share a word of
        ``words``: "Owen lives in Porto" does not hold "Owen plays drums in a band"."""
        shared = len(self._old.holding(anchors)) > 1
        for i in self._new.holding(anchors):
            held = self._new.words(i)
            if i in self._was_old:
                if words <= held:
                    return True
            elif not shared or not words or words & held:
                return True
        return False


def held_by(item: str, document: str) -> bool:
    """True when ``document`` already states every clause of ``item`` the way the Key Facts
    guard asks of an existing clause: one clause with all of its anchors and all of its words.
    A writer may then leave ``item`` out of Key Facts without the guard restoring it. An item
    with a clause that has no anchor is never held (nothing would bring it back)."""
    parts = clauses(item)
    if not parts:
        return False
    index = _ClauseIndex(section_items(document))
    for clause in parts:
        anchors = extract_anchors(clause, include_markers=False)
        if not anchors:
            return False
        plain = _plain_words(clause) - _anchor_tokens(anchors)
        if not any(plain <= index.words(i) for i in index.holding(anchors)):
            return False
    return True


def _to_restore(
    item: str,
    anchors: set[str],
    lost: set[str],
    context: tuple[Sequence[str], _Keepers, list[tuple[set[str], set[str]]]],
    *,
    supersede: bool,
) -> tuple[list[str], bool, list[str]]:
    """What of ``item`` comes back — its clauses, and whether they are the whole item (an
    anchor spans a clause break, so it cannot be split) — and the clauses a candidate
    superseded (a changed value).

    A clause has vanished when one of its anchors appears nowhere in the new document, or when
    no clause of the new document holds its anchors together as the same fact any more
    (``_Keepers.holds``: "Owen is allergic to peanuts" is not kept by "Aiko is allergic to
    peanuts" next to another line about Owen). A vanished clause comes back — unless it is
    the same fact as a clause already restored this round (its anchors and words are within
    that clause's): two bullets holding one fact give one restore, two facts that share a
    date both come back.
    """
    candidates, keepers, restored = context
    keep: list[str] = []
    retired: list[str] = []
    reached: set[str] = set()
    for clause in clauses(item):
        clause_anchors = extract_anchors(clause, include_markers=False)
        gone = clause_anchors & lost
        reached |= clause_anchors
        clause_words = _content_words(clause) - _anchor_tokens(clause_anchors)
        plain = _plain_words(clause) - _anchor_tokens(clause_anchors)
        if not clause_anchors or (
            not gone
            and (
                keepers.holds(clause_anchors, plain)
                or keepers.held_in_bullet(clause_anchors, clause_words)
            )
        ):
            continue
        if (
            gone
            and supersede
            and any(_changed_value(clause, clause_anchors, gone, c) for c in candidates)
        ):
            retired.append(clause)
            continue
        if any(clause_anchors <= a and clause_words <= w for a, w in restored):
            continue
        restored.append((clause_anchors, clause_words))
        keep.append(clause)
    # An anchor that only the whole bullet gives (it spans a clause break): the whole bullet.
    spanning = (anchors & lost) - reached
    if spanning:
        restored.append((anchors, _content_words(item)))
        return [_unmarked(item)], True, retired
    return keep, False, retired


def settle_vanished_facts(
    old_items: Sequence[str],
    new_body: str,
    new_document: str,
    *,
    supersede: bool = True,
    old_document: str = "",
    conversation: str | None = None,
    max_item_tokens: int | None = None,
) -> VanishedFacts:
    """Restore or retire the old Key Facts clauses whose anchors vanished from the document.

    For every old bullet with an anchor (decision markers aside) that appears nowhere in
    ``new_document``, each clause (split at ``;`` and sentence ends) that carries such an
    anchor is either retired — when ``supersede`` is on and a bullet of ``new_body`` is the same
    fact with a changed value — or restored: the restored clauses of a bullet are appended to
    ``new_body`` together as ``- [restored] <clauses>``. Clauses that kept their anchors are not
    restored (a consolidated bullet of eight facts does not come back whole, repeating seven kept
    facts, when one vanished),
    and a vanished anchor is restored once even when several old bullets carried it. An anchor
    kept anywhere in ``new_document`` counts as kept, so a value the model itself moved to Errors
    & Corrections as superseded is neither.

    Args:
        old_items: The old Key Facts bullets (sentinel lines left out).
        new_body: The accepted Key Facts body.
        new_document: The durable sections of the new document (``new_body`` included).
        supersede: Look for changed values (False: restore every vanished clause).
        old_document: The durable sections of the old document: its clauses are other facts,
            so one of them keeps a vanished clause only if it also has all of its words.
        conversation: The folded messages. When given, a new bullet with a value neither they
            nor the old document hold retires nothing (the old clause is restored instead).
        max_item_tokens: The item bound (``SectionLimits.item_tokens``): the restored clauses
            of one bullet are split over as many ``[restored]`` items as keep each within it
            (a single clause, or a bullet an anchor spans, stays whole). ``None``: one item.
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
    candidates = [item for item in current if item_key(item) not in old_keys] if supersede else []
    if conversation is not None:
        source = f"{conversation}\n{old_document}\n" + "\n".join(old_items)
        candidates = [item for item in candidates if not unheard_anchors(item, source)]
    wanted: list[str] = []
    retired: list[str] = []
    keepers = _Keepers(new_document, [*old_items, *section_items(old_document)])
    context = (candidates, keepers, list[tuple[set[str], set[str]]]())
    for item, anchors in per_item:
        parts, whole, clauses_retired = _to_restore(
            item, anchors, lost, context, supersede=supersede
        )
        retired.extend(f"{SUPERSEDED_PREFIX} {clause}" for clause in clauses_retired)
        bound = None if whole else max_item_tokens
        wanted.extend(_packed(parts, bound, f"{RESTORED_MARKER} "))
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


_GLUE = words(
    "the a an and or of to in on at for with by from is are was were be it its this that his "
    "her their our your my as"
)


def _plain_words(text: str) -> set[str]:
    """Letter words and CJK bigrams of ``text`` except glue words: what tells "Owen lives in
    Porto" from "Owen grew up in Porto"."""
    return {t for t in _tokens(text) if t not in _GLUE}


def _content_words(text: str) -> set[str]:
    return {
        token
        for token in _tokens(text)
        if _CJK_RE.match(token) or (len(token) >= 3 and token not in ANCHOR_STOPWORDS)
    }


def _same_word(word: str, pool: set[str]) -> bool:
    """``word`` or a form of it is in ``pool`` ("lives" / "living", "plays" / "played")."""
    if word in pool:
        return True
    for other in pool:
        shortest = min(len(word), len(other))
        common = 0
        while common < shortest and word[common] == other[common]:
            common += 1
        if common >= max(3, shortest - 2):
            return True
    return False


class _HeldFacts:
    """The clauses a section already states, to tell a new fact from a regrouping of old ones
    (indexed by anchor and by a word's first three letters: a form of a word shares them)."""

    def __init__(self, body: str) -> None:
        self._clauses: list[tuple[frozenset[str], set[str]]] = []
        self._by_anchor: dict[str, list[int]] = {}
        self._by_prefix: dict[str, list[int]] = {}
        for item in section_items(body):
            for clause in clauses(item):
                self.add(clause)

    def add(self, clause: str) -> None:
        index = len(self._clauses)
        anchors = frozenset(extract_anchors(clause, include_markers=False))
        plain = _plain_words(clause)
        self._clauses.append((anchors, plain))
        for anchor in anchors:
            self._by_anchor.setdefault(anchor, []).append(index)
        for prefix in {word[:3] for word in plain if len(word) >= 3}:
            self._by_prefix.setdefault(prefix, []).append(index)

    def holds(self, clause: str, anchors: set[str]) -> bool:
        """True when one clause holds all of ``anchors`` together with every content word of
        ``clause`` (or a form of it): the same fact. "Ravi grew up in Bergen" is not held by
        "Ravi decided to move because the reunion is in Bergen" beside "Owen grew up in Turku";
        "Owen does not eat meat" is not held by "Ravi does not eat meat"."""
        need = _content_words(clause) - _anchor_tokens(anchors)
        if anchors:
            candidates = min((self._by_anchor.get(a, []) for a in anchors), key=len)
        elif need:
            candidates = min((self._by_prefix.get(w[:3], []) for w in need), key=len)
        else:
            return bool(self._clauses)
        for i in candidates:
            held_anchors, held_words = self._clauses[i]
            if anchors <= held_anchors and all(_same_word(w, held_words) for w in need):
                return True
        return False


def _literally_in(term: str, text: str, folded: str) -> bool:
    """``term_in(term, text)``; ``folded`` (``text`` case-folded, spacing collapsed) rules out
    most terms with a plain substring test first."""
    return " ".join(term.split()).casefold() in folded and term_in(term, text)


def salvage_clauses(
    old_body: str, bullets: Sequence[str], max_item_tokens: int | None = None
) -> list[str]:
    """From a rejected UPDATE's new bullets, what the section lacks.

    Salvaging the bullets whole appended a regrouping of old facts a second time, so the section
    grew with every rejected consolidation.

    A clause (see :func:`clauses`) is salvaged when it brings an anchor that neither the old
    body nor an earlier salvaged clause has, or when no single clause there states the same
    fact: all of its anchors together with its content words (forms of a word alike). A
    regrouped consolidation of old facts repeats old clauses and is not appended again, while
    a new fact made of words the section already uses elsewhere ("Owen does not eat meat"
    beside "Ravi does not eat meat") is kept. The salvaged clauses of one bullet stay together
    as one item — or, with ``max_item_tokens``, as the fewest items that keep each within it.

    Args:
        old_body: The section body before this round.
        bullets: The UPDATE's bullets that are not already items of ``old_body``.
        max_item_tokens: The item bound (``SectionLimits.item_tokens``); ``None``: none.
    """
    known = extract_anchors(old_body, include_markers=False)
    folded = " ".join(old_body.split()).casefold()
    held = _HeldFacts(old_body)
    out: list[str] = []
    for bullet in bullets:
        keep: list[str] = []
        for clause in clauses(bullet):
            anchors = extract_anchors(clause, include_markers=False)
            # (a salvaged clause's anchors join ``known``; the old body is searched literally
            # for what its extraction did not give)
            fresh = {a for a in anchors - known if not _literally_in(a, old_body, folded)}
            if fresh or not held.holds(clause, anchors):
                keep.append(clause)
                known |= anchors
                held.add(clause)
        out.extend(_packed(keep, max_item_tokens))
    return out


LAYER1_MIN_RATIO = 0.15
"""A Key Facts UPDATE keeping fewer than this share of the old bullets is rejected."""


ANCHOR_MIN_COVERAGE = 0.70
"""A Key Facts UPDATE keeping fewer than this share of the old anchors is rejected."""


CONSOLIDATION_SENTINEL = (
    "[⚠ CONSOLIDATION REQUIRED: Key Facts exceeds size limit. You MUST use UPDATE to merge "
    "and compress existing bullets before adding new facts.]"
)
"""The bullet appended (once) when Key Facts is in emergency and the model still APPENDs."""


_DIGIT_TOKEN_RE = re.compile(r"[^\W_]*\d[\w.:/-]*")


def heard(anchor: str, source: str) -> bool:
    """True when ``source`` holds ``anchor``: the anchor itself, or every number-bearing token
    of it (``port 5423`` is heard in "use 5423 for the port")."""
    if not missing_anchors({anchor}, source):
        return True
    tokens = _DIGIT_TOKEN_RE.findall(anchor)
    return bool(tokens) and all(term_in(token, source) for token in tokens)


def unheard_anchors(text: str, source: str) -> set[str]:
    """The anchors of ``text`` (decision markers aside) that ``source`` does not hold."""
    return {a for a in extract_anchors(text, include_markers=False) if not heard(a, source)}


def _heard_only(items: Sequence[str], source: str) -> tuple[list[str], list[str]]:
    """``items`` whose every clause's anchors ``source`` holds, the clauses with an unheard
    value taken out; and the clauses taken out."""
    kept: list[str] = []
    dropped: list[str] = []
    for item in items:
        parts = clauses(item)
        good = [part for part in parts if not unheard_anchors(part, source)]
        dropped.extend(part for part in parts if part not in good)
        if good:
            kept.append(_join(good))
    return kept, dropped


def _salvage(
    old_body: str,
    op: SectionOp,
    why: str,
    *,
    emergency: bool,
    source: str | None = None,
    max_item_tokens: int | None = None,
) -> GuardOutcome:
    if emergency:
        return GuardOutcome(_KEEP, f"{why}; salvage suppressed (Key Facts in emergency size)")
    bullets = new_items(old_body, section_items(op.content))
    fresh = salvage_clauses(old_body, bullets, max_item_tokens)
    unheard: list[str] = []
    if source is not None:
        fresh, unheard = _heard_only(fresh, f"{source}\n{old_body}")
    note = (
        f"; not salvaged: {_count(len(unheard), 'clause')} with a value not in the conversation"
        if unheard
        else ""
    )
    if not fresh:
        return GuardOutcome(_KEEP, f"{why}; no new bullets or clauses to salvage{note}")
    reason = f"{why}; salvaged {_count(len(fresh), 'new bullet')} as APPEND{note}"
    return GuardOutcome(SectionOp("APPEND", items=tuple(fresh)), reason)


def _fact_lines(body: str) -> list[str]:
    return [item for item in section_items(body) if item != CONSOLIDATION_SENTINEL]


def guard_key_facts(
    old_body: str,
    op: SectionOp,
    counter: TokenCounter = count_tokens,
    *,
    elsewhere: str = "",
    conversation: str | None = None,
    old_document: str = "",
    limits: SectionLimits = SEED_LIMITS,
) -> GuardOutcome:
    """Behaviour §4.3: layered UPDATE checks with salvage, and anti-bloat for APPEND.

    UPDATE is rejected when it keeps fewer than 15% of the old bullets (layer 1) or fewer than
    70% of the old lexical anchors (layer 2); from a rejected UPDATE, the bullets and clauses
    that bring an anchor or text the section lacks are APPENDed instead (not in emergency).
    APPEND to an oversized section accepts at most ``limits.max_append`` new items (5 at the
    seed's size); in emergency (over twice a threshold) only the consolidation sentinel is
    appended, once.

    Args:
        old_body: The Key Facts body before this round.
        op: The requested op.
        counter: Token counter for the size thresholds.
        elsewhere: The other durable sections of the new document (:data:`DURABLE_SECTIONS`;
            never Current State). An old anchor found there counts as kept (behaviour §4.3: a
            corrected value whose old value moved to Errors & Corrections as superseded is a
            clean update).
        conversation: The folded messages. When given, a rejected UPDATE salvages no clause
            with a value that neither they, ``old_document`` nor the old body hold.
        old_document: The old document (its values are not new).
        limits: The memory's section thresholds (``section_limits``; the seed's by default).
    """
    emergency = is_emergency(old_body, counter, limits)
    bound = limits.item_tokens
    source = None if conversation is None else f"{conversation}\n{old_document}"
    if op.kind == "UPDATE":
        old_count = len(section_items(old_body))
        new_count = len(section_items(op.content))
        if old_count and new_count / old_count < LAYER1_MIN_RATIO:
            why = f"rejected UPDATE: {new_count} of {old_count} bullets left (< 15%)"
            return _salvage(
                old_body, op, why, emergency=emergency, source=source, max_item_tokens=bound
            )
        anchors = extract_anchors("\n".join(_fact_lines(old_body)), include_phrases=False)
        if anchors:
            lost = missing_anchors(anchors, f"{op.content}\n{elsewhere}")
            coverage = 1 - len(lost) / len(anchors)
            if coverage < ANCHOR_MIN_COVERAGE:
                sample = ", ".join(sorted(lost)[:5])
                why = (
                    f"rejected UPDATE: keeps {coverage:.0%} of the old anchors (< 70%); "
                    f"lost e.g. {sample}"
                )
                return _salvage(
                    old_body, op, why, emergency=emergency, source=source, max_item_tokens=bound
                )
        return GuardOutcome(op)
    if op.kind != "APPEND" or not op.items:
        return GuardOutcome(op)
    if emergency:
        if CONSOLIDATION_SENTINEL in section_items(old_body):
            return GuardOutcome(_KEEP, "Key Facts in emergency size: APPEND refused")
        return GuardOutcome(
            SectionOp("APPEND", items=(CONSOLIDATION_SENTINEL,)),
            "Key Facts in emergency size: APPEND refused, consolidation sentinel appended",
        )
    if is_oversized(old_body, counter, limits):
        fresh = new_items(old_body, op.items)
        if len(fresh) > limits.max_append:
            reason = (
                f"Key Facts oversized: accepted {limits.max_append} of "
                f"{_count(len(fresh), 'new item')}"
            )
            return GuardOutcome(
                SectionOp("APPEND", items=tuple(fresh[: limits.max_append])), reason
            )
    return GuardOutcome(op)


def restore_vanished_facts(
    old_body: str, new_body: str, new_document: str
) -> tuple[str, list[str]]:
    """Close the 30% hole: bring back old Key Facts bullets whose anchors vanished.

    Every old bullet with an anchor (decision markers aside) that appears nowhere in
    ``new_document`` is appended to ``new_body`` as ``- [restored] <bullet>``. An anchor kept
    anywhere in the new document counts as kept, so a value moved to Errors & Corrections as
    superseded is not restored. (The merge uses :func:`settle_key_facts`, which also
    retires a bullet whose value the new Key Facts changed, instead of restoring it.)

    Args:
        old_body: The Key Facts body before the update.
        new_body: The accepted Key Facts body.
        new_document: The whole new document (all seven sections, ``new_body`` included).

    Returns:
        The new body with restored bullets appended, and the restored items.
    """
    settled = settle_vanished_facts(_fact_lines(old_body), new_body, new_document, supersede=False)
    return settled.body, list(settled.restored)


def settle_key_facts(
    old_body: str,
    new_body: str,
    new_document: str,
    *,
    old_document: str = "",
    conversation: str | None = None,
    limits: SectionLimits | None = None,
) -> VanishedFacts:
    """After an accepted Key Facts UPDATE: restore vanished bullets, retire changed values.

    Like :func:`restore_vanished_facts`, except that an old bullet whose value the new Key
    Facts changed (the same fact, other words alike, a differing number/value) is not put back
    as if current: it is returned in ``superseded`` as ``superseded: <old bullet>``, for the
    merge to record in Errors & Corrections (behaviour §4.3: a fact retired on purpose is moved
    there as superseded, not deleted). See ``document.guards.key_facts`` for the exact rule.

    Args:
        old_body: The Key Facts body before the update.
        new_body: The accepted Key Facts body.
        new_document: The durable sections of the new document (``new_body`` included).
        old_document: The durable sections of the old document (see ``document.guards.key_facts``).
        conversation: The folded messages (a value they do not hold retires nothing).
        limits: The memory's section thresholds: restored clauses are split at their item
            bound (``limits.item_tokens``); ``None`` restores a bullet's clauses as one item.
    """
    return settle_vanished_facts(
        _fact_lines(old_body),
        new_body,
        new_document,
        old_document=old_document,
        conversation=conversation,
        max_item_tokens=None if limits is None else limits.item_tokens,
    )
