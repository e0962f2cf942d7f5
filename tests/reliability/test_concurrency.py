"""Concurrency: many conversations driven in parallel against one SQLite file, Phase 2 in the
background under load.

Checks, per conversation: nothing lost (live + archives == every message sent, in order),
Phase 2 folded the archives strictly in order and each message exactly once (the marker log in
the WM equals the archived messages), and no deadlock (every wait is bounded: a hang fails).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from _rel_harness import Conversation, MarkerModel, build_agent, check_thread
from _rel_stats import add

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.storage.archives import ArchiveStore
from wm_langgraph.storage.sqlite import open_sqlite

WAIT_S = 120.0

CONFIG = WorkingMemoryConfig(
    token_budget=4_000,
    commit_token_threshold_ratio=0.0,  # a commit (and a background Phase 2 job) every turn
    commit_keep_recent_count=2,
    reserve_tokens=0,
    background=True,
    phase2_workers=4,
)


class _SlowModel(MarkerModel):
    """A healthy marker model that yields the CPU on every call, so background jobs pile up
    behind the turns and fold several archives at once."""

    def __init__(self) -> None:
        super().__init__(fault=self._yield)

    @staticmethod
    def _yield(kind: str, prompt: str, healthy: Any) -> Any:
        time.sleep(0.002)  # not asserted on; it only lets other threads run
        return None


def _drive(graph: Any, conv: Conversation, turns: int) -> None:
    for _ in range(turns):
        conv.turn(graph, filler="some words " * 5)


@pytest.mark.slow
@pytest.mark.parametrize(("threads", "turns"), [(16, 15)])
def test_parallel_threads_on_one_sqlite_file_keep_order_and_lose_nothing(tmp_path, threads, turns):
    model = _SlowModel()
    conversations = [Conversation(f"load-{i}") for i in range(threads)]
    with open_sqlite(tmp_path / "load.sqlite") as (checkpointer, store):
        wm = WorkingMemory(model.model, config=CONFIG, store=store)
        graph = build_agent(wm, checkpointer=checkpointer, store=store)
        archives = ArchiveStore(store)
        try:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                futures = [pool.submit(_drive, graph, conv, turns) for conv in conversations]
                for future in futures:
                    future.result(timeout=WAIT_S)  # a deadlock fails here instead of hanging
            assert wm.wait(timeout=WAIT_S), "background Phase 2 did not finish (deadlock?)"
            for conv in conversations:
                check_thread(wm, graph, archives, conv, folded_all=True, complete=True)
        finally:
            wm.close()
    # Phase 2 order: the messages each thread's jobs folded, concatenated, are in send order.
    for conv in conversations:
        folded = [
            m for _, marks in model.calls for m in marks if m.startswith(conv.thread_id + "-")
        ]
        assert folded == [i for i in conv.sent if i in set(folded)]
        assert len(folded) == len(set(folded)), "a message was folded twice"
    add("concurrency: threads x turns (SQLite, background Phase 2)", threads * turns)
    add("concurrency: messages checked", sum(len(c.sent) for c in conversations))
    add("concurrency: Phase 2 model calls", len(model.calls))


def test_inline_and_background_phase2_of_one_thread_never_interleave(tmp_path):
    """Compact (inline Phase 2) while background jobs of the same thread are queued: the per-
    thread lock keeps them apart, so the lineage stays exact."""
    model = _SlowModel()
    conv = Conversation("mixed")
    with open_sqlite(tmp_path / "mixed.sqlite") as (checkpointer, store):
        wm = WorkingMemory(model.model, config=CONFIG, store=store)
        graph = build_agent(wm, checkpointer=checkpointer, store=store)
        archives = ArchiveStore(store)
        try:
            for _ in range(4):
                _drive(graph, conv, 3)  # queues background jobs
                state = graph.get_state(conv.config).values
                update = wm.compact(state, conv.config)  # inline, keep 0, waits
                graph.update_state(conv.config, update, as_node="after_turn")
                add("concurrency: compactions racing background jobs")
                check_thread(wm, graph, archives, conv)
            assert wm.wait(timeout=WAIT_S)
            check_thread(wm, graph, archives, conv, folded_all=True, complete=True)
        finally:
            wm.close()
