"""No item grows without bound (SPEC §11): whatever a writer's ops, the merge and the size
contract never join clauses onto an item past the memory's item bound
(``SectionLimits.item_tokens``); they start another item instead and never cut a clause.

What a writer itself writes is its own: an item the writer wrote longer than the bound is
stored as written (never shortened, never split by code: the guards judge the writer's items as
written), and the size contract moves it out whole when the document is over its ceiling. So
the property: every item of the merged and compacted document is within the bound, or is one
clause (it cannot be split without cutting it), or is the writer's own item (old or new), whole
or with repeated clauses taken out — never clauses of several items joined, and never a
restore that brings back more than the bound in one item.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wm_langgraph.document.compaction import enforce_size_contract
from wm_langgraph.document.guards.key_facts import (
    RESTORED_MARKER,
    clauses,
    salvage_clauses,
    settle_vanished_facts,
)
from wm_langgraph.document.guards.sizes import (
    ITEM_SHARE,
    SectionLimits,
    pack_clauses,
    section_limits,
)
from wm_langgraph.document.merge import merge_working_memory
from wm_langgraph.document.sections import (
    SECTIONS,
    normalise_working_memory,
    parse_working_memory,
    render_working_memory,
    section_items,
)
from wm_langgraph.document.tokens import count_tokens

pytestmark = pytest.mark.fuzz

_WORDS = st.sampled_from(
    [
        "the",
        "team",
        "moved",
        "release",
        "build",
        "because",
        "server",
        "budget",
        "Alice",
        "Bergen",
        "Porto",
        "chess",
        "pottery",
        "harbour",
        "tuesday",
        "config",
        "deploy",
        "staging",
        "weekly",
        "review",
    ]
)
_ANCHORS = st.one_of(
    st.integers(1, 400).map(lambda n: f"FACT-{n:03d}"),
    st.integers(1000, 9999).map(lambda n: f"port {n}"),
    st.sampled_from(["Owen", "Priya", "Kyoto", "v2.3.1", "src/db.py", "2024-03-15"]),
)
CLAUSE = st.tuples(st.lists(_WORDS, min_size=3, max_size=14), _ANCHORS).map(
    lambda t: " ".join([*t[0][:2], t[1], *t[0][2:]])
)
ITEM = st.lists(CLAUSE, min_size=1, max_size=12).map("; ".join)
BODY = st.lists(ITEM, min_size=0, max_size=6)


@st.composite
def op_for(draw: st.DrawFn, old_items: list[str]) -> dict[str, object]:
    kind = draw(st.sampled_from(["KEEP", "UPDATE", "APPEND"]))
    if kind == "KEEP":
        return {"op": "KEEP"}
    kept = draw(st.lists(st.sampled_from(old_items), max_size=len(old_items))) if old_items else []
    new = draw(st.lists(ITEM, max_size=4))
    if kind == "APPEND":
        return {"op": "APPEND", "items": new}
    return {"op": "UPDATE", "content": "\n".join(f"- {i}" for i in [*kept, *new])}


_MARKS_RE = re.compile(
    r"^(?:\[(?:restored|silently dropped, restored|new)\]\s*|superseded:\s*)+", re.IGNORECASE
)


def _clause_keys(text: str) -> list[str]:
    return [" ".join(c.split()).casefold().strip(" .;") for c in clauses(text)]


def allowed_long(item: str, written: list[str]) -> bool:
    """An item over the bound is fine when it is one clause, or the writer's own item (whole,
    or with some of its clauses taken out), never when a restore brought it back."""
    if len(clauses(item)) <= 1:
        return True
    text = _MARKS_RE.sub("", item)
    mine = _clause_keys(text)
    for own in written:
        theirs = _clause_keys(own)
        if mine == theirs:
            return True  # the writer's item, whole (also a whole bullet restored as it was)
        if not item.startswith(RESTORED_MARKER) and set(mine) <= set(theirs):
            return True
    return False


@given(
    old=st.fixed_dictionaries(dict.fromkeys(SECTIONS[2:], BODY)),
    data=st.data(),
    tokens=st.integers(200, 1_500),
    squeeze=st.floats(0.5, 1.1),
)
@settings(max_examples=25, deadline=None)
def test_merge_and_size_contract_never_join_past_the_item_bound(
    old: dict[str, list[str]], data: st.DataObject, tokens: int, squeeze: float
) -> None:
    limits = SectionLimits(tokens=tokens)
    bound = limits.item_tokens
    bodies = {name: "\n".join(f"- {i}" for i in items) for name, items in old.items()}
    document = normalise_working_memory(
        render_working_memory({"Session Title": "Port inventory", **bodies})
    )
    ops = {name: data.draw(op_for(old[name]), label=name) for name in old}
    merged = merge_working_memory(document, ops, limits=limits).text
    ceiling = max(200, int(count_tokens(merged) * squeeze))
    result = enforce_size_contract(merged, ceiling=ceiling, item_tokens=bound).text
    written = [i for items in old.values() for i in items]
    for op in ops.values():
        written += [str(i) for i in op.get("items", [])]  # type: ignore[attr-defined]
        written += section_items(str(op.get("content", "")))  # type: ignore[attr-defined]
    for name, body in parse_working_memory(result).items():
        if name in ("Session Title", "Current State"):
            continue
        for item in section_items(body):
            assert count_tokens(item) <= bound or allowed_long(item, written), (name, item)


def test_the_bound_is_a_share_of_the_section_threshold() -> None:
    for target in (1_000, 2_720, 12_000, 48_000):
        limits = section_limits(target)
        assert limits.item_tokens == round(ITEM_SHARE * limits.tokens)
    assert section_limits(12_000).item_tokens == 225  # the seed's 1,500 tokens
    assert section_limits(2_720).item_tokens == 150  # an 8k window: the floor's 1,000


@given(parts=st.lists(CLAUSE, max_size=30), bound=st.integers(20, 300))
def test_packing_keeps_every_clause_in_order_and_each_item_within_the_bound(
    parts: list[str], bound: int
) -> None:
    items = pack_clauses(parts, bound, prefix="Ana (3 May 2023): ")
    assert [c for i in items for c in clauses(i.removeprefix("Ana (3 May 2023): "))] == [
        c for p in parts for c in clauses(p)
    ]
    for item in items:
        assert count_tokens(item) <= bound or len(clauses(item)) == 1


def test_a_restore_of_many_vanished_clauses_is_split_at_the_bound() -> None:
    old = "; ".join(f"FACT-{n:03d} the staging server moved to port {8000 + n}" for n in range(30))
    settled = settle_vanished_facts(
        [old], "- something else", "- something else", max_item_tokens=150
    )
    assert len(settled.restored) > 1
    for item in settled.restored:
        assert item.startswith(RESTORED_MARKER)
        assert count_tokens(item) <= 150
    restored = "\n".join(settled.restored)
    assert all(f"FACT-{n:03d}" in restored for n in range(30))


def test_a_salvage_of_a_long_bullet_is_split_at_the_bound() -> None:
    bullet = "; ".join(f"FACT-{n:03d} the team picked port {8000 + n}" for n in range(30))
    salvaged = salvage_clauses("- FACT-999 the old fact", [bullet], max_item_tokens=150)
    assert len(salvaged) > 1
    assert all(count_tokens(item) <= 150 for item in salvaged)
    assert all(f"FACT-{n:03d}" in "\n".join(salvaged) for n in range(30))
