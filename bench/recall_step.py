"""The recall step's latency at 100 and 1,000 archives (LOCOMO_TIMINGS.md).

A thread of ``archives`` archives of ``messages`` invented chat messages each is written into an
``InMemoryStore`` the way Phase 1 writes it (the record, then its search index), every archive
but the newest with an abstract and covered by a Working Memory, as after Phase 2; then
:data:`RECALL_STEP` runs for every question of :data:`QUESTIONS` in turn, ``rounds`` times
(after one untimed call each: the indexes are in the process cache by then, as on a running
thread), and the wall times give the median and the 95th percentile.

:data:`RECALL_STEP` is what is timed: assemble's recall step of a user's turn,
:meth:`WorkingMemory.recall_hits` (the thread's timeline and current Working Memory read, then
the ranked search with the user's message as the query). :func:`keyword_rank`, the ranking of
``archive_search`` alone, is kept for comparison.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.memory import InMemoryStore

from wm_langgraph import WorkingMemory
from wm_langgraph.recall.search import rank
from wm_langgraph.storage.archives import ArchiveRecord, digest_of, now_iso
from wm_langgraph.storage.search_index import SearchIndex

__all__ = [
    "QUESTIONS",
    "RECALL_STEP",
    "RecallStep",
    "StepTiming",
    "assemble_recall",
    "keyword_rank",
    "recall_step_latency",
    "thread_of_archives",
]

RecallStep = Callable[[WorkingMemory, RunnableConfig, str], object]
"""``(memory, config, user message) -> hits``: one recall for one user turn."""

RECALL_LIMIT = 5
"""How many hits the timed step asks for."""


def keyword_rank(memory: WorkingMemory, config: RunnableConfig, query: str) -> object:
    """``archive_search``'s ranking for ``query`` over the thread's archives, abstracts and
    moved-out items (no formatting)."""
    hits, _ = rank(memory.recall_corpus(config), query, RECALL_LIMIT)
    return hits


def assemble_recall(memory: WorkingMemory, config: RunnableConfig, query: str) -> object:
    """The recall step assemble runs on a user's turn (:meth:`WorkingMemory.recall_hits`)."""
    return memory.recall_hits(config, query)


RECALL_STEP: RecallStep = assemble_recall
"""The step timed by :func:`recall_step_latency`."""

QUESTIONS: tuple[str, ...] = (
    "When did Avery go camping at the lake with her sister?",
    "What did Bram cook for the dinner party?",
    "Which museum did they visit in the spring?",
    "How long has Avery been learning the guitar?",
    "What colour is the new bicycle?",
    "Where does Bram's brother work now?",
    "Why did the concert get cancelled?",
    "What did Avery paint for the garden show?",
)
"""Invented questions in LoCoMo's style (never dataset text)."""


def _split(text: str) -> list[str]:
    return text.split()


_WORDS = _split(
    "lake camping sister dinner party museum spring guitar bicycle brother concert garden "
    "painting show trip beach mountain recipe coffee book movie school job interview dog cat "
    "birthday wedding friend family weekend holiday photo city park run race marathon class "
    "festival market bakery library train flight hotel kitchen yoga piano song band theatre"
)
_FILLER = _split("i you we it the a to and of that was is so really just my your")
_VOCABULARY = [*_WORDS, *(f"{a}{b}{c}" for a in "bdfgklmnprstvz" for b in "aeiou" for c in "lnrt")]
_WEIGHTS = [1.0 / (i + 1) for i in range(len(_VOCABULARY))]


def _message(rng: random.Random, n: int) -> BaseMessage:
    count = rng.randint(10, 35)
    picked = rng.choices(_VOCABULARY, _WEIGHTS, k=count) + rng.choices(_FILLER, k=count // 2)
    rng.shuffle(picked)
    return (HumanMessage if n % 2 == 0 else AIMessage)(" ".join(picked) + ".", id=f"m-{n}")


def thread_of_archives(
    memory: WorkingMemory, thread: str, archives: int, messages: int = 10, seed: int = 0
) -> None:
    """Write ``archives`` archives of ``messages`` messages into ``thread`` as Phase 1 would,
    their abstracts and a Working Memory covering all but the newest as Phase 2 would."""
    rng = random.Random(seed)
    store = memory._archives
    index = SearchIndex(store)
    timeline: list[str] = []
    for a in range(1, archives + 1):
        chunk = [_message(rng, (a - 1) * messages + i) for i in range(messages)]
        record = ArchiveRecord(
            id=f"archive_{a:04d}",
            seq=a,
            status="done",
            messages=chunk,
            message_count=len(chunk),
            thread_id=thread,
            created_at=now_iso(),
            prev=timeline[-1] if timeline else None,
            digest=digest_of(chunk),
        )
        store.put_archive(record)
        index.write(thread, record)
        timeline.append(record.id)
    store.set_timeline(thread, timeline)
    abstracts = {a: " ".join(rng.choices(_VOCABULARY, _WEIGHTS, k=40)) for a in timeline[:-1]}
    index.write_abstracts(thread, abstracts)
    store.put_wm(thread, timeline[:-1], "# Session Title\nrecall step latency", {})


@dataclass
class StepTiming:
    """The recall step's wall times on one thread."""

    archives: int
    messages: int
    step: str
    milliseconds: list[float] = field(default_factory=list)
    cpu_milliseconds: list[float] = field(default_factory=list)
    """The process's CPU time per call: on a loaded machine, the work without the waits."""

    @property
    def p50(self) -> float:
        """Median wall time, ms."""
        return statistics.median(self.milliseconds)

    @property
    def p95(self) -> float:
        """95th percentile of the wall time (nearest rank), ms."""
        return _p95(self.milliseconds)

    @property
    def cpu_p50(self) -> float:
        """Median CPU time, ms."""
        return statistics.median(self.cpu_milliseconds)

    @property
    def cpu_p95(self) -> float:
        """95th percentile of the CPU time, ms."""
        return _p95(self.cpu_milliseconds)

    def figures(self) -> dict[str, float | int | str]:
        """What the report shows (JSON-ready)."""
        return {
            "archives": self.archives,
            "messages": self.messages,
            "step": self.step,
            "calls": len(self.milliseconds),
            "p50": self.p50,
            "p95": self.p95,
            "cpu_p50": self.cpu_p50,
            "cpu_p95": self.cpu_p95,
        }


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def recall_step_latency(
    archives: int, *, messages: int = 10, rounds: int = 10, step: RecallStep | None = None
) -> StepTiming:
    """Time ``step`` (default :data:`RECALL_STEP`) for :data:`QUESTIONS`, ``rounds`` times
    each, on a thread of ``archives`` archives."""
    step = step or RECALL_STEP
    memory = WorkingMemory(store=InMemoryStore())
    thread = f"recall-step-{archives}"
    config: RunnableConfig = {"configurable": {"thread_id": thread}}
    thread_of_archives(memory, thread, archives, messages)
    for question in QUESTIONS:  # the indexes into the process cache, as on a running thread
        step(memory, config, question)
    timing = StepTiming(archives, messages, getattr(step, "__name__", repr(step)))
    for r in range(rounds):
        for i in range(len(QUESTIONS)):
            question = QUESTIONS[(i + r) % len(QUESTIONS)]
            began, cpu = time.perf_counter(), time.process_time()
            step(memory, config, question)
            timing.milliseconds.append((time.perf_counter() - began) * 1000)
            timing.cpu_milliseconds.append((time.process_time() - cpu) * 1000)
    return timing
