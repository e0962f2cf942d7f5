"""Section thresholds that follow the Working Memory's size target (SPEC §10): one value,
read by the Key Facts guard's throttle and sentinel, the update prompt's size warnings, the
offline writer's consolidation and the capture check; the seed's 25 bullets / 1,500 tokens /
5 per round at the default size."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.compaction import size_contract
from wm_langgraph.document.guards import (
    CONSOLIDATION_SENTINEL,
    SEED_LIMITS,
    SectionLimits,
    SectionOp,
    guard_section,
    section_limits,
    section_size,
)
from wm_langgraph.document.guards.sizes import (
    MIN_APPEND,
    MIN_BULLETS,
    MIN_CODE_UNITS,
    MIN_TOKENS,
    SEED_MEMORY_TOKENS,
)
from wm_langgraph.document.merge import merge_working_memory
from wm_langgraph.document.protocol import section_size_warnings
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.phase2.size import contract_for
from wm_langgraph.writer.offline._consolidate import consolidate_facts
from wm_langgraph.writer.offline._plan import warned_section_limits

FACTS = "Key Facts & Decisions"


def _facts(n: int, prefix: str = "fact") -> str:
    return "\n".join(f"- {prefix} {i}: port {5000 + i}" for i in range(n))


def _document(facts: str) -> str:
    body = dict.fromkeys(SECTIONS, "")
    body["Session Title"] = "Port inventory"
    body[FACTS] = facts
    return render_working_memory(body)


def _limits_at(budget: int, **config: int) -> SectionLimits:
    return contract_for(WorkingMemoryConfig(token_budget=budget, **config)).limits


# ------------------------------------------------------------------------------ the rule


def test_the_default_configuration_reproduces_the_seed_exactly() -> None:
    limits = _limits_at(128_000)
    assert limits == section_limits(SEED_MEMORY_TOKENS)
    assert (limits.bullets, limits.tokens, limits.max_append, limits.code_units) == (25, 1500, 5, 6)
    assert limits.scale == 1.0
    assert SectionLimits() == SEED_LIMITS
    assert (SEED_LIMITS.bullets, SEED_LIMITS.tokens, SEED_LIMITS.max_append) == (25, 1500, 5)


@pytest.mark.parametrize(
    ("budget", "bullets", "tokens", "append"),
    [
        (4_000, MIN_BULLETS, MIN_TOKENS, MIN_APPEND),  # target 1,360: the floors
        (8_000, MIN_BULLETS, MIN_TOKENS, MIN_APPEND),  # target 2,720: the floors
        (16_000, MIN_BULLETS, MIN_TOKENS, MIN_APPEND),  # target 5,440: 0.453 of the seed
        (32_000, 23, 1_360, 5),  # target 10,880
        (128_000, 25, 1_500, 5),  # target 12,000: the seed
        (1_000_000, 25, 1_500, 5),  # the target stays 12,000 by default
    ],
)
def test_the_thresholds_at_each_budget_follow_the_size_target(
    budget: int, bullets: int, tokens: int, append: int
) -> None:
    limits = _limits_at(budget)
    assert (limits.bullets, limits.tokens, limits.max_append) == (bullets, tokens, append)


def test_a_larger_memory_gets_larger_thresholds() -> None:
    # 1M window with a 32,000-token WM layer: target 48,000 = 4x the seed's memory
    limits = _limits_at(1_000_000, archive_memory_tokens=32_000)
    assert limits.scale == 4.0
    assert (limits.bullets, limits.tokens, limits.max_append, limits.code_units) == (
        100,
        6_000,
        20,
        24,
    )


@given(st.integers(min_value=1, max_value=10_000_000))
def test_the_rule_is_monotone_and_never_under_its_floors(target: int) -> None:
    small, large = section_limits(target), section_limits(target + 1_000)
    floors = (MIN_BULLETS, MIN_TOKENS, MIN_APPEND, MIN_CODE_UNITS)
    for limits in (small, large):
        values = (limits.bullets, limits.tokens, limits.max_append, limits.code_units)
        assert all(v >= f for v, f in zip(values, floors, strict=True))
    assert small.bullets <= large.bullets
    assert small.tokens <= large.tokens
    assert small.max_append <= large.max_append
    assert small.code_units <= large.code_units


@given(
    st.integers(min_value=1, max_value=1_000_000),
    st.integers(min_value=0, max_value=64),
    st.integers(min_value=0, max_value=100_000),
)
def test_a_dense_round_lifts_a_capture_bound_up_to_one_section_never_beyond(
    target: int, bound: int, units: int
) -> None:
    limits = section_limits(target)
    got = limits.capture_bound(bound, units)
    assert got >= bound
    assert got <= max(bound, limits.bullets)


def test_bad_values_are_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        section_limits(0)
    with pytest.raises(ValueError, match="positive"):
        SectionLimits(bullets=0)


def test_the_size_contract_carries_its_limits() -> None:
    contract = size_contract(6_800, 8_000)
    assert contract.limits == section_limits(contract.target)


# ----------------------------------------------------------------------- the Key Facts guard


def _append(old: str, n: int, limits: SectionLimits) -> tuple[str, str]:
    op = SectionOp("APPEND", items=tuple(f"new fact {i}: code FX-{i}" for i in range(n)))
    outcome = guard_section(FACTS, old, op, limits=limits)
    return outcome.op.kind, outcome.reason


@pytest.mark.parametrize("budget", [8_000, 128_000, 1_000_000])
def test_the_throttle_accepts_the_scaled_count_once_oversized(budget: int) -> None:
    limits = _limits_at(budget)
    old = _facts(limits.bullets + 1)
    op = SectionOp("APPEND", items=tuple(f"new fact {i}: code FX-{i}" for i in range(40)))
    outcome = guard_section(FACTS, old, op, limits=limits)
    assert outcome.op.items == op.items[: limits.max_append]
    assert f"accepted {limits.max_append} of 40 new items" in outcome.reason


def test_at_the_default_size_the_throttle_is_five_and_the_sentinel_at_twice() -> None:
    limits = _limits_at(128_000)
    assert _append(_facts(25), 8, limits) == ("APPEND", "")  # at the threshold: not oversized
    assert "accepted 5 of 8" in _append(_facts(26), 8, limits)[1]
    assert _append(_facts(50), 8, limits)[1].startswith("Key Facts oversized")  # 2x: not yet
    outcome = guard_section(FACTS, _facts(51), SectionOp("APPEND", items=("x 1",)), limits=limits)
    assert outcome.op.items == (CONSOLIDATION_SENTINEL,)


def test_a_small_memory_reaches_its_sentinel_where_the_seed_would_not() -> None:
    limits = _limits_at(8_000)
    old = _facts(2 * limits.bullets + 1)
    assert not SEED_LIMITS.emergency(section_size(old))
    small = guard_section(FACTS, old, SectionOp("APPEND", items=("x 1",)), limits=limits)
    assert small.op.items == (CONSOLIDATION_SENTINEL,)
    seed = guard_section(FACTS, old, SectionOp("APPEND", items=("x 1",)))
    assert seed.op.items == ("x 1",)


def test_a_large_memory_takes_what_the_seed_would_throttle() -> None:
    limits = _limits_at(1_000_000, archive_memory_tokens=32_000)
    old = _facts(40)
    assert _append(old, 12, limits) == ("APPEND", "")
    assert "accepted 5 of 12" in _append(old, 12, SEED_LIMITS)[1]


def test_the_merge_passes_the_limits_to_the_guard() -> None:
    limits = _limits_at(8_000)
    old = _document(_facts(limits.bullets + 1))
    ops = {FACTS: {"op": "APPEND", "items": [f"merged {i}: id MX-{i}" for i in range(9)]}}
    result = merge_working_memory(old, ops, limits=limits)
    decision = next(d for d in result.decisions if d.section == FACTS)
    assert f"accepted {limits.max_append} of 9" in decision.reason
    assert "accepted 5 of 9" in next(
        d.reason
        for d in merge_working_memory(_document(_facts(26)), ops).decisions
        if d.section == FACTS
    )


# ----------------------------------------------------------------------- the prompt warnings


def test_the_default_warning_text_is_the_seeds() -> None:
    block = section_size_warnings(_document(_facts(26)), target_tokens=12_000)
    assert "(limits: 25 bullets, 1,500 tokens)" in block
    assert "target at most 25 bullets and 1,500 tokens" in block
    assert "Keep each bullet within 225 tokens" in block  # the item bound
    assert section_size_warnings(_document(_facts(25)), target_tokens=12_000) == ""
    # without a target: the seed's
    assert "(limits: 25 bullets, 1,500 tokens)" in section_size_warnings(_document(_facts(26)))


def test_a_small_target_warns_at_its_own_limits() -> None:
    target = size_contract(6_800, 8_000).target
    limits = section_limits(target)
    block = section_size_warnings(_document(_facts(limits.bullets + 1)), target_tokens=target)
    assert f"(limits: {limits.bullets} bullets, {limits.tokens:,} tokens)" in block
    assert f"target at most {limits.bullets} bullets" in block
    assert f"Keep each bullet within {limits.item_tokens} tokens" in block
    assert section_size_warnings(_document(_facts(limits.bullets)), target_tokens=target) == ""


def test_a_large_target_does_not_warn_where_the_seed_would() -> None:
    document = _document(_facts(40))
    assert section_size_warnings(document, target_tokens=48_000) == ""
    assert "Key Facts & Decisions: 40 bullets" in section_size_warnings(document)


def test_explicit_limits_win_over_the_target() -> None:
    limits = SectionLimits(bullets=3, tokens=10_000)
    block = section_size_warnings(_document(_facts(4)), target_tokens=48_000, limits=limits)
    assert "(limits: 3 bullets, 10,000 tokens)" in block


# ------------------------------------------------------------------ the offline writer


@pytest.mark.parametrize("target", [2_720, 12_000, 48_000])
def test_the_offline_writer_reads_the_limits_from_the_warning(target: int) -> None:
    limits = section_limits(target)
    block = section_size_warnings(_document(_facts(limits.bullets + 1)), target_tokens=target)
    known = warned_section_limits(block)
    assert known is not None
    assert (known.bullets, known.tokens) == (limits.bullets, limits.tokens)
    assert warned_section_limits("") is None


@pytest.mark.parametrize("bullets", [8, 25, 60])
def test_the_facts_consolidation_aims_at_the_warned_bullets(bullets: int) -> None:
    items = [f"topic{i % 70} fact {i}: port {6000 + i}" for i in range(140)]
    body = consolidate_facts(items, old_count=140, max_tokens=100_000, max_bullets=bullets)
    kept = parse_working_memory(_document(body))[FACTS]
    count = len([line for line in kept.splitlines() if line.startswith("- ")])
    assert count <= max(bullets, 22)  # never below 15% of the old count plus one
    for i in range(140):
        assert f"port {6000 + i}" in body
