"""Fault injection through the two agent integrations (the StateGraph path is in
``test_fault_injection.py``): ``create_agent`` with ``WorkingMemoryMiddleware`` and
``create_react_agent`` with ``wm.pre_model_hook`` / ``wm.post_model_hook`` (see
``_rel_agents``), each with its own tool in the loop and a mid-turn overflow.

The WM model (the harness's marker model) raises, times out, returns empty, garbage or
malformed tool arguments at the create and update steps, with background Phase 2 on and off;
the process crashes between Phase 1 and Phase 2 and restarts on the same SQLite file; a dead
model trips the circuit breaker. After every turn: nothing lost (agent state + archives), the
WM never worse, pending archives in what the agent model received, folded in later.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from _rel_agents import (
    BASE,
    OVERFLOW,
    PATHS,
    WAIT_S,
    AgentConversation,
    Run,
    agent,
    assert_overflow_committed,
    turn_ids,
)
from _rel_faults import Crash, Crasher
from _rel_harness import ERRORS, MarkerModel
from _rel_stats import add

from wm_langgraph.document import parse_working_memory, render_working_memory
from wm_langgraph.phase1.session import Session
from wm_langgraph.testing import tool_reply

# -- the WM model: healthy marker log, faults on cue ---------------------------------------------

_JUNK = "\x00\x01{{{ ]]] ## \u202e"
_TRUNCATED = '{"sections": {"Errors & Corrections": {"op": "UPDATE", "content": "- all fine, no err'


def _broken_call(args: str) -> dict[str, Any]:
    bad = {"name": "update_working_memory", "args": args, "id": "call_bad", "error": "bad JSON"}
    return {"content": "", "invalid_tool_calls": [bad]}


_REPLIES: dict[str, dict[str, Any]] = {
    "raises": {
        "create": lambda: RuntimeError("model unavailable (HTTP 503)"),
        "update": lambda: RuntimeError("model unavailable (HTTP 503)"),
    },
    "times_out": {},  # the call blocks past config.model_timeout_seconds
    "empty": {"create": lambda: "", "update": lambda: {"content": ""}},
    "garbage": {
        "create": lambda: _JUNK * 3,
        "update": lambda: tool_reply(
            "update_working_memory",
            {
                "sections": {
                    "\u202e## Errors": _JUNK,
                    ERRORS: {"op": "UPDATE", "content": "## Session Title\n# Working Memory\n\x00"},
                    "Open Issues": {"op": "UPDATE", "content": ""},
                    "Key Facts & Decisions": {"op": "UPDATE", "content": "-"},
                    "Files & Context": {"op": "APPEND", "items": "not a list"},
                }
            },
        ),
    },
    "malformed_args": {
        "create": lambda: _broken_call(_TRUNCATED),  # a broken tool call instead of a document
        "update": lambda: _broken_call(_TRUNCATED),
    },
}
# (step, kind) where Phase 2 fails (the archives stay pending, the breaker counts); the others
# fold the archive: an empty update falls back to a (healthy) create; garbage and malformed
# update arguments are repaired or refused by the guards and record nothing of the delta; a
# create reply without content (empty, or a tool call instead of a document) is replaced by an
# extractive document (it holds the messages, not the marker model's records of them).
_NO_CONTENT = {"empty", "malformed_args"}
_FAILS = {("create", k) for k in _REPLIES if k not in _NO_CONTENT}
_FAILS |= {("update", "raises"), ("update", "times_out")}
_RECORDS_ALL = {("update", "empty")}
_SEED = {
    "Key Facts & Decisions": "- The billing database listens on port 5432",
    "Open Issues": "- Should invoices be emailed or only stored?",
}


class _FaultSwitch:
    """Seeds the first WM with guarded items; when active, answers ``step`` calls with the
    fault (``times_out`` blocks until released)."""

    def __init__(self, step: str, kind: str) -> None:
        self.step, self.kind = step, kind
        self.active = False
        self.faulty = 0
        self.release = threading.Event()

    def __call__(self, call_kind: str, prompt: str, healthy: Any) -> Any:
        if self.active and call_kind == self.step:
            self.faulty += 1
            add("fault injection (agents): faulty model replies")
            if self.kind == "times_out":
                self.release.wait(WAIT_S)
                return RuntimeError("answered too late")
            return _REPLIES[self.kind][call_kind]()
        if call_kind == "create":
            bodies = parse_working_memory(healthy)
            for name, item in _SEED.items():
                if item not in bodies[name]:
                    bodies[name] = f"{bodies[name]}\n{item}".strip()
            return render_working_memory(bodies)
        return None


# -- 1. the WM model misbehaving, through each agent ----------------------------------------------


@pytest.mark.parametrize("background", [False, True], ids=["inline", "background"])
@pytest.mark.parametrize("kind", sorted(_REPLIES))
@pytest.mark.parametrize("step", ["create", "update"])
@pytest.mark.parametrize("path", PATHS)
def test_model_faults_through_the_agent_never_lose_or_worsen(
    tmp_path, path, step, kind, background
):
    add(f"fault injection (agents): model scenarios ({path})")
    switch = _FaultSwitch(step, kind)
    marker = MarkerModel(fault=switch)
    timeout = 0.1 if kind == "times_out" else None
    conv = AgentConversation(f"{path}-{step}-{kind}-{int(background)}")
    try:
        with agent(
            path,
            tmp_path / "wm.sqlite",
            marker.model,
            background=background,
            model_timeout_seconds=timeout,
        ) as a:
            run = Run(a, conv, before=[])
            if step == "update":
                for _ in range(2):  # turn 1's commit creates the WM
                    run.turn()
                run.before = run.check(complete=True)
                assert run.document
            switch.active = True
            # A plain turn, a tool turn that outgrows the budget mid-turn (the overflow guard
            # commits inline before the next model call), then plain turns again.
            run.turn()
            run.turn(**OVERFLOW)
            assert_overflow_committed(run)
            run.turn()
            run.turn()
            fails = (step, kind) in _FAILS
            status = a.wm.phase2_status(conv.config)
            if fails:
                # Circuit breaker: the dead model was called max_consecutive_failures times —
                # a hung one only once: while its abandoned call still runs, the thread's next
                # attempts fail without starting a second one (a timed-out call
                # used to leave one more thread running on every turn).
                assert status["paused"], status
                calls = 1 if kind == "times_out" else BASE.max_consecutive_failures
                assert switch.faulty == calls
                assert {r.status for r in a.wm.list_archives(conv.config)} >= {"failed"}
            else:
                assert not status["paused"]
                # a create step that folded (extractively) is not asked again: updates follow
                assert switch.faulty >= (1 if step == "create" else 3)
            switch.active = False
            switch.release.set()
            calls = len(marker.calls)
            run.turn()
            if fails:  # paused: the model is back, but nobody told the breaker
                assert len(marker.calls) == calls, "a paused thread called the model"
                assert a.wm.list_archives(conv.config)[-1].status == "pending"
                a.wm.resume(conv.config, wait=True)
            run.turn()
            after = run.check(folded_all=True, complete=(step, kind) in _RECORDS_ALL or fails)
            assert after[: len(run.before)] == run.before
            assert {r.status for r in a.wm.list_archives(conv.config)} == {"done"}
    finally:
        switch.release.set()


# -- 2. a crash between Phase 1 and Phase 2, and a restart on the same SQLite file ----------------


@pytest.mark.parametrize("background", [False, True], ids=["inline", "background"])
@pytest.mark.parametrize("where", ["end_of_turn", "mid_turn_overflow"])
@pytest.mark.parametrize("path", PATHS)
def test_a_crash_between_phase1_and_phase2_then_a_restart_loses_nothing(
    tmp_path, monkeypatch, path, where, background
):
    add(f"fault injection (agents): crash + restart scenarios ({path})")
    file = tmp_path / "wm.sqlite"
    crasher = Crasher()
    armed = {"on": False, "archive": None}
    schedule = Session.schedule

    def crash_before_phase2(self: Session, thread_id: str, timeline: Any, *a: Any, **k: Any) -> Any:
        if armed["on"]:  # Phase 1 is done: the archive is written, the state update returned
            armed.update(on=False, archive=timeline[-1])
            crasher.dead = True
            raise Crash("the process died between Phase 1 and Phase 2")
        return schedule(self, thread_id, timeline, *a, **k)

    monkeypatch.setattr(Session, "schedule", crash_before_phase2)
    conv = AgentConversation(f"crash-{path}-{where}-{int(background)}")
    with agent(path, file, MarkerModel().model, crasher, background=background) as a:
        run = Run(a, conv, before=[])
        for _ in range(3):
            run.turn()
        before = run.check(complete=True)
        sent_before, document = list(conv.sent), run.document
        armed["on"] = True
        turn = OVERFLOW if where == "mid_turn_overflow" else {}
        with pytest.raises(Crash):
            conv.turn(a.graph, **turn)
    assert crasher.dead
    assert armed["archive"], "the armed crash never happened"

    # Restart: a new process opens the same file (open_sqlite) with a healthy model.
    marker = MarkerModel()
    with agent(path, file, marker.model, background=background) as a:
        run = Run(a, conv, before=before, document=document)
        # What reached the checkpoint: every earlier message and a prefix of the crashed turn
        # (all of it at the end of the turn; up to a tool result when the guard crashed).
        values = a.graph.get_state(conv.config).values
        tail = [str(m.id) for m in values["messages"] if str(m.id) not in set(sent_before)]
        calls = 0 if where == "end_of_turn" else OVERFLOW["calls"]
        expected = turn_ids(conv.thread_id, 3, calls)
        assert tail == expected[: len(tail)], "gap or reorder in the crashed turn"
        if where == "end_of_turn":
            assert tail == expected
        else:
            assert len(tail) >= 3, tail
            assert tail[-1].startswith(f"{conv.thread_id}-r3"), tail
        conv.sent = sent_before + tail
        conv.turns = 4
        # Phase 1 wrote its record, but the hook's state update never reached the checkpoint:
        # the record is an orphan whose messages are still live. The config-only reads follow
        # the checkpoint, so they never list it (its messages are still live: listing it would
        # show them twice).
        listed = [r.id for r in a.wm.list_archives(conv.config)]
        assert armed["archive"] not in listed, listed
        assert a.archives.get_archives(conv.thread_id, [armed["archive"]]), "the record is kept"
        run.check()
        a.wm.resume(conv.config, wait=True)
        assert a.wm.wait(timeout=WAIT_S)
        assert {r.status for r in a.wm.list_archives(conv.config)} == {"done"}
        run.check()
        # The next commit adopts the orphan (the same messages after the same archive).
        for _ in range(2):
            run.turn()
        run.check(folded_all=True, complete=True)
        assert marker.calls, "the restarted process never folded the archives"
        listed = [r.id for r in a.wm.list_archives(conv.config)]
        assert armed["archive"] in listed, "the orphan was not adopted"
        assert {r.status for r in a.wm.list_archives(conv.config)} == {"done"}


@pytest.mark.parametrize("background", [False, True], ids=["inline", "background"])
@pytest.mark.parametrize("path", PATHS)
def test_a_second_crash_before_the_restarted_hook_is_checkpointed_loses_nothing(
    tmp_path, monkeypatch, path, background
):
    """Crash 1 between Phase 1 and Phase 2; after the restart crash 2 right after the first
    hook that writes the thread's meta, before its update reaches the checkpoint. (With the
    store-kept meta of ``create_react_agent`` that write used to forget the removals crash 1
    left unfinished: their messages came back live while archived.)"""
    add(f"fault injection (agents): double crash + restart scenarios ({path})")
    file = tmp_path / "wm.sqlite"
    schedule, finish = Session.schedule, Session._finish
    armed: dict[str, Any] = {"at": "", "process": Crasher()}

    def crash(where: str) -> None:
        if armed["at"] == where:
            armed["at"] = ""
            armed["process"].dead = True
            raise Crash(f"the process died ({where})")

    def crash_before_phase2(self: Session, *args: Any, **kwargs: Any) -> Any:
        crash("before Phase 2")
        return schedule(self, *args, **kwargs)

    def crash_after_meta(self: Session, *args: Any, **kwargs: Any) -> Any:
        update = finish(self, *args, **kwargs)  # the store has the meta, the checkpoint not
        crash("before the checkpoint")
        return update

    monkeypatch.setattr(Session, "schedule", crash_before_phase2)
    monkeypatch.setattr(Session, "_finish", crash_after_meta)
    conv = AgentConversation(f"crash2-{path}-{int(background)}")
    with agent(path, file, MarkerModel().model, armed["process"], background=background) as a:
        run = Run(a, conv, before=[])
        for _ in range(3):
            run.turn()
        before = run.check(complete=True)
        armed["at"] = "before Phase 2"
        with pytest.raises(Crash):
            conv.turn(a.graph)
    conv.sent += turn_ids(conv.thread_id, 3, 0)  # the whole turn reached the checkpoint
    conv.turns = 4
    armed["process"] = Crasher()
    with agent(path, file, MarkerModel().model, armed["process"], background=background) as a:
        Run(a, conv, before=before).check(exact_reads=False)
        armed["at"] = "before the checkpoint"
        with pytest.raises(Crash):
            conv.turn(a.graph)
    assert not armed["at"], "the second crash never happened"
    with agent(path, file, MarkerModel().model, background=background) as a:
        conv.sent += turn_ids(conv.thread_id, 4, 0)  # turn 4 reached the checkpoint
        conv.turns = 5
        run = Run(a, conv, before=before)
        run.check(exact_reads=False)
        for _ in range(2):
            run.turn()
        run.check(folded_all=True, complete=True)


# -- 3. the circuit breaker, through the async hooks ----------------------------------------------


@pytest.mark.parametrize("background", [False, True], ids=["inline", "background"])
@pytest.mark.parametrize("path", PATHS)
def test_the_breaker_stops_calling_a_dead_model_through_the_async_hooks(path, background):
    add(f"fault injection (agents): breaker scenarios ({path})")
    switch = _FaultSwitch("update", "raises")
    marker = MarkerModel(fault=switch)
    conv = AgentConversation(f"breaker-{path}-{int(background)}")
    limit = 2
    with agent(
        path,
        None,
        marker.model,
        background=background,
        max_consecutive_failures=limit,
    ) as a:
        run = Run(a, conv, before=[], asynchronous=True)
        for _ in range(2):
            run.turn()
        run.before = run.check(complete=True)
        switch.active = True
        for _ in range(4):  # two failures open the breaker; later commits only archive
            run.turn()
        run.turn(**OVERFLOW)  # the overflow guard's inline commit archives, calls no model
        assert_overflow_committed(run)
        assert switch.faulty == limit, "the dead model was called after the breaker opened"
        status = a.wm.phase2_status(conv.config)
        assert status["paused"]
        assert status["consecutive_failures"] == limit
        pending = [r for r in a.wm.list_archives(conv.config) if r.status != "done"]
        assert len(pending) == 6  # every commit still archived (the overflow turn: two)
        switch.active = False
        a.wm.resume(conv.config, wait=True)
        assert a.wm.wait(timeout=WAIT_S)
        run.turn()
        run.check(folded_all=True, complete=True)
