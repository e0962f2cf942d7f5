"""The offline model's Files & Context consolidation regroups its own output without
stacking labels ("(other): (other): … (other) …" grew by one label per round in a
1,000-commit coding session, from commit 66 on)."""

from __future__ import annotations

from wm_langgraph.document.sections import section_items
from wm_langgraph.document.text import extract_paths
from wm_langgraph.writer.offline._consolidate import consolidate_files

ENTRIES = [
    "`src/db/feature_flags.py` — read (via read_file)",
    "`config/refunds.toml` — read (via read_file)",
    "`config/cache_keys.toml` — read, edited (via read_file, edit_file)",
    "command `pytest -q --durations=3`",
    "`pyproject.toml` — seen in output (via run_command)",
    "`.env.local` — seen in output (via run_command)",
    "command `git status --short`",
]


def test_a_second_round_rebuilds_the_same_groups() -> None:
    once = consolidate_files("", ENTRIES)
    assert any(line.startswith("- (other): ") for line in once.splitlines())
    twice = consolidate_files(once, [])
    assert twice == once
    assert "(other): (other)" not in consolidate_files(twice, ["`README.md` — read"])


def test_regrouping_keeps_every_path_and_command_as_its_own_entry() -> None:
    once = consolidate_files("", ENTRIES)
    again = consolidate_files(once, ["`docs/x.md` — read"])
    for entry in ENTRIES:
        assert entry in again
    assert set(extract_paths(once)) <= set(extract_paths(again))
    assert len(section_items(again)) == len(section_items(once)) + 1


def test_a_group_of_bare_names_under_its_folder_is_split_back_into_its_names() -> None:
    # `git branch --show-current` output is recorded as bare "feature/…" names; a second round
    # must rebuild the same group, not treat the whole group as one long entry and shorten it.
    body = "- feature/: feature/billing-400; feature/billing-401; feature/billing-402\n"
    again = consolidate_files(body, ["`src/app.py` — read"])
    assert "- feature/: feature/billing-400; feature/billing-401; feature/billing-402" in again
    assert "…" not in again
    assert consolidate_files(again, []) == again
