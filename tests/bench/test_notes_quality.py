"""``bench.notes_quality``: the duplicate and misplaced counts the integrator reports for the
real writer (issue 46)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bench.notes_quality import note_counts
from wm_langgraph.document.sections import render_working_memory

CLEAN = {
    "Session Title": "Billing service on PostgreSQL 16",
    "Current State": "Latest request: ok, next point (3).",
    "Task & Goals": "- Add a currency column to billing/models.py",
    "Key Facts & Decisions": "- We decided to use PostgreSQL 16 because it has row-level security\n"
    "- Maria owns the migration plan and wants the schema frozen by Wednesday",
    "Files & Context": "- `ops/deploy.sh` — the deploy script\n- `billing/models.py`",
    "Errors & Corrections": "- ops/deploy.sh fails on the ARM runners with 'exec format error' — "
    "fix: rebuilt the image with --platform linux/amd64",
    "Open Issues": "- [new] TODO: rotate the API keys before Friday",
}


def test_a_clean_document_has_no_duplicate_and_no_misplaced_item() -> None:
    counts = note_counts(render_working_memory(CLEAN))
    assert (counts.items, counts.duplicates, counts.misplaced) == (7, 0, 0)


def test_the_reported_document_counts_its_duplicates_and_misplaced_items() -> None:
    reported = dict(CLEAN)
    reported["Task & Goals"] += (
        "\n- The deploy script ops/deploy.sh fails on the ARM runners with 'exec format error'"
        "\n- Ok, next point (0)"
    )
    reported["Key Facts & Decisions"] += (
        "\n- User: We decided to use PostgreSQL 16 because it has row-level security"
    )
    reported["Files & Context"] += "\n- linux/amd64"
    reported["Open Issues"] += "\n- Noted: TODO: rotate the API keys before Friday"
    counts = note_counts(render_working_memory(reported))
    assert counts.duplicates == 2  # the User: copy and the Noted: copy
    # the error among the goals, the acknowledgement, the platform among the files
    assert counts.misplaced == 3
    assert {
        why for why, _, _ in note_counts(render_working_memory(reported), examples=9).examples
    } >= {
        "duplicate",
        "small talk",
        "not a file",
        "error outside Errors & Corrections",
    }


@given(
    marker=st.sampled_from(["", "[new] ", "[restored] "]),
    prefix=st.sampled_from(["", "User: ", "Noted: "]),
    section=st.sampled_from(["Key Facts & Decisions", "Task & Goals"]),
)
def test_a_copy_under_a_marker_or_a_speaker_is_one_more_duplicate(
    marker: str, prefix: str, section: str
) -> None:
    copied = dict(CLEAN)
    said = "Maria owns the migration plan and wants the schema frozen by Wednesday"
    copied[section] += f"\n- {marker}{prefix}{said}"
    assert note_counts(render_working_memory(copied)).duplicates == 1
