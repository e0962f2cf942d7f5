"""Blocking writer calls with a timeout, without an unbounded pile of abandoned threads.

A sync model call cannot be cancelled: to give up on it after ``timeout`` seconds it runs in a
daemon thread of its own (the caller's context variables copied, so tracing parents are kept),
and on timeout that thread is *abandoned* — it runs on until the model client returns or times
out by itself, and its result is discarded. Two rules bound how many such threads exist:

- **one per key** (the engine passes the conversation thread id): a new call for a key whose
  previous call is still running first waits for it, within its own timeout; if it is still
  running then, the new call fails at once instead of starting a second thread;
- **at most** :data:`MAX_ABANDONED_CALLS` in the process: beyond that a call fails at once.

So 50 timeouts on one conversation leave at most one thread behind, not 50.
"""

from __future__ import annotations

import contextvars
import itertools
import math
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "MAX_ABANDONED_CALLS",
    "CallRefusedError",
    "CallTimeoutError",
    "abandoned_calls",
    "call_within",
]

MAX_ABANDONED_CALLS = 32
"""Abandoned (timed-out, still running) writer calls the process keeps at most."""

_T = TypeVar("_T")
_lock = threading.Lock()
_abandoned: dict[object, threading.Thread] = {}
_anonymous = itertools.count(1)


class CallTimeoutError(Exception):
    """The call did not finish within its timeout (it was abandoned)."""


class CallRefusedError(Exception):
    """The call was not started: an earlier call of the same key, or too many calls, hang."""


def _prune() -> None:
    for key in [k for k, t in _abandoned.items() if not t.is_alive()]:
        del _abandoned[key]


def abandoned_calls() -> int:
    """How many abandoned writer calls are still running in this process."""
    with _lock:
        _prune()
        return len(_abandoned)


def _wait_for_previous(key: object, timeout: float | None) -> float | None:
    """Wait (within ``timeout``) for the key's abandoned call; the time left, or raise."""
    with _lock:
        _prune()
        previous = _abandoned.get(key)
        crowded = previous is None and len(_abandoned) >= MAX_ABANDONED_CALLS
    if crowded:
        raise CallRefusedError(
            f"{MAX_ABANDONED_CALLS} earlier writer calls timed out and still run; not starting "
            "another (set the model client's own timeout so abandoned calls end)"
        )
    if previous is None:
        return timeout
    started = time.monotonic()
    previous.join(timeout)
    if previous.is_alive():
        raise CallRefusedError(
            "the previous writer call of this thread timed out and is still running; not "
            "starting a second one"
        )
    return None if timeout is None else max(0.0, timeout - (time.monotonic() - started))


def call_within(call: Callable[[], _T], timeout: float | None, what: str, key: object = None) -> _T:
    """Run ``call``; raise :class:`CallTimeoutError` when it takes longer than ``timeout`` seconds.

    Args:
        call: The blocking call.
        timeout: Seconds; None (or infinity) runs the call in the caller's thread, unbounded.
        what: A label for the thread name and messages.
        key: Groups calls that must not pile up (the conversation thread id).

    Raises:
        CallTimeoutError: The call was abandoned after ``timeout`` seconds.
        CallRefusedError: The call was not started (see the module docstring).
        BaseException: Whatever the call raised.
    """
    if timeout is not None and math.isinf(timeout):
        timeout = None
    remaining = _wait_for_previous(key, timeout)
    if remaining is None:
        return call()
    if remaining <= 0:
        raise CallTimeoutError(f"{what}: no time left for the model within {timeout} s")
    context = contextvars.copy_context()
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = context.run(call)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=work, name=f"wm_langgraph-{what}", daemon=True)
    thread.start()
    if not done.wait(remaining):
        with _lock:
            if key is None:
                key = ("anonymous", next(_anonymous))
            _abandoned[key] = thread
        raise CallTimeoutError(f"{what}: the model did not answer within {timeout} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
