"""Orphan archive records after a crash.

A process killed during an inline commit (after Phase 1 wrote the archive record, before the
graph wrote its checkpoint) leaves a record whose messages are still live in the checkpoint,
and possibly a WM version over it. Then:

- config-only reads never show an archive whose messages are live: with the checkpointer known
  (a hook ran, or ``WorkingMemory(checkpointer=...)``) they read the checkpoint's own timeline;
  a process that knows nothing but the store finds the checkpoints kept beside a SQLite store
  and reads the same timeline (behaviour §6.8);
- the next commit adopts the orphan (it holds exactly the next messages to archive, after the
  same archive), so after a restart and two turns every record of the thread is on its
  timeline: nothing is left behind in the store, nothing is archived twice.

Crashes are injected at every durable write of a committing turn (``_rel_faults.Crasher``) on the
StateGraph path and on the two agent paths.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

import pytest
from _rel_agents import AgentConversation, agent
from _rel_faults import Crash, Crasher, crashing_sqlite
from _rel_harness import Conversation, MarkerModel, build_agent, check_thread
from _rel_stats import add

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.storage.archives import ArchiveStore
from wm_langgraph.storage.sqlite import open_sqlite

BASE = WorkingMemoryConfig(
    token_budget=4_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    reserve_tokens=0,
    background=False,
    failure_cooldown_seconds=1e6,
)
WAIT_S = 60.0


def _live_and_timeline(graph: Any, config: Any) -> tuple[set[str], list[str]]:
    values = graph.get_state(config).values
    live = {str(m.id) for m in values.get("messages", [])}
    return live, list((values.get("working_memory") or {}).get("archives") or [])


def assert_reads_show_no_live_archive(store: Any, checkpointer: Any, graph: Any, cfg: Any) -> None:
    live, timeline = _live_and_timeline(graph, cfg)
    # a process that knows only the store reads the checkpoints kept beside it in the same
    # SQLite file (storage/beside.py); a process that was told the checkpointer reads them
    # directly: both exact, neither shows an archive whose messages are live
    fresh = WorkingMemory(MarkerModel().model, config=BASE, store=store)
    known = WorkingMemory(MarkerModel().model, config=BASE, store=store, checkpointer=checkpointer)
    current = ArchiveStore(store).current_wm(str(cfg["configurable"]["thread_id"]), timeline)
    for wm in (fresh, known):
        assert [r.id for r in wm.list_archives(cfg)] == timeline
        for record in wm.list_archives(cfg):
            shown = {str(m.id) for m in record.messages}
            assert not shown & live, f"{record.id} is listed but its messages are live"
        assert wm.get_working_memory(cfg) == (current.text if current else "")
        wm.close()


def assert_no_orphans(store: Any, graph: Any, cfg: Any) -> None:
    _, timeline = _live_and_timeline(graph, cfg)
    archives = ArchiveStore(store)
    ns = archives.namespace(str(cfg["configurable"]["thread_id"]), "archives")
    stored = sorted(item.key for item in store.search(ns, limit=1000))
    assert stored == sorted(timeline), f"records on no timeline: {set(stored) - set(timeline)}"


def _writes_of_a_committing_turn(tmp_path: Any) -> int:
    crasher = Crasher()
    conv = Conversation("count")
    with crashing_sqlite(str(tmp_path / "count.sqlite"), crasher) as (saver, store):
        wm = WorkingMemory(MarkerModel().model, config=BASE, store=store)
        graph = build_agent(wm, checkpointer=saver, store=store)
        for _ in range(3):
            conv.turn(graph)
        start = crasher.writes
        conv.turn(graph)
        wm.close()
        return crasher.writes - start


@pytest.mark.slow
def test_a_crash_at_any_write_of_an_inline_commit_leaves_no_orphan_behind(tmp_path):
    total = _writes_of_a_committing_turn(tmp_path)
    assert total > 3
    failures: list[str] = []
    for k in range(1, total + 1):
        add("orphans: crash points (StateGraph)")
        path = tmp_path / f"crash_{k}.sqlite"
        conv = Conversation(f"orphan-{k}")
        crasher = Crasher()
        with crashing_sqlite(str(path), crasher) as (saver, store):
            wm = WorkingMemory(MarkerModel().model, config=BASE, store=store)
            graph = build_agent(wm, checkpointer=saver, store=store)
            for _ in range(3):
                conv.turn(graph)
            crasher.arm_crash(k)
            with suppress(Crash):
                conv.turn(graph)
            where = crasher.log[-1]
        try:
            with open_sqlite(path) as (saver, store):
                wm = WorkingMemory(MarkerModel().model, config=BASE, store=store)
                graph = build_agent(wm, checkpointer=saver, store=store)
                assert_reads_show_no_live_archive(store, saver, graph, conv.config)
                conv.reconcile(graph, ArchiveStore(store))
                for _ in range(2):
                    conv.turn(graph)
                assert wm.wait(timeout=WAIT_S)
                assert_no_orphans(store, graph, conv.config)
                assert_reads_show_no_live_archive(store, saver, graph, conv.config)
                conv.reconcile(graph, ArchiveStore(store))  # what reached the checkpoint
                check_thread(wm, graph, ArchiveStore(store), conv)
                wm.close()
        except AssertionError as exc:
            failures.append(f"crash at write {k} ({where}): {exc}")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
@pytest.mark.parametrize("path_kind", ["middleware", "react"])
def test_a_crash_through_the_agents_leaves_no_orphan_behind(tmp_path, path_kind):
    failures: list[str] = []
    for k in range(1, 12):
        add(f"orphans: crash points ({path_kind})")
        path = tmp_path / f"{path_kind}_{k}.sqlite"
        conv = AgentConversation(f"{path_kind}-orphan-{k}")
        crasher = Crasher()
        with agent(path_kind, path, MarkerModel().model, crasher, **_changes()) as a:
            for _ in range(3):
                conv.turn(a.graph)
            crasher.arm_crash(k)
            with suppress(Crash):
                conv.turn(a.graph)
            if not crasher.dead:
                continue  # the turn needed fewer writes
            where = crasher.log[-1]
        try:
            with (
                open_sqlite(path) as (saver, store),
                agent(path_kind, path, MarkerModel().model, **_changes()) as a,
            ):
                assert_reads_show_no_live_archive(store, saver, a.graph, conv.config)
                conv.reconcile(a.graph, a.archives)
                for _ in range(2):
                    conv.turn(a.graph)
                assert a.wm.wait(timeout=WAIT_S)
                assert_no_orphans(store, a.graph, conv.config)
        except AssertionError as exc:
            failures.append(f"crash at write {k} ({where}): {exc}")
    assert not failures, "\n".join(failures)


def _changes() -> dict[str, Any]:
    return {"commit_token_threshold_ratio": 0.0, "commit_keep_recent_count": 2, "background": False}
