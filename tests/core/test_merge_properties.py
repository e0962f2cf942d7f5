"""Property tests for merge_working_memory: random old documents, random (also malformed) ops.

Run longer with ``WM_HYPOTHESIS_PROFILE=long`` (profiles in tests/conftest.py).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wm_langgraph.document import (
    SECTIONS,
    merge_working_memory,
    parse_working_memory,
    render_working_memory,
)
from wm_langgraph.document.guards import CONSOLIDATION_SENTINEL, DROPPED_MARKER
from wm_langgraph.document.guards.open_issues import is_resolved
from wm_langgraph.document.sections import item_key, normalise_working_memory, section_items
from wm_langgraph.document.text import (
    extract_anchors,
    extract_paths,
    missing_anchors,
    normalise_path,
)

pytestmark = pytest.mark.fuzz

# ---------------------------------------------------------------------------------------------
# Strategies
# ---------------------------------------------------------------------------------------------

WORDS = st.sampled_from(
    [
        "Alice",
        "budget",
        "port 5432",
        "port 5433",
        "FACT-017",
        "v2.3.1",
        "HTTP 429",
        "2024-03-15",
        "15 March 2024",
        "$200",
        "3 months",
        "because",
        "src/db.py",
        "docs/setup.md",
        "web/App.tsx",
        "https://example.com/x",
        "and/or",
        "media/search",
        "预算200元",
        "2024年3月15日",
        "北京",
        "fix",
        "prefix",
        "Fact 1",
        "Fact 10",
        "[resolved]",
        "[new]",
        DROPPED_MARKER,
        "_template_",
        "`code`",
        "**bold**",
        "~~strike~~",
    ]
)
HEADERS = st.sampled_from(
    [f"## {name}" for name in SECTIONS]
    + ["# Working Memory", "## Unknown", "##Errors & Corrections", " ## Open Issues", "###"]
)
PHRASE = st.lists(WORDS | st.text(min_size=1, max_size=12), min_size=1, max_size=6).map(" ".join)
LINE = st.one_of(
    PHRASE.map(lambda p: f"- {p}"),
    PHRASE,
    HEADERS,
    st.just(""),
    st.just("_A template description line_"),
    st.text(max_size=30),
)
BODY = st.lists(LINE, max_size=8).map("\n".join)
OLD_DOC = st.one_of(
    st.fixed_dictionaries(dict.fromkeys(SECTIONS, BODY)).map(render_working_memory),
    st.text(max_size=200),
    st.lists(st.one_of(LINE, HEADERS), max_size=20).map("\n".join),
)
ITEM = st.one_of(PHRASE, LINE, st.none(), st.integers(), st.booleans(), st.just({"x": 1}))
OP = st.one_of(
    st.sampled_from(["KEEP", "keep", "Update", "APPEND", "DELETE", ""]).map(lambda o: {"op": o}),
    st.builds(lambda o, c: {"op": o, "content": c}, st.sampled_from(["UPDATE", "update"]), BODY),
    st.builds(
        lambda o, i: {"op": o, "items": i}, st.sampled_from(["APPEND", "append"]), st.lists(ITEM)
    ),
    st.just({"op": "UPDATE", "content": None}),
    st.just({"op": "APPEND", "items": "single"}),
    st.none(),
    st.integers(),
    st.text(max_size=10),
    st.lists(st.integers(), max_size=3),
)
SECTION_KEY = st.sampled_from(list(SECTIONS)) | st.sampled_from(
    ["session title", "Task and Goals", "sections", "bogus"]
)
OPS = st.one_of(
    st.dictionaries(SECTION_KEY, OP, max_size=9),
    st.dictionaries(SECTION_KEY, OP, max_size=9).map(lambda d: {"sections": d}),
    st.none(),
    st.integers(),
    st.text(max_size=20),
    st.lists(OP, max_size=3),
)

# ---------------------------------------------------------------------------------------------
# Helpers (what "kept" means, stated independently of the guards' code)
# ---------------------------------------------------------------------------------------------

_HEADER = re.compile(r"^##[ \t]+\S")


def _headers(text: str) -> list[str]:
    return [line for line in text.splitlines() if _HEADER.match(line)]


def _issue_norm(text: str) -> str:
    text = re.sub(r"[*~`_]+", "", text)
    return re.sub(r"\s+", " ", text).strip().casefold()


def _issue_kept(item: str, new_body: str) -> bool:
    core = _issue_norm(re.sub(r"^(?:\[[^\]\n]{0,40}\]\s*)+", "", item.strip()))
    core = core.rstrip(" .;:,!?")[:16].rstrip()
    return not core or core in _issue_norm(new_body)


def _paths_kept(old_body: str, new_body: str) -> list[str]:
    new = {normalise_path(p) for p in extract_paths(new_body)}
    return [
        p
        for p in extract_paths(old_body)
        if normalise_path(p) not in new
        and not any(n.endswith("/" + normalise_path(p)) for n in new)
    ]


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
@given(old=OLD_DOC, ops=OPS, guards=st.booleans())
def test_merge_never_raises_and_always_has_seven_sections(old: str, ops: Any, guards: bool):
    result = merge_working_memory(old, ops, guards=guards)
    assert _headers(result.text) == [f"## {name}" for name in SECTIONS]
    assert list(parse_working_memory(result.text)) == list(SECTIONS)
    assert normalise_working_memory(result.text) == result.text
    assert [d.section for d in result.decisions] == list(SECTIONS)
    for d in result.decisions:
        assert d.applied in {"KEEP", "UPDATE", "APPEND"}
        assert (d.reason == "") <= (d.requested == d.applied)


@given(old=OLD_DOC, ops=OPS)
def test_guarded_sections_never_lose_items(old: str, ops: Any):
    before = parse_working_memory(normalise_working_memory(old))
    after = parse_working_memory(merge_working_memory(old, ops).text)

    errors_after = {item_key(i) for i in section_items(after["Errors & Corrections"])}
    for item in section_items(before["Errors & Corrections"]):
        assert item_key(item) in errors_after, item

    assert _paths_kept(before["Files & Context"], after["Files & Context"]) == []

    for item in section_items(before["Open Issues"]):
        if is_resolved(item):
            continue  # an item already marked resolved may leave (the guard's rule)
        if not item.startswith(DROPPED_MARKER):
            # an open item may leave by moving to Errors & Corrections as a fix (the guard's rule)
            kept = _issue_kept(item, after["Open Issues"])
            assert kept or _issue_kept(item, after["Errors & Corrections"]), item


@given(old=OLD_DOC, ops=OPS)
def test_key_facts_anchors_survive_somewhere_in_the_document(old: str, ops: Any):
    before = parse_working_memory(normalise_working_memory(old))["Key Facts & Decisions"]
    text = merge_working_memory(old, ops).text
    facts = "\n".join(i for i in section_items(before) if i != CONSOLIDATION_SENTINEL)
    assert missing_anchors(extract_anchors(facts, include_markers=False), text) == set()


@given(old=OLD_DOC)
def test_keep_everything_is_the_normalised_old_document(old: str):
    result = merge_working_memory(old, {name: {"op": "KEEP"} for name in SECTIONS})
    assert result.text == normalise_working_memory(old)
    assert all(d.reason == "" for d in result.decisions)


@given(
    old=OLD_DOC,
    section=st.sampled_from(SECTIONS),
    injected=st.lists(HEADERS, min_size=1, max_size=4).map("\n".join),
    as_append=st.booleans(),
)
def test_header_like_lines_never_add_sections(
    old: str, section: str, injected: str, as_append: bool
):
    op = (
        {"op": "APPEND", "items": [injected, f"x\n{injected}"]}
        if as_append
        else {"op": "UPDATE", "content": f"text\n{injected}\nmore"}
    )
    for guards in (True, False):
        text = merge_working_memory(old, {section: op}, guards=guards).text
        assert _headers(text) == [f"## {name}" for name in SECTIONS]


@given(
    facts=st.lists(PHRASE, min_size=3, max_size=30),
    data=st.data(),
    other=st.dictionaries(SECTION_KEY, OP, max_size=4),
)
def test_lossy_key_facts_rewrite_never_loses_an_anchor(facts: list[str], data: Any, other: Any):
    """A model that keeps a random subset of Key Facts (and may add lines) loses no anchor."""
    old = render_working_memory({"Key Facts & Decisions": "\n".join(f"- {f}" for f in facts)})
    kept = [f for f in facts if data.draw(st.booleans())]
    extra = data.draw(st.lists(PHRASE, max_size=3))
    content = "\n".join(f"- {line}" for line in [*kept, *extra])
    ops = {**other, "Key Facts & Decisions": {"op": "UPDATE", "content": content}}
    text = merge_working_memory(old, ops).text
    before = parse_working_memory(old)["Key Facts & Decisions"]
    facts_text = "\n".join(i for i in section_items(before) if i != CONSOLIDATION_SENTINEL)
    assert missing_anchors(extract_anchors(facts_text, include_markers=False), text) == set()
