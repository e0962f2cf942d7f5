"""A worker pool that is fair between keys (conversation threads) and that hung work cannot fill.

- Work is done in *steps*; a key has at most one step running, and keys take turns: a key with
  more to do after its step goes to the back of the line (round-robin), so one thread's backlog
  cannot starve another.
- At most ``slots`` steps run at once — but a step that has run for ``stall_after`` seconds no
  longer counts (it waits on a hung model), so hung keys cannot starve healthy ones. At most
  ``max_threads`` steps run at once in all; more wait.
- Each step runs in a thread of its own that ends with it: no idle worker threads, and the
  threads alive are exactly the steps running.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable

__all__ = ["FairPool"]

logger = logging.getLogger("wm_langgraph")


class FairPool:
    """Runs ``step(key) -> more`` for ready keys, one step per key at a time, round-robin."""

    def __init__(
        self,
        step: Callable[[Hashable], bool],
        *,
        slots: int,
        stall_after: float,
        max_threads: int,
        name: str = "wm_langgraph",
    ) -> None:
        """Create the pool (no thread starts until work arrives)."""
        self._step = step
        self._slots = slots
        self._stall_after = stall_after
        self._max_threads = max(max_threads, slots)
        self._name = name
        self._cond = threading.Condition()
        self._ready: deque[Hashable] = deque()
        self._queued: set[Hashable] = set()
        self._running: dict[Hashable, float] = {}  # key -> monotonic start of its step
        self._again: set[Hashable] = set()  # running keys that got new work meanwhile
        self._timer: threading.Timer | None = None
        self._timer_at = float("inf")
        self._closed = False

    def ready(self, key: Hashable) -> None:
        """``key`` has work: run a step for it when its turn comes."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the Phase 2 pool is shut down")
            if key in self._running:
                self._again.add(key)  # its step may have looked already: run it once more
            elif key not in self._queued:
                self._queued.add(key)
                self._ready.append(key)
            self._dispatch()

    def _dispatch(self) -> None:
        """Start steps for ready keys while a slot is free (caller holds the lock)."""
        now = time.monotonic()
        fresh = [started for started in self._running.values() if now - started < self._stall_after]
        healthy = len(fresh)
        while self._ready and healthy < self._slots and len(self._running) < self._max_threads:
            key = self._ready.popleft()
            self._queued.discard(key)
            self._running[key] = now
            healthy += 1
            fresh.append(now)
            threading.Thread(
                target=self._work, args=(key,), name=f"{self._name}-phase2", daemon=True
            ).start()
        if self._ready and fresh and len(self._running) < self._max_threads:
            self._arm(min(fresh) + self._stall_after)

    def _arm(self, at: float) -> None:
        """Look again when the oldest fresh step stalls (one timer at a time)."""
        if self._timer is not None and self._timer_at <= at:
            return
        if self._timer is not None:
            self._timer.cancel()
        delay = max(0.0, at - time.monotonic()) + 0.001
        self._timer = threading.Timer(delay, self._on_timer)
        self._timer.daemon = True
        self._timer_at = at
        self._timer.start()

    def _on_timer(self) -> None:
        with self._cond:
            self._timer, self._timer_at = None, float("inf")
            if not self._closed:
                self._dispatch()

    def _work(self, key: Hashable) -> None:
        more = False
        try:
            more = self._step(key)
        except BaseException as exc:  # the step logs its own failures; the pool stays alive
            logger.error("wm_langgraph: a Phase 2 step ended with %s", type(exc).__qualname__)
        finally:
            with self._cond:
                del self._running[key]
                if key in self._again:
                    self._again.discard(key)
                    more = True
                if more and key not in self._queued:
                    self._queued.add(key)
                    self._ready.append(key)  # back of the line: the others go first
                if not self._closed or self._ready:
                    self._dispatch()
                self._cond.notify_all()

    def shutdown(self) -> None:
        """Let queued and running steps finish, then refuse new work (idempotent)."""
        with self._cond:
            while self._ready or self._running:
                self._cond.wait()
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
