"""The Working Memory as a picture: its seven sections, their sizes against the thresholds, and
what in it was not the writer's own doing.

An item carries a badge when the memory's code put it there or changed it, as its records say
(:mod:`.marks`: a mark typed by a user or written by the writer gets none):

- ``restored``: the Key Facts guard brought back a fact the writer's rewrite lost
  (:data:`~wm_langgraph.document.guards.RESTORED_MARKER`);
- ``dropped, restored``: the Open Issues guard brought back an issue an update dropped
  silently (:data:`~wm_langgraph.document.guards.DROPPED_MARKER`);
- ``added by code``: the capture check or a trail added it (the version's ``code_items``);
- ``moved out``: the size contract's marker of items moved out of the document, when the store
  holds the items it moved (``archive_search`` finds them);
- ``superseded``: the merge retired a Key Facts bullet into Errors & Corrections;
- ``written by a guard``: another item a guard wrote (the consolidation sentinel);
- ``origin of this mark not recorded``: a mark's text in a version stored before the records;
- ``new``, ``resolved``: the writer's tags, shown as badges.

A guard's badge names the version that wrote the item (an item keeps it while it stands).

Each section's size is set against the limits from which the writer is reminded to
consolidate (:func:`section_limits`), and the whole document against its size contract (the
target the reminders aim at, the ceiling code compacts to) and the Working Memory's guaranteed
share of the model input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import compute_budgets
from wm_langgraph.display.marks import NO_MARKS, Marks
from wm_langgraph.display.markup import Part, badge, fragment, meter, number, stacked_bar, text
from wm_langgraph.document.compaction import MOVED_MARKER_RE
from wm_langgraph.document.guards import (
    DROPPED_MARKER,
    RESTORED_MARKER,
    SUPERSEDED_PREFIX,
    is_resolved,
)
from wm_langgraph.document.protocol import APPEND_ONLY_SECTIONS, BULLET_THRESHOLD, TOKEN_THRESHOLD
from wm_langgraph.document.sections import (
    SECTIONS,
    is_working_memory,
    item_key,
    parse_working_memory,
    section_items,
)
from wm_langgraph.phase2.size import contract_for

__all__ = [
    "SectionView",
    "WorkingMemoryView",
    "item_badges",
    "section_limits",
    "working_memory_view",
]

_NEW_RE = re.compile(r"^\s*\[new\]", re.IGNORECASE)


def section_limits(config: WorkingMemoryConfig) -> tuple[int, int]:
    """``(items, tokens)``: past either, a section is oversized and the writer is told to
    consolidate it (the limits the update prompt's size warnings and the Key Facts guard read).

    Args:
        config: The memory's settings (the limits follow the size target of its budget:
            docs/budgets.md).
    """
    limits = contract_for(config).limits
    return limits.bullets, limits.tokens


def item_badges(
    item: str, *, section: str, code_items: Sequence[str] = (), marks: Marks = NO_MARKS
) -> list[str]:
    """The badges of one item (markup): what code or a guard did to it, as the records say
    (``marks``: :mod:`.marks`; without them no guard badge is given), and the writer's tags."""
    found: list[str] = []
    key = item_key(item)
    origin = marks.origin(section, item)
    if origin is not None:
        found.append(_written_badge(item, origin, marks.moved))
    elif marks.unknown(section, item):
        found.append(badge("origin of this mark not recorded", "moved"))
    if key and any(item_key(c) == key for c in code_items):
        found.append(badge("added by code", "code"))
    if _NEW_RE.match(item):
        found.append(badge("new", "new"))
    if section == "Open Issues" and is_resolved(item):
        found.append(badge("resolved", "resolved"))
    return found


def _written_badge(item: str, version: int, moved: int) -> str:
    """The badge of an item the memory wrote in ``version`` (its records say so)."""
    where = f"in version {version}"
    marker = MOVED_MARKER_RE.search(item)
    if marker is not None:
        said = int(marker.group(1).replace(",", ""))
        if moved and said == moved:
            return badge(f"{moved:,} item(s) moved out, recorded", "moved")
        return badge(
            f"moved-out marker written {where}; its count is not the {moved:,} moved item(s) "
            "the store holds",
            "guard",
        )
    if DROPPED_MARKER in item:
        return badge(f"dropped by the writer, restored by a guard {where}", "restored")
    if RESTORED_MARKER in item:
        return badge(f"restored by a guard {where}", "restored")
    if item.strip().casefold().startswith(SUPERSEDED_PREFIX):
        return badge(f"superseded, recorded {where}", "resolved")
    return badge(f"written by a guard {where}", "guard")


@dataclass(frozen=True, slots=True)
class SectionView:
    """One section: its items and its size."""

    name: str
    items: tuple[str, ...]
    tokens: int


@dataclass(frozen=True, slots=True)
class WorkingMemoryView:
    """A Working Memory document as a picture (module docstring).

    Attributes:
        text: The document.
        sections: Its seven sections, in order.
        tokens: The whole document's tokens.
        covers: The archives it folds, in order.
        code_items: Section -> the items code added that it still holds.
        item_limit: Items from which a section is oversized.
        token_limit: Tokens from which a section is oversized.
        target: The document's size target.
        ceiling: The most the stored document may count.
        share: The Working Memory's guaranteed share of the model input.
        title: What this is (``Working Memory after archive_004``).
        marks: What the memory's records vouch for (:mod:`.marks`).
    """

    text: str
    sections: tuple[SectionView, ...]
    tokens: int
    covers: tuple[str, ...] = ()
    code_items: Mapping[str, Sequence[str]] = field(default_factory=dict)
    item_limit: int = BULLET_THRESHOLD
    token_limit: int = TOKEN_THRESHOLD
    target: int = 0
    ceiling: int = 0
    share: int = 0
    title: str = "Working Memory"
    marks: Marks = NO_MARKS

    def __repr__(self) -> str:
        """``<WorkingMemoryView: 1,234 tokens, 17 items, covers 4 archives>``."""
        items = sum(len(s.items) for s in self.sections)
        return (
            f"<WorkingMemoryView: {self.tokens:,} tokens, {items} items, covers "
            f"{len(self.covers)} archives>"
        )

    def __str__(self) -> str:
        """The document itself."""
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text

    def body(self) -> str:
        """The display's markup (without the stylesheet)."""
        if not self.text.strip():
            return (
                f'<h3>{text(self.title)}</h3><p class="muted">No Working Memory yet: nothing '
                "has been folded.</p>"
            )
        covers = (
            f"folds {len(self.covers)} archive(s): {text(', '.join(self.covers), 600)}"
            if self.covers
            else "covers no archive"
        )
        scale = max(self.ceiling, self.tokens, 1)
        marks = [(self.target, f"target: {number(self.target)}")] if self.target else []
        if self.share:
            marks.append((self.share, f"guaranteed share of the input: {number(self.share)}"))
        whole = stacked_bar(
            [Part("l-wm", self.tokens, f"document: {number(self.tokens)} tokens")],
            scale,
            marks=marks,
        )
        head = (
            f"<h3>{text(self.title)}: {number(self.tokens)} tokens</h3>"
            f'<p class="sub">{covers}. The bar ends at the ceiling ({number(self.ceiling)} '
            f"tokens, the most the stored document may count); its marks are the guaranteed "
            f"share of the model input ({number(self.share)}) and the target the writer is "
            f"reminded of ({number(self.target)}).</p>"
        )
        if not is_working_memory(self.text):  # a summary from before the seven sections
            return (
                head
                + whole
                + '<p class="note">Not a seven-section document: shown as it is.</p>'
                + f"<pre>{text(self.text, 20_000)}</pre>"
            )
        return head + whole + "".join(self._section(s) for s in self.sections)

    def _section(self, section: SectionView) -> str:
        code = self.code_items.get(section.name, ())
        marks = self.marks
        items = "".join(
            f"<li>{text(item)} "
            f"{' '.join(item_badges(item, section=section.name, code_items=code, marks=marks))}"
            "</li>"
            for item in section.items
        )
        count = len(section.items)
        gauges = meter(count, self.item_limit, f"{count} / {self.item_limit} items") + meter(
            section.tokens,
            self.token_limit,
            f"{number(section.tokens)} / {number(self.token_limit)} tokens",
        )
        if section.name in APPEND_ONLY_SECTIONS:
            gauges += '<span class="mlabel">append-only</span>'
        listing = f"<ul>{items}</ul>" if items else '<p class="muted">(empty)</p>'
        return (
            f'<div class="sec"><div class="sech"><b>{text(section.name)}</b><span>{gauges}</span>'
            f"</div>{listing}</div>"
        )

    def _repr_html_(self) -> str:
        return fragment(self.body())


def working_memory_view(
    document: str,
    *,
    config: WorkingMemoryConfig,
    count: Callable[[str], int],
    covers: Sequence[str] = (),
    code_items: Mapping[str, Sequence[str]] | None = None,
    title: str = "Working Memory",
    marks: Marks = NO_MARKS,
) -> WorkingMemoryView:
    """The picture of ``document`` under ``config``'s limits.

    Args:
        document: The Working Memory text (``""``: none yet).
        config: The memory's settings (limits and budgets).
        count: The memory's text counter.
        covers: The archives the document folds.
        code_items: Section -> items code added (a version's ``code_items``).
        title: The heading.
        marks: What the records vouch for (:mod:`.marks`); none: no guard badge.
    """
    bodies = parse_working_memory(document) if is_working_memory(document) else {}
    sections = tuple(
        SectionView(name, tuple(section_items(bodies.get(name, ""))), count(bodies.get(name, "")))
        for name in SECTIONS
    )
    contract = contract_for(config)
    budgets = compute_budgets(config.tokens, config.reserve_tokens, config.archive_memory_tokens)
    items, tokens = section_limits(config)
    plain = {
        str(k): [str(i) for i in v]
        for k, v in (code_items or {}).items()
        if isinstance(v, list | tuple)
    }
    return WorkingMemoryView(
        text=document,
        sections=sections,
        tokens=count(document) if document else 0,
        covers=tuple(covers),
        code_items=plain,
        item_limit=items,
        token_limit=tokens,
        target=contract.target,
        ceiling=contract.ceiling,
        share=budgets.archive,
        title=title,
        marks=marks,
    )
