"""The offline writer keeps its own items within the item bound (SPEC §11: no item grows
without bound): its consolidations regroup facts, goals, open issues and file entries into
bullets, and a bullet that would grow past the bound (``SectionLimits.item_tokens``) is not
joined onto — another bullet starts. Before, a chat's consolidation put every clause without a
speaker's head into one bullet and joined more onto it each round (1,652 tokens in LoCoMo's
conv-47 at 8k)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from wm_langgraph.document.guards.key_facts import clauses
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.writer.offline._chat import consolidate_chat
from wm_langgraph.writer.offline._consolidate import (
    consolidate_facts,
    consolidate_files,
    consolidate_goals,
    consolidate_issues,
)

_WORDS = st.sampled_from(
    [
        "went",
        "hiking",
        "with",
        "Marta",
        "near",
        "Porto",
        "bought",
        "kayak",
        "class",
        "Tuesday",
        "weeks",
        "dollars",
        "festival",
        "cousin",
        "adopted",
        "puppy",
        "named",
        "Miso",
        "harbour",
        "book",
        "club",
        "Thursdays",
    ]
)
CLAUSE = st.tuples(st.lists(_WORDS, min_size=3, max_size=14), st.integers(1, 500)).map(
    lambda t: " ".join([*t[0], f"FACT-{t[1]:03d}"])
)
HEAD = st.sampled_from(["", "Ana (3 May 2023): ", "Ben (3 May 2023): ", "Ana (9 June 2023): "])
ITEM = st.tuples(HEAD, st.lists(CLAUSE, min_size=1, max_size=10)).map(
    lambda t: t[0] + "; ".join(t[1])
)
ITEMS = st.lists(ITEM, min_size=1, max_size=25)
BOUND = st.integers(40, 250)


def _lines(body: str | list[str]) -> list[str]:
    lines = body.splitlines() if isinstance(body, str) else body
    return [line.removeprefix("- ").strip() for line in lines if line.strip()]


def _within(items: list[str], bound: int) -> None:
    for item in items:
        one = len(clauses(item.split("): ", 1)[-1])) <= 1  # one clause: never cut
        assert count_tokens(item) <= bound or one, item


@given(items=ITEMS, bound=BOUND, bullets=st.integers(1, 20))
@settings(max_examples=30, deadline=None)
def test_facts_consolidation_never_joins_past_the_bound(
    items: list[str], bound: int, bullets: int
) -> None:
    body = consolidate_facts(items, len(items), max_bullets=bullets, max_item_tokens=bound)
    _within(_lines(body), bound)


@given(items=ITEMS, bound=BOUND, bullets=st.integers(1, 20), tokens=st.integers(100, 3_000))
@settings(max_examples=30, deadline=None)
def test_chat_consolidation_never_joins_past_the_bound(
    items: list[str], bound: int, bullets: int, tokens: int
) -> None:
    _within(_lines(consolidate_chat(items, tokens, bullets, bound)), bound)


@given(items=st.lists(CLAUSE, min_size=1, max_size=60), bound=BOUND)
@settings(max_examples=30, deadline=None)
def test_goals_and_open_issues_fold_into_bounded_lines(items: list[str], bound: int) -> None:
    _within(_lines(consolidate_goals(items, max_item_tokens=bound)), bound)
    issues = [f"- {'[resolved] ' if n % 3 == 0 else ''}{i}" for n, i in enumerate(items)]
    _within(_lines(consolidate_issues(issues, keep_open=4, max_item_tokens=bound)), bound)


@given(names=st.lists(st.integers(0, 400), min_size=1, max_size=60, unique=True), bound=BOUND)
@settings(max_examples=30, deadline=None)
def test_file_entries_group_into_bounded_lines(names: list[int], bound: int) -> None:
    entries = [f"`src/pkg/module_{n}.py` — read, edited (via edit_file)" for n in names]
    _within(_lines(consolidate_files("", entries, max_item_tokens=bound)), bound)
