"""Measures: needle survival in the assembled context, and side-by-side timing.

Survival is measured on the exact messages the agent's model receives (recorded by
``ReplayAgent``), split into the summary part (the WM message, LangChain's summary message,
LangMem's summary system message) and the verbatim part (everything else).
"""

from __future__ import annotations

import gc
import json
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage

from bench.data import NEEDLE_KINDS, Needle, Session

__all__ = [
    "STALE_MARKERS",
    "Survival",
    "context_parts",
    "interleaved_seconds",
    "measure_survival",
    "seeded_global_random",
]

K = TypeVar("K")

_SUMMARY_MARKERS = (
    "[Session History Summary]",
    "Here is a summary of the conversation to date",
    "Summary of the conversation so far",
)
STALE_MARKERS: tuple[str, ...] = (
    "superseded",
    "no longer",
    "changed to",
    "previously",
    "formerly",
    "outdated",
    "[resolved]",
)
"""A line holding an old value counts as history, not as current, when it has one of these."""


def _text(message: BaseMessage) -> str:
    parts = [message.text]
    parts.extend(
        json.dumps(c.get("args"), ensure_ascii=False)
        for c in getattr(message, "tool_calls", None) or []
    )
    return "\n".join(p for p in parts if p)


def context_parts(messages: Sequence[BaseMessage]) -> tuple[str, str]:
    """(summary text, verbatim text) of one assembled context."""
    summary: list[str] = []
    raw: list[str] = []
    for m in messages:
        text = _text(m)
        head = text[:300]
        (summary if any(k in head for k in _SUMMARY_MARKERS) else raw).append(text)
    return "\n".join(summary), "\n".join(raw)


@dataclass
class Survival:
    """Needle survival at one point of a run.

    Attributes:
        found: kind -> needles present in the whole context.
        total: kind -> needles due.
        summary_found / summary_total: the same, over needles absent from the verbatim part
            (only the summary can carry them).
        stale: updated facts whose old value is still presented as current in the summary.
    """

    found: dict[str, int] = field(default_factory=dict)
    total: dict[str, int] = field(default_factory=dict)
    summary_found: dict[str, int] = field(default_factory=dict)
    summary_total: dict[str, int] = field(default_factory=dict)
    stale: int = 0
    lost: list[str] = field(default_factory=list)

    def rate(self, kind: str | None = None, *, summary_only: bool = False) -> float | None:
        """Survival in [0, 1] for one kind (or all), None when nothing was due."""
        f = self.summary_found if summary_only else self.found
        t = self.summary_total if summary_only else self.total
        kinds = [kind] if kind else list(t)
        den = sum(t.get(k, 0) for k in kinds)
        return None if den == 0 else sum(f.get(k, 0) for k in kinds) / den


def _is_stale(needle: Needle, summary_lines: list[str]) -> bool:
    if needle.stale is None:
        return False
    old = needle.stale.lower()
    return any(old in ln and not any(m in ln for m in STALE_MARKERS) for ln in summary_lines)


def measure_survival(
    session: Session, before_turn: int, messages: Sequence[BaseMessage]
) -> Survival:
    """Survival of the needles introduced before ``before_turn`` in one assembled context.

    An updated fact counts as kept only when its new value is present and, once the correction
    is no longer verbatim in the context, its old value is not presented as current anywhere in
    the summary part.
    """
    summary, raw = context_parts(messages)
    summary_l, raw_l = summary.lower(), raw.lower()
    lines = summary_l.splitlines()
    out = Survival()
    for n in session.needles_due(before_turn - 1):
        check = n.check.lower()
        in_raw = check in raw_l
        in_summary = check in summary_l
        # while the correction itself is still verbatim in the context, the model sees it
        stale = not in_raw and _is_stale(n, lines)
        ok = (in_raw or in_summary) and not stale
        out.total[n.kind] = out.total.get(n.kind, 0) + 1
        out.found[n.kind] = out.found.get(n.kind, 0) + int(ok)
        if stale:
            out.stale += 1
        if not in_raw:
            out.summary_total[n.kind] = out.summary_total.get(n.kind, 0) + 1
            out.summary_found[n.kind] = out.summary_found.get(n.kind, 0) + int(
                in_summary and not stale
            )
        if not ok:
            out.lost.append(f"{n.kind}: {n.check}")
    return out


def kinds_present(results: Sequence[Survival]) -> list[str]:
    """Needle kinds that occur in any of ``results``, in NEEDLE_KINDS order."""
    seen = {k for r in results for k in r.total}
    return [k for k in NEEDLE_KINDS if k in seen]


def interleaved_seconds(
    calls: Mapping[K, Callable[[], Any]], *, rounds: int = 15
) -> dict[K, list[float]]:
    """Wall seconds of every call in ``calls``, measured side by side.

    Each call runs once as a warm-up; then every round runs each call once, starting one place
    further along the list each round, so a slow moment of a shared machine lands on the calls
    of that round alike and the ratio of two calls within one round stays fair. Garbage
    collection is paused while a round runs and done between rounds. Returns the ``rounds``
    samples of each call, in round order.
    """
    keys = list(calls)
    times: dict[K, list[float]] = {k: [] for k in keys}
    was_enabled = gc.isenabled()
    try:
        for k in keys:
            calls[k]()  # warm-up
        for r in range(rounds):
            gc.collect()
            gc.disable()  # a collection of an unrelated heap must not land in one call's figure
            shift = r % len(keys) if keys else 0
            for k in keys[shift:] + keys[:shift]:
                start = time.perf_counter()
                calls[k]()
                times[k].append(time.perf_counter() - start)
            gc.enable()
    finally:
        if was_enabled:
            gc.enable()
        else:
            gc.disable()
    return times


@contextmanager
def seeded_global_random(label: str) -> Iterator[None]:
    """Seed the ``random`` module from ``label`` for the block, then restore its state.

    LangGraph's checkpointers draw each channel version's suffix from the global ``random``
    (``f"{n:032}.{random.random():016}"``), whose printed length varies by a byte or two; seeded,
    the checkpoint byte counts come out the same on every run.
    """
    state = random.getstate()
    random.seed(label)
    try:
        yield
    finally:
        random.setstate(state)
