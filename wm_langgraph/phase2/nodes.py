"""The commit graph's nodes and routers; ``phase2.graph`` wires them and tells the round whole.

A node is a small class built from :class:`CommitDeps` (``next_slice``, which needs nothing, is
a function); called with the round's state (and the run config, when it traces a call), it
returns the keys it changes. A router is a function of the state that names the next node.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass, field, replace
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.abstracts import (
    combine_abstracts,
    marked_archive_ids,
    marked_parts,
    read_abstracts,
)
from wm_langgraph.document.create_repair import drop_echoed_lines
from wm_langgraph.document.merge import merge_working_memory
from wm_langgraph.document.sections import (
    SECTIONS,
    is_working_memory,
    item_key,
    parse_working_memory,
    section_items,
)
from wm_langgraph.document.text import meaningful_words
from wm_langgraph.document.tokens import TokenCounter
from wm_langgraph.phase2.batching import MIN_MESSAGES_BUDGET, WriterLimits, plan_batch
from wm_langgraph.phase2.capture import (
    candidates_of,
    remembered_dismissals,
    run_capture,
    unit_candidates,
)
from wm_langgraph.phase2.size import contract_for, fit_to_contract
from wm_langgraph.phase2.state import (
    Branch,
    CommitState,
    MergeRecord,
    RoundInputs,
    RoundPlan,
    WriterReply,
    WriterStep,
)
from wm_langgraph.phase2.trails import extract_errors_from_messages
from wm_langgraph.storage.archives import ArchiveRecord, ArchiveStore, WorkingMemoryVersion
from wm_langgraph.storage.search_index import SearchIndex
from wm_langgraph.writer.binding import ToolCallingNotSupportedError
from wm_langgraph.writer.calls import CallTimeoutError
from wm_langgraph.writer.capture import CaptureAnswer, CaptureQuestion, request_capture
from wm_langgraph.writer.generate import (
    ContextLengthError,
    CreateReply,
    GenerationError,
    NoContentError,
    UpdateReply,
    request_create,
    request_update,
)
from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel
from wm_langgraph.writer.prompts import load_prompt, render_create_prompt, render_update_prompt
from wm_langgraph.writer.provider import ContextOverflow

__all__ = [
    "EXTRACTIVE_FALLBACK",
    "RETRY_DEFERRED_META",
    "CommitDeps",
    "Create",
    "GuardMerge",
    "Prepare",
    "Save",
    "Update",
    "after_create",
    "after_merge",
    "after_prepare",
    "after_slice",
    "after_update",
    "next_slice",
    "unfolded_archive_ids",
]

logger = logging.getLogger("wm_langgraph")

EXTRACTIVE_FALLBACK = "extractive"
"""``reply.fallback`` (and the WM version's ``fallback``) of a round whose writer replied with
no content: the Working Memory was extracted from the folded messages by the offline writer's
rules, for a later writer round to refine."""
RETRY_DEFERRED_META = "retry_deferred"
"""Meta key: deferred archives deferred before ``{"at": <time>}`` are due again (``resume()``)."""
_END: Literal["__end__"] = "__end__"  # langgraph.graph.END, typed for the routers
_RETRY_NOTE_TOKENS = 96  # room for the targeted-retry note in the messages budget
_LATE_NOTE = (
    "[Late addition: the messages below ({ids}) are older than the newest content already in "
    "the Working Memory (they could not be folded in earlier). Record their facts, errors, "
    "files and open issues; do not let them replace newer state.]"
)
_DETERMINISTIC = frozenset({"rejected", "unusable"})
_OUT_OF_TIME = "the inline Phase 2 run used up its time (model_timeout_seconds)"


@dataclass(frozen=True, slots=True)
class CommitDeps:
    """What the commit graph needs from its :class:`~wm_langgraph.WorkingMemory`.

    Attributes:
        get_model: The writer model (asked for at each call).
        archives: The archive store: archives, WM versions, the thread's meta.
        config: The memory's configuration.
        counter: Token counter.
        create_prompt: A create prompt template replacing the shipped one.
        update_prompt: An update prompt template replacing the shipped one.
        capture_prompt: A capture follow-up prompt template replacing the shipped one.
        on_done: Called with the state of each completed round, after its WM version is
            stored and before its archives are marked done.
        limits: The writer's limits, one object for every node, so that what a round learns
            sizes the next ones: ``known_limits`` (an argument) when given, else from the
            config.
    """

    get_model: Callable[[], BaseChatModel]
    archives: ArchiveStore
    config: WorkingMemoryConfig
    counter: TokenCounter
    create_prompt: str | None = None
    update_prompt: str | None = None
    capture_prompt: str | None = None
    on_done: Callable[[CommitState], None] | None = None
    known_limits: InitVar[WriterLimits | None] = None
    limits: WriterLimits = field(init=False)

    def __post_init__(self, known_limits: WriterLimits | None) -> None:
        """Resolve :attr:`limits`."""
        object.__setattr__(self, "limits", known_limits or WriterLimits.from_config(self.config))


# -- the WM's lineage: deferred archives ----------------------------------------------------------


def unfolded_archive_ids(
    current: WorkingMemoryVersion | None, timeline: Sequence[str]
) -> list[str]:
    """The timeline's archives whose messages the WM does not hold yet, in order: its deferred
    archives, then the pending ones after its coverage. Assemble shows their messages."""
    covered = len(current.covers) if current else 0
    deferred = set(_deferred_of(current))
    return [a for a in timeline[:covered] if a in deferred] + list(timeline[covered:])


def _code_items_of(current: WorkingMemoryVersion | None) -> dict[str, list[str]]:
    """The items of ``current`` our code added, per section (its ``code_items`` info)."""
    raw = current.info.get("code_items") if current is not None else None
    if not isinstance(raw, dict):
        return {}
    return {
        str(name): [str(item) for item in items]
        for name, items in raw.items()
        if isinstance(items, list)
    }


def _held_code_items(
    carried: dict[str, list[str]], added: dict[str, list[str]], text: str
) -> dict[str, list[str]]:
    """The code-added items (``carried`` then ``added``) still in ``text``, per section."""
    sections = parse_working_memory(text)
    out: dict[str, list[str]] = {}
    for name in SECTIONS:
        present = {item_key(item) for item in section_items(sections[name])}
        items = [*carried.get(name, []), *added.get(name, [])]
        held = [item for item in dict.fromkeys(items) if item_key(item) in present]
        if held:
            out[name] = held
    return out


def _decisions_of(current: WorkingMemoryVersion | None) -> list[dict[str, Any]]:
    """The guard decisions ``current`` recorded (its ``decisions`` info)."""
    raw = current.info.get("decisions") if current is not None else None
    return [dict(d) for d in raw if isinstance(d, dict)] if isinstance(raw, list) else []


def _dismissed_of(current: WorkingMemoryVersion | None) -> list[str]:
    """The dismissal keys ``current`` keeps (its ``dismissed`` info; absent: none)."""
    raw = current.info.get("dismissed") if current is not None else None
    return [str(k) for k in raw] if isinstance(raw, list) else []


def _deferred_of(current: WorkingMemoryVersion | None) -> list[str]:
    if current is None:
        return []
    listed = current.info.get("deferred") or []
    return [str(a) for a in listed if str(a) in current.covers]


def _due(record: ArchiveRecord, inputs: RoundInputs, max_attempts: int, retry_at: Any) -> bool:
    """Whether a deferred archive is retried in this job: once more after each ``resume()``
    (``retry_at``); otherwise only in a job where the writer has just folded something, not in
    the job that deferred it, and at most ``max_attempts`` times."""
    meta = record.metadata or {}
    deferred_at = meta.get("deferred_at")
    if not isinstance(deferred_at, int | float):
        return True
    if isinstance(retry_at, int | float) and deferred_at < retry_at:
        return True
    if not inputs.writer_works:
        return False  # not while the writer fails everything: the breaker must see that
    started = inputs.job_started
    if isinstance(started, int | float) and deferred_at >= started:
        return False
    return int(meta.get("attempts", 1) or 1) < max_attempts


def _missing(thread_id: str, archive_id: str, offset: int) -> ArchiveRecord:
    """A stand-in for an archive record that is gone from the store (deleted by hand, or a
    store restored from an older backup): it is covered with no messages, so the lineage moves
    on instead of retrying forever."""
    logger.warning("wm_langgraph: archive record %s is missing from the store", archive_id)
    return ArchiveRecord(
        id=archive_id, seq=offset, status="pending", metadata={"missing": True}, thread_id=thread_id
    )


# -- shared by the writer nodes -------------------------------------------------------------------


def _run_metadata(state: CommitState) -> dict[str, Any]:
    """Metadata of the writer's runs: the thread and the round's archives."""
    return {"thread_id": state["thread_id"], "wm_archive_ids": list(state["batch"])}


def _slice_archives(state: CommitState) -> list[str]:
    """The archives of the round whose marker line the current slice shows."""
    piece = state["plan"].slices[state["step"].index]
    batch = set(state["batch"])
    return [a for a in marked_archive_ids(piece.text) if a in batch]


def _abstracts_of(state: CommitState, raw: object) -> dict[str, str]:
    """The usable abstracts in a reply's raw abstracts, for the current slice's archives."""
    return read_abstracts(raw, _slice_archives(state))


def _timeout(deadline: float | None, setting: float | None) -> float | None:
    """The time a writer call may take: the setting, within the run's deadline.

    Raises:
        GenerationError: The deadline has passed (a transient failure).
    """
    if deadline is None:
        return setting
    left = deadline - time.monotonic()
    if left <= 0:
        raise GenerationError(_OUT_OF_TIME, kind="transient")
    return left if setting is None else min(setting, left)


def _failure(exc: GenerationError, deadline: float | None) -> CommitState:
    """The keys of a failed writer call. A timeout when the inline run's own time is up is
    ``"deadline"``, not a writer failure: the rest of the work goes to the background."""
    timed_out = isinstance(exc.__cause__, CallTimeoutError) or str(exc) == _OUT_OF_TIME
    if timed_out and deadline is not None and time.monotonic() >= deadline - 0.01:
        return {"error": str(exc), "error_kind": "deadline", "overflow": None}
    overflow = exc.overflow if isinstance(exc, ContextLengthError) else None
    return {"error": str(exc), "error_kind": exc.kind, "overflow": overflow}


def _timed(metrics: dict[str, Any], key: str, started: float) -> dict[str, Any]:
    """``metrics`` with the time since ``started`` (monotonic) added to ``key``: a node that
    runs once per slice is timed over all of them."""
    elapsed = round((time.monotonic() - started) * 1000, 3)
    return {**metrics, key: round(metrics.get(key, 0.0) + elapsed, 3)}


# -- nodes ----------------------------------------------------------------------------------------


class Prepare:
    """``prepare``: find the thread's current WM and the archives it lacks; plan the round.

    Pending archives (after the WM's coverage) come first; with none, one deferred archive
    that is due (:func:`_due`) is retried as a *late* fold, its messages introduced as older
    than the WM. The round then takes the batch of archives that fits the messages budget
    (``phase2.batching``; at most ``max_archives``), or one archive larger than it in slices,
    and the branch: ``update`` on a v2 WM, ``create`` otherwise. Nothing to fold: outcome
    ``noop``. A budget too small for any message: a transient error, no writer call.
    """

    def __init__(self, deps: CommitDeps) -> None:
        """Bind the node to its graph's dependencies."""
        self._deps = deps

    def __call__(self, state: CommitState) -> CommitState:
        """Plan the round: every group's start, the batch, and the timings so far."""
        deps, cfg = self._deps, self._deps.config
        started = time.monotonic()
        inputs = RoundInputs.of(state)
        current = deps.archives.current_wm(inputs.thread_id, inputs.timeline)
        covers = current.covers if current else []
        pending, late = self._to_fold(inputs, current)
        if not pending:
            return {"outcome": "noop", "batch": [], "plan": RoundPlan(covers=covers)}
        prior = current.text if current else ""
        branch: Branch = "update" if prior and is_working_memory(prior) else "create"
        overhead = self._overhead(prior, branch)
        budget = deps.limits.messages_budget(overhead, cfg.max_prompt_messages_tokens)
        plan = RoundPlan(
            base_prior=prior,
            covers=covers,
            deferred=_deferred_of(current),
            code_items=_code_items_of(current),
            dismissed=_dismissed_of(current),
            base_decisions=_decisions_of(current) if late else [],
            overhead_tokens=overhead,
            max_tokens=deps.limits.max_tokens(cfg.writer_max_tokens),
            deadline=inputs.deadline,
        )
        start: CommitState = {
            "late": late,
            "plan": plan,
            "step": WriterStep(index=0, prior=prior, branch=branch),
            "reply": WriterReply(),
            "merge": MergeRecord(),
            "error": None,
            "error_kind": None,
            "overflow": None,
        }
        if budget < min(MIN_MESSAGES_BUDGET, cfg.max_prompt_messages_tokens):
            error = (
                f"the writer's context (about {deps.limits.prompt_tokens} tokens as learned) "
                f"cannot hold the prompt and the Working Memory ({overhead} tokens) with any "
                "message"
            )
            return {
                **start,
                "batch": [pending[0].id],
                "error": error,
                "error_kind": "transient",
                "metrics": {},
            }
        batch = plan_batch(
            pending,
            budget=budget,
            config=cfg,
            counter=deps.counter,
            max_archives=inputs.max_archives,
        )
        slices = list(batch.slices)
        if late:
            note = _LATE_NOTE.format(ids=", ".join(batch.ids))
            slices = [replace(piece, text=f"{note}\n\n{piece.text}") for piece in slices]
        messages = [m for record in batch.archives for m in record.messages]
        errors = extract_errors_from_messages(messages)
        units = unit_candidates(messages, known=prior)
        return {
            **start,
            "batch": batch.ids,
            "plan": replace(plan, slices=slices, errors=errors, units=units),
            "metrics": {
                "started": time.time(),
                "prepare_ms": round((time.monotonic() - started) * 1000, 3),
                "prior_wm_tokens": deps.counter(prior),
                "delta_tokens": sum(piece.tokens for piece in slices),
                "delta_messages": len(messages),
                "pending_archives": len(pending),
                "slices": len(slices),
                "max_tokens": plan.max_tokens,
            },
        }

    def _to_fold(
        self, inputs: RoundInputs, current: WorkingMemoryVersion | None
    ) -> tuple[list[ArchiveRecord], bool]:
        """The archives the round may fold, oldest first, and whether they are a late fold:
        those after the WM's coverage, or else the first deferred archive that is due. Their
        messages removed after they were archived are left out."""
        archives, thread_id = self._deps.archives, inputs.thread_id
        deferred = _deferred_of(current)
        pending_ids = inputs.timeline[len(current.covers) if current else 0 :]
        late = False
        if not pending_ids and deferred:
            records = archives.get_archives(thread_id, deferred)
            retry_at = (archives.get_meta(thread_id, RETRY_DEFERRED_META) or {}).get("at")
            attempts = self._deps.config.max_consecutive_failures
            due = [r.id for r in records if _due(r, inputs, attempts, retry_at)]
            pending_ids, late = due[:1], bool(due)
        found = {r.id: r for r in archives.get_archives(thread_id, pending_ids)}
        pending = [found.get(i) or _missing(thread_id, i, n) for n, i in enumerate(pending_ids)]
        if not pending:
            return [], late
        hidden = archives.hidden_ids(thread_id)
        if hidden:
            pending = [
                replace(r, messages=[m for m in r.messages if m.id not in hidden]) for r in pending
            ]
        return pending, late

    def _overhead(self, prior: str, branch: Branch) -> int:
        """Tokens of the branch's prompt without messages, plus room for the retry note."""
        if branch == "update":
            empty = render_update_prompt(
                working_memory=prior,
                messages="",
                template=self._deps.update_prompt,
                size_target=contract_for(self._deps.config).target,
            )
        else:
            empty = render_create_prompt(
                prior_summary=prior, messages="", template=self._deps.create_prompt
            )
        return self._deps.counter(empty) + _RETRY_NOTE_TOKENS


class Create:
    """``create``: the writer writes the whole document on top of ``step.prior``.

    It runs for a first WM, over a legacy summary, and as the fallback of an update that gave
    nothing usable (with the prior WM as context). The reply goes to ``guard_merge``
    (``reply.created``); a failed call is recorded for ``save``. A reply without content (empty,
    the seven headers alone, or cut off at the output limit: a weak writer's answers) does not
    end the round: the document is
    extracted from the same prompt by the offline writer (:class:`OfflineWorkingMemoryModel`,
    deterministic, no network), marked ``reply.fallback = "extractive"``; it goes through
    ``guard_merge`` like any reply, and the next writer round refines it.
    """

    def __init__(self, deps: CommitDeps) -> None:
        """Bind the node to its graph's dependencies."""
        self._deps = deps
        self._offline: OfflineWorkingMemoryModel | None = None

    def __call__(self, state: CommitState, config: RunnableConfig) -> CommitState:
        """Call the writer; the reply, or the failure, with the call's time."""
        deps, plan, step = self._deps, state["plan"], state["step"]
        started = time.monotonic()
        try:
            created = request_create(
                deps.get_model(),
                prior=step.prior,
                messages_text=plan.slices[step.index].text,
                prompt=deps.create_prompt,
                config=config,
                metadata=_run_metadata(state),
                timeout=_timeout(plan.deadline, deps.config.model_timeout_seconds),
                max_tokens=plan.max_tokens,
                call_key=state["thread_id"],
                on_output_limit=deps.limits.learn_output_limit,
            )
        except NoContentError as exc:
            extracted = self._extract(state)
            metrics = _timed(state["metrics"], "create_ms", started)
            if extracted is None:
                return {**_failure(exc, plan.deadline), "metrics": metrics}
            reply = replace(
                state["reply"],
                created=extracted.document,
                fallback=EXTRACTIVE_FALLBACK,
                abstracts=self._abstracts(state, extracted),
            )
            return {"reply": reply, "metrics": {**metrics, "extractive_reason": str(exc)}}
        except GenerationError as exc:
            failure = _failure(exc, plan.deadline)
            return {**failure, "metrics": _timed(state["metrics"], "create_ms", started)}
        reply = replace(
            state["reply"], created=created.document, abstracts=self._abstracts(state, created)
        )
        return {"reply": reply, "metrics": _timed(state["metrics"], "create_ms", started)}

    @staticmethod
    def _abstracts(state: CommitState, created: CreateReply) -> dict[str, str]:
        """The create reply's abstracts over the update's (a fallback keeps the update's
        where the create gave none)."""
        return {**state["reply"].abstracts, **_abstracts_of(state, created.abstracts)}

    def _extract(self, state: CommitState) -> CreateReply | None:
        """The document the offline writer extracts from the slice on top of ``step.prior``
        (the shipped create prompt: the offline writer reads its tagged inputs); None when it
        finds nothing either. Not traced into the caller's runs: it is no model's output."""
        plan, step = state["plan"], state["step"]
        if self._offline is None:
            self._offline = OfflineWorkingMemoryModel()
        try:
            return request_create(
                self._offline,
                prior=step.prior,
                messages_text=plan.slices[step.index].text,
            )
        except GenerationError:
            return None


class Update:
    """``update``: the writer answers with the forced ``update_working_memory`` tool.

    Decides between the ops for ``guard_merge``; the ``create`` fallback, named in
    ``reply.fallback`` (no tool call, a model without tool calling, arguments with no readable
    section); one targeted retry for a reply cut off at the output limit or partly unreadable,
    keeping what was complete — a section still unreadable after it takes the create fallback
    too, as an archive is never marked done while its content could not be read; and a failure
    for ``save``.
    """

    def __init__(self, deps: CommitDeps) -> None:
        """Bind the node to its graph's dependencies."""
        self._deps = deps

    def __call__(self, state: CommitState, config: RunnableConfig) -> CommitState:
        """Call the writer (twice at most); the ops, a fallback, or the failure."""
        deadline, reply = state["plan"].deadline, state["reply"]
        started = time.monotonic()

        def timed() -> dict[str, Any]:
            return _timed(state["metrics"], "update_ms", started)

        def fallback(why: str, abstracts: dict[str, str] | None = None) -> CommitState:
            kept = replace(reply, ops=None, fallback=why, abstracts=abstracts or {})
            return {"reply": kept, "metrics": timed()}

        try:
            first = self._ask(state, config, None)
        except GenerationError as exc:
            return {**_failure(exc, deadline), "metrics": timed()}
        except ToolCallingNotSupportedError:
            # A model without tool calling can still write the whole document (behaviour §5.4's
            # no-tool-call path); its output goes through the guards like any update.
            return fallback("no_tool_support")
        if first.ops is None:
            return fallback("no_tool_call")
        abstracts = _abstracts_of(state, first.abstracts)
        reply = replace(reply, abstracts=abstracts)
        if not first.ops:
            # A call whose arguments yield no section at all folded nothing in; accepting it
            # would mark the archives done and drop their messages from assemble unread.
            return fallback("unreadable_arguments", abstracts)
        ops = dict(first.ops)
        targets = first.retry_sections
        if not targets:
            return {"reply": replace(reply, ops=ops), "metrics": timed()}
        # Cut off or partly unreadable: keep what was complete, ask once for the rest.
        try:
            second: UpdateReply | None = self._ask(state, config, first)
        except ContextLengthError as exc:
            return {**_failure(exc, deadline), "metrics": timed()}
        except GenerationError:
            second = None
        ops.update((second.ops or {}) if second is not None else {})
        metrics = {**timed(), "retried_sections": list(targets)}
        unread = (
            [name for name in first.reading.unreadable if name not in ops] if first.reading else []
        )
        if unread:  # still invisible: never mark the archive done on a guess
            metrics["unreadable_sections"] = unread
            return {
                "reply": replace(reply, ops=None, fallback="unreadable_sections"),
                "metrics": metrics,
            }
        ordered = {name: ops[name] for name in SECTIONS if name in ops}
        return {"reply": replace(reply, ops=ordered, fallback="targeted_retry"), "metrics": metrics}

    def _ask(
        self, state: CommitState, config: RunnableConfig, retry: UpdateReply | None
    ) -> UpdateReply:
        """One update call on the current slice (``retry``: the reply it completes)."""
        deps, plan, step = self._deps, state["plan"], state["step"]
        return request_update(
            deps.get_model(),
            working_memory=step.prior,
            messages_text=plan.slices[step.index].text,
            prompt=deps.update_prompt,
            config=config,
            metadata=_run_metadata(state),
            timeout=_timeout(plan.deadline, deps.config.model_timeout_seconds),
            max_tokens=plan.max_tokens,
            size_target=contract_for(deps.config).target,
            call_key=state["thread_id"],
            on_output_limit=deps.limits.learn_output_limit,
            retry=retry,
        )


class GuardMerge:
    """``guard_merge``: merge the writer's reply into ``step.prior`` and keep what it left out.

    An update's ops go through the guards; so does a create that replaces a v2 WM, as
    per-section UPDATEs, while a create over nothing or a legacy summary is taken as written.
    Then the folded messages' file paths that Files & Context does not list yet are appended
    (artifact trail), so are the tool errors Errors & Corrections lacks (error trail), and the
    result is fitted to the size contract. The decisions are traced as a ``wm.guards`` run.
    """

    def __init__(self, deps: CommitDeps) -> None:
        """Bind the node to its graph's dependencies."""
        self._deps = deps

    def __call__(self, state: CommitState, config: RunnableConfig) -> CommitState:
        """The merged ``text`` and what the merge decided (``merge``)."""
        cfg = self._deps.config
        plan, step, reply = state["plan"], state["step"], state["reply"]
        piece = plan.slices[step.index]
        prior, ops, created = step.prior, reply.ops, reply.created
        echoed: dict[str, int] = {}
        if ops is not None:
            # the writer's own instructions copied back are no content (as on the create path)
            template = self._deps.update_prompt or load_prompt("update")
            ops, echoed = drop_echoed_lines(ops, template=template, source=f"{prior}\n{piece.text}")
        if ops is None and created is not None and prior and is_working_memory(prior):
            new = parse_working_memory(created)
            ops = {name: {"op": "UPDATE", "content": new[name]} for name in SECTIONS}
        limits = contract_for(cfg).limits
        if ops is not None:
            result = merge_working_memory(
                prior,
                ops,
                guards=cfg.guards,
                conversation=piece.text,
                code_items=plan.code_items,
                limits=limits,
            )
            text, decisions = result.text, [d.as_dict() for d in result.decisions]
            for decision in decisions:
                count = echoed.get(decision["section"], 0)
                if count:
                    note = f"dropped {count} line(s) copied from the update prompt"
                    reason = decision["reason"]
                    decision["reason"] = f"{note}; {reason}" if reason else note
        else:
            text = merge_working_memory(created or "", {}, guards=cfg.guards, limits=limits).text
            decisions = []
        started = time.monotonic()
        last = step.index + 1 >= len(plan.slices)
        units = plan.units if last else []
        ask = self._asker(state, config) if units and reply.fallback != "no_tool_support" else None
        capture = run_capture(
            text,
            candidates_of(units, piece.paths, plan.errors),
            ask=ask,
            guards=cfg.guards,
            dismissed=plan.dismissed,
            limits=limits,
            prior=plan.base_prior,
        )
        text, missing, errors = capture.text, capture.artifact_trail, capture.error_trail
        sources = {path: piece.sources.get(path, "") for path in missing}
        fates = [f.as_dict() for f in capture.fates]
        text, moved, compaction = fit_to_contract(text, prior, cfg, self._deps.counter)
        decisions += [compaction] if compaction else []
        record = RunnableLambda(lambda x: x, name="wm.guards")
        record.invoke(
            {
                "decisions": decisions,
                "artifact_trail": missing,
                "artifact_sources": sources,
                "error_trail": errors,
                "capture": fates,
            },
            {
                **config,
                "metadata": {
                    **(config.get("metadata") or {}),
                    "guard_decisions": decisions,
                    "artifact_trail": missing,
                    "artifact_sources": sources,
                    "error_trail": errors,
                    "capture": fates,
                },
            },
        )
        earlier = state["merge"]
        abstracts = {k: list(v) for k, v in earlier.abstracts.items()}
        for archive_id, abstract in _grounded(reply.abstracts, piece.text).items():
            abstracts.setdefault(archive_id, []).append(abstract)
        captured = {k: list(v) for k, v in earlier.captured_items.items()}
        for name, items in capture.code_items.items():
            captured.setdefault(name, []).extend(items)
        merge = replace(
            earlier,
            decisions=decisions,
            artifact_trail=missing,
            error_trail=errors,
            # an archive folded in slices: what each slice moved out is kept, oldest first
            moved=[*earlier.moved, *moved],
            capture=[*earlier.capture, *fates],
            captured_items=captured,
            trail_sources={**earlier.trail_sources, **sources},
            abstracts=abstracts,
        )
        metrics = _timed(state.get("metrics") or {}, "capture_ms", started)
        if capture.asked:
            metrics["capture_asked"] = metrics.get("capture_asked", 0) + capture.asked
        return {"text": text, "merge": merge, "metrics": metrics}

    def _asker(
        self, state: CommitState, config: RunnableConfig
    ) -> Callable[[str, list[CaptureQuestion]], CaptureAnswer | None]:
        """The capture check's follow-up call for this round: one bounded forced tool call
        within the round's deadline; any failure (an error, the deadline, a model without
        tool calling) means nothing is added on follow-up."""
        deps, plan = self._deps, state["plan"]

        def ask(document: str, questions: list[CaptureQuestion]) -> CaptureAnswer | None:
            try:
                return request_capture(
                    deps.get_model(),
                    working_memory=document,
                    questions=questions,
                    prompt=deps.capture_prompt,
                    config=config,
                    metadata=_run_metadata(state),
                    timeout=_timeout(plan.deadline, deps.config.model_timeout_seconds),
                    max_tokens=plan.max_tokens,
                    call_key=state["thread_id"],
                    on_output_limit=deps.limits.learn_output_limit,
                )
            except (GenerationError, ToolCallingNotSupportedError, ValueError) as exc:
                logger.info("wm_langgraph: the capture follow-up gave nothing: %s", exc)
                return None

        return ask


def _grounded(abstracts: dict[str, str], conversation: str) -> dict[str, str]:
    """The abstracts that share a meaningful word with the messages they describe, their
    archive's part of ``conversation`` (one that shares none was invented, or copied from the
    prompt: refused)."""
    parts = marked_parts(conversation)
    out = {
        k: v
        for k, v in abstracts.items()
        if meaningful_words(v) & meaningful_words(parts.get(k, ""))
    }
    for archive_id in abstracts.keys() - out.keys():
        logger.info("wm_langgraph: archive %s: the writer's abstract was refused", archive_id)
    return out


def next_slice(state: CommitState) -> CommitState:
    """``next_slice``: the archive's next slice goes to the writer on top of the merged text.

    The branch follows that text (update on a v2 WM); the reply is cleared but its fallback
    kept, and the slice's decisions and artifact trail join the earlier ones. One WM version is
    stored for the whole archive.
    """
    step, merge, text = state["step"], state["merge"], state["text"]
    return {
        "step": WriterStep(
            index=step.index + 1,
            prior=text,
            branch="update" if is_working_memory(text) else "create",
        ),
        "reply": WriterReply(fallback=state["reply"].fallback),
        "merge": replace(
            merge,
            earlier_decisions=[*merge.earlier_decisions, *merge.decisions],
            earlier_trail=[*merge.earlier_trail, *merge.artifact_trail],
        ),
    }


class Save:
    """``save``: store the round's WM version, or decide what follows a failure (``outcome``).

    Done: the items the size contract moved out are stored, then the new WM version, then
    ``on_done`` is called and the archives are marked done (last). A failure, by kind:
    ``overflow`` — the writer's prompt limit is learned, nothing written; ``deadline`` —
    nothing written; ``rejected``/``unusable`` — a batch is ``split``, a single archive
    ``deferred``; anything else — ``failed``: the archives are marked failed (still pending).
    """

    def __init__(self, deps: CommitDeps) -> None:
        """Bind the node to its graph's dependencies."""
        self._deps = deps

    def __call__(self, state: CommitState) -> CommitState:
        """The round's ``outcome`` and its final ``metrics``."""
        metrics = {**state["metrics"], "total_ms": _elapsed_ms(state["metrics"])}
        if state["error"]:
            return self._failed(state, metrics)
        return self._done(state, metrics)

    def _done(self, state: CommitState, metrics: dict[str, Any]) -> CommitState:
        archives, thread_id, batch = self._deps.archives, state["thread_id"], state["batch"]
        plan, merge, text, late = state["plan"], state["merge"], state["text"], state["late"]
        covers = list(plan.covers) if late else [*plan.covers, *batch]
        decisions = [*merge.earlier_decisions, *merge.decisions]
        info = {
            "branch": state["step"].branch,
            "fallback": state["reply"].fallback,
            # a late fold's version takes its base version's place: both rounds' decisions
            "decisions": [*plan.base_decisions, *decisions],
            "artifact_trail": [*merge.earlier_trail, *merge.artifact_trail],
            "artifact_sources": dict(merge.trail_sources),
            "error_trail": merge.error_trail,
            "capture": list(merge.capture),
            "code_items": _held_code_items(plan.code_items, merge.captured_items, text),
            "dismissed": remembered_dismissals(plan.dismissed, merge.capture),
            "metrics": metrics,
            "deferred": [a for a in plan.deferred if a not in batch],
            "late": late,
        }
        abstracts = {
            archive_id: combined
            for archive_id in batch
            if (combined := combine_abstracts(merge.abstracts.get(archive_id, []))) is not None
        }
        # before the WM version: an archive a version covers has its abstract indexed
        SearchIndex(archives).write_abstracts(thread_id, abstracts)
        if merge.moved:  # before the WM that no longer holds them
            archives.put_moved(thread_id, covers[-1], merge.moved, covers)
        archives.put_wm(thread_id, covers, text, info)
        if self._deps.on_done is not None:
            done: CommitState = {**state, "outcome": "done", "metrics": metrics}
            self._deps.on_done(done)
        archives.update_archives(  # last: the WM version that covers them exists now
            thread_id,
            batch,
            status="done",
            overview=text,
            metadata={**info, "decisions": decisions, "error": None, "deferred": False},
            each={
                archive_id: {"abstract": abstract, "metadata": {"abstract_by": "writer"}}
                for archive_id, abstract in abstracts.items()
            },
        )
        return {"outcome": "done", "metrics": metrics}

    def _failed(self, state: CommitState, metrics: dict[str, Any]) -> CommitState:
        kind, batch = state["error_kind"], state["batch"]
        if kind == "overflow":
            plan = state["plan"]
            piece = plan.slices[state["step"].index]
            self._deps.limits.learn_overflow(
                plan.overhead_tokens + piece.tokens, state["overflow"] or ContextOverflow()
            )
            return {"outcome": "overflow", "metrics": metrics}
        if kind == "deadline":
            return {"outcome": "deadline", "metrics": metrics}
        if kind in _DETERMINISTIC and len(batch) > 1:
            return {"outcome": "split", "batch": batch, "metrics": metrics}
        if kind in _DETERMINISTIC and batch:
            return self._defer(state, metrics)
        self._deps.archives.update_archives(
            state["thread_id"],
            batch,
            status="failed",
            metadata={"error": state["error"], "failed_at": time.time()},
        )
        return {"outcome": "failed", "metrics": metrics}

    def _defer(self, state: CommitState, metrics: dict[str, Any]) -> CommitState:
        """Set a single archive aside: a WM version covers it with the WM unchanged and lists
        it as deferred (not for a late fold's retry: it is covered already), and the archive
        is marked failed, deferred, with its attempts counted."""
        archives, plan, late = self._deps.archives, state["plan"], state["late"]
        thread_id, (archive_id,) = state["thread_id"], state["batch"]
        records = archives.get_archives(thread_id, [archive_id])
        attempts = int(records[0].metadata.get("attempts", 0) or 0) + 1 if late else 1
        if not late:
            info = {
                "branch": None,
                "fallback": "deferred",
                "decisions": [],
                "artifact_trail": [],
                # the unchanged WM keeps what its base knew of its items
                "code_items": plan.code_items,
                "dismissed": plan.dismissed,
                "metrics": metrics,
                "deferred": [*plan.deferred, archive_id],
            }
            archives.put_wm(thread_id, [*plan.covers, archive_id], plan.base_prior, info)
        archives.update_archives(
            thread_id,
            [archive_id],
            status="failed",
            metadata={
                "error": state["error"],
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
        return {"outcome": "deferred", "late": late, "metrics": metrics}


def _elapsed_ms(metrics: dict[str, Any]) -> float:
    """Milliseconds since the round's ``metrics["started"]`` (wall clock), or 0."""
    started = metrics.get("started")
    return round((time.time() - started) * 1000, 3) if isinstance(started, float) else 0.0


# -- routers --------------------------------------------------------------------------------------
# Tracers see each routing as a run named after its function: the names are kept as they are.


def after_prepare(state: CommitState) -> Literal["create", "update", "save", "__end__"]:
    """Nothing to fold ends the run; a round that cannot call the writer goes to ``save``;
    otherwise the branch ``prepare`` chose."""
    if not state["batch"]:
        return _END
    if state["error"]:
        return "save"
    return state["step"].branch


def after_update(state: CommitState) -> Literal["create", "guard_merge", "save"]:
    """A failed call goes to ``save``; an update with no usable ops falls back to ``create``;
    ops go to ``guard_merge``."""
    if state["error"]:
        return "save"
    return "create" if state["reply"].ops is None else "guard_merge"


def after_create(state: CommitState) -> Literal["guard_merge", "save"]:
    """A failed call goes to ``save``; a written document to ``guard_merge``."""
    return "save" if state["error"] else "guard_merge"


def after_merge(state: CommitState) -> Literal["next_slice", "save"]:
    """An archive with slices left goes on with the next one; otherwise ``save``."""
    more = state["step"].index + 1 < len(state["plan"].slices)
    return "next_slice" if more else "save"


def after_slice(state: CommitState) -> Branch:
    """The next slice's branch: ``update`` on a v2 WM, else ``create``."""
    return state["step"].branch
