"""assemble reads pending archives newest-first, only as far as the layer's budget reaches: the
token counts stored in the archive records decide, older records are never deserialised."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import GetOp, Op, Result
from langgraph.store.memory import InMemoryStore

from tests.engine._support import agent_model, build_agent, user
from wm_langgraph import WorkingMemory, WorkingMemoryConfig
from wm_langgraph.storage.archives import ArchiveRecord


class CountingStore(InMemoryStore):
    """Counts the archive records read (by key)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.reads.extend(
            op.key for op in ops if isinstance(op, GetOp) and op.namespace[-1] == "archives"
        )
        return super().batch(ops)


def test_only_the_pending_archives_that_can_fit_are_read(writer) -> None:
    writer.mode = "raise"  # Phase 2 fails: every archive stays pending
    store = CountingStore()
    config = WorkingMemoryConfig(
        token_budget=2_000,
        commit_token_threshold_ratio=0.0,
        commit_keep_recent_count=2,
        background=False,
        max_consecutive_failures=1_000,
    )
    memory = WorkingMemory(writer.model, config=config, store=store)
    graph = build_agent(memory, agent_model(), checkpointer=InMemorySaver(), store=store)
    cfg: Any = {"configurable": {"thread_id": "pending"}}
    for i in range(1, 61):
        graph.invoke({"messages": [user(i)]}, cfg)
    state = graph.get_state(cfg).values
    archives = memory.list_archives(cfg)
    assert len(archives) >= 50
    assert all(a.status != "done" for a in archives)
    store.reads.clear()
    context = memory.build_context(state["messages"], cfg, state=state)
    read = set(store.reads)
    read_records = [a for a in archives if a.id in read]
    # newest first: the records read are the newest ones, and all but the oldest of them fit
    assert read_records == archives[len(archives) - len(read_records) :]
    assert sum(a.token_count for a in read_records[1:]) < context.budgets.usable
    assert archives[0] not in read_records
    assert archives[0].id not in read
    # the same context as from every archive: nothing that fits was left unread
    everything = [m for a in archives for m in a.messages]
    shown = [m.id for m in context.messages if m.id]
    assert shown[-len(state["messages"]) :] == [m.id for m in state["messages"]]
    pending_shown = [i for i in shown if i in {m.id for m in everything}]
    assert pending_shown == [m.id for m in everything][len(everything) - len(pending_shown) :]
    assert len(pending_shown) >= 1


def test_archive_records_store_their_token_count() -> None:
    record = ArchiveRecord(id="archive_001", seq=1, status="pending", token_count=42)
    assert ArchiveRecord.from_value(record.to_value()).token_count == 42
