"""after_turn counts only what changed: a turn whose earlier messages are those of the previous
accounting counts the new messages only, and any edit, removal, copy or fork in between still
gives exactly the accounting of a rebuild (behaviour §6.2)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from tests.engine._support import WMWriter
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.phase1.window import rebuild_meta

NO_COMMIT = WorkingMemoryConfig(
    token_budget=10_000_000, commit_token_threshold_ratio=1.0, commit_keep_recent_count=3
)


def _memory() -> tuple[WorkingMemory, list[BaseMessage]]:
    memory = WorkingMemory(WMWriter().model, config=NO_COMMIT, store=InMemoryStore())
    counted: list[BaseMessage] = []
    count = memory._session._count

    def counting(message: BaseMessage) -> int:
        counted.append(message)
        return count(message)

    memory._session._count = counting
    return memory, counted


def _turn(i: int) -> list[BaseMessage]:
    return [HumanMessage(f"question {i} " * 5, id=f"u{i}"), AIMessage(f"answer {i}", id=f"a{i}")]


def test_a_new_turn_counts_only_its_own_messages() -> None:
    memory, counted = _memory()
    cfg: Any = {"configurable": {"thread_id": "tail"}}
    messages = [m for i in range(200) for m in _turn(i)]
    meta = memory.after_turn({"messages": messages}, cfg)["working_memory"]
    for i in range(200, 205):
        messages = [*messages, *_turn(i)]
        counted.clear()
        meta = memory.after_turn({"messages": messages, "working_memory": meta}, cfg)[
            "working_memory"
        ]
        assert [m.id for m in counted] == [f"u{i}", f"a{i}"]
    expected = rebuild_meta(messages, 3, memory._count_message)
    assert meta["pending_tokens"] == expected["pending_tokens"]
    assert meta["window"] == expected["window"]


def test_an_edit_in_place_is_counted_again() -> None:
    memory, counted = _memory()
    cfg: Any = {"configurable": {"thread_id": "edit"}}
    messages = [m for i in range(50) for m in _turn(i)]
    meta = memory.after_turn({"messages": messages}, cfg)["working_memory"]
    edited = list(messages)
    edited[4] = HumanMessage("a much longer question now " * 40, id=messages[4].id)
    counted.clear()
    meta = memory.after_turn({"messages": edited, "working_memory": meta}, cfg)["working_memory"]
    assert any(m is edited[4] for m in counted)
    assert (
        meta["pending_tokens"] == rebuild_meta(edited, 3, memory._count_message)["pending_tokens"]
    )


_OPS = st.lists(
    st.sampled_from(["turn", "turn", "edit", "remove", "copy", "fork", "same"]),
    min_size=1,
    max_size=14,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_OPS, st.randoms(use_true_random=False))
def test_the_accounting_always_equals_a_rebuild(ops: list[str], rnd: Any) -> None:
    memory, _ = _memory()
    cfg: Any = {"configurable": {"thread_id": "prop"}}
    messages = [m for i in range(4) for m in _turn(i)]
    meta = memory.after_turn({"messages": messages}, cfg)["working_memory"]
    history = [(messages, meta)]
    n = 4
    for op in ops:
        if op == "turn":
            messages = [*messages, *_turn(n)]
            n += 1
        elif op == "edit" and messages:
            k = rnd.randrange(len(messages))
            old = messages[k]
            messages = list(messages)
            messages[k] = type(old)(f"edited {rnd.random()} " * rnd.randint(1, 30), id=old.id)
        elif op == "remove" and len(messages) > 1:
            k = rnd.randrange(len(messages))
            messages = messages[:k] + messages[k + 1 :]
        elif op == "copy":  # a checkpoint read again: equal objects, not the same ones
            messages = copy.deepcopy(messages)
        elif op == "fork":
            messages, meta = history[rnd.randrange(len(history))]
        meta = memory.after_turn({"messages": messages, "working_memory": meta}, cfg)[
            "working_memory"
        ]
        history.append((messages, meta))
        expected = rebuild_meta(messages, 3, memory._count_message)
        assert meta["pending_tokens"] == expected["pending_tokens"]
        assert meta["window"] == expected["window"]
        assert meta["last_counted_id"] == expected["last_counted_id"]
        assert meta["last_counted_index"] == expected["last_counted_index"]
