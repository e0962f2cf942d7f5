"""Recall at scale: ``archive_search`` over a thread of about 1,000 archives.

One chat session of ``turns`` turns is played through the wm_langgraph agent with a commit
every turn (the scripted faithful summariser writes the Working Memory), so the thread holds
one archive per turn. Then each query below runs ``rounds`` times, all queries once per round
in turn: its wall time per call (median, 95th percentile: ``TIMINGS.md``) and the store records
one call reads, by kind (deterministic: ``RESULTS.md``). The store counts what each batch
reads; a search must not read every archive's index or messages per query (the indexes come
from the per-process cache once read, and only the archives the hits show are read whole).
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.store.base import GetOp, Op, Result, SearchOp
from langgraph.store.memory import InMemoryStore

from bench.data import generate_session
from bench.models import make_model
from bench.systems import Tuning, build_system
from wm_langgraph.recall.tools import archive_search_text

__all__ = ["QUERIES", "QueryTiming", "RecallScale", "recall_at_scale"]

QUERIES: tuple[tuple[str, str], ...] = (
    ("question", "what did Owen cook on Sunday"),
    ("question", "where does Aiko work these days"),
    ("question", "when is the call with the landlord about the heating"),
    ("keywords", "tax return"),
    ("keywords", "landlord"),
    ("identifier", "E4021"),
)
"""``(kind, query)``: plain-word questions, keywords and an identifier the session never
contains (read literally in the newest archives)."""


class _CountingStore(InMemoryStore):
    """An in-memory store that counts the records each batch reads, by namespace kind."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        listed = list(ops)
        for op in listed:
            if isinstance(op, GetOp):
                self.reads[op.namespace[-1]] += 1
            elif isinstance(op, SearchOp):
                self.reads[f"{op.namespace_prefix[-1]} (search)"] += 1
        return super().batch(listed)


@dataclass
class QueryTiming:
    """One query's figures."""

    kind: str
    query: str
    hits: int
    milliseconds: list[float] = field(default_factory=list)
    reads: dict[str, int] = field(default_factory=dict)

    @property
    def median(self) -> float:
        """Median wall time per call, ms."""
        return statistics.median(self.milliseconds)

    @property
    def p95(self) -> float:
        """95th percentile of the wall time per call, ms."""
        ordered = sorted(self.milliseconds)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


@dataclass
class RecallScale:
    """The thread searched and every query's figures."""

    turns: int
    archives: int
    messages: int
    build_seconds: float
    queries: list[QueryTiming]


def _hits(out: str) -> int:
    head = out.split(" ", 1)[0]
    return int(head) if head.isdigit() else 0


def recall_at_scale(turns: int, *, seed: int, rounds: int = 15) -> RecallScale:
    """Play ``turns`` chat turns with a commit every turn, then time :data:`QUERIES`."""
    session = generate_session("chat", seed, turns)
    store = _CountingStore()
    started = time.perf_counter()
    run = build_system(
        "wm_langgraph",
        session,
        make_model("faithful", session.items, seed=seed),
        replace(Tuning(), every_turn=True),
        store=store,
        thread_id="recall-scale",
    )
    for turn in session.turns:
        run.play(turn, record=False)
    memory: Any = run.extra["memory"]
    records = memory.list_archives(run.config)
    build = time.perf_counter() - started
    timings = [QueryTiming(kind, query, 0) for kind, query in QUERIES]
    for timing in timings:  # a first call each: every index is in the process cache after it
        timing.hits = _hits(archive_search_text(memory, run.config, timing.query))
    for timing in timings:
        store.reads.clear()
        archive_search_text(memory, run.config, timing.query)
        timing.reads = dict(sorted(store.reads.items()))
    for r in range(rounds):
        for i in range(len(timings)):
            timing = timings[(i + r) % len(timings)]
            began = time.perf_counter()
            archive_search_text(memory, run.config, timing.query)
            timing.milliseconds.append((time.perf_counter() - began) * 1000)
    return RecallScale(
        turns=turns,
        archives=len(records),
        messages=sum(len(record.messages) for record in records),
        build_seconds=build,
        queries=timings,
    )
