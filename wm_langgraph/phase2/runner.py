"""The Phase 2 runner: ordered per thread, fair between threads, bounded in time, with a breaker.

- A *job* folds every pending archive of its thread's timeline into the latest WM, round by
  round (one batch, or one archive in slices, per round: ``phase2.graph``). Jobs of one
  thread run one at a time, in order; a job submitted while an earlier one of the same
  timeline is queued or running is merged into it (Phase 2 runs once per commit, never twice).
- Background rounds run in a :class:`~wm_langgraph.phase2.pool.FairPool`: threads take turns
  round by round, and a round hung on its writer call stops holding one of the
  ``phase2_workers`` slots after ``phase2_stall_seconds``, so neither one thread's backlog nor
  four hung writers can starve a healthy thread.
- Inline runs (``wait=True``: ``compact()``, a mid-turn overflow, ``background=False``) take
  the thread's lock, so they never overtake or interleave with a background round of the same
  thread. They are bounded in time by ``model_timeout_seconds`` as a whole — waiting for the
  lock and every writer call together; what is left when the time is up goes to the
  background (the archives stay pending and visible meanwhile).
- Round outcomes: ``done``; ``overflow`` (the prompt exceeded the writer's context — the next
  round is smaller); ``split`` (a deterministic failure of a multi-archive batch — the next round
  takes half); ``deferred`` (a deterministic failure of one archive — it is set aside, visible,
  and the job goes on with the archives behind it); ``failed`` (transient — the job stops).
- Binding: a job runs on the store of the run that scheduled it (captured when it is
  submitted), never on one looked up by thread id: one memory may serve several graphs whose
  stores (tenants) use the same thread ids, and their jobs are queued, locked and run apart.
- Circuit breaker: after ``max_consecutive_failures`` consecutive failed (or deferring) rounds
  a thread's Phase 2 pauses; commits still archive, but the model is not called again until
  :meth:`Phase2Runner.reset_breaker` (``WorkingMemory.resume``) or the cool-down has passed,
  when one probe job may run. The counters live in the store, so they survive restarts.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.callbacks import BaseCallbackManager
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.phase2.graph import RETRY_DEFERRED_META, commit_run_config
from wm_langgraph.phase2.pool import FairPool
from wm_langgraph.storage.archives import ArchiveStore, NoStoreError

__all__ = ["JobOutcome", "Phase2Runner", "background_callbacks"]

logger = logging.getLogger("wm_langgraph")

JobOutcome = Literal["done", "failed", "noop", "paused", "busy"]
_BREAKER = "breaker"
_MAX_OVERFLOW_ROUNDS = 16  # each one lowers the prompt limit; this many means something is off
_THREADS_PER_SLOT = 4


def background_callbacks(callbacks: Any) -> Any:
    """The caller's callbacks for a background run of its own (a new root run).

    A callback manager keeps its handlers, tags and metadata (LangSmith users keep the link to
    the thread's trace by them) but loses its parent run: the caller's run is over. LangGraph's
    internal handlers (streaming, ...) are left out.
    """
    if callbacks is None:
        return None
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.parent_run_id = None
        for handler in [*manager.handlers, *manager.inheritable_handlers]:
            if type(handler).__module__.startswith("langgraph."):
                manager.remove_handler(handler)
        manager.handlers = list(manager.inheritable_handlers)
        return manager if manager.handlers else None
    if not isinstance(callbacks, list):
        return None
    kept = [h for h in callbacks if not type(h).__module__.startswith("langgraph.")]
    return kept or None


@dataclass
class _Job:
    thread_id: str
    timeline: list[str]
    user_id: str | None
    callbacks: Any
    started_at: float = field(default_factory=time.time)
    max_archives: int | None = None
    overflow_rounds: int = 0
    outcome: JobOutcome = "noop"
    version: int = 0  # bumped when a later submission is merged into this job
    store: BaseStore | None = None  # the store of the run that scheduled the job


@dataclass
class _ThreadJobs:
    queue: deque[_Job] = field(default_factory=deque)
    outstanding: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _extends(old: Sequence[str], new: Sequence[str]) -> bool:
    """Whether timeline ``new`` continues ``old`` (same archives first)."""
    return len(new) >= len(old) and list(new[: len(old)]) == list(old)


class Phase2Runner:
    """Runs the commit graph for threads, in order, background or inline."""

    def __init__(
        self,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        archives: ArchiveStore,
        config: WorkingMemoryConfig,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Create a runner (its worker threads start on first use)."""
        self._graph = graph
        self._archives = archives
        self._config = config
        self._clock = clock
        self._cond = threading.Condition()
        # Keyed by (memory key, id of the job's store): the same thread id in two stores is
        # two timelines. The jobs hold their store, so an id is not reused while queued.
        self._threads: dict[tuple[str, int], _ThreadJobs] = {}
        self._pool: FairPool | None = None

    # -- scheduling -------------------------------------------------------------------------
    def _current_store(self, thread_id: str) -> BaseStore | None:
        """The store the thread's memory uses in this context (the scheduling run's)."""
        try:
            return self._archives.store_for(thread_id)
        except NoStoreError:
            return None

    @staticmethod
    def _slot(thread_id: str, store: BaseStore | None) -> tuple[str, int]:
        return (thread_id, id(store))

    def _jobs(self, slot: tuple[str, int]) -> _ThreadJobs:
        with self._cond:
            return self._threads.setdefault(slot, _ThreadJobs())

    def _get_pool(self) -> FairPool:
        with self._cond:
            if self._pool is None:
                self._pool = FairPool(
                    self._step,
                    slots=self._config.phase2_workers,
                    stall_after=self._config.phase2_stall_seconds,
                    max_threads=_THREADS_PER_SLOT * self._config.phase2_workers,
                )
            return self._pool

    def submit(
        self,
        thread_id: str,
        timeline: Sequence[str],
        *,
        user_id: str | None = None,
        callbacks: Any = None,
    ) -> None:
        """Queue background work for ``thread_id`` (after the thread's earlier jobs).

        When the thread's last job (queued or running) is for the same timeline, or one it
        continues, that job takes the new timeline instead: its next round sees the new
        archives, and no second job is queued.
        """
        handlers = background_callbacks(callbacks)
        store = self._current_store(thread_id)
        slot = self._slot(thread_id, store)
        jobs = self._jobs(slot)
        with self._cond:
            last = jobs.queue[-1] if jobs.queue else None
            if last is not None and _extends(last.timeline, timeline):
                last.timeline, last.user_id = list(timeline), user_id
                last.version += 1
                last.callbacks = handlers if handlers is not None else last.callbacks
            else:
                job = _Job(thread_id, list(timeline), user_id, handlers, store=store)
                jobs.queue.append(job)
                jobs.outstanding += 1
        self._get_pool().ready(slot)

    def _step(self, slot: Hashable) -> bool:
        """One background round of the slot's first job; True when the slot has more."""
        with self._cond:
            jobs = self._threads.get(cast("tuple[str, int]", slot))
            if jobs is None or not jobs.queue:
                return False
            job = jobs.queue[0]
            version = job.version
        finished = True
        try:
            with jobs.lock:
                finished = self._bound_round(job, None)
        except Exception as exc:
            # Exception texts can quote message content: type at ERROR, details at DEBUG.
            logger.error("wm_langgraph: Phase 2 job for a thread crashed (%s)", _kind(exc))
            logger.debug("wm_langgraph: Phase 2 job traceback", exc_info=True)
        finally:  # a BaseException (a dying process) still ends the job for wait()
            with self._cond:
                if finished and job.version != version and job.outcome != "paused":
                    finished = False  # a commit merged into the job meanwhile: go on
                if finished:
                    if jobs.queue and jobs.queue[0] is job:
                        jobs.queue.popleft()
                    jobs.outstanding -= 1
                    self._cond.notify_all()
        with self._cond:
            return bool(jobs.queue)

    def run_inline(
        self,
        thread_id: str,
        timeline: Sequence[str],
        *,
        user_id: str | None = None,
        callbacks: Any = None,
    ) -> JobOutcome:
        """Run Phase 2 now, in the caller's thread (after any running round of the thread).

        Bounded by ``model_timeout_seconds`` in all (the wait for a running round included);
        work left when the time is up continues in the background and ``"busy"`` is returned
        when the run could not even start.
        """
        store = self._current_store(thread_id)
        job = _Job(thread_id, list(timeline), user_id, callbacks, store=store)
        timeout = self._config.model_timeout_seconds
        deadline = None if timeout is None else time.monotonic() + timeout
        lock = self._jobs(self._slot(thread_id, store)).lock
        if not lock.acquire(timeout=-1 if timeout is None else timeout):
            self.submit(thread_id, timeline, user_id=user_id, callbacks=callbacks)
            return "busy"
        try:
            # A fresh context: the commit graph is a run of its own (nested in the caller's
            # trace through ``callbacks``), not a subgraph of the caller's graph.
            context = contextvars.Context()
            while not context.run(self._bound_round, job, deadline):
                if deadline is not None and time.monotonic() >= deadline:
                    self.submit(thread_id, job.timeline, user_id=user_id, callbacks=callbacks)
                    break
        finally:
            lock.release()
        return job.outcome

    def wait(self, thread_id: str | None = None, timeout: float | None = None) -> bool:
        """Block until the thread's (or every thread's) queued jobs have finished.

        Returns:
            True when nothing is outstanding, False when ``timeout`` passed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                busy = any(
                    jobs.outstanding
                    for (key, _), jobs in self._threads.items()
                    if thread_id is None or key == thread_id
                )
                if not busy:
                    return True
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)

    def cancel(self, thread_id: str) -> None:
        """Drop the queued jobs of ``thread_id`` on the current store that have not started (a
        running round finishes; :meth:`wait` for it)."""
        slot = self._slot(thread_id, self._current_store(thread_id))
        with self._cond:
            jobs = self._threads.get(slot)
            if jobs is None:
                return
            while len(jobs.queue) > 1:  # the first one may be running: it ends by itself
                jobs.queue.pop()
                jobs.outstanding -= 1
            self._cond.notify_all()

    def shutdown(self) -> None:
        """Stop the worker threads after the queued jobs (idempotent)."""
        with self._cond:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()

    # -- circuit breaker -------------------------------------------------------------------
    def breaker(self, thread_id: str) -> dict[str, Any]:
        """The thread's breaker record: ``consecutive_failures``, ``paused_at``, ``last_error``."""
        value = self._archives.get_meta(thread_id, _BREAKER) or {}
        return {
            "consecutive_failures": max(0, int(value.get("consecutive_failures", 0) or 0)),
            "paused_at": value.get("paused_at"),
            "last_error": value.get("last_error"),
        }

    def is_paused(self, thread_id: str) -> bool:
        """True while the thread's Phase 2 is paused and its cool-down has not passed."""
        paused_at = self.breaker(thread_id)["paused_at"]
        if not isinstance(paused_at, int | float):
            return False
        return self._clock() - paused_at < self._config.failure_cooldown_seconds

    def reset_breaker(self, thread_id: str) -> None:
        """Close the breaker: the next job calls the model again."""
        self._archives.put_meta(
            thread_id, _BREAKER, {"consecutive_failures": 0, "paused_at": None, "last_error": None}
        )

    def retry_deferred(self, thread_id: str) -> None:
        """Make the thread's deferred archives due again, whatever their attempts so far."""
        self._archives.put_meta(thread_id, RETRY_DEFERRED_META, {"at": time.time()})

    def _record(self, thread_id: str, outcome: str, error: str | None) -> None:
        state = self.breaker(thread_id)
        if outcome == "done":
            if state["consecutive_failures"] or state["paused_at"] is not None:
                self.reset_breaker(thread_id)
            return
        failures = state["consecutive_failures"] + 1
        paused_at = state["paused_at"]
        if failures >= self._config.max_consecutive_failures:
            paused_at = self._clock()
            logger.warning(
                "wm_langgraph: Phase 2 paused for a thread after %d consecutive failures "
                "(archives stay pending; call resume() or wait %.0f s)",
                failures,
                self._config.failure_cooldown_seconds,
            )
        self._archives.put_meta(
            thread_id,
            _BREAKER,
            {"consecutive_failures": failures, "paused_at": paused_at, "last_error": error},
        )

    # -- one round -------------------------------------------------------------------------
    def _bound_round(self, job: _Job, deadline: float | None) -> bool:
        """:meth:`_round` on the job's own store (whatever this thread served last)."""
        with self._archives.using(job.store):
            return self._round(job, deadline)

    def _invoke(self, job: _Job, deadline: float | None) -> dict[str, Any]:
        inputs = {
            "thread_id": job.thread_id,
            "timeline": list(job.timeline),
            "user_id": job.user_id,
            "deadline": deadline,
            "max_archives": job.max_archives,
            "job_started": job.started_at,
            "writer_works": job.outcome == "done",
        }
        pending: list[str] = []
        try:
            current = self._archives.current_wm(job.thread_id, job.timeline)
            pending = job.timeline[len(current.covers) if current else 0 :]
            if not pending and not (current and current.info.get("deferred")):
                return {"outcome": "noop"}  # nothing to fold: no run, no trace
            result: dict[str, Any] = self._graph.invoke(
                inputs, commit_run_config(job.thread_id, pending, job.callbacks)
            )
        except Exception as exc:
            logger.error("wm_langgraph: the commit pipeline raised %s", _kind(exc))
            logger.debug("wm_langgraph: commit pipeline traceback", exc_info=True)
            result = {"outcome": "failed", "error": f"commit pipeline raised: {exc!r}"}
            with contextlib.suppress(Exception):  # best effort: the store may be the fault
                self._archives.update_archives(
                    job.thread_id,
                    pending,
                    status="failed",
                    metadata={"error": result["error"], "failed_at": time.time()},
                )
        return result

    def _round(self, job: _Job, deadline: float | None) -> bool:
        """Run one round of ``job``; True when the job is finished."""
        if self.is_paused(job.thread_id):
            job.outcome = "paused" if job.outcome == "noop" else job.outcome
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        result = self._invoke(job, deadline)
        outcome = result.get("outcome", "noop")
        error = result.get("error")
        if outcome == "noop":
            return True
        if outcome == "deadline":
            return False  # the inline caller sees its time is up and hands the rest over
        if outcome == "overflow":
            job.overflow_rounds += 1
            if job.overflow_rounds <= _MAX_OVERFLOW_ROUNDS:
                return False
            outcome = "failed"
        if outcome == "split":
            job.max_archives = max(1, len(result.get("batch") or [2]) // 2)
            return False
        job.max_archives = None
        if outcome == "done":
            self._record(job.thread_id, "done", None)
            job.outcome = "done"
            return False
        if outcome == "deferred":
            if not result.get("late"):  # a first deferral counts; a late retry does not
                self._record(job.thread_id, "failed", error)
            return self.is_paused(job.thread_id)
        self._record(job.thread_id, "failed", error)
        logger.warning(
            "wm_langgraph: Phase 2 failed: %s; the previous WM stays and the archives stay "
            "pending (retried at the next commit; the error is in the archive metadata)",
            failure_cause(error, result.get("error_kind")),
        )
        logger.debug("wm_langgraph: Phase 2 error: %s", error)
        job.outcome = "failed"
        return True


_SHOWN_KINDS = frozenset({"transient", "deadline"})
"""Failure kinds whose message comes from the model client or the clock (connection refused,
timeout, 429, 5xx), never from the model's reply: safe to log at WARNING."""

_CAUSE_CHARS = 300


def failure_cause(error: object, kind: object) -> str:
    """The failure as the WARNING names it: the exception and its message for a transport
    failure (``update: the model call failed: APIConnectionError('Connection error.')``); for
    the other kinds (a refusal, a reply that is not a Working Memory, a 400 that may echo the
    prompt) only the kind and the exception's type, since the message can quote the
    conversation (that goes to the archive metadata and DEBUG, never INFO and above)."""
    text = " ".join(str(error or "unknown error").split())
    if kind in _SHOWN_KINDS:
        return text[:_CAUSE_CHARS] + ("…" if len(text) > _CAUSE_CHARS else "")
    found = re.search(r"(?:failed|raised): ([A-Za-z_][\w.]*)\(", text)
    what = found.group(1) if found else "the writer's reply was unusable"
    return (
        f"{kind or 'failed'} failure, {what} (the message may quote the conversation: it is "
        "logged at DEBUG only)"
    )


def _kind(exc: BaseException) -> str:
    """The exception's type name (its message may quote conversation text)."""
    return type(exc).__qualname__
