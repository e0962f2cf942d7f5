"""Phase 2 as a LangGraph subgraph: fold pending archives into the Working Memory (behaviour
§6.4, §5.4).

::

    prepare ─┬─> create ──────────────┬─> guard_merge ─┬─> save
             │                        │        │        │
             └─> update ─(no call)─> create    └─> next_slice ─> update   (an archive in slices)
                       └────────────────┘      (a model failure goes straight to save)

- ``prepare`` finds the timeline's current WM and its pending archives and plans the round
  (``phase2.batching``): every message capped in the prompt, a batch of archives that fits the
  messages budget (lowered after a context-length error), or — for one archive larger than the
  budget — its slices. With nothing pending, a *deferred* archive that is due is retried.
- ``update`` forces the ``update_working_memory`` tool; no tool call, or nothing readable → the
  ``create`` fallback with the prior WM as context. A reply cut off at the output limit (or with
  unreadable sections) keeps what was complete and gets one targeted retry for the rest; what
  is still unreadable after it takes the create fallback — an archive is never marked done while
  its content could not be read.
- ``guard_merge`` merges through the guards (a create that replaces a v2 WM goes through them
  too, as per-section UPDATEs), then appends file paths of the folded messages that Files &
  Context does not mention yet (artifact trail). ``next_slice`` feeds the next slice of an
  archive on top of the merged text; one WM version is stored for the whole archive.
- ``save`` writes the new WM version, then marks the archives done (last). On failure it says
  what the runner does next (``outcome``):

  - ``"overflow"``: the provider said the prompt exceeds its context — the limit is learned and
    the next round sends less (never the same prompt again); nothing is written;
  - ``"split"``: a batch of several archives failed for a deterministic reason (the provider
    rejected the request, or the reply was unusable) — the next round halves it, to isolate the
    archive at fault;
  - ``"deferred"``: a single archive failed deterministically. It is *deferred* so that it never
    blocks the archives behind it: a WM version covering it is written with the WM unchanged and
    the archive listed under ``deferred``; the archive is marked ``failed`` and its messages
    stay visible to assemble (layer 2) exactly like a pending archive's. It is retried later, on
    top of the newest WM (a *late fold*, its messages labelled as older), up to
    ``max_consecutive_failures`` times, and again after ``resume()``.
  - ``"deadline"``: an inline run's time (``model_timeout_seconds`` in all) ran out in the
    middle of a call — not a writer failure: nothing is written, the runner hands the rest
    of the work to the background;
  - ``"failed"`` (timeouts, 429/5xx, the model down): the old WM stays, the archives stay pending
    and are marked ``failed``; the runner stops and the circuit breaker counts it.

WM lineage with deferral (design §3.2): the WM covering archives 1..N is derived from the WM
covering 1..N-1 plus archive N's messages — or, when N is deferred, is that WM unchanged with N
named in ``deferred``; a deferred archive's messages are folded later into the newest WM. Phase 2
of a thread still runs strictly in archive order; only a deferred archive is folded out of it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.merge import merge_working_memory
from wm_langgraph.document.sections import SECTIONS, is_working_memory, parse_working_memory
from wm_langgraph.document.text import paths_listed
from wm_langgraph.document.tokens import TokenCounter
from wm_langgraph.phase2.batching import MIN_MESSAGES_BUDGET, WriterLimits, plan_batch
from wm_langgraph.phase2.size import contract_for, fit_to_contract
from wm_langgraph.phase2.trails import extract_errors_from_messages, missing_errors
from wm_langgraph.storage.archives import ArchiveRecord, ArchiveStore, WorkingMemoryVersion
from wm_langgraph.writer.binding import ToolCallingNotSupportedError
from wm_langgraph.writer.calls import CallTimeoutError
from wm_langgraph.writer.generate import (
    ContextLengthError,
    GenerationError,
    UpdateReply,
    generate_create,
    request_update,
)
from wm_langgraph.writer.prompts import render_create_prompt, render_update_prompt
from wm_langgraph.writer.provider import ContextOverflow

__all__ = [
    "COMMIT_RUN_NAME",
    "COMMIT_TAGS",
    "RETRY_DEFERRED_META",
    "CommitDeps",
    "CommitState",
    "build_commit_graph",
    "commit_run_config",
    "unfolded_archive_ids",
]

logger = logging.getLogger("wm_langgraph")

COMMIT_RUN_NAME = "wm.commit"
COMMIT_TAGS = ["wm_langgraph", "nostream"]
FILES_SECTION = "Files & Context"
ERRORS_SECTION = "Errors & Corrections"
RETRY_DEFERRED_META = "retry_deferred"
"""Meta key: deferred archives deferred before ``{"at": <time>}`` are due again (``resume()``)."""
Outcome = Literal["done", "failed", "noop", "overflow", "split", "deferred", "deadline"]
_RETRY_NOTE_TOKENS = 96  # room for the targeted-retry note in the messages budget
_LATE_NOTE = (
    "[Late addition: the messages below ({ids}) are older than the newest content already in "
    "the Working Memory (they could not be folded in earlier). Record their facts, errors, "
    "files and open issues; do not let them replace newer state.]"
)
_DETERMINISTIC = frozenset({"rejected", "unusable"})
_OUT_OF_TIME = "the inline Phase 2 run used up its time (model_timeout_seconds)"


class CommitState(TypedDict, total=False):
    """State of one Phase 2 run (not checkpointed; JSON-plain for tracing).

    Inputs: ``thread_id``, ``user_id``, ``timeline``; optional ``deadline`` (a monotonic time
    after which no writer call starts: an inline run's bound), ``max_archives`` (a batch being
    split), ``job_started`` (wall time: a deferred archive is retried by later jobs only) and
    ``writer_works`` (this job has folded an archive: deferred ones may be retried).
    """

    thread_id: str
    user_id: str | None
    timeline: list[str]
    deadline: float | None
    max_archives: int | None
    job_started: float
    writer_works: bool
    prior: str
    base_prior: str
    covers: list[str]
    deferred: list[str]
    late: bool
    batch: list[str]
    slices: list[dict[str, Any]]
    slice_index: int
    overhead_tokens: int
    max_tokens: int
    messages_text: str
    paths: list[str]
    errors: list[str]
    branch: Literal["create", "update"]
    fallback: str | None
    created: str | None
    ops: dict[str, Any] | None
    text: str
    decisions: list[dict[str, str]]
    artifact_trail: list[str]
    error_trail: list[str]
    earlier_decisions: list[dict[str, str]]
    earlier_trail: list[str]
    moved: list[dict[str, str]]
    error: str | None
    error_kind: str | None
    overflow: dict[str, Any] | None
    outcome: Outcome
    metrics: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CommitDeps:
    """What the commit graph needs from its :class:`~wm_langgraph.WorkingMemory`."""

    get_model: Callable[[], BaseChatModel]
    archives: ArchiveStore
    config: WorkingMemoryConfig
    counter: TokenCounter
    create_prompt: str | None = None
    update_prompt: str | None = None
    on_done: Callable[[CommitState], None] | None = None
    limits: WriterLimits | None = None


def commit_run_config(
    thread_id: str, archive_ids: list[str], callbacks: Any = None
) -> RunnableConfig:
    """The run config of a commit: named ``wm.commit``, tagged, linked to its thread."""
    config: RunnableConfig = {
        "run_name": COMMIT_RUN_NAME,
        "tags": list(COMMIT_TAGS),
        "metadata": {"thread_id": thread_id, "wm_archive_ids": list(archive_ids)},
    }
    if callbacks is not None:
        config["callbacks"] = callbacks
    return config


def _missing(thread_id: str, archive_id: str, offset: int) -> ArchiveRecord:
    """A stand-in for an archive record that is gone from the store (deleted by hand, or a
    store restored from an older backup): it is covered with no messages, so the lineage moves
    on instead of retrying forever."""
    logger.warning("wm_langgraph: archive record %s is missing from the store", archive_id)
    return ArchiveRecord(
        id=archive_id, seq=offset, status="pending", metadata={"missing": True}, thread_id=thread_id
    )


def unfolded_archive_ids(
    current: WorkingMemoryVersion | None, timeline: Sequence[str]
) -> list[str]:
    """The timeline's archives whose messages the WM does not hold yet, in order: its deferred
    archives, then the pending ones after its coverage. Assemble shows their messages."""
    covered = len(current.covers) if current else 0
    deferred = set(_deferred_of(current))
    return [a for a in timeline[:covered] if a in deferred] + list(timeline[covered:])


def _deferred_of(current: WorkingMemoryVersion | None) -> list[str]:
    if current is None:
        return []
    listed = current.info.get("deferred") or []
    return [str(a) for a in listed if str(a) in current.covers]


def _due(record: ArchiveRecord, state: CommitState, max_attempts: int, retry_at: Any) -> bool:
    """Whether a deferred archive is retried in this job: once more after each ``resume()``
    (``retry_at``); otherwise only in a job where the writer has just folded something, not in
    the job that deferred it, and at most ``max_attempts`` times."""
    meta = record.metadata or {}
    deferred_at = meta.get("deferred_at")
    if not isinstance(deferred_at, int | float):
        return True
    if isinstance(retry_at, int | float) and deferred_at < retry_at:
        return True
    if not state.get("writer_works"):
        return False  # not while the writer fails everything: the breaker must see that
    started = state.get("job_started")
    if isinstance(started, int | float) and deferred_at >= started:
        return False
    return int(meta.get("attempts", 1) or 1) < max_attempts


def build_commit_graph(deps: CommitDeps) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the commit pipeline for one WorkingMemory (never checkpointed itself)."""
    cfg = deps.config
    limits = deps.limits or WriterLimits.from_config(cfg)

    def _meta(state: CommitState) -> dict[str, Any]:
        return {"thread_id": state["thread_id"], "wm_archive_ids": list(state.get("batch", []))}

    def _timeout(state: CommitState) -> float | None:
        """The time a writer call may take: the setting, within the run's deadline."""
        deadline = state.get("deadline")
        timeout = cfg.model_timeout_seconds
        if deadline is None:
            return timeout
        left = deadline - time.monotonic()
        if left <= 0:
            raise GenerationError(_OUT_OF_TIME, kind="transient")
        return left if timeout is None else min(timeout, left)

    def _overhead(prior: str, branch: str) -> int:
        if branch == "update":
            empty = render_update_prompt(
                working_memory=prior, messages="", template=deps.update_prompt
            )
        else:
            empty = render_create_prompt(
                prior_summary=prior, messages="", template=deps.create_prompt
            )
        return deps.counter(empty) + _RETRY_NOTE_TOKENS

    def prepare(state: CommitState) -> CommitState:
        started = time.monotonic()
        thread_id, timeline = state["thread_id"], list(state.get("timeline") or [])
        current = deps.archives.current_wm(thread_id, timeline)
        covers = current.covers if current else []
        deferred = _deferred_of(current)
        pending_ids = timeline[len(covers) :]
        late = False
        if not pending_ids and deferred:
            records = deps.archives.get_archives(thread_id, deferred)
            retry_at = (deps.archives.get_meta(thread_id, RETRY_DEFERRED_META) or {}).get("at")
            attempts = cfg.max_consecutive_failures
            due = [r.id for r in records if _due(r, state, attempts, retry_at)]
            pending_ids, late = due[:1], bool(due)
        found = {r.id: r for r in deps.archives.get_archives(thread_id, pending_ids)}
        pending = [found.get(i) or _missing(thread_id, i, n) for n, i in enumerate(pending_ids)]
        if not pending:
            return {"outcome": "noop", "covers": covers, "batch": []}
        hidden = deps.archives.hidden_ids(thread_id)  # removed after they were archived
        if hidden:
            pending = [
                dataclasses.replace(r, messages=[m for m in r.messages if m.id not in hidden])
                for r in pending
            ]
        prior = current.text if current else ""
        branch: Literal["create", "update"] = (
            "update" if prior and is_working_memory(prior) else "create"
        )
        overhead = _overhead(prior, branch)
        budget = limits.messages_budget(overhead, cfg.max_prompt_messages_tokens)
        common: CommitState = {
            "prior": prior,
            "base_prior": prior,
            "covers": covers,
            "deferred": deferred,
            "late": late,
            "branch": branch,
            "fallback": None,
            "error": None,
            "error_kind": None,
            "overhead_tokens": overhead,
            "max_tokens": limits.max_tokens(cfg.writer_max_tokens),
        }
        if budget < min(MIN_MESSAGES_BUDGET, cfg.max_prompt_messages_tokens):
            error = (
                f"the writer's context (about {limits.prompt_tokens} tokens as learned) cannot "
                f"hold the prompt and the Working Memory ({overhead} tokens) with any message"
            )
            return {**common, "batch": [pending[0].id], "error": error, "error_kind": "transient"}
        batch = plan_batch(
            pending,
            budget=budget,
            config=cfg,
            counter=deps.counter,
            max_archives=state.get("max_archives"),
        )
        slices = [dataclasses.asdict(piece) for piece in batch.slices]
        if late:
            note = _LATE_NOTE.format(ids=", ".join(batch.ids))
            slices = [{**piece, "text": f"{note}\n\n{piece['text']}"} for piece in slices]
        messages = [m for record in batch.archives for m in record.messages]
        return {
            **common,
            "batch": batch.ids,
            "slices": slices,
            "slice_index": 0,
            "messages_text": slices[0]["text"],
            "paths": slices[0]["paths"],
            "errors": extract_errors_from_messages(messages),
            "earlier_decisions": [],
            "earlier_trail": [],
            "metrics": {
                "started": time.time(),
                "prepare_ms": round((time.monotonic() - started) * 1000, 3),
                "prior_wm_tokens": deps.counter(prior),
                "delta_tokens": sum(piece["tokens"] for piece in slices),
                "delta_messages": len(messages),
                "pending_archives": len(pending),
                "slices": len(slices),
                "max_tokens": common["max_tokens"],
            },
        }

    def _failure(exc: GenerationError, state: CommitState) -> CommitState:
        deadline = state.get("deadline")
        timed_out = isinstance(exc.__cause__, CallTimeoutError) or str(exc) == _OUT_OF_TIME
        if timed_out and deadline is not None and time.monotonic() >= deadline - 0.01:
            # The inline run's own time is up, not the writer's: no failure, the rest of the
            # work goes to the background.
            return {"error": str(exc), "error_kind": "deadline"}
        failure: CommitState = {"error": str(exc), "error_kind": exc.kind}
        if isinstance(exc, ContextLengthError):
            failure["overflow"] = dataclasses.asdict(exc.overflow)
        return failure

    def create(state: CommitState, config: RunnableConfig) -> CommitState:
        started = time.monotonic()
        try:
            created = generate_create(
                deps.get_model(),
                prior=state.get("prior", ""),
                messages_text=state["messages_text"],
                prompt=deps.create_prompt,
                config=config,
                metadata=_meta(state),
                timeout=_timeout(state),
                max_tokens=state.get("max_tokens"),
                call_key=state["thread_id"],
                on_output_limit=limits.learn_output_limit,
            )
        except GenerationError as exc:
            return {**_failure(exc, state), "metrics": _timed(state, "create_ms", started)}
        return {"created": created, "metrics": _timed(state, "create_ms", started)}

    def _ask(state: CommitState, config: RunnableConfig, retry: UpdateReply | None) -> UpdateReply:
        return request_update(
            deps.get_model(),
            working_memory=state["prior"],
            messages_text=state["messages_text"],
            prompt=deps.update_prompt,
            config=config,
            metadata=_meta(state),
            timeout=_timeout(state),
            max_tokens=state.get("max_tokens"),
            size_target=contract_for(cfg).target,
            call_key=state["thread_id"],
            on_output_limit=limits.learn_output_limit,
            retry=retry,
        )

    def update(state: CommitState, config: RunnableConfig) -> CommitState:
        started = time.monotonic()
        try:
            reply = _ask(state, config, None)
        except GenerationError as exc:
            return {**_failure(exc, state), "metrics": _timed(state, "update_ms", started)}
        except ToolCallingNotSupportedError:
            # A model without tool calling can still write the whole document (behaviour §5.4's
            # no-tool-call path); its output goes through the guards like any update.
            return {"ops": None, "fallback": "no_tool_support", **_m(state, "update_ms", started)}
        if reply.ops is None:
            return {"ops": None, "fallback": "no_tool_call", **_m(state, "update_ms", started)}
        if not reply.ops:
            # A call whose arguments yield no section at all folded nothing in; accepting it
            # would mark the archives done and drop their messages from assemble unread.
            fallback = "unreadable_arguments"
            return {"ops": None, "fallback": fallback, **_m(state, "update_ms", started)}
        ops = dict(reply.ops)
        targets = reply.retry_sections
        if not targets:
            return {"ops": ops, **_m(state, "update_ms", started)}
        # Cut off or partly unreadable: keep what was complete, ask once for the rest.
        try:
            second: UpdateReply | None = _ask(state, config, reply)
        except ContextLengthError as exc:
            return {**_failure(exc, state), "metrics": _timed(state, "update_ms", started)}
        except GenerationError:
            second = None
        ops.update((second.ops or {}) if second is not None else {})
        metrics = {**_timed(state, "update_ms", started), "retried_sections": list(targets)}
        unread = (
            [name for name in reply.reading.unreadable if name not in ops] if reply.reading else []
        )
        if unread:  # still invisible: never mark the archive done on a guess
            metrics["unreadable_sections"] = unread
            return {"ops": None, "fallback": "unreadable_sections", "metrics": metrics}
        ordered = {name: ops[name] for name in SECTIONS if name in ops}
        return {"ops": ordered, "fallback": "targeted_retry", "metrics": metrics}

    def guard_merge(state: CommitState, config: RunnableConfig) -> CommitState:
        prior = state.get("prior", "")
        ops = state.get("ops")
        created = state.get("created")
        if ops is None and created is not None and prior and is_working_memory(prior):
            new = parse_working_memory(created)
            ops = {name: {"op": "UPDATE", "content": new[name]} for name in SECTIONS}
        if ops is not None:
            result = merge_working_memory(
                prior, ops, guards=cfg.guards, conversation=state.get("messages_text", "")
            )
            text, decisions = result.text, [d.as_dict() for d in result.decisions]
        else:
            text = merge_working_memory(created or "", {}, guards=cfg.guards).text
            decisions = []
        files_body = parse_working_memory(text)[FILES_SECTION]
        paths = state.get("paths", [])
        # Path-boundary matching, never substring: "src/data.py" does not list "a.py" (a
        # substring test took a.py as listed and the trail never added it).
        missing = [
            p for p, ok in zip(paths, paths_listed(paths, files_body), strict=True) if not ok
        ]
        if missing:
            appended = merge_working_memory(
                text, {FILES_SECTION: {"op": "APPEND", "items": missing}}, guards=cfg.guards
            )
            text = appended.text
        errors = missing_errors(state.get("errors", []), parse_working_memory(text)[ERRORS_SECTION])
        if errors:
            appended = merge_working_memory(
                text, {ERRORS_SECTION: {"op": "APPEND", "items": errors}}, guards=cfg.guards
            )
            text = appended.text
        text, moved, compaction = fit_to_contract(text, prior, cfg, deps.counter)
        decisions += [compaction] if compaction else []
        record = RunnableLambda(lambda x: x, name="wm.guards")
        record.invoke(
            {"decisions": decisions, "artifact_trail": missing, "error_trail": errors},
            {
                **config,
                "metadata": {
                    **(config.get("metadata") or {}),
                    "guard_decisions": decisions,
                    "artifact_trail": missing,
                    "error_trail": errors,
                },
            },
        )
        return {
            "text": text,
            "decisions": decisions,
            "artifact_trail": missing,
            "error_trail": errors,
            "moved": moved,
        }

    def next_slice(state: CommitState) -> CommitState:
        index = state.get("slice_index", 0) + 1
        piece = state["slices"][index]
        text = state["text"]
        return {
            "prior": text,
            "slice_index": index,
            "messages_text": piece["text"],
            "paths": piece["paths"],
            "branch": "update" if is_working_memory(text) else "create",
            "ops": None,
            "created": None,
            "earlier_decisions": [*state.get("earlier_decisions", []), *state["decisions"]],
            "earlier_trail": [*state.get("earlier_trail", []), *state["artifact_trail"]],
        }

    def _defer(state: CommitState, metrics: dict[str, Any]) -> CommitState:
        thread_id, (archive_id,) = state["thread_id"], state["batch"]
        records = deps.archives.get_archives(thread_id, [archive_id])
        attempts = int(records[0].metadata.get("attempts", 0) or 0) + 1 if state.get("late") else 1
        if not state.get("late"):
            deferred = [*state.get("deferred", []), archive_id]
            covers = [*state.get("covers", []), archive_id]
            info = {
                "branch": None,
                "fallback": "deferred",
                "decisions": [],
                "artifact_trail": [],
                "metrics": metrics,
                "deferred": deferred,
            }
            deps.archives.put_wm(thread_id, covers, state.get("base_prior", ""), info)
        deps.archives.update_archives(
            thread_id,
            [archive_id],
            status="failed",
            metadata={
                "error": state.get("error"),
                "failed_at": time.time(),
                "deferred": True,
                "deferred_at": time.time(),
                "attempts": attempts,
            },
        )
        logger.warning(
            "wm_langgraph: an archive could not be folded for a deterministic reason; it is "
            "deferred (its messages stay visible) and the archives after it go on"
        )
        return {"outcome": "deferred", "late": bool(state.get("late")), "metrics": metrics}

    def save(state: CommitState) -> CommitState:
        thread_id, batch = state["thread_id"], state.get("batch", [])
        metrics = {**state.get("metrics", {}), "total_ms": _elapsed_ms(state)}
        if state.get("error"):
            kind = state.get("error_kind")
            if kind == "overflow":
                piece = state["slices"][state.get("slice_index", 0)]
                prompt_tokens = state.get("overhead_tokens", 0) + int(piece["tokens"])
                limits.learn_overflow(
                    prompt_tokens, ContextOverflow(**(state.get("overflow") or {}))
                )
                return {"outcome": "overflow", "metrics": metrics}
            if kind == "deadline":
                return {"outcome": "deadline", "metrics": metrics}
            if kind in _DETERMINISTIC and len(batch) > 1:
                return {"outcome": "split", "batch": batch, "metrics": metrics}
            if kind in _DETERMINISTIC and batch:
                return _defer(state, metrics)
            deps.archives.update_archives(
                thread_id,
                batch,
                status="failed",
                metadata={"error": state["error"], "failed_at": time.time()},
            )
            return {"outcome": "failed", "metrics": metrics}
        text = state["text"]
        late = bool(state.get("late"))
        covers = list(state.get("covers", [])) if late else [*state.get("covers", []), *batch]
        deferred = [a for a in state.get("deferred", []) if a not in batch]
        decisions = [*state.get("earlier_decisions", []), *state.get("decisions", [])]
        trail = [*state.get("earlier_trail", []), *state.get("artifact_trail", [])]
        info = {
            "branch": state.get("branch"),
            "fallback": state.get("fallback"),
            "decisions": decisions,
            "artifact_trail": trail,
            "error_trail": state.get("error_trail", []),
            "metrics": metrics,
            "deferred": deferred,
            "late": late,
        }
        if state.get("moved"):  # before the WM that no longer holds them
            deps.archives.put_moved(thread_id, covers[-1], state["moved"], covers)
        deps.archives.put_wm(thread_id, covers, text, info)
        done_state: CommitState = {**state, "outcome": "done", "metrics": metrics}
        if deps.on_done is not None:
            deps.on_done(done_state)
        deps.archives.update_archives(  # last: the WM version that covers them exists now
            thread_id,
            batch,
            status="done",
            overview=text,
            metadata={**info, "error": None, "deferred": False},
        )
        return {"outcome": "done", "metrics": metrics}

    def after_prepare(state: CommitState) -> str:
        if state.get("outcome") == "noop":
            return END
        if state.get("error"):
            return "save"
        return state["branch"]

    def after_update(state: CommitState) -> str:
        if state.get("error"):
            return "save"
        return "create" if state.get("ops") is None else "guard_merge"

    def after_create(state: CommitState) -> str:
        return "save" if state.get("error") else "guard_merge"

    def after_merge(state: CommitState) -> str:
        more = state.get("slice_index", 0) + 1 < len(state.get("slices") or [])
        return "next_slice" if more else "save"

    def after_slice(state: CommitState) -> str:
        return state["branch"]

    graph = StateGraph(CommitState)
    graph.add_node("prepare", prepare)
    graph.add_node("create", create)
    graph.add_node("update", update)
    graph.add_node("guard_merge", guard_merge)
    graph.add_node("next_slice", next_slice)
    graph.add_node("save", save)
    graph.add_edge(START, "prepare")
    graph.add_conditional_edges("prepare", after_prepare, ["create", "update", "save", END])
    graph.add_conditional_edges("update", after_update, ["create", "guard_merge", "save"])
    graph.add_conditional_edges("create", after_create, ["guard_merge", "save"])
    graph.add_conditional_edges("guard_merge", after_merge, ["next_slice", "save"])
    graph.add_conditional_edges("next_slice", after_slice, ["create", "update"])
    graph.add_edge("save", END)
    return graph.compile(checkpointer=False, name="wm_commit")


def _elapsed_ms(state: CommitState) -> float:
    started = state.get("metrics", {}).get("started")
    return round((time.time() - started) * 1000, 3) if isinstance(started, float) else 0.0


def _timed(state: CommitState, key: str, started: float) -> dict[str, Any]:
    metrics = dict(state.get("metrics", {}))
    elapsed = round((time.monotonic() - started) * 1000, 3)
    metrics[key] = round(metrics.get(key, 0.0) + elapsed, 3)  # summed over slices
    return metrics


def _m(state: CommitState, key: str, started: float) -> CommitState:
    return {"metrics": _timed(state, key, started)}
