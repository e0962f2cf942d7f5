"""Property: whatever the writer's ops, the items a version badges as the memory's are exactly
the items its records (and the records of earlier versions, for the items that stood since) say
the memory wrote (issue 48, SPEC §11: marks come from records)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wm_langgraph.display.marks import VersionRecord, marks_by_version
from wm_langgraph.display.working_memory import item_badges
from wm_langgraph.document import SECTIONS, merge_working_memory, render_working_memory
from wm_langgraph.document.compaction import moved_marker
from wm_langgraph.document.guards import (
    CONSOLIDATION_SENTINEL,
    DROPPED_MARKER,
    RESTORED_MARKER,
    SEED_LIMITS,
    SUPERSEDED_PREFIX,
)
from wm_langgraph.document.sections import item_key, parse_working_memory, section_items

pytestmark = pytest.mark.fuzz

KF, ERRORS, ISSUES = "Key Facts & Decisions", "Errors & Corrections", "Open Issues"
FACTS = [
    *(f"server host-{i} listens on port {9000 + i}" for i in range(8)),
    "server host-1 listens on port 9100",
    "Owen lives in Porto",
    "Owen lives in Ghent",
    "the deploy key is in the public bucket",
    "the release is on 2024-03-15",
]
ISSUE_TEXTS = [
    "rotate the deploy key",
    "renew the TLS cert for host-2",
    "fix FACT-017",
    "[resolved] ship v2",
]
TYPED = st.sampled_from(
    ["", "", f"{RESTORED_MARKER} ", f"{DROPPED_MARKER} ", f"{SUPERSEDED_PREFIX} ", "Decision: "]
)
TINY = replace(SEED_LIMITS, bullets=2, tokens=40, max_append=1)
ODD = st.sampled_from([CONSOLIDATION_SENTINEL, moved_marker(3), f"{RESTORED_MARKER} typed"])


def _items(pool: list[str], least: int = 0) -> st.SearchStrategy[list[str]]:
    one = st.one_of(st.builds(lambda m, t: f"{m}{t}", TYPED, st.sampled_from(pool)), ODD)
    return st.lists(one, min_size=least, max_size=8, unique=True)


@st.composite
def _document(draw: Any) -> str:
    return render_working_memory(
        {
            "Session Title": "Servers",
            KF: "\n".join(f"- {i}" for i in draw(_items(FACTS, 3))),
            ERRORS: "\n".join(f"- {i}" for i in draw(_items(FACTS))),
            ISSUES: "\n".join(f"- {i}" for i in draw(_items(ISSUE_TEXTS))),
        }
    )


@st.composite
def _ops(draw: Any, old: str) -> dict[str, Any]:
    """Per section: KEEP, an UPDATE that loses some old items and adds (typed) ones, or an
    APPEND of (typed) items."""
    bodies = parse_working_memory(old)
    ops: dict[str, Any] = {}
    for name, pool in ((KF, FACTS), (ERRORS, FACTS), (ISSUES, ISSUE_TEXTS)):
        kind = draw(st.sampled_from(["KEEP", "UPDATE", "APPEND"]))
        new = draw(_items(pool))
        if kind == "UPDATE":
            old_items = section_items(bodies[name])
            # a rewrite that loses one or two items (what the guards restore), or most of them
            lost = draw(st.lists(st.sampled_from(old_items), max_size=2)) if old_items else []
            if draw(st.booleans()):
                lost = old_items[len(lost) :]
            kept = [i for i in old_items if i not in lost]
            ops[name] = {"op": "UPDATE", "content": "\n".join(f"- {i}" for i in [*kept, *new])}
        elif kind == "APPEND":
            ops[name] = {"op": "APPEND", "items": new}
        else:
            ops[name] = {"op": "KEEP"}
    return ops


def _places(document: str) -> dict[tuple[str, str], str]:
    bodies = parse_working_memory(document)
    return {(n, item_key(i)): i for n in SECTIONS for i in section_items(bodies[n])}


def _recorded(decisions: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(str(d["section"]), item_key(i)) for d in decisions for i in d["items"]}


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_badged_items_are_exactly_the_recorded_ones(data: Any) -> None:
    old = data.draw(_document())
    conversation = data.draw(st.sampled_from([None, "host-1 now listens on port 9100"]))
    # the seed's limits, or limits so small that an APPEND to Key Facts gets the sentinel
    limits = data.draw(st.sampled_from([SEED_LIMITS, TINY]))
    texts, decisions = [old], [[]]
    for _ in range(2):
        ops = data.draw(_ops(texts[-1]))
        merged = merge_working_memory(texts[-1], ops, conversation=conversation, limits=limits)
        texts.append(merged.text)
        decisions.append([d.as_dict() for d in merged.decisions])
    marks = marks_by_version([VersionRecord(t, d) for t, d in zip(texts, decisions, strict=True)])
    expected: dict[tuple[str, str], int] = {}
    for number, (text, records) in enumerate(zip(texts, decisions, strict=True), start=1):
        present = _places(text)
        assert _recorded(records) <= present.keys()  # what is recorded was written, as written
        expected = {place: n for place, n in expected.items() if place in present}
        for place in _recorded(records):
            expected.setdefault(place, number)
        assert dict(marks[number - 1].written) == expected
        vouched = marks[number - 1]
        for (section, _), item in present.items():
            badges = " ".join(item_badges(item, section=section, marks=vouched))
            claimed = any(
                w in badges for w in ("by a guard", "superseded", "moved", "not recorded")
            )
            assert claimed == ((section, item_key(item)) in expected), (section, item)
