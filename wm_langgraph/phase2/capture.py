"""The capture check: what the folded messages establish reaches the Working Memory
(behaviour §5.11).

After the writer's reply is merged, code lists the *candidates* of the round — the salient
units of the folded user and assistant messages
(:func:`~wm_langgraph.document.text.units.extract_units`: decisions with their reasons,
constraints, preferences, TODOs, corrections, anchored facts; in chats events, plans, people,
places), the paths the conversation acted on (the artifact trail) and the errors tool results
reported (the error trail) — and looks each up in the merged document with the guards' own
matchers, in the sections that keep what they hold (Current State keeps nothing): a unit is
*written* when an item is the same item (``statement_key``: markers, speakers and
acknowledgements aside) or holds its whole text, or when one item holds its anchors together
(both of one or two anchors, two thirds of more, a bare number beside a stronger anchor not
needed) and, when the anchors that item holds are all common in the document (a speaker's name
in every bullet), restates it too and names its people; anchors scattered over several bullets
hold no fact. Without
anchors,
when one item holds its whole text (:func:`~wm_langgraph.document.text.item_present`) or
restates it (:func:`~wm_langgraph.document.text.restates`: more than half of its content words,
its negation kept, so "TODO: document the rate limiter settings" restates "Not now, but we must
document the rate limiter settings before the release"); a path
when Files & Context lists it (:func:`~wm_langgraph.document.text.paths_listed`); an error when
Errors & Corrections holds its message (:func:`~wm_langgraph.phase2.trails.missing_errors`).

What is missing:

1. anchored units, and unanchored ones of the kinds a session commits to
   (:data:`ASKED_WITHOUT_ANCHOR`: TODOs, decisions, constraints, corrections, errors, fixes),
   and explicit ones ("please remember"), go back to the
   writer **once**, the most salient first, in one bounded follow-up call
   (:func:`~wm_langgraph.writer.capture.request_capture`: at most ``SectionLimits.asked``
   statements — :data:`MAX_ASKED` at the seed's size, half the round's units when more —
   each at most :data:`MAX_STATEMENT_CHARS` characters, quoted with who said it), which adds
   each where it belongs or dismisses it with a reason. The adds are APPENDs through the guards.
   No call when nothing askable is missing. A failed, empty or unreadable reply only means
   nothing was added on follow-up.
2. what the writer still leaves out — and neither added nor dismissed when asked — and carries
   an anchor, or was asked to be remembered, or, in a working session (not a chat), is of a
   kind a session commits to is added by code as its extractive text in its kind's section
   (:data:`KIND_SECTIONS`): every statement of the session (no count cuts a dense round), of
   pasted data (told by its shape, ``units.pasted_lines``) at most the memory's bound per round
   (``SectionLimits.code_units``: :data:`MAX_CODE_UNITS` at the seed's size); never a statement
   that reads as an instruction, never a path an assistant only mentions; the trails' paths and
   errors are added by code directly (their extractive item is all there is to write), within
   the trails' own bounds.

Every candidate ends with a *fate* (:class:`Fate`): ``written``, ``added_on_followup``,
``added_by_code``, ``dismissed`` (with the writer's reason) or ``skipped`` (with why: no anchor,
over the bound, reads as an instruction, refused by the guards).

A statement the writer dismissed is not asked about again: the WM version keeps the keys
(:func:`dismissal_key`, a hash of the statement without its speaker, case and spacing) of the
newest :data:`MAX_DISMISSED` dismissals, and a later round's candidate with one of them ends
``dismissed`` ("dismissed in an earlier round") without a call and without a code item. Chats
repeat themselves; a writer should not be asked the same question every round.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from wm_langgraph.document.guards import SEED_LIMITS, SectionLimits
from wm_langgraph.document.guards.key_facts import clauses
from wm_langgraph.document.guards.sizes import SEED_ASKED, SEED_CODE_UNITS
from wm_langgraph.document.merge import merge_working_memory
from wm_langgraph.document.sections import DURABLE_SECTIONS, parse_working_memory, section_items
from wm_langgraph.document.text import (
    extract_anchors,
    item_present,
    key_words,
    negation_kept,
    paths_listed,
    restates,
)
from wm_langgraph.document.text.entry import entry_text
from wm_langgraph.document.text.match import join_texts, term_in, terms_in_texts
from wm_langgraph.document.text.provenance import reads_as_instruction
from wm_langgraph.document.text.session_paths import sessions_error
from wm_langgraph.document.text.units import (
    Unit,
    chat_kinds,
    extract_units,
    statement_key,
    tells_failure,
)
from wm_langgraph.messages import content_text
from wm_langgraph.phase2.trails import (
    missing_errors,
    own_run_outputs,
    tool_result_lines,
    without_relayed_lines,
)
from wm_langgraph.writer.capture import CaptureAnswer, CaptureQuestion

__all__ = [
    "ASKED_WITHOUT_ANCHOR",
    "FRAMING_MIN",
    "FRAMING_SHARE",
    "KIND_SECTIONS",
    "MAX_ASKED",
    "MAX_CODE_UNITS",
    "MAX_DISMISSED",
    "MAX_STATEMENT_CHARS",
    "Candidate",
    "CaptureResult",
    "Fate",
    "FateName",
    "candidates_of",
    "dismissal_key",
    "remembered_dismissals",
    "run_capture",
    "unit_candidates",
]

FateName = Literal["written", "added_on_followup", "added_by_code", "dismissed", "skipped"]

FACTS = "Key Facts & Decisions"
FILES = "Files & Context"
ERRORS = "Errors & Corrections"
OPEN = "Open Issues"

KIND_SECTIONS: Mapping[str, str] = {
    "todo": OPEN,
    "error": ERRORS,
    "fix": ERRORS,
    "correction": ERRORS,
    "path": FILES,
}
"""The section of a unit's kind; every other kind (decision, constraint, preference, fact,
event, plan, possession, relationship, person, place) goes to Key Facts & Decisions."""
MAX_ASKED = SEED_ASKED
"""The most statements one follow-up call lists at the seed's size (the most salient first);
a memory's own bound is ``SectionLimits.asked``, raised for a dense round."""
MAX_STATEMENT_CHARS = 300
"""The longest statement quoted to the writer."""
ASKED_WITHOUT_ANCHOR = frozenset({"todo", "decision", "constraint", "correction", "error", "fix"})
"""Kinds asked about even without an anchor (work a session commits to, errors and their
fixes), and in a working
session added by code too: a writer that leaves one out and says nothing when asked would lose
it for good; one it dismisses stays out. In a chat they say how someone feels: code adds them
only with an anchor."""
MAX_CODE_UNITS = SEED_CODE_UNITS
"""The most units of pasted data code adds per round at the seed's size (a memory's own bound
is ``SectionLimits.code_units``); a statement of the session is never bounded."""
MAX_DISMISSED = 256
"""The most dismissal keys a WM version keeps (the newest)."""
EARLIER = "dismissed in an earlier round"
"""The reason of a candidate the writer had dismissed before (not asked again)."""
_CODE_RE = re.compile(r"(?=\S*[^\W\d_])(?=\S*\d)\S+")
"""An identifier: one word with letters and digits (``FACT-010``, ``v2.3.1``, ``tenant_749``)."""
FRAMING_SHARE = 0.08
"""A word in more than this share of a round's statements is framing (see ``_framing``)."""
FRAMING_MIN = 3
"""... and in more than this many of them."""
_REFUSED = "refused by the guards"
"""The reason of a code item the guards did not let into the document."""
_WEEKDAY_NAMES = frozenset(
    name
    for day in ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    for name in (day, day + "s", day[:3], day[:3] + "s")
) | {"tues", "thur", "thurs"}
"""A weekday alone pins nothing down (every week has one): no anchor for the capture check
(the guards still keep one; a resolved relative date gives the unit its ISO date anchor)."""
_FIRST_WORD_RE = re.compile(r"[\"'(\[]*([A-Z][a-z]{2,})(?:['’]s)?(?![\w'’-])")
_MID_SENTENCE_CAPS_RE = re.compile(r"(?<=[a-z0-9,;] )[\"'(]?([A-Z][a-z]{2,})\b")
"""A capitalised word after a lower-case word: a name shows its capital mid-sentence somewhere
in the fold; a common word ("Wish", "Blue", "Everyone") capitalised only because it opens the
sentence is no anchor of that sentence (as for the units' names)."""
_SPEAKER_RE = re.compile(r"^[^\W\d_][\w .'’-]{0,39}:\s+")


def dismissal_key(statement: str) -> str:
    """The key a dismissed statement is remembered by: a short hash of its text without a
    leading ``Name:`` speaker, case, spacing and final punctuation (the same statement said by
    either speaker, or quoted again, has one key)."""
    body = _SPEAKER_RE.sub("", " ".join(statement.split()), count=1)
    norm = body.casefold().rstrip(" .!?…")
    return hashlib.sha256(norm.encode("utf-8", "replace")).hexdigest()[:16]


def remembered_dismissals(earlier: Sequence[str], fates: Iterable[Mapping[str, str]]) -> list[str]:
    """The dismissal keys a new WM version keeps: ``earlier`` (its base's) plus the statements
    dismissed this round, deduplicated, the newest :data:`MAX_DISMISSED`."""
    keys = [*earlier, *(dismissal_key(f["text"]) for f in fates if f.get("fate") == "dismissed")]
    return list(dict.fromkeys(reversed(keys)))[:MAX_DISMISSED][::-1]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One thing the round's messages establish.

    Attributes:
        kind: The unit's kind, or ``path`` / ``error`` for the trails.
        text: The statement, extractive and bounded (what code would add).
        section: Where it belongs.
        anchors: Its anchors (canonical form).
        source: Who said it: ``user``, ``assistant``, or the tool that reported it.
        salience: How much a reader would lose without it (higher first).
        trail: A path or an error: added by code directly, never asked about.
        message: Index of the folded message it comes from (-1: not known).
        pasted: From pasted data (a log, code, a listing, told by its shape): code adds at
            most the round's bound of such units, the most salient first.
        explicit: The speaker asked for it to be remembered: always kept.
        names: The people and places it names (canonical form): an item that holds its other
            anchors but names someone else does not hold it.
    """

    kind: str
    text: str
    section: str
    anchors: tuple[str, ...] = ()
    source: str = "user"
    salience: int = 0
    trail: bool = False
    message: int = -1
    pasted: bool = False
    explicit: bool = False
    names: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Fate:
    """What became of one candidate this round."""

    kind: str
    text: str
    section: str
    fate: FateName
    reason: str = ""

    def as_dict(self) -> dict[str, str]:
        """JSON-plain form (stored with the WM version and the archive record)."""
        out = {"kind": self.kind, "text": self.text, "section": self.section, "fate": self.fate}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class CaptureResult:
    """The round's capture check.

    Attributes:
        text: The document after the follow-up's and code's additions.
        fates: One per candidate, in candidate order.
        decisions: The guard decisions of the additions (non-KEEP sections only).
        asked: How many statements the follow-up listed (0: no call).
        code_items: Section -> the items code added this round.
        artifact_trail: The paths code added (Files & Context).
        error_trail: The errors code added (Errors & Corrections).
    """

    text: str
    fates: list[Fate] = field(default_factory=list)
    decisions: list[dict[str, str]] = field(default_factory=list)
    asked: int = 0
    code_items: dict[str, list[str]] = field(default_factory=dict)
    artifact_trail: list[str] = field(default_factory=list)
    error_trail: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many candidates ended with each fate."""
        out: dict[str, int] = {}
        for fate in self.fates:
            out[fate.fate] = out.get(fate.fate, 0) + 1
        return out


def _role(message: BaseMessage) -> str:
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    return "tool" if message.type in {"tool", "function"} else "system"


def _bounded(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_STATEMENT_CHARS else text[: MAX_STATEMENT_CHARS - 1] + "…"


def _short(text: str) -> str:
    """A code item: the unit's statement whole, its spacing squashed. It is never cut (SPEC
    §11: an item is never shortened with "…" so that a name, number or identifier is lost;
    "the boat for our group is …" lost "pier 3"); the unit is already one statement of at most
    a few dozen words, within the item bound."""
    return " ".join(text.split())


def unit_candidates(messages: Iterable[BaseMessage]) -> list[Candidate]:
    """The salient units of the user's and the assistant's messages (tool output is data and
    gives none; the trails cover what tools report), never one that reads as an instruction;
    an assistant's line that only relays a tool result's line is tool output too. An error is
    a candidate only in the user's own words, or in the assistant's when it quotes what one of
    the session's own runs reported (errors come from what the session ran,
    ``session_paths.runs_here``): a page the assistant relays, or a log or traceback the user
    pasted, is someone else's text."""
    messages = list(messages)
    relayed = tool_result_lines(messages)
    ran = " ".join(own_run_outputs(messages).split()).casefold()
    pairs = [
        (role, without_relayed_lines(text, relayed) if role == "assistant" else text)
        for role, text in ((_role(m), entry_text(content_text(m.content))) for m in messages)
    ]
    units: list[Unit] = extract_units(pairs)
    named = {m.casefold() for _, text in pairs for m in _MID_SENTENCE_CAPS_RE.findall(text)}
    out: list[Candidate] = []
    for unit in units:
        if reads_as_instruction(unit.text) or (
            unit.kind == "error" and not _the_sessions_error(unit, pairs, ran)
        ):
            continue
        first = _FIRST_WORD_RE.match(unit.text)
        own = {n.casefold() for n in unit.names}
        start = (
            first.group(1).casefold()
            if first and first.group(1).casefold() not in named | own
            else ""
        )
        anchors = tuple(a for a in unit.anchors if a not in _WEEKDAY_NAMES and a != start)
        out.append(
            Candidate(
                kind=unit.kind,
                text=_bounded(unit.text),
                section=KIND_SECTIONS.get(unit.kind, FACTS),
                anchors=anchors,
                source=unit.role,
                salience=unit.salience,
                message=unit.index,
                pasted=unit.pasted,
                explicit=unit.explicit,
                names=tuple(
                    n.casefold() for n in unit.names if " " not in n and n.casefold() in anchors
                ),
            )
        )
    return out


def _the_sessions_error(unit: Unit, pairs: Sequence[tuple[str, str]], ran: str) -> bool:
    """Whether an error unit is the session's own (``session_paths.sessions_error``)."""
    if not 0 <= unit.index < len(pairs):
        return False
    role, text = pairs[unit.index]
    return sessions_error(unit.text, role, text, ran)


def candidates_of(
    units: Sequence[Candidate], paths: Sequence[str], errors: Sequence[str]
) -> list[Candidate]:
    """The round's candidates: its units, then its trail paths and errors."""
    trail = [Candidate("path", p, FILES, source="conversation", trail=True) for p in paths]
    trail += [Candidate("error", e, ERRORS, source="tool", trail=True) for e in errors]
    return [*units, *trail]


def _written(
    candidate: Candidate,
    text: str,
    sections: Mapping[str, str],
    framing: frozenset[str] = frozenset(),
) -> bool:
    if candidate.kind == "path" and candidate.trail:
        return paths_listed([candidate.text], sections[FILES])[0]
    if candidate.kind == "error" and candidate.trail:
        return not missing_errors([candidate.text], sections[ERRORS])
    if statement_key(candidate.text) in _item_keys(text):
        return True  # the same item, whatever its markers, speaker or acknowledgement
    if item_present(candidate.text, _items(text)):
        return True  # said whole inside one item ("Owen: A; B; C" holds B)
    if candidate.anchors:
        return _held_by_a_clause(candidate, _document_clauses(text), framing)
    items = _items(text)
    return item_present(candidate.text, items) or any(restates(candidate.text, i) for i in items)


@dataclass(frozen=True, slots=True)
class _Clauses:
    """The clauses of a document's items, for one search per anchor: each clause's text (a
    later clause without anchors of its own with its bullet's subject, the first clause, in
    front) and its own words."""

    words: tuple[frozenset[str], ...]
    texts: tuple[str, ...]
    starts: list[int]
    joined: str
    bullets: tuple[str, ...] = ()
    """Each clause's whole item (who a bullet is about may stand only at its start)."""

    @classmethod
    def of(cls, items: Sequence[str]) -> _Clauses:
        """The clauses of ``items``."""
        words: list[frozenset[str]] = []
        texts: list[str] = []
        bullets: list[str] = []
        for item in items:
            parts = clauses(item) or [item]
            for n, part in enumerate(parts):
                words.append(key_words(part))
                own = n == 0 or _anchors_of(part)  # a clause with anchors is its own subject
                texts.append(part if own else f"{parts[0]} {part}")
                bullets.append(item)
        starts, joined = join_texts(texts)
        return cls(tuple(words), tuple(texts), starts, joined, tuple(bullets))

    def names_all(self, i: int, names: Sequence[str]) -> bool:
        """Whether clause ``i``'s item names everyone of ``names``."""
        return all(term_in(name, self.bullets[i]) for name in names)

    def holding(self, anchor: str) -> set[int]:
        """The clauses whose text (subject included) holds ``anchor``."""
        found = terms_in_texts(anchor, list(self.texts), self.starts, self.joined)
        return found | {i for i, text in enumerate(self.texts) if anchor in _anchors_of(text)}


@lru_cache(maxsize=8)
def _document_clauses(text: str) -> _Clauses:
    return _Clauses.of(_items(text))


@lru_cache(maxsize=65_536)
def _anchors_of(text: str) -> frozenset[str]:
    return frozenset(extract_anchors(text))


def _held_by_a_clause(
    candidate: Candidate, found: _Clauses, framing: frozenset[str] = frozenset()
) -> bool:
    """Whether one clause holds the unit (the Key Facts guard's reading of a bullet: split at
    ``;`` and sentence ends; a later clause without anchors of its own takes its bullet's first
    clause, the subject, in front). It must hold the unit's anchors together — every one of up
    to two that are more than a bare number, two thirds of more (a consolidation may leave a
    side detail); with bare numbers only, one of them ("turn 10" beside ``FACT-010`` is a side
    detail) — and hold every identifier of the unit (a word with letters and digits,
    ``FACT-010``, ``v2.3.1``: the fact itself) or keep its content (:func:`restates`: every one
    of up to two, more than half of more, of the unit's words, its anchors' included, the
    round's ``framing`` not: words many of the round's statements share, "big news", "please
    remember"; a statement that negates its content, "no longer keyboards", needs a clause
    with a negation). Anchors scattered over several bullets, a name every bullet carries, a
    date two events share, the same plan told of someone else: none of these holds a fact."""
    anchors = candidate.anchors
    strong = [a for a in anchors if not a.isdigit()]
    if strong:
        terms, need = strong, len(strong) if len(strong) <= 2 else -(-2 * len(strong) // 3)
    else:  # bare numbers only: one of them
        terms, need = list(anchors), 1
    named = {w for a in anchors for w in key_words(a)}  # the clause holds them
    codes = [found.holding(a) for a in anchors if _CODE_RE.fullmatch(a)]
    content = key_words(candidate.text) - framing
    enough = len(content) if len(content) <= 2 else len(content) // 2 + 1
    held: dict[int, int] = {}
    for anchor in terms:
        for i in found.holding(anchor):
            held[i] = held.get(i, 0) + 1
    return any(
        got >= need
        and found.names_all(i, candidate.names)  # not the same plan told of someone else
        and negation_kept(candidate.text, found.texts[i])
        and (
            (codes and all(i in code for code in codes))
            or len(content & (found.words[i] | named)) >= enough
        )
        for i, got in held.items()
    )


@lru_cache(maxsize=8)
def _items(text: str) -> tuple[str, ...]:
    """Every item of the sections of ``text`` that keep what they hold (``DURABLE_SECTIONS``):
    Current State is rewritten every round and keeps nothing, so a statement that stands only
    there is not written."""
    sections = parse_working_memory(text)
    return tuple(i for name in DURABLE_SECTIONS for i in section_items(sections[name]))


@lru_cache(maxsize=8)
def _item_keys(text: str) -> frozenset[str]:
    return frozenset(statement_key(i) for i in _items(text))


def _append(
    text: str,
    section: str,
    items: Sequence[str],
    guards: bool,
    decisions: list[dict[str, str]],
    *,
    limits: SectionLimits = SEED_LIMITS,
) -> str:
    if not items:
        return text
    result = merge_working_memory(
        text, {section: {"op": "APPEND", "items": list(items)}}, guards=guards, limits=limits
    )
    decisions += [d.as_dict() for d in result.decisions if d.applied != "KEEP" or d.reason]
    decisions[:] = [d for d in decisions if d.get("requested") != "MISSING"]
    return result.text


Ask = Callable[[str, list[CaptureQuestion]], CaptureAnswer | None]
"""The follow-up call: ``(document, questions) -> answer`` (None: nothing decided)."""


@dataclass(slots=True)
class _Check:
    """One round's capture check as it goes: the document, and what each candidate became."""

    text: str
    candidates: Sequence[Candidate]
    guards: bool
    limits: SectionLimits = SEED_LIMITS
    framing: frozenset[str] = frozenset()
    chat: bool = False
    sections: dict[str, str] = field(init=False)
    fates: dict[int, Fate] = field(default_factory=dict)
    decisions: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sections = parse_working_memory(self.text)

    def settle(self, n: int, fate: FateName, reason: str = "", section: str = "") -> None:
        """Candidate ``n`` ends with ``fate`` (in its own section unless ``section`` says)."""
        cand = self.candidates[n]
        self.fates[n] = Fate(cand.kind, cand.text, section or cand.section, fate, reason)

    def written(self, n: int) -> bool:
        """Whether the document now holds candidate ``n``."""
        return _written(self.candidates[n], self.text, self.sections, self.framing)

    def append(self, section: str, items: Sequence[str]) -> None:
        """APPEND ``items`` to ``section`` through the guards, their decisions recorded."""
        self.text = _append(
            self.text, section, items, self.guards, self.decisions, limits=self.limits
        )
        self.sections = parse_working_memory(self.text)


def _framing(candidates: Sequence[Candidate]) -> frozenset[str]:
    """The round's framing: words in more than :data:`FRAMING_SHARE` of its statements (and
    in at least :data:`FRAMING_MIN`); they say how things are said, not what."""
    counts: dict[str, int] = {}
    texts = [c.text for c in candidates if not c.trail]
    for text in texts:
        for word in key_words(text):
            counts[word] = counts.get(word, 0) + 1
    least = max(FRAMING_MIN, FRAMING_SHARE * len(texts))
    return frozenset(word for word, n in counts.items() if n > least)


def _chat(candidates: Sequence[Candidate]) -> bool:
    """Whether the round reads as a personal chat (``units.is_chat``: no tool reports, mostly
    narrative statements)."""
    if any(c.trail for c in candidates):
        return False
    return chat_kinds([c.kind for c in candidates])


def _unthrottled(limits: SectionLimits) -> SectionLimits:
    """The limits the additions go through the guards with: no Key Facts section is over them,
    so neither the anti-bloat throttle nor the sentinel refuses what the check adds (its own
    bounds apply, see :func:`run_capture`)."""
    return replace(limits, bullets=_NO_LIMIT, tokens=_NO_LIMIT, max_append=_NO_LIMIT)


_NO_LIMIT = 10**12


def _missing_ones(check: _Check) -> list[int]:
    """The candidates the merged document lacks; the others end ``written``."""
    missing: list[int] = []
    for n in range(len(check.candidates)):
        if check.written(n):
            check.settle(n, "written")
        else:
            missing.append(n)
    return missing


def _askable(check: _Check, units: list[int], dismissed: Collection[str]) -> list[int]:
    """The missing units worth a question (an anchor, or a kind a session commits to), the
    most salient first; an unanchored unit of another kind ends ``skipped``, one the writer
    dismissed in an earlier round ends ``dismissed`` without a question."""
    cands = check.candidates
    for n in units:
        cand = cands[n]
        if not cand.anchors and not cand.explicit and cand.kind not in ASKED_WITHOUT_ANCHOR:
            check.settle(n, "skipped", "no anchor")
    askable = [n for n in units if n not in check.fates]
    earlier = set(dismissed)
    for n in askable:
        if earlier and dismissal_key(cands[n].text) in earlier:
            check.settle(n, "dismissed", EARLIER)
    return [n for n in askable if n not in check.fates]


def _follow_up(check: _Check, asked_ids: list[int], ask: Ask) -> dict[int, str]:
    """Ask the writer once about ``asked_ids``; apply what it adds (never an instruction),
    settle what it dismisses. Returns candidate -> the section the writer added it to."""
    cands = check.candidates
    questions = [
        CaptureQuestion(i + 1, cands[n].kind, cands[n].text, cands[n].source)
        for i, n in enumerate(asked_ids)
    ]
    answer = ask(check.text, questions)
    answered: dict[int, str] = {}
    if answer is None:
        return answered
    by_section: dict[str, list[str]] = {}
    for number, n in enumerate(asked_ids, start=1):
        if number in answer.added:
            section, item = answer.added[number]
            if reads_as_instruction(item):
                continue
            by_section.setdefault(section, []).append(item)
            answered[n] = section
        elif number in answer.dismissed:
            check.settle(n, "dismissed", answer.dismissed[number])
    for section, items in by_section.items():
        check.append(section, items)
    return answered


def _code_refusal(check: _Check, n: int, added: list[str]) -> str:
    """Why code does not add unit ``n`` ("" when it may): no anchor (and neither asked to be
    remembered nor, in a working session, of a kind a session commits to), already held by an
    item code adds this round, reads as an instruction, a path an assistant only mentions (the
    artifact trail lists what the session acted on), or an error that is not a failure the user
    tells in words."""
    cand = check.candidates[n]
    if (
        not cand.anchors
        and not cand.explicit
        and (check.chat or cand.kind not in ASKED_WITHOUT_ANCHOR)
    ):
        # small talk, and in a chat "always", "never", "because" say how someone feels
        return "no anchor"
    if added and _held_by_a_clause(cand, _Clauses.of(added), check.framing):
        return "duplicate"
    if statement_key(cand.text) in {statement_key(a) for a in added}:
        return "duplicate"
    if reads_as_instruction(cand.text):  # text is data, whoever wrote it
        return "reads as an instruction"
    if cand.kind == "path" and cand.source != "user":
        return "prose error or path"
    if cand.kind in {"error", "fix"} and (cand.source != "user" or not tells_failure(cand.text)):
        # an error the user tells in words is the session's; an exception name in prose, or
        # an assistant's, is the writer's to record (code takes those from the error trail)
        return "prose error or path"
    return ""


def _code_units(
    check: _Check, order: list[int], answered: Mapping[int, str], pasted_bound: int
) -> dict[str, list[str]]:
    """Settle every unit still open in ``order``: held after the follow-up, or added by code
    as its text (a statement of the session always; of pasted data at most ``pasted_bound``),
    or skipped with why. Returns section -> the items code adds."""
    code: dict[str, list[str]] = {}
    added: list[str] = []
    for n in order:
        if n in check.fates:
            continue
        cand = check.candidates[n]
        if n in answered and check.written(n):
            check.settle(n, "added_on_followup", section=answered[n])
            continue
        if check.written(n):  # a follow-up addition holds it too
            check.settle(n, "written")
            continue
        refusal = _code_refusal(check, n, added)
        if refusal:
            check.settle(n, "skipped", refusal)
            continue
        if cand.pasted:
            if pasted_bound <= 0:
                check.settle(n, "skipped", "over the bound")
                continue
            pasted_bound -= 1
        item = _short(cand.text)
        added.append(cand.text)
        code.setdefault(cand.section, []).append(item)
        check.fates[n] = Fate(cand.kind, item, cand.section, "added_by_code")
    return code


def _trail_items(check: _Check, missing: list[int]) -> tuple[list[str], list[str]]:
    """The missing trail paths and errors, settled ``added_by_code`` (their extractive item is
    all there is to write)."""
    cands = check.candidates
    paths = [cands[n].text for n in missing if cands[n].kind == "path" and cands[n].trail]
    errors = [cands[n].text for n in missing if cands[n].kind == "error" and cands[n].trail]
    for n in missing:
        if cands[n].trail:
            check.settle(n, "added_by_code")
    return paths, errors


def _held_code_items(check: _Check) -> dict[str, list[str]]:
    """Section -> the code items the document holds; what the guards refused to add is not
    in the document, and its candidate says so."""
    held: dict[str, list[str]] = {}
    for n, fate in list(check.fates.items()):
        if fate.fate != "added_by_code":
            continue
        cand = check.candidates[n]
        present = item_present(fate.text, section_items(check.sections[fate.section])) or (
            cand.trail and check.written(n)
        )
        if present:
            held.setdefault(fate.section, []).append(fate.text)
        else:
            check.fates[n] = Fate(fate.kind, fate.text, fate.section, "skipped", _REFUSED)
    return held


def _established(candidates: Sequence[Candidate]) -> int:
    """How many units the round establishes, for its follow-up's bound: its statements, not
    the lines of what was pasted (a log, a dump is data rather than a hundred statements; told
    by its shape, :func:`~wm_langgraph.document.text.units.pasted_lines`)."""
    return sum(1 for c in candidates if not c.trail and not c.pasted)


def run_capture(
    text: str,
    candidates: Sequence[Candidate],
    *,
    ask: Ask | None,
    guards: bool = True,
    max_code_units: int | None = None,
    dismissed: Collection[str] = (),
    limits: SectionLimits = SEED_LIMITS,
) -> CaptureResult:
    """The capture check of one round over the merged ``text`` (module docstring).

    Args:
        text: The merged document.
        candidates: The round's candidates (:func:`candidates_of`).
        ask: The follow-up call, or None when the writer cannot be asked (not a tool-calling
            model). It may raise nothing: the caller turns failures into None.
        guards: Whether the additions go through the guards (the memory's ``guards`` setting).
        max_code_units: The most units of pasted data code adds this round (``None``:
            ``limits.code_units``); a statement of the session is always added when the
            writer left it out.
        dismissed: Keys (:func:`dismissal_key`) of statements the writer dismissed in earlier
            rounds: not asked again, not added by code.
        limits: The memory's section thresholds: the follow-up's and code's bounds follow them
            and the round's size. The additions pass the guards without the Key Facts
            throttle and sentinel (they are bounded here, and the size contract bounds the
            document): a writer's omission must not become permanent because the section is
            oversized.
    """
    established = _established(candidates)
    check = _Check(
        text, candidates, guards, _unthrottled(limits), _framing(candidates), _chat(candidates)
    )
    missing = _missing_ones(check)
    units = sorted(
        (n for n in missing if not candidates[n].trail),
        key=lambda n: (-candidates[n].salience, n),  # the most salient first
    )
    asked_ids = _askable(check, units, dismissed)[: limits.capture_bound(limits.asked, established)]
    answered = _follow_up(check, asked_ids, ask) if asked_ids and ask is not None else {}
    anchored = [n for n in units if candidates[n].anchors]
    unanchored = [n for n in units if not candidates[n].anchors]
    bound = limits.code_units if max_code_units is None else max_code_units
    code = _code_units(check, [*anchored, *unanchored], answered, bound)
    paths, errors = _trail_items(check, missing)
    if paths:
        code.setdefault(FILES, []).extend(paths)
    if errors:
        code.setdefault(ERRORS, []).extend(errors)
    for section, items in code.items():
        check.append(section, items)
    held = _held_code_items(check)
    return CaptureResult(
        text=check.text,
        fates=[check.fates[n] for n in range(len(candidates))],
        decisions=check.decisions,
        asked=len(asked_ids) if ask is not None else 0,
        code_items=held,
        artifact_trail=[p for p in paths if p in held.get(FILES, [])],
        error_trail=[e for e in errors if e in held.get(ERRORS, [])],
    )
