"""The thread records the settings it ran with; ``report`` and ``inspect`` read them, call by call,
and say so where they are unknown instead of assuming the library's defaults (issue 48)."""

from __future__ import annotations

import io
from pathlib import Path

from langchain.agents import create_agent
from langchain_core.runnables import RunnableConfig

from tests.display._inert import assert_inert
from wm_langgraph import (
    OfflineWorkingMemoryModel,
    WorkingMemoryConfig,
    WorkingMemoryMiddleware,
    open_sqlite,
)
from wm_langgraph.cli.main import main
from wm_langgraph.context.assemble import compute_budgets
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.storage.archives import ArchiveStore
from wm_langgraph.testing import OfflineAgentModel

TURNS = [
    f"note {i}: the build server build-{i}.example.com runs release v1.{i}.0; "
    + "the rollout is staged region by region and watched by the on-call team. " * 12
    for i in range(24)
]
SMALL = WorkingMemoryConfig(token_budget=6_000, background=False)


def _play(db: str, thread: str, turns: list[str], config: WorkingMemoryConfig) -> None:
    with open_sqlite(db) as (checkpointer, store):
        middleware = WorkingMemoryMiddleware(
            OfflineWorkingMemoryModel(), config=config, store=store
        )
        agent = create_agent(
            OfflineAgentModel(), [], middleware=[middleware], checkpointer=checkpointer, store=store
        )
        run: RunnableConfig = {"configurable": {"thread_id": thread}}
        for text in turns:
            agent.invoke({"messages": [{"role": "user", "content": text}]}, run)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def _forget_settings(db: str, thread: str) -> None:
    """The thread as a version without settings records left it (older data)."""
    with open_sqlite(db) as (_, store):
        archives = ArchiveStore(store)
        namespace = archives.namespace(thread, "meta")
        for item in store.search(namespace, limit=1_000):
            if item.key.startswith("settings"):
                store.delete(namespace, item.key)


def test_the_report_rebuilds_each_call_with_the_budget_it_ran_with(tmp_path: Path):
    db = str(tmp_path / "t.sqlite")
    _play(db, "small", TURNS, SMALL)
    usable = compute_budgets(6_000, SMALL.reserve_tokens, SMALL.archive_memory_tokens).usable
    with open_sqlite(db) as (checkpointer, store):
        memory = WorkingMemory(store=store, checkpointer=checkpointer)  # the defaults: 128,000
        report = memory.report({"configurable": {"thread_id": "small"}})
        calls = report.calls
    assert len(calls) == len(TURNS)
    assert {c.token_budget for c in calls} == {6_000}
    assert all(c.tokens <= usable for c in calls)
    assert max(c.tokens for c in calls) > usable * 0.9  # the history outgrew it
    target = tmp_path / "r.html"
    status, _, err = _run(["report", "small", "--db", db, "-o", str(target)])
    assert status == 0, err
    text = assert_inert(target.read_text(encoding="utf-8")).text
    assert "budget 6,000" in text
    assert "128,000" not in text
    status, out, err = _run(["inspect", "--db", db, "--thread", "small"])
    assert status == 0, err
    assert "token_budget=6000" in out


def test_a_settings_change_mid_thread_shows_call_by_call(tmp_path: Path):
    db = str(tmp_path / "t.sqlite")
    _play(db, "changed", TURNS[:12], SMALL)
    _play(db, "changed", TURNS[12:], SMALL.replace(token_budget=4_000))
    with open_sqlite(db) as (checkpointer, store):
        memory = WorkingMemory(store=store, checkpointer=checkpointer)
        calls = memory.report({"configurable": {"thread_id": "changed"}}).calls
    assert [c.token_budget for c in calls] == [6_000] * 12 + [4_000] * 12
    usable = compute_budgets(4_000, SMALL.reserve_tokens, SMALL.archive_memory_tokens).usable
    assert all(c.tokens <= usable for c in calls[12:])


def test_unrecorded_settings_are_said_to_be_unknown_not_assumed(tmp_path: Path):
    db = str(tmp_path / "t.sqlite")
    _play(db, "old", TURNS[:6], SMALL)
    _forget_settings(db, "old")
    target = tmp_path / "r.html"
    status, out, err = _run(["report", "old", "--db", db, "-o", str(target)])
    assert status == 0, err
    text = assert_inert(target.read_text(encoding="utf-8")).text
    assert "not recorded" in text
    assert "128,000" not in text  # no default is assumed
    assert "0 model calls" in out
    status, out, err = _run(["report", "old", "--db", db, "-o", str(target), "--budget", "6000"])
    assert status == 0, err
    text = assert_inert(target.read_text(encoding="utf-8")).text
    assert "not recorded" in text
    assert "--budget" in text  # says where the budget it used comes from
    assert "6 model calls" in out
    status, out, err = _run(["inspect", "--db", db, "--thread", "old"])
    assert status == 0, err
    assert "settings: not recorded" in out


def test_inspect_prints_every_stored_string_on_its_own_line(tmp_path: Path):
    db = str(tmp_path / "t.sqlite")
    forged = "x\nforged: 0 live messages, pending_tokens 0, 0 archives (0 done), WM: no"
    _play(db, forged, TURNS[:2], SMALL)
    _play(db, "plain", TURNS[:2], SMALL)
    status, out, err = _run(["inspect", "--db", db])
    assert status == 0, err
    lines = out.splitlines()
    assert len(lines) == 4, out  # the heading, two threads, the hint
    assert not any(line.startswith("forged") for line in lines)
    status, out, err = _run(["inspect", "--db", db, "--thread", forged])
    assert status == 0, err
    assert out.splitlines()[0] == "thread x\\nforged: 0 live messages, pending_tokens 0, 0 " + (
        "archives (0 done), WM: no"
    )
