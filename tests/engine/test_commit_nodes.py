"""The commit graph's nodes and routers on their own: a hand-built round state in, the keys a
node changes (or the route) out. The pipeline as a whole is tested through WorkingMemory
(test_commit.py, test_phase2_limits.py, the reliability suite)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tracers.base import BaseTracer
from langgraph.graph import END
from langgraph.store.memory import InMemoryStore

from tests.engine._support import WMWriter, wm_document
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.sections import SECTIONS, parse_working_memory
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.phase2.batching import Slice, WriterLimits
from wm_langgraph.phase2.nodes import (
    CommitDeps,
    Create,
    GuardMerge,
    Prepare,
    Save,
    Update,
    after_create,
    after_merge,
    after_prepare,
    after_slice,
    after_update,
    next_slice,
)
from wm_langgraph.phase2.state import (
    CommitState,
    MergeRecord,
    RoundPlan,
    WriterReply,
    WriterStep,
)
from wm_langgraph.storage.archives import ArchiveRecord, ArchiveStore
from wm_langgraph.testing import ScriptedChatModel
from wm_langgraph.writer.provider import ContextOverflow

CONFIG = WorkingMemoryConfig(token_budget=8000, background=False)
THREAD = "nodes"
FILES = "Files & Context"
FACTS = "Key Facts & Decisions"


def _deps(
    model: Any = None, *, limits: WriterLimits | None = None, on_done: Any = None
) -> CommitDeps:
    writer = model if model is not None else WMWriter().model
    return CommitDeps(
        get_model=lambda: writer,
        archives=ArchiveStore(InMemoryStore()),
        config=CONFIG,
        counter=count_tokens,
        on_done=on_done,
        known_limits=limits,
    )


def _archive(deps: CommitDeps, n: int, text: str, **metadata: Any) -> ArchiveRecord:
    messages = [HumanMessage(text, id=f"h{n}"), AIMessage(f"ack {n}", id=f"a{n}")]
    record = ArchiveRecord(
        id=f"archive_{n:03d}",
        seq=n,
        status="pending",
        messages=messages,
        message_count=len(messages),
        metadata=metadata,
        thread_id=THREAD,
    )
    deps.archives.put_archive(record)
    return record


def _slice(text: str = "[user] FACT-002 arrived", paths: list[str] | None = None) -> Slice:
    return Slice(text=text, tokens=count_tokens(text), paths=paths or [])


def _round(**keys: Any) -> CommitState:
    """A round as ``prepare`` leaves it: one archive, one slice, an update of a v2 WM (``keys``
    replace whole top-level keys)."""
    prior = wm_document(["FACT-001"])
    state: CommitState = {
        "thread_id": THREAD,
        "batch": ["archive_002"],
        "late": False,
        "plan": RoundPlan(
            base_prior=prior, covers=["archive_001"], slices=[_slice()], max_tokens=2000
        ),
        "step": WriterStep(index=0, prior=prior, branch="update"),
        "reply": WriterReply(),
        "merge": MergeRecord(),
        "error": None,
        "error_kind": None,
        "overflow": None,
        "metrics": {},
    }
    return {**state, **keys}


def _failed(kind: str, **keys: Any) -> CommitState:
    return _round(error=f"the writer failed ({kind})", error_kind=kind, **keys)


# -- routers ---------------------------------------------------------------------------------------


def test_after_prepare_nothing_pending_ends_the_run():
    assert after_prepare({"thread_id": THREAD, "outcome": "noop", "batch": []}) == END


def test_after_prepare_a_round_that_cannot_call_the_writer_goes_to_save():
    assert after_prepare(_failed("transient")) == "save"


@pytest.mark.parametrize("branch", ["create", "update"])
def test_after_prepare_takes_the_planned_branch(branch):
    state = _round(step=WriterStep(branch=branch))
    assert after_prepare(state) == branch


def test_after_update_routes_ops_fallbacks_and_failures():
    assert after_update(_round(reply=WriterReply(ops={FACTS: {"op": "KEEP"}}))) == ("guard_merge")
    assert after_update(_round(reply=WriterReply(fallback="no_tool_call"))) == "create"
    assert after_update(_failed("unusable")) == "save"


def test_after_create_routes_a_document_to_merge_and_a_failure_to_save():
    assert after_create(_round(reply=WriterReply(created="# doc"))) == "guard_merge"
    assert after_create(_failed("transient")) == "save"


def test_after_merge_goes_on_while_the_archive_has_slices_left():
    plan = RoundPlan(slices=[_slice("one"), _slice("two")])
    assert after_merge(_round(plan=plan, step=WriterStep(index=0))) == "next_slice"
    assert after_merge(_round(plan=plan, step=WriterStep(index=1))) == "save"
    assert after_merge(_round()) == "save"


@pytest.mark.parametrize("branch", ["create", "update"])
def test_after_slice_takes_the_slice_branch(branch):
    assert after_slice(_round(step=WriterStep(index=1, branch=branch))) == branch


class _Names(BaseTracer):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def _persist_run(self, run: Any) -> None:
        pass

    def _start_trace(self, run: Any) -> None:
        super()._start_trace(run)
        self.names.append(run.name)


def test_tracers_see_every_node_and_routing_under_its_name():
    tracer = _Names()
    wm = WorkingMemory(WMWriter().model, config=CONFIG, store=InMemoryStore())
    config: Any = {"configurable": {"thread_id": "traced"}, "callbacks": [tracer]}
    for n in (1, 2):
        wm.compact({"messages": [HumanMessage(f"FACT-00{n}", id=f"h{n}")]}, config)
    expected = ["wm.commit", "prepare", "after_prepare", "create", "wm.create", "after_create"]
    expected += ["guard_merge", "wm.guards", "after_merge", "save"]
    expected += ["wm.commit", "prepare", "after_prepare", "update", "wm.update", "after_update"]
    expected += ["guard_merge", "wm.guards", "after_merge", "save"]
    assert tracer.names == expected


# -- prepare ---------------------------------------------------------------------------------------


def test_prepare_with_nothing_pending_is_a_noop():
    deps = _deps()
    assert Prepare(deps)({"thread_id": THREAD})["outcome"] == "noop"
    _archive(deps, 1, "FACT-001")
    deps.archives.put_wm(THREAD, ["archive_001"], wm_document(["FACT-001"]), {})
    update = Prepare(deps)({"thread_id": THREAD, "timeline": ["archive_001"]})
    assert update["outcome"] == "noop"
    assert update["batch"] == []


def test_prepare_plans_a_first_create_over_every_pending_archive():
    deps = _deps()
    _archive(deps, 1, "FACT-001 alpha")
    _archive(deps, 2, "FACT-002 beta")
    update = Prepare(deps)({"thread_id": THREAD, "timeline": ["archive_001", "archive_002"]})
    assert update["batch"] == ["archive_001", "archive_002"]
    assert update["step"] == WriterStep(index=0, prior="", branch="create")
    assert update["error"] is None
    (piece,) = update["plan"].slices
    assert "FACT-001 alpha" in piece.text
    assert "FACT-002 beta" in piece.text
    assert update["metrics"]["delta_messages"] == 4
    assert after_prepare({**update, "thread_id": THREAD}) == "create"


def test_prepare_updates_the_wm_with_the_archives_it_does_not_cover():
    deps = _deps()
    prior = wm_document(["FACT-001"])
    _archive(deps, 1, "FACT-001 alpha")
    _archive(deps, 2, "FACT-002 beta")
    deps.archives.put_wm(THREAD, ["archive_001"], prior, {})
    update = Prepare(deps)({"thread_id": THREAD, "timeline": ["archive_001", "archive_002"]})
    assert update["batch"] == ["archive_002"]
    assert update["step"].branch == "update"
    assert update["step"].prior == prior
    assert update["plan"].base_prior == prior
    assert update["plan"].covers == ["archive_001"]
    assert "FACT-001 alpha" not in update["plan"].slices[0].text


def test_prepare_takes_at_most_max_archives():
    deps = _deps()
    _archive(deps, 1, "FACT-001")
    _archive(deps, 2, "FACT-002")
    update = Prepare(deps)(
        {"thread_id": THREAD, "timeline": ["archive_001", "archive_002"], "max_archives": 1}
    )
    assert update["batch"] == ["archive_001"]


def test_prepare_without_room_for_any_message_fails_without_a_writer_call():
    writer = ScriptedChatModel(replies=[])
    deps = _deps(writer, limits=WriterLimits(prompt_tokens=300, reply_tokens=100))
    _archive(deps, 1, "FACT-001")
    update = Prepare(deps)({"thread_id": THREAD, "timeline": ["archive_001"]})
    assert update["error_kind"] == "transient"
    assert "cannot hold the prompt" in (update["error"] or "")
    assert update["batch"] == ["archive_001"]
    assert after_prepare({**update, "thread_id": THREAD}) == "save"
    assert writer.calls == []


def _deferred_thread(deps: CommitDeps) -> None:
    """archive_001 was deferred at wall time 1.0 (one attempt); the WM covers it unchanged."""
    _archive(deps, 1, "FACT-001 late", deferred=True, deferred_at=1.0, attempts=1)
    info = {"deferred": ["archive_001"]}
    deps.archives.put_wm(THREAD, ["archive_001"], wm_document(["FACT-000"]), info)


def test_prepare_retries_a_due_deferred_archive_as_a_late_fold():
    deps = _deps()
    _deferred_thread(deps)
    update = Prepare(deps)(
        {
            "thread_id": THREAD,
            "timeline": ["archive_001"],
            "writer_works": True,
            "job_started": time.time(),
        }
    )
    assert update["batch"] == ["archive_001"]
    assert update["late"] is True
    assert update["plan"].deferred == ["archive_001"]
    assert update["plan"].slices[0].text.startswith("[Late addition")


def test_prepare_does_not_retry_a_deferred_archive_while_the_writer_fails():
    deps = _deps()
    _deferred_thread(deps)
    update = Prepare(deps)({"thread_id": THREAD, "timeline": ["archive_001"]})
    assert update["outcome"] == "noop"


# -- create and update -----------------------------------------------------------------------------


def test_create_writes_a_whole_document_for_guard_merge():
    update = Create(_deps())(_round(step=WriterStep(prior="", branch="create")), {})
    assert "FACT-002" in (update["reply"].created or "")
    assert "create_ms" in update["metrics"]
    assert after_create(_round(**update)) == "guard_merge"


def test_create_failure_is_recorded_for_save():
    writer = ScriptedChatModel(replies=[RuntimeError("model down")])
    update = Create(_deps(writer))(_round(step=WriterStep(prior="", branch="create")), {})
    assert update["error_kind"] == "transient"
    assert "model down" in (update["error"] or "")
    assert after_create(_round(**update)) == "save"


def test_a_writer_call_after_the_inline_deadline_is_not_made():
    writer = ScriptedChatModel(replies=[])
    plan = RoundPlan(slices=[_slice()], deadline=time.monotonic() - 1)
    update = Create(_deps(writer))(_round(plan=plan), {})
    assert update["error_kind"] == "deadline"
    assert writer.calls == []


def test_update_returns_the_tool_ops():
    update = Update(_deps())(_round(), {})
    ops = update["reply"].ops or {}
    assert ops[FACTS]["op"] == "APPEND"
    assert update["reply"].fallback is None
    assert after_update(_round(**update)) == "guard_merge"


@pytest.mark.parametrize(
    ("mode", "fallback"),
    [("no_tool_call", "no_tool_call"), ("unreadable_args", "unreadable_arguments")],
)
def test_update_without_usable_ops_falls_back_to_create(mode, fallback):
    writer = WMWriter()
    writer.mode = mode
    update = Update(_deps(writer.model))(_round(), {})
    assert update["reply"] == WriterReply(ops=None, fallback=fallback)
    assert after_update(_round(**update)) == "create"


# -- guard_merge and next_slice --------------------------------------------------------------------


def test_guard_merge_applies_ops_through_the_guards_and_keeps_earlier_slices():
    earlier = MergeRecord(earlier_decisions=[{"section": "x"}], earlier_trail=["old.py"])
    ops = {FACTS: {"op": "APPEND", "items": ["FACT-002 noted"]}}
    update = GuardMerge(_deps())(_round(reply=WriterReply(ops=ops), merge=earlier), {})
    facts = parse_working_memory(update["text"])[FACTS]
    assert "FACT-001" in facts
    assert "FACT-002" in facts
    merge = update["merge"]
    assert [d["section"] for d in merge.decisions][: len(SECTIONS)] == list(SECTIONS)
    assert merge.earlier_decisions == earlier.earlier_decisions
    assert merge.earlier_trail == ["old.py"]


def test_guard_merge_appends_the_paths_the_writer_left_out():
    plan = RoundPlan(slices=[_slice(paths=["src/app/service.py"])])
    reply = WriterReply(ops={name: {"op": "KEEP"} for name in SECTIONS})
    update = GuardMerge(_deps())(_round(plan=plan, reply=reply), {})
    assert update["merge"].artifact_trail == ["src/app/service.py"]
    assert "src/app/service.py" in parse_working_memory(update["text"])[FILES]


def test_guard_merge_takes_a_create_over_a_v2_wm_through_the_guards():
    created = wm_document(["FACT-002"], title="Something else entirely")
    update = GuardMerge(_deps())(_round(reply=WriterReply(created=created)), {})
    requested = {d["section"]: d["requested"] for d in update["merge"].decisions}
    assert all(requested[name] == "UPDATE" for name in SECTIONS)


def test_guard_merge_takes_a_first_create_as_written():
    created = wm_document(["FACT-002"])
    state = _round(step=WriterStep(prior="", branch="create"), reply=WriterReply(created=created))
    update = GuardMerge(_deps())(state, {})
    assert parse_working_memory(update["text"]) == parse_working_memory(created)
    assert update["merge"].decisions == []


def test_next_slice_builds_on_the_merged_text_and_keeps_the_round_records():
    merged = wm_document(["FACT-001", "FACT-002"])
    plan = RoundPlan(slices=[_slice("one"), _slice("two")])
    state = _round(
        plan=plan,
        step=WriterStep(index=0, prior="", branch="create"),
        reply=WriterReply(created="# doc", fallback="no_tool_call"),
        text=merged,
        merge=MergeRecord(
            decisions=[{"section": "b"}],
            artifact_trail=["b.py"],
            earlier_decisions=[{"section": "a"}],
            earlier_trail=["a.py"],
        ),
    )
    update = next_slice(state)
    assert update["step"] == WriterStep(index=1, prior=merged, branch="update")
    assert update["reply"] == WriterReply(fallback="no_tool_call")
    assert update["merge"].earlier_decisions == [{"section": "a"}, {"section": "b"}]
    assert update["merge"].earlier_trail == ["a.py", "b.py"]


# -- save ------------------------------------------------------------------------------------------


def _pending_pair(deps: CommitDeps) -> None:
    _archive(deps, 1, "FACT-001")
    _archive(deps, 2, "FACT-002")
    deps.archives.put_wm(THREAD, ["archive_001"], wm_document(["FACT-001"]), {})


def test_save_stores_the_wm_then_marks_the_archives_done():
    seen: list[CommitState] = []
    deps = _deps(on_done=seen.append)
    _pending_pair(deps)
    text = wm_document(["FACT-001", "FACT-002"])
    state = _round(
        text=text,
        reply=WriterReply(ops={}, fallback="targeted_retry"),
        merge=MergeRecord(decisions=[{"section": "s"}], earlier_decisions=[{"section": "e"}]),
    )
    assert Save(deps)(state)["outcome"] == "done"
    current = deps.archives.current_wm(THREAD, ["archive_001", "archive_002"])
    assert current is not None
    assert current.covers == ["archive_001", "archive_002"]
    assert current.text == text
    assert current.info["branch"] == "update"
    assert current.info["fallback"] == "targeted_retry"
    assert current.info["decisions"] == [{"section": "e"}, {"section": "s"}]
    (record,) = deps.archives.get_archives(THREAD, ["archive_002"])
    assert record.status == "done"
    assert record.overview == text
    (done,) = seen
    assert (done["thread_id"], done["text"], done["batch"]) == (THREAD, text, ["archive_002"])
    assert done["outcome"] == "done"


def test_save_splits_a_batch_that_failed_deterministically():
    deps = _deps()
    _archive(deps, 1, "FACT-001")
    _archive(deps, 2, "FACT-002")
    update = Save(deps)(_failed("rejected", batch=["archive_001", "archive_002"]))
    assert update["outcome"] == "split"
    assert update["batch"] == ["archive_001", "archive_002"]
    assert deps.archives.current_wm(THREAD, ["archive_001", "archive_002"]) is None


def test_a_late_fold_keeps_the_records_of_the_version_it_replaces():
    """A late fold stores its version under the key of the version it builds on: what that
    version's guards wrote and what it moved out stay on record (the display's badges and
    archive_search read them)."""
    deps = _deps()
    _deferred_thread(deps)
    restored = {
        "section": FACTS,
        "requested": "UPDATE",
        "applied": "UPDATE",
        "reason": "restored 1 bullet(s)",
        "items": ["[restored] FACT-000 noted"],
    }
    earlier = {"section": "Key Facts & Decisions", "text": "FACT-old noted"}
    base = deps.archives.current_wm(THREAD, ["archive_001"])
    assert base is not None
    deps.archives.put_wm(THREAD, ["archive_001"], base.text, {**base.info, "decisions": [restored]})
    deps.archives.put_moved(THREAD, "archive_001", [earlier], ["archive_001"])
    started = Prepare(deps)(
        {
            "thread_id": THREAD,
            "timeline": ["archive_001"],
            "writer_works": True,
            "job_started": time.time(),
        }
    )
    assert started["late"] is True
    assert started["plan"].base_decisions == [restored]
    mine = {"section": FACTS, "requested": "APPEND", "applied": "APPEND", "reason": "", "items": []}
    later = {"section": "Task & Goals", "text": "goal moved now"}
    merge = MergeRecord(decisions=[mine], moved=[later])
    state = _round(**{**started, "text": base.text, "merge": merge})
    assert Save(deps)(state)["outcome"] == "done"
    current = deps.archives.current_wm(THREAD, ["archive_001"])
    assert current is not None
    assert current.info["decisions"] == [restored, mine]
    ((_, moved),) = deps.archives.moved_items(THREAD, ["archive_001"])
    assert moved == [earlier, later]
    (record,) = deps.archives.get_archives(THREAD, ["archive_001"])
    assert record.metadata["decisions"] == [mine]  # the archive's own round only


def test_save_defers_a_single_archive_that_failed_deterministically():
    deps = _deps()
    _pending_pair(deps)
    update = Save(deps)(_failed("unusable"))
    assert update["outcome"] == "deferred"
    assert update["late"] is False
    current = deps.archives.current_wm(THREAD, ["archive_001", "archive_002"])
    assert current is not None
    assert current.covers == ["archive_001", "archive_002"]
    assert current.text == wm_document(["FACT-001"])  # the WM unchanged
    assert current.info["deferred"] == ["archive_002"]
    (record,) = deps.archives.get_archives(THREAD, ["archive_002"])
    assert record.status == "failed"
    assert record.metadata["deferred"] is True
    assert record.metadata["attempts"] == 1


def test_a_deferral_keeps_what_its_base_knew_of_code_items_and_dismissals():
    """A deferred round stores the WM unchanged: its code-added items stay droppable and its
    dismissed statements stay unasked (before: the deferred version lost both)."""
    deps = _deps()
    _archive(deps, 1, "FACT-001")
    _archive(deps, 2, "FACT-002")
    known = {"code_items": {FILES: ["src/a.py"]}, "dismissed": ["0123456789abcdef"]}
    deps.archives.put_wm(THREAD, ["archive_001"], wm_document(["FACT-001"]), known)
    prepared = Prepare(deps)({"thread_id": THREAD, "timeline": ["archive_001", "archive_002"]})
    plan = prepared["plan"]
    assert (plan.code_items, plan.dismissed) == (known["code_items"], known["dismissed"])
    assert Save(deps)(_failed("unusable", plan=plan))["outcome"] == "deferred"
    current = deps.archives.current_wm(THREAD, ["archive_001", "archive_002"])
    assert current is not None
    assert current.info["code_items"] == known["code_items"]
    assert current.info["dismissed"] == known["dismissed"]


def test_save_marks_the_archives_failed_after_a_transient_failure():
    deps = _deps()
    _pending_pair(deps)
    update = Save(deps)(_failed("transient"))
    assert update["outcome"] == "failed"
    (record,) = deps.archives.get_archives(THREAD, ["archive_002"])
    assert record.status == "failed"
    assert "transient" in record.metadata["error"]
    current = deps.archives.current_wm(THREAD, ["archive_001", "archive_002"])
    assert current is not None
    assert current.covers == ["archive_001"]


def test_save_learns_from_an_overflow_and_writes_nothing():
    deps = _deps()
    _pending_pair(deps)
    plan = RoundPlan(slices=[_slice()], overhead_tokens=1000)
    overflow = ContextOverflow(limit=900, prompt=1200)
    update = Save(deps)(_failed("overflow", plan=plan, overflow=overflow))
    assert update["outcome"] == "overflow"
    limit = deps.limits.prompt_tokens
    assert limit is not None
    assert limit < 1000 + _slice().tokens
    (record,) = deps.archives.get_archives(THREAD, ["archive_002"])
    assert record.status == "pending"


def test_save_hands_the_rest_over_when_the_inline_time_is_up():
    deps = _deps()
    _pending_pair(deps)
    assert Save(deps)(_failed("deadline"))["outcome"] == "deadline"
    (record,) = deps.archives.get_archives(THREAD, ["archive_002"])
    assert record.status == "pending"


def test_guard_merge_keeps_its_merged_text_when_the_deadline_passes_before_the_follow_up():
    # The capture check's follow-up respects the run's deadline: past it, no call is made, the
    # merged text stays and code adds what carries an anchor.
    from wm_langgraph.phase2.capture import unit_candidates

    writer = ScriptedChatModel(respond=lambda m, t, c: AssertionError("no call past the deadline"))
    units = unit_candidates([HumanMessage("We still need to add a metric for 429 rejections.")])
    plan = RoundPlan(slices=[_slice()], units=units, deadline=time.monotonic() - 1)
    reply = WriterReply(ops={name: {"op": "KEEP"} for name in SECTIONS})
    update = GuardMerge(_deps(writer))(_round(plan=plan, reply=reply), {})
    assert writer.calls == []
    assert "FACT-001" in update["text"]
    assert "429 rejections" in parse_working_memory(update["text"])["Open Issues"]
    assert [f["fate"] for f in update["merge"].capture] == ["added_by_code"]
