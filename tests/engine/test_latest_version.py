"""The ``latest`` copy of the newest WM version (design §2.2) and a crash while it is saved: a
process that dies between the writes of a version and of ``latest`` must not leave ``latest``
behind the version the engine reads, where no later round would bring it up to date."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import Op, PutOp, Result
from langgraph.store.memory import InMemoryStore

from tests.engine._support import SimulatedCrash, WMWriter, agent_model, build_agent, user
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.storage.archives import LATEST_KEY, ArchiveStore

CONFIG = WorkingMemoryConfig(
    token_budget=3_000,
    commit_token_threshold_ratio=0.1,  # a commit every few turns
    commit_keep_recent_count=2,
    background=True,
)
WM_NAMESPACE = ("wm_langgraph", "latest-crash", "wm")


class DyingStore(InMemoryStore):
    """Applies a batch one operation at a time (a store whose batch is not one transaction);
    once armed, the process "dies" before its ``crash_at``-th write into a ``wm`` namespace."""

    def __init__(self, crash_at: int) -> None:
        super().__init__()
        self.crash_at = crash_at
        self.armed = False
        self._writes = 0

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        if not self.armed:
            return super().batch(ops)
        results: list[Result] = []
        for op in ops:
            if isinstance(op, PutOp) and op.namespace[-1] == "wm":
                self._writes += 1
                if self._writes == self.crash_at:
                    self.armed = False
                    raise SimulatedCrash
            results.extend(super().batch([op]))
        return results


def _versions(store: InMemoryStore) -> tuple[dict[str, Any] | None, dict[str, dict[str, Any]]]:
    items = {item.key: item.value for item in store.search(WM_NAMESPACE, limit=1_000)}
    return items.pop(LATEST_KEY, None), items


@pytest.mark.parametrize("crash_at", [1, 2])
def test_a_crash_while_a_version_is_saved_leaves_latest_consistent_after_resume(
    crash_at: int,
) -> None:
    store, saver = DyingStore(crash_at), InMemorySaver()
    memory = WorkingMemory(WMWriter().model, config=CONFIG, store=store)
    graph = build_agent(memory, agent_model(), checkpointer=saver, store=store)
    cfg: dict[str, Any] = {"configurable": {"thread_id": "latest-crash"}}
    turn = 0
    while _versions(store)[0] is None:  # up to the first saved version
        turn += 1
        graph.invoke({"messages": [user(turn)]}, cfg)
        assert memory.wait(cfg, timeout=30)
    store.armed = True
    while store.armed:  # the next save dies at the chosen write (in the background)
        turn += 1
        graph.invoke({"messages": [user(turn)]}, cfg)
        memory.wait(cfg, timeout=30)

    latest, versions = _versions(store)
    assert latest is not None
    newest = max(len(v["covers"]) for v in versions.values())
    assert len(latest["covers"]) >= newest, "latest is behind a saved version"

    memory.resume(cfg, wait=True)  # what the next hook run does too
    latest, versions = _versions(store)
    assert latest is not None
    assert memory.get_working_memory(cfg) == latest["text"]
    assert versions[latest["covers"][-1]]["text"] == latest["text"]
    assert max(len(v["covers"]) for v in versions.values()) == len(latest["covers"])


def test_a_version_and_latest_are_saved_in_one_batch() -> None:
    """One batch: a store whose batch is one transaction (SQLite, Postgres) never holds one
    without the other."""
    batches: list[list[Op]] = []

    class Recording(InMemoryStore):
        def batch(self, ops: Iterable[Op]) -> list[Result]:
            ops = list(ops)
            batches.append(ops)
            return super().batch(ops)

    def writes() -> list[list[str]]:
        found = [[op.key for op in ops if isinstance(op, PutOp)] for ops in batches]
        batches.clear()
        return [keys for keys in found if keys]

    archives = ArchiveStore(Recording())
    archives.put_wm("t", ["archive_001", "archive_002"], "WM2", {})
    assert writes() == [[LATEST_KEY, "archive_002"]]
    archives.put_wm("t", ["archive_001"], "WM1", {})  # covers fewer: latest stays
    assert writes() == [["archive_001"]]
    archives.put_wm("t", ["archive_001", "archive_002_2"], "WM2 fork", {})  # as many: latest
    assert writes() == [[LATEST_KEY, "archive_002_2"]]
