"""The Phase 2 runner: ordered per thread, background or inline, with a circuit breaker.

- Background jobs share a small thread pool, but the jobs of one thread run one at a time, in
  submission (= archive) order; each job folds every pending archive of its timeline into the
  latest WM, so a job that finds nothing left to do is a cheap no-op.
- Inline runs (``wait=True``) take the same per-thread lock, so they never overtake or
  interleave with a background job of the same thread.
- Circuit breaker: after ``max_consecutive_failures`` consecutive failed jobs a thread's
  Phase 2 pauses; commits still archive, but the model is not called again until
  :meth:`Phase2Runner.reset_breaker` (``WorkingMemory.resume``) or the cool-down has passed,
  when one probe job may run. The counters live in the store, so they survive restarts.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.callbacks import BaseCallbackManager
from langgraph.graph.state import CompiledStateGraph

from wm_langgraph.engine.archives import ArchiveStore
from wm_langgraph.engine.commit import commit_run_config
from wm_langgraph.engine.config import WorkingMemoryConfig

__all__ = ["JobOutcome", "Phase2Runner", "background_callbacks"]

logger = logging.getLogger("wm_langgraph")

JobOutcome = Literal["done", "failed", "noop", "paused"]
_BREAKER = "breaker"


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


@dataclass
class _ThreadJobs:
    queue: deque[_Job] = field(default_factory=deque)
    running: bool = False
    outstanding: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


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
        self._threads: dict[str, _ThreadJobs] = {}
        self._pool: ThreadPoolExecutor | None = None

    # -- scheduling -------------------------------------------------------------------------
    def _jobs(self, thread_id: str) -> _ThreadJobs:
        with self._cond:
            return self._threads.setdefault(thread_id, _ThreadJobs())

    def submit(
        self,
        thread_id: str,
        timeline: Sequence[str],
        *,
        user_id: str | None = None,
        callbacks: Any = None,
    ) -> None:
        """Queue a background job for ``thread_id`` (runs after the thread's earlier jobs)."""
        job = _Job(thread_id, list(timeline), user_id, background_callbacks(callbacks))
        jobs = self._jobs(thread_id)
        with self._cond:
            jobs.queue.append(job)
            jobs.outstanding += 1
            start = not jobs.running
            jobs.running = True
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self._config.phase2_workers, thread_name_prefix="wm_langgraph"
                )
            pool = self._pool
        if start:
            pool.submit(self._drain, thread_id)

    def run_inline(
        self,
        thread_id: str,
        timeline: Sequence[str],
        *,
        user_id: str | None = None,
        callbacks: Any = None,
    ) -> JobOutcome:
        """Run Phase 2 now, in the caller's thread (after any running job of the thread)."""
        job = _Job(thread_id, list(timeline), user_id, callbacks)
        with self._jobs(thread_id).lock:
            # A fresh context: the commit graph is a run of its own (nested in the caller's
            # trace through ``callbacks``), not a subgraph of the caller's graph.
            return contextvars.Context().run(self._run, job)

    def _drain(self, thread_id: str) -> None:
        jobs = self._jobs(thread_id)
        while True:
            with self._cond:
                if not jobs.queue:
                    jobs.running = False
                    self._cond.notify_all()
                    return
                job = jobs.queue.popleft()
            try:
                with jobs.lock:
                    self._run(job)
            except Exception as exc:
                # Exception texts can quote message content: type at ERROR, details at DEBUG.
                logger.error("wm_langgraph: Phase 2 job for a thread crashed (%s)", _kind(exc))
                logger.debug("wm_langgraph: Phase 2 job traceback", exc_info=True)
            finally:
                with self._cond:
                    jobs.outstanding -= 1
                    self._cond.notify_all()

    def wait(self, thread_id: str | None = None, timeout: float | None = None) -> bool:
        """Block until the thread's (or every thread's) queued jobs have finished.

        Returns:
            True when nothing is outstanding, False when ``timeout`` passed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if thread_id is None:
                    busy = any(j.outstanding for j in self._threads.values())
                else:
                    busy = bool(self._threads.get(thread_id, _ThreadJobs()).outstanding)
                if not busy:
                    return True
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)

    def shutdown(self) -> None:
        """Stop the worker threads after the queued jobs (idempotent)."""
        with self._cond:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

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

    def _record(self, thread_id: str, outcome: JobOutcome, error: str | None) -> None:
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

    # -- one job ---------------------------------------------------------------------------
    def _run(self, job: _Job) -> JobOutcome:
        if self.is_paused(job.thread_id):
            return "paused"
        outcome: JobOutcome = "noop"
        while True:  # one batch per round; stops when nothing is pending or a round fails
            pending = self._pending(job)
            if not pending:
                return outcome
            try:
                result = self._graph.invoke(
                    {"thread_id": job.thread_id, "timeline": job.timeline, "user_id": job.user_id},
                    commit_run_config(job.thread_id, pending, job.callbacks),
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
            round_outcome = result.get("outcome", "noop")
            if round_outcome == "noop":
                return outcome
            error = result.get("error")
            self._record(job.thread_id, round_outcome, error)
            if round_outcome == "failed":
                # The error can quote the model's reply (a refusal echoing the conversation):
                # it goes to the archive metadata and DEBUG, never to INFO and above.
                logger.warning(
                    "wm_langgraph: Phase 2 failed; the previous WM stays and the archives stay "
                    "pending (the error is in the archive metadata and at DEBUG)"
                )
                logger.debug("wm_langgraph: Phase 2 error: %s", error)
                return "failed"
            outcome = "done"

    def _pending(self, job: _Job) -> list[str]:
        current = self._archives.current_wm(job.thread_id, job.timeline)
        return job.timeline[len(current.covers) if current else 0 :]


def _kind(exc: BaseException) -> str:
    """The exception's type name (its message may quote conversation text)."""
    return type(exc).__qualname__
