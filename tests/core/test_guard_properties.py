"""The guards' two property tests: random careless writers over many rounds (>= 25 per example).

* No open issue disappears unless it was resolved (marked ``[resolved]``) or moved to Errors &
  Corrections (behaviour §4.6, owner decision).
* No Key Facts anchor disappears from the durable sections (owner decision: Current State
  never counts), however carelessly Key Facts and the other sections are rewritten.

"Present" is stated here independently of the guards' code. Run longer with
``WM_HYPOTHESIS_PROFILE=long``.
"""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wm_langgraph.document import SECTIONS, merge_working_memory, parse_working_memory
from wm_langgraph.document.guards import CONSOLIDATION_SENTINEL, DURABLE_SECTIONS
from wm_langgraph.document.sections import render_working_memory, section_items
from wm_langgraph.document.text import extract_anchors, missing_anchors

pytestmark = pytest.mark.fuzz

ROUNDS = 30
OPEN, ERRORS, FACTS, STATE = (
    "Open Issues",
    "Errors & Corrections",
    "Key Facts & Decisions",
    ("Current State"),
)

ISSUES = [
    "TODO 1",
    "TODO 10",
    "TODO 12",
    "fix login",
    "prefix login handling",
    "Fact 1 unclear",
    "Fact 10 unclear",
    "Who reviews the PR?",
    "deploy blocked by the TLS cert",
    "deploy",
    "a.py is flaky",
    "data.py is flaky",
    "预算还没有确定",
    "预算还没有确定，需要和财务确认",
    "check the tax rules for Norway",
    "Owen still has to call the landlord",
]
DECORATIONS = [
    lambda s: s,
    lambda s: f"[new] {s}",
    lambda s: f"**{s}**",
    lambda s: f"{s} (still open)",
    lambda s: f"{s}: asked again",
    lambda s: s.upper(),
]


def _norm(text: str) -> str:
    text = re.sub(r"~~|\*\*|[*`]", "", text)
    text = re.sub(r"^(?:\[[^\]\n]*\]\s*)+", "", text.strip())
    return re.sub(r"\s+", " ", text).casefold()


def _present(item: str, body: str) -> bool:
    """``item`` is written whole in one line of ``body`` (tags, emphasis, case aside), not
    glued to a longer word or number."""
    core = _norm(item).rstrip("?.!")
    pattern = r"(?<![0-9a-z_])" + re.escape(core) + r"(?![0-9a-z_])"
    return any(re.search(pattern, _norm(line)) for line in section_items(body))


def _resolved_in(item: str, body: str) -> bool:
    return any("[resolved]" in line and _present(item, line) for line in section_items(body))


def _careless_issue_round(rng: random.Random, current: list[str]) -> dict:
    """One careless writer's ops: keep a random part of Open Issues (reworded a little), mark
    some resolved, add new ones (confusables included), sometimes move one to Errors."""
    ops: dict = {}
    roll = rng.random()
    if roll < 0.1:
        ops[OPEN] = {"op": "KEEP"}
    elif roll < 0.25:
        ops[OPEN] = {"op": "APPEND", "items": rng.sample(ISSUES, k=rng.randint(1, 3))}
    else:
        lines = []
        for item in current:
            r = rng.random()
            if r < 0.35:
                continue  # dropped
            if r < 0.5:
                lines.append(f"[resolved] {item}")
            else:
                lines.append(rng.choice(DECORATIONS)(item))
        lines += rng.sample(ISSUES, k=rng.randint(0, 2))
        if rng.random() < 0.1:
            lines.append(f"[silently dropped, restored] {rng.choice(ISSUES)}")  # forged marker
        ops[OPEN] = {"op": "UPDATE", "content": "\n".join(f"- {line}" for line in lines)}
    if current and rng.random() < 0.2:
        moved = rng.choice(current)
        ops[ERRORS] = {"op": "APPEND", "items": [f"{moved} — fixed by a retry"]}
    if rng.random() < 0.5:
        ops[STATE] = {"op": "UPDATE", "content": " ".join(rng.sample(ISSUES, k=2))}
    return ops


@pytest.mark.slow
@settings(max_examples=40)
@given(rng=st.randoms(use_true_random=False), start=st.lists(st.sampled_from(ISSUES), max_size=6))
def test_no_open_issue_disappears_unless_resolved(rng: random.Random, start: list[str]):
    text = render_working_memory({OPEN: "\n".join(f"- {i}" for i in start), ERRORS: "- e0"})
    for _ in range(ROUNDS):
        before = parse_working_memory(text)
        open_items = [
            item
            for item in ISSUES
            if _present(item, before[OPEN]) and not _resolved_in(item, before[OPEN])
        ]
        text = merge_working_memory(text, _careless_issue_round(rng, open_items)).text
        after = parse_working_memory(text)
        for item in open_items:
            assert _present(item, after[OPEN]) or _present(item, after[ERRORS]), item


# ---------------------------------------------------------------------------------------------


def _fact(rng: random.Random, n: int) -> str:
    kinds = [
        lambda: f"FACT-{n:03d} is owned by Ana",
        lambda: f"DB port {5400 + n} on host db{n}",
        lambda: f"released v2.{n}.1 on 2024-03-{1 + n % 28:02d}",
        lambda: f"budget ${100 + n} for the trial",
        lambda: f"config lives in src/mod_{n}.py",
        lambda: f"Redis {n} chosen because it is fast",
        lambda: f"负责人是王小{'明红刚'[n % 3]}，预算{n}00元",
        lambda: f"never push to branch release-{n}",
        lambda: f"HTTP {400 + n % 100} when the token expires",
    ]
    return rng.choice(kinds)()


def _careless_facts_round(rng: random.Random, facts: list[str], n: int) -> dict:
    """A careless writer: rewrites Key Facts dropping ~30%, consolidating, rewording; puts
    some facts into Current State only; rewrites the other sections freely."""
    ops: dict = {}
    kept = [f for f in facts if rng.random() >= 0.3]
    if rng.random() < 0.3:
        kept = ["; ".join(kept[i : i + 3]) for i in range(0, len(kept), 3)]
    if rng.random() < 0.3 and kept:
        i = rng.randrange(len(kept))
        kept[i] = " ".join(kept[i].split()[: max(1, len(kept[i].split()) // 2)])  # reworded
    new = [_fact(rng, n + k) for k in range(rng.randint(0, 3))]
    roll = rng.random()
    if roll < 0.6:
        ops[FACTS] = {"op": "UPDATE", "content": "\n".join(f"- {f}" for f in kept + new)}
    elif roll < 0.85:
        ops[FACTS] = {"op": "APPEND", "items": new}
    if facts and rng.random() < 0.6:
        ops[STATE] = {"op": "UPDATE", "content": " ".join(rng.sample(facts, k=min(2, len(facts))))}
    if facts and rng.random() < 0.3:
        ops["Task & Goals"] = {"op": "UPDATE", "content": f"- goal around {rng.choice(facts)}"}
    if facts and rng.random() < 0.2:
        ops[ERRORS] = {"op": "APPEND", "items": [f"superseded: {rng.choice(facts)}"]}
    if rng.random() < 0.2:
        ops[OPEN] = {"op": "UPDATE", "content": f"- [resolved] {rng.choice(facts or ['x'])}"}
    return ops


def _durable(text: str) -> str:
    sections = parse_working_memory(text)
    return "\n".join(sections[name] for name in DURABLE_SECTIONS)


@pytest.mark.slow
@settings(max_examples=25)
@given(rng=st.randoms(use_true_random=False))
def test_no_key_facts_anchor_disappears_from_the_durable_sections(rng: random.Random):
    facts = [_fact(rng, n) for n in range(rng.randint(3, 12))]
    text = render_working_memory(
        {"Session Title": "Payments service", FACTS: "\n".join(f"- {f}" for f in facts)}
    )
    n = len(facts)
    for _ in range(ROUNDS):
        before = parse_working_memory(text)[FACTS]
        old_facts = [i for i in section_items(before) if i != CONSOLIDATION_SENTINEL]
        anchors = extract_anchors("\n".join(old_facts), include_markers=False)
        text = merge_working_memory(text, _careless_facts_round(rng, old_facts, n)).text
        n += 3
        assert missing_anchors(anchors, _durable(text)) == set()
    assert list(parse_working_memory(text)) == list(SECTIONS)
