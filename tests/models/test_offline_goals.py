"""The offline model folds older requests into "Earlier requests: …" lines and never cuts one
(SPEC §11: an item is never shortened with "…" so that a name, number or identifier is lost).

It once folded repeated requests of one kind into a pattern item ("The tests in … fail on CI
(3 such requests, latest: …)") that kept only the latest three values: the older test files
were gone from the document. Now every request stays whole, the folds never nest ("Earlier
requests: Earlier requests: …") and never grow past the item bound; what does not fit the
document is the size contract's to move out whole."""

from __future__ import annotations

from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.writer.offline._consolidate import consolidate_goals


def _rounds(n: int) -> list[str]:
    items = ["Fix the billing bugs before the 2026-12-20 release."]
    for r in range(n):
        items += [
            f"The tests in tests/unit/test_mod_{r}_{j}.py fail on CI. Fix them." for j in range(3)
        ]
        items.append(f"Add a changelog entry for PR-{r}")
        items = consolidate_goals(items, max_tokens=300, max_item_tokens=150)
    return items


def test_repeated_rounds_keep_every_request_whole_in_bounded_folds() -> None:
    items = _rounds(30)
    assert items[0] == "Fix the billing bugs before the 2026-12-20 release."
    text = "\n".join(items)
    assert "…" not in text
    assert "Earlier requests: Earlier requests:" not in text
    assert all(count_tokens(item) <= 150 for item in items)
    for r in range(30):
        assert f"PR-{r}" in text
        assert f"tests/unit/test_mod_{r}_2.py" in text


def test_a_folded_section_survives_another_round_unchanged() -> None:
    items = _rounds(10)
    assert consolidate_goals(items, max_tokens=300, max_item_tokens=150) == items
