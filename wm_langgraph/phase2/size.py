"""The stored document's size contract, as the commit pipeline applies it (private).

The limits come from the assemble budgets (``document.compaction.size_contract``); the compaction
itself is pure (``document.compaction.enforce_size_contract``). This module turns its result into
what the commit graph stores: the new text, the moved-out items (a store record that
``archive_search`` reads) and one decision for the guard log.
"""

from __future__ import annotations

from typing import Any

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import compute_budgets
from wm_langgraph.document.compaction import SizeContract, enforce_size_contract, size_contract
from wm_langgraph.document.sections import is_working_memory
from wm_langgraph.document.tokens import TokenCounter

__all__ = ["SIZE_DECISION_SECTION", "contract_for", "fit_to_contract"]

SIZE_DECISION_SECTION = "Working Memory"
"""The ``section`` of the decision that records a compaction (it concerns the whole document)."""


def contract_for(config: WorkingMemoryConfig) -> SizeContract:
    """The target and ceiling of the stored document under ``config``'s budgets."""
    budgets = compute_budgets(config.tokens, config.reserve_tokens, config.archive_memory_tokens)
    return size_contract(budgets.usable, config.archive_memory_tokens)


def fit_to_contract(
    text: str, prior: str, config: WorkingMemoryConfig, counter: TokenCounter
) -> tuple[str, list[dict[str, str]], dict[str, str] | None]:
    """Compact a merge result to the ceiling.

    Returns:
        The text to store, the items moved out of it (JSON-plain, oldest first), and a
        decision dict for the guard log (``None`` when nothing changed).
    """
    if not is_working_memory(text):
        return text, [], None
    contract = contract_for(config)
    ceiling = contract.ceiling
    result = enforce_size_contract(
        text,
        ceiling=ceiling,
        prior=prior,
        counter=counter,
        item_tokens=contract.limits.item_tokens,
    )
    if not result.steps:
        return text, [], None
    moved = [{"section": m.section, "text": m.text} for m in result.moved]
    reason = (
        f"compacted {result.tokens_before:,} -> {result.tokens:,} tokens (ceiling {ceiling:,}): "
        f"{', '.join(result.steps)}"
    )
    if moved:
        reason += (
            f"; moved {len(moved)} item(s) out of the document ({result.moved_total} in all), "
            "archive_search finds them"
        )
    decision: dict[str, Any] = {
        "section": SIZE_DECISION_SECTION,
        "requested": "STORE",
        "applied": "COMPACT",
        "reason": reason,
    }
    return result.text, moved, decision
