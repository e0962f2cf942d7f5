"""Fuzzing every LangGraph state operation a user can apply to a thread: each must keep
the invariants (design §3).

Random action sequences over one thread: turns (with a tool call, with a system message), an
in-place edit of a live message (``update_state`` with its id), ``RemoveMessage`` of a live and
of an archived message, a re-send of archived messages (a parent graph replaying history), an
explicit compaction, and forks (continuing from any earlier point of the sequence, so later
actions act on another branch). After every step the design §3 invariants are checked on the
thread's current branch, and on every model input the agent received:

1. nothing lost: every user message sent on this branch (and not removed from the live state) is
   live or in exactly one archive of the branch's timeline, once, in order; no id is archived
   and live at once;
2. lineage: the branch's records chain (``prev``) exactly as its timeline, and its current WM
   covers a prefix of it; archive records are immutable across all branches (an id never comes
   back with other content);
4. no tool pair split by an archive boundary;
5. pending_tokens equals a rebuild (after every step a hook ran last);
7. the WM has exactly seven sections;
and the model input: inside the budget, one summary message (the engine's), every tool result
after its call, no removal request.

Run on the StateGraph path, the create_react_agent path and the create_agent path.
"""

from __future__ import annotations

from typing import Any

import pytest
from _rel_stats import FUZZ_EXAMPLES, add, count, fuzz_settings
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)

from tests.engine._paths import PATHS, Driver, make
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import SUMMARY_HEADER, compute_budgets
from wm_langgraph.document import SECTIONS, parse_working_memory
from wm_langgraph.phase1.window import pending_tokens_of

pytestmark = pytest.mark.fuzz

CONFIG = WorkingMemoryConfig(
    token_budget=3000,
    commit_token_threshold_ratio=0.1,
    commit_keep_recent_count=3,
    background=False,
)
USABLE = compute_budgets(3000, CONFIG.reserve_tokens, CONFIG.archive_memory_tokens).usable

actions = st.lists(
    st.one_of(
        st.tuples(st.just("turn"), st.booleans()),  # (kind, with a system message)
        st.tuples(st.just("edit"), st.integers(0, 50)),
        st.tuples(st.just("remove_live"), st.integers(0, 50)),
        st.tuples(st.just("remove_archived"), st.integers(0, 50)),
        st.tuples(st.just("resend"), st.integers(1, 4)),
        st.tuples(st.just("compact"), st.just(0)),
        st.tuples(st.just("fork"), st.integers(0, 50)),
    ),
    min_size=4,
    max_size=22,
)


class Thread:
    """Drives one thread and knows what each recorded point of it must hold."""

    def __init__(self, driver: Driver, name: str) -> None:
        self.d = driver
        self.cfg: dict[str, Any] = {"configurable": {"thread_id": name}}
        self.n = 0
        self.sent: list[str] = []  # user message ids on the current branch, minus removals
        self.points: list[tuple[Any, list[str]]] = []  # (checkpoint config, sent) per step
        self.digests: dict[str, str] = {}  # every record ever seen: id -> digest
        self.seen_prompts = 0
        self.accounted = True  # a hook ran after the last change

    # -- reading -----------------------------------------------------------------------------
    def values(self) -> dict[str, Any]:
        return self.d.values(self.cfg)

    def timeline(self) -> list[str]:
        return list((self.values().get("working_memory") or {}).get("archives") or [])

    def records(self) -> list[Any]:
        timeline = self.timeline()
        found = self.d.wm._archives.get_archives(
            str(self.cfg["configurable"]["thread_id"]), timeline
        )
        assert [r.id for r in found] == timeline, "an archive of the timeline is missing"
        return found

    # -- actions -----------------------------------------------------------------------------
    def turn(self, system: bool) -> None:
        self.n += 1  # (the agent model calls read_file on every third user message)
        ask = HumanMessage(f"turn {self.n}: remember FACT-{self.n:03d} " + "detail " * 25)
        ask = ask.model_copy(update={"id": f"u{self.n}"})
        batch: list[BaseMessage] = [ask]
        if system:
            batch.insert(0, SystemMessage(f"note {self.n}: be brief", id=f"s{self.n}"))
        self.d.invoke(batch, self.cfg)
        self.sent.append(ask.id or "")
        self.accounted = True

    def edit(self, index: int) -> None:
        humans = [m for m in self.values()["messages"] if isinstance(m, HumanMessage)]
        if not humans:
            return
        target = humans[index % len(humans)]
        edited = HumanMessage(f"{target.text} (edited) " + "more " * (index % 7 * 20), id=target.id)
        self.d.graph.update_state(self.cfg, {"messages": [edited]}, as_node=self.d.last_node)
        self.accounted = False

    def remove_live(self, index: int) -> None:
        humans = [m for m in self.values()["messages"] if isinstance(m, HumanMessage)]
        if len(humans) < 2:
            return
        target = humans[index % len(humans)]
        self.d.graph.update_state(
            self.cfg, {"messages": [RemoveMessage(id=str(target.id))]}, as_node=self.d.last_node
        )
        self.sent.remove(str(target.id))
        self.accounted = False

    def remove_archived(self, index: int) -> None:
        archived = [m for r in self.records() for m in r.messages if isinstance(m, HumanMessage)]
        if not archived:
            return
        target = archived[index % len(archived)]
        # as a turn's input: the request is carried out by the turn's own hooks
        self.n += 1
        ask = HumanMessage(f"turn {self.n}: forget that", id=f"u{self.n}")
        self.d.invoke([RemoveMessage(id=str(target.id)), ask], self.cfg)
        self.sent.append(str(ask.id))
        self.accounted = True

    def resend(self, k: int) -> None:
        archived = [m for r in self.records() for m in r.messages]
        self.n += 1
        ask = HumanMessage(f"turn {self.n}: and again", id=f"u{self.n}")
        self.d.invoke([*archived[:k], ask], self.cfg)
        self.sent.append(str(ask.id))
        self.accounted = True

    def compact(self) -> None:
        snapshot = self.d.graph.get_state(self.cfg)
        if snapshot.next or self.d.kind == "react":
            # create_react_agent's router needs an AI message in the state after
            # post_model_hook, which a full compaction archives: there the pre-model hook's
            # overflow commit is the compaction.
            return
        update = self.d.wm.compact(snapshot.values, self.cfg)
        self.d.graph.update_state(self.cfg, update, as_node=self.d.last_node)
        self.accounted = True

    def fork(self, index: int) -> None:
        if not self.points:
            return
        point, sent = self.points[index % len(self.points)]
        self.n += 1
        ask = HumanMessage(f"turn {self.n}: on a fork, FACT-{self.n:03d}", id=f"u{self.n}")
        self.d.invoke([ask], point)  # the thread's latest checkpoint is this branch's now
        self.sent = [*sent, str(ask.id)]
        self.accounted = True

    def record_point(self) -> None:
        self.points.append((self.d.graph.get_state(self.cfg).config, list(self.sent)))

    # -- checks ------------------------------------------------------------------------------
    def check(self) -> None:
        add("state-operation fuzz: invariant checks")
        values = self.values()
        live = [m for m in values["messages"] if not isinstance(m, SystemMessage)]
        records = self.records()
        archived = [m for r in records for m in r.messages]
        ids = [str(m.id) for m in archived] + [str(m.id) for m in live]
        # 1. nothing lost, nothing twice
        assert len(ids) == len(set(ids)), "a message is archived twice, or archived and live"
        users = [i for i in ids if i.startswith("u")]
        assert users == self.sent, f"user messages: {users} != {self.sent}"
        assert not any(isinstance(m, RemoveMessage) for m in values["messages"])
        # 2. lineage and immutability
        previous = None
        for record in records:
            assert record.prev == previous, f"{record.id} does not follow {previous}"
            previous = record.id
        thread = str(self.cfg["configurable"]["thread_id"])
        ns = self.d.wm._archives.namespace(thread, "archives")
        for item in self.d.wm.store.search(ns, limit=10_000):
            digest = item.value.get("digest")
            assert self.digests.setdefault(item.key, digest) == digest, f"{item.key} rewritten"
        timeline = [r.id for r in records]
        current = self.d.wm._archives.current_wm(thread, timeline)
        if current is not None:
            assert current.covers == timeline[: len(current.covers)]
            assert list(parse_working_memory(current.text)) == list(SECTIONS)  # 7.
        # 4. tool pairs on one side of every boundary
        for group in [*(r.messages for r in records), live]:
            calls = {tc["id"] for m in group if isinstance(m, AIMessage) for tc in m.tool_calls}
            results = {m.tool_call_id for m in group if isinstance(m, ToolMessage)}
            assert results <= calls, "a tool result without its call"
        # 5. accounting
        if self.accounted:
            meta = values["working_memory"]
            rebuilt = pending_tokens_of(
                values["messages"], meta["keep_recent_count"], self.d.wm._count_message
            )
            assert meta["pending_tokens"] == rebuilt, "pending_tokens differs from a rebuild"
        # the model inputs since the last check
        for prompt in self.d.prompts()[self.seen_prompts :]:
            assert self.d.wm.count_tokens(prompt) <= USABLE, "a prompt over the budget"
            heads = [m for m in prompt if m.text.lstrip().startswith(SUMMARY_HEADER)]
            assert len(heads) <= 1, "a second summary"
            called: set[str] = set()
            for m in prompt:
                assert not isinstance(m, RemoveMessage)
                if isinstance(m, AIMessage):
                    called |= {str(tc["id"]) for tc in m.tool_calls}
                elif isinstance(m, ToolMessage):
                    assert m.tool_call_id in called, "an orphan tool result in the model input"
        self.seen_prompts = len(self.d.prompts())


def _run(kind: str, steps: list[tuple[str, Any]]) -> None:
    driver = make(kind, CONFIG, tool_every=3, tolerant=True)
    thread = Thread(driver, f"fuzz-{kind}")
    thread.turn(False)
    thread.check()
    thread.record_point()
    for name, arg in steps:
        add(f"state-operation fuzz: {name}")
        if name == "turn":
            thread.turn(arg)
        elif name == "compact":
            thread.compact()
        else:
            getattr(thread, name)(arg)
        thread.check()
        thread.record_point()
    driver.wm.close()


@pytest.mark.slow
@settings(fuzz_settings, max_examples=max(5, FUZZ_EXAMPLES // 6))
@given(steps=actions)
@pytest.mark.parametrize("kind", PATHS)
def test_any_sequence_of_state_operations_keeps_the_invariants(kind, steps):
    count(f"state operations ({kind})")
    _run(kind, steps)


def test_a_fixed_sequence_of_every_operation_on_every_path():
    steps: list[tuple[str, Any]] = [
        ("turn", True),
        ("turn", False),
        ("turn", True),
        ("turn", False),
        ("edit", 0),
        ("turn", False),
        ("remove_live", 1),
        ("turn", True),
        ("remove_archived", 0),
        ("resend", 3),
        ("fork", 2),
        ("edit", 1),
        ("turn", True),
        ("compact", 0),
        ("turn", False),
        ("fork", 9),
        ("turn", False),
    ]
    for kind in PATHS:
        _run(kind, steps)
