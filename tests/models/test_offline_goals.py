"""The offline model folds repeated requests of one kind into one pattern item that keeps a running
count (after 1,000 commits of the benchmark's session Task & Goals read "… (3 such requests; latest:
… … (4 such requests; latest: …", each round splitting the last round's pattern at its "; ")."""

from __future__ import annotations

import re

from wm_langgraph.writer.offline._consolidate import consolidate_goals


def _rounds(n: int) -> list[str]:
    items = ["Fix the billing bugs before the 2026-12-20 release."]
    for r in range(n):
        items += [
            f"The tests in tests/unit/test_mod_{r}_{j}.py fail on CI. Fix them." for j in range(3)
        ]
        items.append(f"Add a changelog entry for PR-{r}")
        items = consolidate_goals(items, max_tokens=300)
    return items


def test_repeated_rounds_keep_one_pattern_item_per_kind_with_the_running_count() -> None:
    items = _rounds(30)
    assert items[0] == "Fix the billing bugs before the 2026-12-20 release."
    text = "\n".join(items)
    assert len(re.findall(r"such requests", text)) == 2  # one item per kind, never nested
    assert items[1].startswith("Earlier requests: ")
    folded = items[1].removeprefix("Earlier requests: ").split("; ")
    counts = [
        int(m.group(1)) if (m := re.search(r"\((\d+) such requests", f)) else 1 for f in folded
    ]
    assert sum(counts) + len(items[2:]) == 30 * 4  # every request counted once, old or recent
    assert "(3 such requests; latest" not in text
    assert "… … …" not in text
    assert "PR-27" in text
    assert "tests/unit/test_mod_27_2.py" in text


def test_a_pattern_item_survives_another_round_unchanged() -> None:
    items = _rounds(10)
    assert consolidate_goals(items, max_tokens=300) == items
