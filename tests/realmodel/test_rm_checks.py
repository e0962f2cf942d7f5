"""The real-model stage's invariant checks, run here on a fake writer (no server needed).

A real writer can fail on one archive for a deterministic reason (an unreadable reply, a
rejected prompt): that archive is deferred, the archives after it fold, and it is folded late
(behaviour §6.6). The checks must follow that fold order, not the timeline order: CI's real-model
run failed the lineage check on exactly this case while the engine did what it should.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest
from _rm_checks import check_guarded_kept, play_checked
from _rm_session import PATHS, session_messages
from fake_openai import Answer, FakeOpenAIServer, chat_openai, prompt_of
from hypothesis import given, settings
from hypothesis import strategies as st

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document import (
    SECTIONS,
    merge_working_memory,
    parse_working_memory,
    render_working_memory,
)
from wm_langgraph.document.sections import section_items
from wm_langgraph.document.text.match import strip_tags

CONFIG = WorkingMemoryConfig(
    token_budget=16_000,
    commit_token_threshold_ratio=0.0,  # commit after every turn, as the real-model test does
    commit_keep_recent_count=2,
    reserve_tokens=0,
    background=False,
)


def _folded(request: dict[str, Any]) -> str:
    text = prompt_of(request)
    match = re.search(r"<messages>(.*)</messages>", text, re.S)
    return match.group(1) if match else text


class _Writer:
    """A careful writer that fails once, deterministically, on the archive holding ``poison``:
    the first request folding it gets a 400, every later one is answered."""

    def __init__(self, poison: str) -> None:
        self.poison = poison
        self.failed = 0
        self.served = 0

    def __call__(self, request: dict[str, Any]) -> Answer:
        folded = _folded(request)
        if self.poison in folded and not self.failed:
            self.failed += 1
            return Answer(status=400, error={"message": "Invalid prompt: flagged", "code": None})
        self.served += 1
        paths = sorted({p for p in PATHS if p in folded})
        note = f"Turn {self.served} folded"
        if not request.get("tools"):
            body = dict.fromkeys(SECTIONS, "")
            body["Session Title"] = "Orders service totals"
            body["Current State"] = note
            body["Key Facts & Decisions"] = f"- {note}"
            body["Files & Context"] = "\n".join(f"- {p}: read" for p in paths)
            return Answer(text=render_working_memory(body))
        sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
        sections["Current State"] = {"op": "UPDATE", "content": note}
        sections["Key Facts & Decisions"] = {"op": "APPEND", "items": [note]}
        if paths:
            sections["Files & Context"] = {"op": "APPEND", "items": [f"{p}: read" for p in paths]}
        return Answer(tool_args=json.dumps({"sections": sections}))


def test_the_checks_follow_a_deferred_archive_folded_late() -> None:
    poison = session_messages()[1][0].text[:40]  # the second turn's user message
    writer = _Writer(poison)
    wm, config = play_checked(chat_openai(FakeOpenAIServer(writer)), CONFIG, "rm-checks")
    records = wm.list_archives(config)
    assert writer.failed == 1
    late = [r for r in records if r.metadata.get("late")]
    assert late, "the poisoned archive was never folded late: the scenario did not happen"
    assert all(r.status == "done" for r in records)


# -- the checks hold for any writer reply, and catch a real loss --------------------------------

OLD = render_working_memory(
    {
        "Session Title": "Orders service totals",
        "Current State": "Fixing the total format",
        "Task & Goals": "- totals print with two decimals",
        "Key Facts & Decisions": (
            "- Money uses Decimal with ROUND_HALF_UP\n- API on FastAPI 0.110, Python 3.11"
        ),
        "Files & Context": "- src/orders/api.py: format_total\n- config/settings.toml: EUR",
        "Errors & Corrections": "- AssertionError: expected '42.50', got '42.5'",
        "Open Issues": (
            "- [silently dropped, restored] add a test for negative totals; check rounding\n"
            "- decide the currency of refunds\n- [new] Who reviews PR 17?"
        ),
    }
)
CONVERSATION = "We discussed the refunds currency and PR 17 today."


def _items(section: str) -> list[str]:
    return section_items(parse_working_memory(OLD)[section])


def _odd(rng: random.Random, item: str) -> str:
    """One item as a careless writer may give it back."""
    text = strip_tags(item)
    choice = rng.randrange(7)
    if choice == 0:
        return text.upper()
    if choice == 1:
        return f"[resolved] {text}"
    if choice == 2:
        return f"**{text}**."
    if choice == 3:
        return f"[silently dropped, restored] {text}"  # a marker the writer copies, or forges
    if choice == 4:
        return text.split(";")[0]  # half of it
    if choice == 5:
        return f"[new] {text} (still open)"
    return item


def _odd_content(rng: random.Random, items: list[str]) -> str:
    kept = [_odd(rng, i) for i in items if rng.random() < 0.6]
    if len(kept) > 1 and rng.random() < 0.3:
        kept = ["; ".join(kept)]  # folded into one line
    kept += rng.sample(["TODO: ship it", "see docs/notes.md", "port 8080", ""], k=rng.randint(0, 2))
    rng.shuffle(kept)
    return "\n".join(f"- {i}" for i in kept)


def _odd_ops(rng: random.Random, old: str) -> Any:
    if rng.random() < 0.05:
        return rng.choice([None, [], "garbage", {"sections": 3}])
    bodies = parse_working_memory(old)
    ops: dict[str, Any] = {}
    for name in SECTIONS:
        roll = rng.random()
        items = section_items(bodies[name])
        if roll < 0.15:
            continue  # missing
        if roll < 0.3:
            ops[name] = {"op": "KEEP"}
        elif roll < 0.75:
            ops[name] = {"op": "UPDATE", "content": _odd_content(rng, items)}
        elif roll < 0.9:
            ops[name] = {"op": "APPEND", "items": [_odd(rng, i) for i in items[:2]] + ["x 1"]}
        else:
            ops[name] = rng.choice([{"op": "DELETE"}, {"op": "UPDATE"}, 7, {"content": "y"}])
    return ops


@settings(max_examples=60, deadline=None)
@given(rng=st.randoms(use_true_random=False), rounds=st.integers(1, 4))
def test_the_guard_check_accepts_whatever_a_writer_returns(rng: random.Random, rounds: int):
    text = OLD
    for _ in range(rounds):
        new = merge_working_memory(text, _odd_ops(rng, text), conversation=CONVERSATION).text
        check_guarded_kept(text, new)
        text = new


def test_the_reported_case_a_restored_item_kept_without_its_marker_is_not_lost():
    # CI's report: "Open Issues lost '[silently dropped, restored] …'" — the writer gave the
    # restored item back without the guard's marker (or the guard took the marker of an item
    # holding ';' for a forged one). Either way the item is there: not a loss.
    bare = [strip_tags(i) for i in _items("Open Issues")]
    for content in (bare, _items("Open Issues")):
        ops = {"Open Issues": {"op": "UPDATE", "content": "\n".join(f"- {i}" for i in content)}}
        new = merge_working_memory(OLD, ops, conversation=CONVERSATION).text
        check_guarded_kept(OLD, new)
    kept = merge_working_memory(
        OLD,
        {"Open Issues": {"op": "UPDATE", "content": parse_working_memory(OLD)["Open Issues"]}},
        conversation=CONVERSATION,
    ).text
    assert "[silently dropped, restored] add a test for negative totals; check rounding" in kept


def _without(section: str, needle: str, old: str = OLD) -> str:
    bodies = parse_working_memory(old)
    bodies[section] = "\n".join(f"- {i}" for i in section_items(bodies[section]) if needle not in i)
    return render_working_memory(bodies)


@pytest.mark.parametrize(
    ("section", "needle", "said"),
    [
        ("Open Issues", "negative totals", "Open Issues lost"),
        ("Open Issues", "PR 17", "Open Issues lost"),
        ("Errors & Corrections", "42.50", "Errors lost"),
        ("Files & Context", "settings.toml", "Files & Context lost"),
        ("Key Facts & Decisions", "FastAPI", "Key Facts lost"),
    ],
)
def test_the_guard_check_rejects_a_real_loss(section: str, needle: str, said: str):
    with pytest.raises(AssertionError, match=said):
        check_guarded_kept(OLD, _without(section, needle))


def test_a_loss_is_no_loss_when_it_was_resolved_moved_out_or_added_by_code():
    resolved = OLD.replace("- decide the currency", "- [resolved] decide the currency")
    check_guarded_kept(resolved, _without("Open Issues", "currency", resolved))
    lost = _without("Open Issues", "PR 17")
    check_guarded_kept(OLD, lost, moved=["[new] Who reviews PR 17?"])
    check_guarded_kept(OLD, lost, code={"Open Issues": ["[new] Who reviews PR 17?"]})
    with pytest.raises(AssertionError):
        check_guarded_kept(OLD, lost, moved=["Who reviews PR 18?"])
    facts = _without("Key Facts & Decisions", "FastAPI")
    check_guarded_kept(
        OLD, facts.replace("- totals print", "- API on FastAPI 0.110 and Python 3.11; totals")
    )


class _OddWriter:
    """A writer that answers every call, each time another careless way (seeded): odd ops,
    a reply that is no tool call, an empty reply, an error, or a good document."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, request: dict[str, Any]) -> Answer:
        rng = self.rng
        text = prompt_of(request)
        found = re.search(r"<working_memory>(.*?)</working_memory>", text, re.S)
        old = found.group(1) if found else ""
        roll = rng.random()
        if roll < 0.08:
            return Answer(status=400, error={"message": "Invalid prompt: flagged", "code": None})
        if roll < 0.14:
            return Answer(text="")
        if not request.get("tools"):
            body = dict.fromkeys(SECTIONS, "")
            body["Session Title"] = "Orders service totals"
            body["Open Issues"] = "- decide the currency of refunds; add a test for negative totals"
            body["Files & Context"] = "\n".join(f"- {p}" for p in PATHS[:2])
            return Answer(text=render_working_memory(body) if roll < 0.8 else "no idea")
        ops = _odd_ops(rng, old if "## " in old else OLD)
        if roll < 0.2:
            return Answer(tool_args=json.dumps(ops)[: rng.randint(1, 60)])  # cut short
        return Answer(tool_args=json.dumps({"sections": ops}))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_session_checks_hold_for_an_odd_writer(seed: int) -> None:
    wm, config = play_checked(
        chat_openai(FakeOpenAIServer(_OddWriter(seed))), CONFIG, f"rm-odd-{seed}"
    )
    assert wm.list_archives(config)
