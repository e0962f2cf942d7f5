"""Fuzzing merge_working_memory: random and adversarial ops over random and canonical documents.

Properties (design §3.3 and §3.7, behaviour §3.5, §4):
- merge never raises for any mapping of ops, and always returns the canonical seven-section
  document with one decision per section, in order;
- merging nothing (or all KEEP) into its own output changes nothing;
- content of one section's op can never land in another section (header injection);
- old Errors items, old file paths, old Open Issues and Key Facts anchors survive any ops.
"""

from __future__ import annotations

import pytest
from _rel_checks import assert_seven_sections
from _rel_stats import count, fuzz_settings
from _rel_strategies import HEADER_LIKE, body, line, old_document, op, ops
from hypothesis import given
from hypothesis import strategies as st

from wm_langgraph.document import (
    SECTIONS,
    merge_working_memory,
    parse_working_memory,
    render_working_memory,
)

pytestmark = pytest.mark.fuzz


@fuzz_settings
@given(old=old_document, new_ops=ops)
def test_merge_always_returns_seven_sections_and_one_decision_per_section(old, new_ops):
    count("merge: shape")
    result = merge_working_memory(old, new_ops)
    assert_seven_sections(result.text)
    assert [d.section for d in result.decisions] == list(SECTIONS)
    for decision in result.decisions:
        assert isinstance(decision.requested, str)
        assert isinstance(decision.applied, str)
        assert isinstance(decision.reason, str)


@fuzz_settings
@given(old=old_document, new_ops=ops)
def test_merging_nothing_into_a_merged_document_is_a_fixed_point(old, new_ops):
    count("merge: fixed point")
    text = merge_working_memory(old, new_ops).text
    assert merge_working_memory(text, None).text == text
    assert merge_working_memory(text, {}).text == text
    assert merge_working_memory(text, {name: {"op": "KEEP"} for name in SECTIONS}).text == text


def _token(index: int) -> str:
    return f"QZX{index}PROVENANCE"


@st.composite
def _tagged_ops(draw: st.DrawFn) -> dict[str, dict[str, object]]:
    """One op per section whose payload carries that section's unique token, right after a
    header-like line that names another section."""
    result: dict[str, dict[str, object]] = {}
    for index, name in enumerate(SECTIONS):
        forged = draw(st.sampled_from(HEADER_LIKE))
        token = _token(index)
        kind = draw(st.sampled_from(["UPDATE", "APPEND", "KEEP"]))
        filler = draw(body)
        if kind == "UPDATE":
            result[name] = {"op": "UPDATE", "content": f"{filler}\n{forged}\n- {token} item"}
        elif kind == "APPEND":
            items = [*draw(st.lists(line, max_size=3)), f"{forged}\n{token}", f"- {token} b"]
            result[name] = {"op": "APPEND", "items": items}
        else:
            result[name] = {"op": "KEEP", "content": f"{forged}\n{token}"}
    return result


@fuzz_settings
@given(old=old_document, new_ops=_tagged_ops())
def test_content_of_one_section_never_lands_in_another(old, new_ops):
    count("merge: no header injection")
    result = merge_working_memory(old, new_ops)
    assert_seven_sections(result.text)
    parsed = parse_working_memory(result.text)
    for index, owner in enumerate(SECTIONS):
        token = _token(index)
        for name, text in parsed.items():
            if name != owner:
                assert token not in text, f"{owner}'s content leaked into {name}"


_PATHS = [
    "src/app.py",
    "lib/db/models.py",
    "docs/guide.md",
    "config/settings.toml",
    "scripts/deploy.sh",
    "https://example.com/api/v1/users",
    "web/static/main.css",
    "data/export.csv",
]


@st.composite
def _protected_document(draw: st.DrawFn) -> tuple[str, dict[str, list[str]]]:
    """A canonical document whose guarded sections hold recognisable items, and those items."""
    n_err = draw(st.integers(1, 5))
    n_issue = draw(st.integers(1, 5))
    n_fact = draw(st.integers(1, 6))
    paths = draw(st.lists(st.sampled_from(_PATHS), min_size=1, max_size=4, unique=True))
    errors = [f"error E{i}: the build broke on step {i}, fixed by pinning" for i in range(n_err)]
    issues = [f"issue I{i}: the importer still times out on batch {i}" for i in range(n_issue)]
    dates = [f"2024-0{1 + i % 9}-{10 + i:02d}" for i in range(n_fact)]
    facts = [f"decided on {date} to keep shard {i}" for i, date in enumerate(dates)]
    files = [f"{path} — needed for the answer" for path in paths]
    sections = {
        "Session Title": "Importer Migration Postgres Cutover",
        "Current State": draw(body),
        "Task & Goals": draw(body),
        "Key Facts & Decisions": "\n".join(f"- {f}" for f in facts),
        "Files & Context": "\n".join(f"- {f}" for f in files),
        "Errors & Corrections": "\n".join(f"- {e}" for e in errors),
        "Open Issues": "\n".join(f"- {i}" for i in issues),
    }
    protected = {"errors": errors, "issues": issues, "paths": paths, "dates": dates}
    return render_working_memory(sections), protected


_dropping_op = st.one_of(
    op,
    st.just({"op": "UPDATE", "content": ""}),
    st.just({"op": "UPDATE", "content": "- everything is fine now"}),
    st.builds(lambda b: {"op": "UPDATE", "content": b}, body),
    st.sampled_from(HEADER_LIKE).map(lambda h: {"op": "UPDATE", "content": f"{h}\n- gone"}),
)


@fuzz_settings
@given(
    doc=_protected_document(),
    new_ops=st.dictionaries(st.sampled_from(SECTIONS), _dropping_op, max_size=7),
)
def test_guarded_content_survives_any_ops(doc, new_ops):
    count("merge: guards keep old content")
    old, protected = doc
    result = merge_working_memory(old, new_ops)
    assert_seven_sections(result.text)
    new = parse_working_memory(result.text)
    for item in protected["errors"]:
        assert item in new["Errors & Corrections"], f"Errors item lost: {item!r}"
    for path in protected["paths"]:
        assert path in new["Files & Context"], f"path lost: {path!r}"
    for item in protected["issues"]:
        assert item in new["Open Issues"], f"Open Issue silently dropped: {item!r}"
    for date in protected["dates"]:
        assert date in result.text, f"Key Facts anchor lost from the document: {date!r}"


def test_huge_update_with_header_lines_stays_seven_sections():
    count("merge: huge inputs")
    lines = [
        HEADER_LIKE[i % len(HEADER_LIKE)] if i % 50 == 0 else f"- line {i} ü 東京"
        for i in range(20_000)
    ]
    content = "\n".join(lines)  # about 300k characters
    result = merge_working_memory(
        "", {name: {"op": "UPDATE", "content": content} for name in SECTIONS}
    )
    assert_seven_sections(result.text)
    assert "line 19999" in parse_working_memory(result.text)["Current State"]


def test_many_append_items_and_enormous_single_item():
    count("merge: huge inputs")
    items: list[object] = [f"## Open Issues {i}" for i in range(2_000)]
    items.append("x" * 1_000_000)
    result = merge_working_memory("", {"Errors & Corrections": {"op": "APPEND", "items": items}})
    assert_seven_sections(result.text)
    errors = parse_working_memory(result.text)["Errors & Corrections"]
    assert "Open Issues 1999" in errors
    assert "x" * 1_000_000 in errors


@pytest.mark.slow
@fuzz_settings
@given(
    doc=_protected_document(),
    rounds=st.lists(
        st.dictionaries(st.sampled_from(SECTIONS), _dropping_op, max_size=7), min_size=2, max_size=6
    ),
)
def test_over_many_rounds_errors_only_grow_and_paths_never_vanish(doc, rounds):
    count("merge: many rounds")
    text, protected = doc
    for ops_of_round in rounds:
        old = parse_working_memory(text)
        old_paths = [p for p in _PATHS if p in old["Files & Context"]]
        text = merge_working_memory(text, ops_of_round).text
        new = parse_working_memory(text)
        assert old["Errors & Corrections"] in new["Errors & Corrections"]
        for path in old_paths:
            assert path in new["Files & Context"], f"path lost: {path!r}"
    for date in protected["dates"]:
        assert date in text
