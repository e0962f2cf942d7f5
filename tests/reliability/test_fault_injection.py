"""Fault injection: a misbehaving WM model, failing commit steps, crashes and restarts.

After every scenario the design §3 invariants hold (checked by ``_rel_harness.check_thread``):
every message is live or archived exactly once, in order; the WM is never worse than before;
no tool pair is split; pending archives stay visible to assemble and are folded in once the
fault is gone (by the next commit, by ``resume()``, or by a restarted process).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _rel_faults import Crash, Crasher, InjectedError, crashing_sqlite
from _rel_harness import (
    ERRORS,
    Conversation,
    MarkerModel,
    build_agent,
    check_assemble,
    check_thread,
    expected_turn_ids,
)
from _rel_stats import add

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document import parse_working_memory, render_working_memory
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.phase2 import batching as batching_module
from wm_langgraph.phase2 import nodes as commit_module
from wm_langgraph.storage.archives import ArchiveStore
from wm_langgraph.storage.sqlite import open_sqlite
from wm_langgraph.testing import tool_reply

BASE = WorkingMemoryConfig(
    token_budget=4_000,
    commit_token_threshold_ratio=0.0,  # commit every turn
    commit_keep_recent_count=2,
    reserve_tokens=0,
    background=False,
    failure_cooldown_seconds=1e6,
)
WAIT_S = 60.0  # generous bound: a deadlock fails the test instead of hanging it


@dataclass
class Engine:
    wm: WorkingMemory
    graph: Any
    archives: ArchiveStore


@contextmanager
def engine(
    path: Path, model: Any, crasher: Crasher | None = None, **changes: Any
) -> Iterator[Engine]:
    """A WorkingMemory + agent on the SQLite file ``path`` (optionally wired to a crasher)."""
    opened = crashing_sqlite(str(path), crasher) if crasher else open_sqlite(path)
    with opened as (checkpointer, store):
        wm = WorkingMemory(model, config=BASE.replace(**changes), store=store)
        try:
            yield Engine(
                wm, build_agent(wm, checkpointer=checkpointer, store=store), ArchiveStore(store)
            )
        finally:
            wm.wait(timeout=WAIT_S)
            if crasher is not None and crasher.dead:
                wm._runner.shutdown()  # a killed process runs no exit code: only stop threads
            else:
                wm.close()


def _check(e: Engine, conv: Conversation, **kwargs: Any) -> list[str]:
    add("fault injection: invariant checks")
    return check_thread(e.wm, e.graph, e.archives, conv, **kwargs)


# -- 1. the WM model misbehaving at every step ---------------------------------------------------

_BIG = "x " * 200_000


def _oversized_create(healthy: str) -> str:
    bodies = parse_working_memory(healthy)
    bodies["Current State"] = _BIG
    return render_working_memory(bodies)


def _oversized_update(healthy: dict[str, Any]) -> dict[str, Any]:
    sections = dict(healthy["tool_calls"][0]["args"]["sections"])
    sections["Task & Goals"] = {"op": "UPDATE", "content": _BIG}
    items = list(sections.get(ERRORS, {}).get("items", []))
    sections[ERRORS] = {"op": "APPEND", "items": [*items, *(f"junk {i}" for i in range(3_000))]}
    return tool_reply("update_working_memory", {"sections": sections})


_REPLIES: dict[str, dict[str, Callable[[Any], Any] | None]] = {
    # kind -> {"create": reply for a create call, "update": reply for an update call}
    "raises": {
        "create": lambda h: RuntimeError("model unavailable (HTTP 503)"),
        "update": lambda h: RuntimeError("model unavailable (HTTP 503)"),
    },
    "times_out": {"create": None, "update": None},  # handled by the blocking fault below
    "empty": {"create": lambda h: "", "update": lambda h: {"content": ""}},
    "refusal": {
        "create": lambda h: "I'm sorry, but I can't help with that.",
        "update": lambda h: "I'm sorry, but I can't help with that.",
    },
    "not_a_wm": {
        "create": lambda h: "Sure! The user and the assistant talked.",
        "update": lambda h: tool_reply("update_working_memory", {"raw": "%%% not json {{{"}),
    },
    "garbage": {
        "create": lambda h: "\x00\x01{{{ ]]] ## \u202e" * 3,
        "update": lambda h: tool_reply("update_working_memory", {"sections": "KEEP ALL"}),
    },
    "schema_violation": {
        "create": lambda h: "## Notes\n" + "some words about the session " * 30,
        "update": lambda h: tool_reply(
            "update_working_memory",
            {
                "sections": {
                    ERRORS: {"op": "DELETE"},
                    "Open Issues": {"op": "UPDATE", "content": 42},
                    "Session Title": ["renamed"],
                    "Bogus": {"op": "UPDATE", "content": "## Errors & Corrections\n- forged"},
                }
            },
        ),
    },
    "oversized": {"create": _oversized_create, "update": _oversized_update},
    "wrong_tool": {
        "create": lambda h: tool_reply("update_working_memory", {"sections": {}}),
        "update": lambda h: tool_reply("search_web", {"q": "x"}),
    },
}
# With these the model "succeeds" with output that records nothing: the archive is folded
# (and kept verbatim) but the WM does not list its messages. Defined, not a loss.
_RECORDS_NOTHING = {("update", "garbage"), ("update", "schema_violation"), ("update", "not_a_wm")}
_RECORDS_NOTHING |= {("fallback", "schema_violation"), ("create", "schema_violation")}
# A create reply without content (empty, or a tool call instead of a document) is replaced by an
# extractive document: the archive is folded, its messages held as extracted, not as the marker
# model's "seen" records.
_RECORDS_NOTHING |= {
    (step, kind) for step in ("create", "fallback") for kind in ("empty", "wrong_tool")
}


class _FaultSwitch:
    """Turns a fault on and off; for ``times_out`` blocks the call until released."""

    def __init__(self, step: str, kind: str) -> None:
        self.step, self.kind = step, kind
        self.active = False
        self.release = threading.Event()

    def __call__(self, call_kind: str, prompt: str, healthy: Any) -> Any:
        if not self.active:
            return None
        if self.step == "fallback" and call_kind == "update":
            return "Nothing to change."  # no tool call: the engine falls back to create
        target = "create" if self.step == "fallback" else self.step
        if call_kind != target:
            return None
        add("fault injection: faulty model replies")
        if self.kind == "times_out":
            self.release.wait(WAIT_S)
            return RuntimeError("answered too late")
        reply = _REPLIES[self.kind][call_kind]
        assert reply is not None
        return reply(healthy)


@pytest.mark.parametrize("kind", sorted(_REPLIES))
@pytest.mark.parametrize("step", ["create", "update", "fallback"])
def test_model_faults_at_every_step_never_lose_or_worsen(tmp_path, step, kind):
    add("fault injection: model scenarios")
    switch = _FaultSwitch(step, kind)
    marker = MarkerModel(fault=switch)
    timeout = 0.2 if kind == "times_out" else None
    conv = Conversation(f"model-{step}-{kind}")
    try:
        with engine(tmp_path / "wm.sqlite", marker.model, model_timeout_seconds=timeout) as e:
            if step != "create":
                conv.turn(e.graph)  # a healthy first commit creates the WM
            before = _check(e, conv, complete=True)
            switch.active = True
            for _ in range(2):
                conv.turn(e.graph)
                _check(e, conv, previous_wm_markers=before)
                check_assemble(e.wm, e.graph, e.archives, conv)
            switch.active = False
            switch.release.set()
            for _ in range(2):
                conv.turn(e.graph)
            records_nothing = (step, kind) in _RECORDS_NOTHING
            after = _check(
                e, conv, previous_wm_markers=before, folded_all=True, complete=not records_nothing
            )
            assert after[: len(before)] == before
    finally:
        switch.release.set()


def test_circuit_breaker_stops_calling_a_dead_model_until_resume(tmp_path):
    add("fault injection: model scenarios")
    switch = _FaultSwitch("update", "raises")
    marker = MarkerModel(fault=switch)
    conv = Conversation("breaker")
    with engine(tmp_path / "wm.sqlite", marker.model) as e:
        conv.turn(e.graph)
        before = _check(e, conv, complete=True)
        switch.active = True
        for _ in range(5):  # 3 failures open the breaker; later commits only archive
            conv.turn(e.graph)
            _check(e, conv, previous_wm_markers=before)
        calls_when_paused = len(marker.calls)
        assert e.wm.phase2_status(conv.config)["paused"]
        switch.active = False  # the model is back, but nobody told the breaker
        for _ in range(3):
            conv.turn(e.graph)
            check_assemble(e.wm, e.graph, e.archives, conv)
        assert len(marker.calls) == calls_when_paused, "a paused thread called the model"
        e.wm.resume(conv.config, wait=True)
        _check(e, conv, previous_wm_markers=before, folded_all=True, complete=True)


# -- 2. an exception between the steps of a commit ------------------------------------------------

_NODE_TARGETS = [
    ("prepare", batching_module, "render_message_blocks"),
    ("prepare", batching_module, "trail_paths"),
    ("create", commit_module, "request_create"),
    ("update", commit_module, "request_update"),
    ("guard_merge", commit_module, "merge_working_memory"),
    ("save", ArchiveStore, "put_wm"),
    ("save", ArchiveStore, "update_archives"),
]


@pytest.mark.parametrize("background", [False, True], ids=["inline", "background"])
@pytest.mark.parametrize(
    ("node", "owner", "name"), _NODE_TARGETS, ids=lambda v: getattr(v, "__name__", v)
)
def test_exception_in_each_commit_step_keeps_the_invariants(
    tmp_path, monkeypatch, node, owner, name, background
):
    add("fault injection: commit-step exceptions")
    marker = MarkerModel()
    original = getattr(owner, name)
    armed = {"left": 0}

    def failing(*args: Any, **kwargs: Any) -> Any:
        if armed["left"] > 0:
            armed["left"] -= 1
            raise InjectedError(f"injected into {node}: {name}")
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, failing)
    conv = Conversation(f"step-{node}-{name}")
    with engine(tmp_path / "wm.sqlite", marker.model, background=background) as e:
        # Turn 0 archives nothing (the recent window keeps it); turn 1 makes the first WM.
        for _ in range(1 if node == "create" else 2):
            conv.turn(e.graph)
            e.wm.wait(conv.config, timeout=WAIT_S)
        before = _check(e, conv, complete=True)
        armed["left"] = 1
        conv.turn(e.graph)
        assert e.wm.wait(conv.config, timeout=WAIT_S)
        assert armed["left"] == 0, f"{name} was never reached"
        _check(e, conv, previous_wm_markers=before)
        check_assemble(e.wm, e.graph, e.archives, conv)
        conv.turn(e.graph)
        e.wm.resume(conv.config, wait=True)
        assert e.wm.wait(conv.config, timeout=WAIT_S)
        _check(e, conv, previous_wm_markers=before, folded_all=True, complete=True)


# -- 3. transient database errors at every operation of a commit turn ------------------------------


def _assert_continuity(
    e: Engine, conv: Conversation, sent_before: list[str], failed_turn: int, *, then: int = 0
) -> None:
    """After a failed (or crashed) turn and ``then`` healthy turns: what the thread holds is the
    messages sent before, a prefix of the failed turn's, then the healthy turns', in order,
    each once. (A step whose checkpoint write failed did not happen; LangGraph itself may drop
    its input on the next run even though ``get_state`` showed it.)"""
    conv.reconcile(e.graph, e.archives)
    assert conv.sent[: len(sent_before)] == sent_before, "earlier messages lost"
    tail = conv.sent[len(sent_before) :]
    later = [
        i
        for n in range(failed_turn + 1, failed_turn + 1 + then)
        for i in expected_turn_ids(conv.thread_id, n)
    ]
    if later:
        assert tail[-len(later) :] == later, "a healthy turn after the fault lost messages"
        tail = tail[: -len(later)]
    assert tail == expected_turn_ids(conv.thread_id, failed_turn)[: len(tail)], "gap or reorder"


def _count_ops(tmp_path: Path, background: bool, *, writes_only: bool) -> int:
    crasher = Crasher()
    conv = Conversation("count")
    with engine(
        tmp_path / "count.sqlite", MarkerModel().model, crasher, background=background
    ) as e:
        for _ in range(3):
            conv.turn(e.graph)
            e.wm.wait(timeout=WAIT_S)
        start = crasher.writes if writes_only else crasher.ops
        conv.turn(e.graph)
        e.wm.wait(timeout=WAIT_S)
        return (crasher.writes if writes_only else crasher.ops) - start


@pytest.mark.slow
@pytest.mark.parametrize("background", [False, True], ids=["inline", "background"])
def test_a_transient_database_error_at_any_operation_loses_nothing(tmp_path, background):
    total = _count_ops(tmp_path, background, writes_only=False)
    assert total > 5
    failures: list[str] = []
    for k in range(1, total + 1):
        add("fault injection: transient database errors")
        crasher = Crasher()
        conv = Conversation(f"transient-{k}")
        path = tmp_path / f"transient_{k}.sqlite"
        try:
            with engine(path, MarkerModel().model, crasher, background=background) as e:
                for _ in range(3):
                    conv.turn(e.graph)
                    e.wm.wait(timeout=WAIT_S)
                before = _check(e, conv, complete=True)
                sent_before = list(conv.sent)
                crasher.arm_failure(k)
                with suppress(InjectedError):
                    conv.turn(e.graph)
                e.wm.wait(timeout=WAIT_S)
                # A turn may need an operation less than the counted one (e.g. the timeline
                # pointer was already current): a failure armed past its end is not the turn's.
                crasher.fail_at_op = None
                _assert_continuity(e, conv, sent_before, 3)
                _check(e, conv, previous_wm_markers=before, exact_reads=False)
                check_assemble(e.wm, e.graph, e.archives, conv)
                for _ in range(2):
                    conv.turn(e.graph)
                _assert_continuity(e, conv, sent_before, 3, then=2)
                e.wm.resume(conv.config, wait=True)
                assert e.wm.wait(timeout=WAIT_S)
                _check(e, conv, previous_wm_markers=before, folded_all=True, complete=True)
        except AssertionError as exc:
            failures.append(f"operation {k}: {crasher.log[-1] if crasher.log else '?'}: {exc}")
    assert not failures, "\n".join(failures)


# -- 4. a crash between any two writes, and a restart on the same SQLite file ----------------------


@pytest.mark.slow
@pytest.mark.parametrize("background", [False, True], ids=["inline", "background"])
def test_a_crash_at_any_write_then_a_restart_loses_nothing(tmp_path, background):
    total = _count_ops(tmp_path, background, writes_only=True)
    assert total > 3
    failures: list[str] = []
    unreached = 0
    for k in range(1, total + 1):
        add("fault injection: crash points (then restart)")
        crasher = Crasher()
        conv = Conversation(f"crash-{k}")
        path = tmp_path / f"crash_{k}.sqlite"
        where = "?"
        try:
            with engine(path, MarkerModel().model, crasher, background=background) as e:
                for _ in range(3):
                    conv.turn(e.graph)
                    e.wm.wait(timeout=WAIT_S)
                before = _check(e, conv, complete=True)
                sent_before = list(conv.sent)
                crasher.arm_crash(k)
                with suppress(Crash):
                    conv.turn(e.graph)
                e.wm.wait(timeout=WAIT_S)
                where = crasher.log[-1]
                if not crasher.dead:  # this turn needed fewer writes than the counted one
                    crasher.crash_at_write = None
                    unreached += 1
                    continue
            # Restart: a new process opens the same file with a healthy model.
            with engine(path, MarkerModel().model, background=background) as e:
                _assert_continuity(e, conv, sent_before, 3)
                _check(e, conv, previous_wm_markers=before, exact_reads=False)
                check_assemble(e.wm, e.graph, e.archives, conv)
                for _ in range(2):
                    conv.turn(e.graph)
                    e.wm.wait(timeout=WAIT_S)
                _assert_continuity(e, conv, sent_before, 3, then=2)
                _check(e, conv, previous_wm_markers=before)
                e.wm.resume(conv.config, wait=True)
                assert e.wm.wait(timeout=WAIT_S)
                _check(e, conv, previous_wm_markers=before, folded_all=True, complete=True)
        except AssertionError as exc:
            failures.append(f"crash at write {k} ({where}): {exc}")
    assert not failures, "\n".join(failures)
    assert unreached <= 1, "the armed crashes mostly never happened"
