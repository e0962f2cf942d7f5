"""A commit as a picture: one Working Memory version against the one before it.

Phase 2 stores with every version what it decided (``phase2.nodes.Save``): the writer's branch
(create or update) and fallback, one guard decision per section (the writer's op, the op the
guard applied, and why), the capture check's fate of every candidate statement, the paths and
errors the trails added, and the items the size contract moved out. :class:`CommitView` shows,
per section, the writer's op → the guard's decision and its reason, and the items that came
and went (an item that left because the size contract moved it out says so: ``archive_search``
still finds it); then the capture fates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wm_langgraph.display.marks import NO_MARKS, Marks
from wm_langgraph.display.markup import badge, details, fragment, text
from wm_langgraph.display.working_memory import item_badges
from wm_langgraph.document.sections import (
    SECTIONS,
    is_working_memory,
    item_key,
    parse_working_memory,
    section_items,
)
from wm_langgraph.phase2.size import SIZE_DECISION_SECTION

__all__ = ["FATES", "CommitView", "SectionDiff", "guard_changed", "section_diffs"]

FATES = ("written", "added_on_followup", "added_by_code", "dismissed", "skipped")
"""The capture check's fates, in the order shown."""
_FATE_LABELS = {
    "written": "written by the writer",
    "added_on_followup": "added on follow-up",
    "added_by_code": "added by code",
    "dismissed": "dismissed by the writer",
    "skipped": "skipped",
}


def guard_changed(decision: Mapping[str, Any]) -> bool:
    """True when the guard applied another op than the writer's, or gave a reason."""
    return decision.get("requested") != decision.get("applied") or bool(decision.get("reason"))


@dataclass(frozen=True, slots=True)
class SectionDiff:
    """What one section gained and lost between two versions."""

    name: str
    added: tuple[str, ...]
    removed: tuple[str, ...]
    kept: int


def _items(document: str) -> dict[str, list[str]]:
    if not is_working_memory(document):
        return {name: [] for name in SECTIONS}
    bodies = parse_working_memory(document)
    return {name: section_items(bodies[name]) for name in SECTIONS}


def section_diffs(before: str, after: str) -> list[SectionDiff]:
    """Per section, the items of ``after`` not in ``before`` and the other way round (whole
    items, compared as the guards compare them: case, spacing and bullets aside)."""
    old, new = _items(before), _items(after)
    out = []
    for name in SECTIONS:
        old_keys = {item_key(i) for i in old[name]}
        new_keys = {item_key(i) for i in new[name]}
        out.append(
            SectionDiff(
                name,
                tuple(i for i in new[name] if item_key(i) not in old_keys),
                tuple(i for i in old[name] if item_key(i) not in new_keys),
                sum(1 for i in new[name] if item_key(i) in old_keys),
            )
        )
    return out


def _dicts(value: object) -> list[dict[str, Any]]:
    return [dict(v) for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


@dataclass(frozen=True, slots=True)
class CommitView:
    """One Working Memory version: what the commit changed and who decided it.

    Attributes:
        number: The version's place on the thread's timeline (1 = the first).
        covers: The archives it folds, in order.
        folded: The archives this commit added to the coverage.
        before: The previous version's document (``""`` for the first).
        after: This version's document.
        info: What Phase 2 stored with it (branch, fallback, decisions, capture, trails, …).
        moved: The items this version moved out of the document (section, text).
        created_at: When it was written (ISO 8601, UTC).
        marks: What the memory's records vouch for in this version (:mod:`.marks`).
    """

    number: int
    covers: tuple[str, ...]
    folded: tuple[str, ...]
    before: str
    after: str
    info: Mapping[str, Any] = field(default_factory=dict)
    moved: tuple[tuple[str, str], ...] = ()
    created_at: str = ""
    marks: Marks = NO_MARKS

    @property
    def decisions(self) -> list[dict[str, Any]]:
        """The guard decisions (section, requested, applied, reason), in order."""
        return _dicts(self.info.get("decisions"))

    @property
    def interventions(self) -> list[dict[str, Any]]:
        """The decisions where a guard changed the writer's op or gave a reason."""
        return [d for d in self.decisions if guard_changed(d)]

    @property
    def fates(self) -> list[dict[str, Any]]:
        """The capture check's fates (kind, text, section, fate, reason)."""
        return _dicts(self.info.get("capture"))

    @property
    def diffs(self) -> list[SectionDiff]:
        """Per section, the items gained and lost."""
        return section_diffs(self.before, self.after)

    @property
    def label(self) -> str:
        """``version 3 (archive_003)``."""
        last = self.covers[-1] if self.covers else "?"
        return f"version {self.number} ({last})"

    def __repr__(self) -> str:
        """``<CommitView version 3 (archive_003): +4 -1 items, 1 guard intervention>``."""
        diffs = self.diffs
        added = sum(len(d.added) for d in diffs)
        removed = sum(len(d.removed) for d in diffs)
        return (
            f"<CommitView {self.label}: +{added} -{removed} items, "
            f"{len(self.interventions)} guard intervention(s)>"
        )

    def summary(self) -> str:
        """One line of markup: branch, fallback, item changes, interventions, capture counts."""
        diffs = self.diffs
        added = sum(len(d.added) for d in diffs)
        removed = sum(len(d.removed) for d in diffs)
        branch = self.info.get("branch") or "?"
        fallback = self.info.get("fallback")
        parts = [
            f"branch <b>{text(branch, 40)}</b>",
            f"+{added} / −{removed} items",
            f"{len(self.interventions)} guard intervention(s)",
        ]
        if fallback:
            parts.insert(1, f"fallback {badge(str(fallback), 'guard')}")
        fates = Counter(str(f.get("fate")) for f in self.fates)
        if fates:
            parts.append(
                "capture: "
                + ", ".join(f"{fates[k]} {_FATE_LABELS[k]}" for k in FATES if fates.get(k))
            )
        return " · ".join(parts)

    def body(self) -> str:
        """The display's markup (without the stylesheet)."""
        folded = ", ".join(self.folded) or "none"
        when = self.created_at[:19].replace("T", " ")
        head = (
            f"<h3>{text(self.label, 200)}</h3>"
            f'<p class="sub">folds {text(folded, 600)}'
            f"{' · written ' + text(when, 40) + ' UTC' if when else ''}<br>{self.summary()}</p>"
        )
        return head + self._sections() + self._trails() + self._fates()

    def _sections(self) -> str:
        by_section: dict[str, list[dict[str, Any]]] = {}
        for decision in self.decisions:
            by_section.setdefault(str(decision.get("section", "?")), []).append(decision)
        moved = {item_key(t) for _, t in self.moved}
        raw = self.info.get("code_items")
        code: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        rows = []
        for diff in self.diffs:
            decisions = by_section.pop(diff.name, [])
            ops = "<br>".join(_decision(d) for d in decisions) or '<span class="muted">—</span>'
            why = "<br>".join(text(d.get("reason", ""), 600) for d in decisions if d.get("reason"))
            items = [
                f'<div class="add">+ {text(i, 600)} {" ".join(self._badges(i, diff.name, code))}'
                "</div>"
                for i in diff.added
            ] + [
                f'<div class="del">− {text(i, 600)}</div>'
                + (
                    f" {badge('moved out: archive_search finds it', 'moved')}"
                    if item_key(i) in moved
                    else ""
                )
                for i in diff.removed
            ]
            kept = f'<div class="muted">{diff.kept} kept</div>' if diff.kept else ""
            rows.append(
                f"<tr><td><b>{text(diff.name)}</b></td><td>{ops}</td><td>{why}</td>"
                f"<td>{''.join(items)}{kept}</td></tr>"
            )
        for name, decisions in by_section.items():  # the size contract's, any other
            label = "whole document" if name == SIZE_DECISION_SECTION else name
            rows.append(
                f"<tr><td><b>{text(label)}</b></td><td>"
                + "<br>".join(_decision(d) for d in decisions)
                + "</td><td>"
                + "<br>".join(text(d.get("reason", ""), 600) for d in decisions)
                + "</td><td></td></tr>"
            )
        return (
            "<table class=\"diff\"><tr><th>section</th><th>writer's op → guard's decision</th>"
            "<th>why</th>"
            f"<th>items</th></tr>{''.join(rows)}</table>"
        )

    def _badges(self, item: str, section: str, code: Mapping[str, Any]) -> list[str]:
        return item_badges(item, section=section, code_items=_list(code, section), marks=self.marks)

    def _trails(self) -> str:
        paths = [str(p) for p in self.info.get("artifact_trail") or []]
        errors = [str(e) for e in self.info.get("error_trail") or []]
        out = ""
        if paths:
            out += f"<p><b>Paths added by code:</b> {text(', '.join(paths), 2_000)}</p>"
        if errors:
            out += (
                "<p><b>Errors added by code:</b></p><ul>"
                + "".join(f"<li>{text(e, 600)}</li>" for e in errors)
                + "</ul>"
            )
        return out

    def _fates(self) -> str:
        fates = self.fates
        if not fates:
            return '<p class="note">The capture check recorded no candidate statements.</p>'
        rows = "".join(_fate_row(f) for f in sorted(fates, key=_fate_order))
        table = (
            "<table><tr><th>fate</th><th>kind</th><th>section</th><th>statement</th>"
            f"<th>reason</th></tr>{rows}</table>"
        )
        return details(f"capture check: {len(fates)} statement(s) and their fates", table)

    def _repr_html_(self) -> str:
        return fragment(self.body())


def _fate_order(fate: Mapping[str, Any]) -> int:
    name = str(fate.get("fate"))
    return FATES.index(name) if name in FATES else len(FATES)


def _fate_row(fate: Mapping[str, Any]) -> str:
    name = str(fate.get("fate"))
    css = f' class="f-{name}"' if name in FATES else ""
    return (
        f"<tr><td{css}>{text(_FATE_LABELS.get(name, name), 60)}</td>"
        f"<td>{text(fate.get('kind'), 40)}</td><td>{text(fate.get('section'), 60)}</td>"
        f"<td>{text(fate.get('text'), 600)}</td><td>{text(fate.get('reason', ''), 300)}</td></tr>"
    )


def _list(code: Mapping[str, Any], name: str) -> Sequence[str]:
    value = code.get(name)
    return [str(v) for v in value] if isinstance(value, list) else []


def _decision(decision: Mapping[str, Any]) -> str:
    requested = text(decision.get("requested", "?"), 40)
    applied = text(decision.get("applied", "?"), 40)
    if not guard_changed(decision):
        return f"{requested}"
    if requested == applied:
        return f"{requested} {badge('guard', 'guard')}"
    return f"{requested} → <b>{applied}</b> {badge('guard', 'guard')}"
