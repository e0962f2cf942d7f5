"""Measure ``archive_search`` latency on a thread with many archives (behaviour §7.6).

::

    python scripts/recall_latency.py --archives 1000 --messages 10 --queries 50

Writes ``--archives`` archives of ``--messages`` synthetic chat messages each (12-40 words
drawn Zipf-like from a vocabulary of about 500 words, plus filler stop words) into an
``InMemoryStore`` (or ``--sqlite FILE``) the way Phase 1 does (the record, then its search
index), gives each archive but the newest an abstract of about 50 words the way Phase 2 does
(``--no-abstracts``: none), points the thread's timeline at them, and times
``archive_search`` through the engine: the first query of the process (every index record
read from the store into the cache) and then ``--queries`` queries of each kind (questions,
keywords, identifiers), reporting the median and 95th percentile in milliseconds. Also counts
the archive records each query reads.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import BaseStore, GetOp
from langgraph.store.memory import InMemoryStore

from wm_langgraph import WorkingMemory
from wm_langgraph.recall.tools import archive_search_text
from wm_langgraph.storage.archives import ArchiveRecord, digest_of, now_iso
from wm_langgraph.storage.search_index import SearchIndex


def _words(text: str) -> list[str]:
    return text.split()


WORDS = _words(
    "invoice billing deploy gateway retry timeout database migration postgres schema ledger "
    "refund currency export webhook token session cache worker queue report dashboard "
    "metrics alert incident customer account payment tax region backup restore index query "
    "latency budget review meeting release branch merge review test fixture config secret "
    "passport holiday dinner garden painting concert museum camping kitchen recipe coffee"
)
QUESTIONS = (
    "when did we move the billing database to postgres",
    "what was the timeout on the payment gateway",
    "why did the webhook retry fail last week",
    "which region holds the customer backups",
    "what did we decide about the release branch",
)
KEYWORDS = ("ledger refund", "tax", "gateway timeout", "museum", "queue worker")


FILLER = _words("the a to and of we it is that for on with this you i was be")
VOCABULARY = [*WORDS, *(f"{a}{b}{c}" for a in "bdfgklmnprstvz" for b in "aeiou" for c in "lmnrst")]
WEIGHTS = [1.0 / (rank + 1) for rank in range(len(VOCABULARY))]  # Zipf-like


def _message(rng: random.Random, i: int) -> BaseMessage:
    count = rng.randint(12, 40)
    picked = rng.choices(VOCABULARY, WEIGHTS, k=count) + rng.choices(FILLER, k=count // 2)
    rng.shuffle(picked)
    words = " ".join(picked)
    text = f"{words} (ticket T-{rng.randint(1000, 99999)})"
    return (HumanMessage if i % 2 == 0 else AIMessage)(text, id=f"m-{i}")


class _CountingStore(InMemoryStore):
    """An InMemoryStore that counts the records its batches read, by namespace kind."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: Counter[str] = Counter()

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        for op in ops:
            if isinstance(op, GetOp):
                self.reads[op.namespace[-1]] += 1
        return super().batch(ops)


@contextmanager
def _store(sqlite: str | None) -> Iterator[BaseStore]:
    if sqlite is None:
        yield _CountingStore()
        return
    from wm_langgraph.storage.sqlite import open_sqlite

    with open_sqlite(sqlite) as (_, store):
        yield store


def build(
    memory: WorkingMemory,
    thread: str,
    archives: int,
    messages: int,
    seed: int,
    *,
    abstracts: bool = True,
) -> None:
    """Write the thread's archives and index records as Phase 1 would, their abstracts as
    Phase 2 would, and its timeline."""
    rng = random.Random(seed)
    store = memory._archives
    index = SearchIndex(store)
    timeline: list[str] = []
    n = 0
    for a in range(1, archives + 1):
        chunk = [_message(rng, n + i) for i in range(messages)]
        n += messages
        record = ArchiveRecord(
            id=f"archive_{a:03d}",
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
    if abstracts:  # written before the Working Memory that covers them, as in Phase 2
        index.write_abstracts(
            thread,
            {a: " ".join(rng.choices(VOCABULARY, WEIGHTS, k=50)) for a in timeline[:-1]},
        )
    # a Working Memory covering all but the newest archive, as after Phase 2
    store.put_wm(thread, timeline[:-1], "# Session Title\nlatency", {})


CPU: list[float] = []


def _time(call: Callable[[], str]) -> tuple[float, str]:
    """Wall milliseconds of ``call`` (its CPU milliseconds go to :data:`CPU`: on a loaded
    machine they show the work a query does without the waits for a core)."""
    started, cpu = time.perf_counter(), time.process_time()
    out = call()
    CPU.append((time.process_time() - cpu) * 1000.0)
    return (time.perf_counter() - started) * 1000.0, out


def main(argv: list[str] | None = None) -> int:
    """Run the measurement; prints a small report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--archives", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=10, help="messages per archive")
    parser.add_argument("--queries", type=int, default=50, help="queries of each kind")
    parser.add_argument("--sqlite", default=None, help="use a SQLite store at this file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-abstracts", action="store_true", help="archives without abstracts")
    args = parser.parse_args(argv)
    sqlite = args.sqlite
    if sqlite == "tmp":
        sqlite = str(Path(tempfile.mkdtemp()) / "latency.sqlite")
    thread = "latency"
    config = {"configurable": {"thread_id": thread}}
    with _store(sqlite) as store:
        memory = WorkingMemory(store=store)
        started = time.perf_counter()
        build(
            memory, thread, args.archives, args.messages, args.seed, abstracts=not args.no_abstracts
        )
        print(
            f"wrote {args.archives} archives x {args.messages} messages "
            f"({'sqlite ' + sqlite if sqlite else 'InMemoryStore'}) in "
            f"{time.perf_counter() - started:.1f}s"
        )
        SearchIndex(memory._archives).forget(thread)  # a fresh process: an empty cache
        reads: Counter[str] = store.reads if isinstance(store, _CountingStore) else Counter()
        cold, out = _time(lambda: archive_search_text(memory, config, QUESTIONS[0]))
        print(
            f"first query of the process (reads {reads['search']} index records, "
            f"{reads['abstracts']} abstract records): {cold:.1f} ms"
        )
        kinds = {
            "question": QUESTIONS,
            "keywords": KEYWORDS,
            "identifier": tuple(f"T-{1000 + 7 * i}" for i in range(10)),
        }
        for kind, queries in kinds.items():
            times = []
            CPU.clear()
            reads.clear()
            for i in range(args.queries):
                query = queries[i % len(queries)]
                elapsed, out = _time(
                    lambda q=query: archive_search_text(memory, config, q)  # type: ignore[misc]
                )
                times.append(elapsed)
            times.sort()
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
            print(
                f"{kind:10s}: median {statistics.median(times):6.1f} ms, p95 {p95:6.1f} ms "
                f"(CPU median {statistics.median(CPU):5.1f} ms), "
                f"archive records read per query {reads['archives'] / len(times):.1f}, "
                f"index records read {reads['search']}, abstract records read "
                f"{reads['abstracts']}"
            )
        print(out.split("\n")[0][:100])
    return 0


if __name__ == "__main__":
    sys.exit(main())
