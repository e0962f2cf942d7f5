"""A read never answers with a silent empty document (SPEC §11).

A first process (``tests/deploy/_restart.py``, run as a subprocess) plays turns on two threads,
deletes one with ``checkpointer.delete_thread`` and exits. This process builds the same set-up
again and reads before any turn:

- the live thread reads exactly what the first process read (the Working Memory, the archives,
  the report, the transcript), on every documented path: ``StateGraph`` nodes and
  ``create_react_agent`` with ``WorkingMemory(store=store)``, ``create_agent`` with
  ``WorkingMemoryMiddleware()`` (it learns the agent's checkpointer and store as
  ``create_agent`` builds it), on LangGraph's plain ``SqliteSaver`` + ``SqliteStore`` on one
  file, on ``open_sqlite``, and on PostgreSQL (marker ``postgres``);
- the deleted thread stays unreadable;
- where the memory cannot tell (the checkpoints in another file than the store), the read raises
  :class:`~wm_langgraph.NoCheckpointerError` saying what to pass, and reads once it is passed;
- a memory that knows no store at all says what to pass outside a run (issue 48);
- ``wm-langgraph report`` and ``inspect`` read the first process's file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from tests.common import thread_config
from tests.deploy._restart import SECRET, hooks_and_graph, memory_of, persistence
from wm_langgraph import NoCheckpointerError, NoStoreError, WorkingMemory, WorkingMemoryConfig

ROOT = Path(__file__).resolve().parents[2]
PATHS = ("stategraph", "create_react_agent", "create_agent")
LIVE, GONE = thread_config("live"), thread_config("gone")


def _first_process(path: str, kind: str, where: str) -> dict[str, Any]:
    """Run the first process; what its memory read of the live thread."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.deploy._restart", path, kind, where],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])["live"]
    assert "FACT-1" in shown["wm"], shown
    assert shown["archives"], shown
    return shown


def _every_read(memory: WorkingMemory, config: Any) -> str:
    """Everything the memory's public config-only reads return, as one text."""
    parts = [memory.get_working_memory(config)]
    parts += [str(m.content) for r in memory.list_archives(config) for m in r.messages]
    parts += [str(m.content) for r in memory.recall_archives(config) for m in r.messages]
    parts += [text for _, _, text in memory.moved_items(config)]
    parts += [str(m.content) for m in memory.transcript(config).messages]
    parts.append(memory.report(config).html)
    return "\n".join(parts)


def _reads_as_the_first_process(path: str, kind: str, where: str, shown: dict[str, Any]) -> None:
    with persistence(kind, where) as (saver, store):
        hooks, graph = hooks_and_graph(path, saver, store)  # built, not run
        memory = memory_of(hooks)
        assert memory.get_working_memory(LIVE) == shown["wm"]
        assert [a.id for a in memory.list_archives(LIVE)] == shown["archives"]
        assert "FACT-1" in memory.report(LIVE).working_memory.text
        assert "FACT-1:" in str(memory.transcript(LIVE).messages[0].content)
        assert SECRET not in _every_read(memory, GONE)  # deleted stays unreadable
        assert memory.get_working_memory(GONE) == ""
        # and the agent carries on where the first process left off
        for n in (77, 78):
            graph.invoke({"messages": [HumanMessage(f"note FACT-{n}: one more")]}, LIVE)
        memory.wait()
        assert "FACT-77" in memory.get_working_memory(LIVE)
        assert "FACT-1\n" in memory.get_working_memory(LIVE)
        ids = [a.id for a in memory.list_archives(LIVE)]
        assert ids[: len(shown["archives"])] == shown["archives"]
        assert len(ids) > len(shown["archives"])


@pytest.mark.parametrize("kind", ["plain", "open_sqlite"])
@pytest.mark.parametrize("path", PATHS)
def test_a_new_process_reads_a_live_sqlite_thread_before_any_turn(
    path: str, kind: str, tmp_path: Path
) -> None:
    where = str(tmp_path / "agent.sqlite")
    shown = _first_process(path, kind, where)
    _reads_as_the_first_process(path, kind, where, shown)


@pytest.fixture
def pg_where() -> Iterator[str]:
    # the variable first: tests.deploy._pg needs the [postgres] extra, which the README's test
    # command does not install (there this test skips, saying why, instead of erroring)
    url = os.environ.get("WM_TEST_POSTGRES_URL", "")
    if not url:
        pytest.skip("WM_TEST_POSTGRES_URL is not set: start a server with `source .ci/postgres.sh`")
    from tests.deploy._pg import Schemas

    made = Schemas(url)
    try:
        yield f"{url} {made.new().name}"
    finally:
        made.drop_all()


@pytest.mark.postgres
@pytest.mark.parametrize("path", PATHS)
def test_a_new_process_reads_a_live_postgres_thread_before_any_turn(
    path: str, pg_where: str
) -> None:
    shown = _first_process(path, "postgres", pg_where)
    _reads_as_the_first_process(path, "postgres", pg_where, shown)


@pytest.mark.parametrize("path", ["stategraph", "create_react_agent"])
def test_checkpoints_kept_apart_from_the_store_raise_saying_what_to_pass(
    path: str, tmp_path: Path
) -> None:
    """The store's file holds no checkpoint: the memory cannot tell a live thread from a
    deleted one, so it raises (never a silent ""), and reads once it knows the checkpointer."""
    where = str(tmp_path / "store.sqlite")
    shown = _first_process(path, "split", where)
    with persistence("split", where) as (saver, store):
        blind = WorkingMemory(store=store, config=WorkingMemoryConfig())
        for read in (
            blind.get_working_memory,
            blind.list_archives,
            blind.moved_items,
            blind.transcript,
            blind.report,
        ):
            with pytest.raises(NoCheckpointerError, match=r"checkpointer=") as raised:
                read(LIVE)
            assert "'live'" in str(raised.value)
        # a thread with no records has nothing to lose: it reads as empty
        assert blind.get_working_memory(thread_config("never-used")) == ""
        told = WorkingMemory(store=store, checkpointer=saver)
        assert told.get_working_memory(LIVE) == shown["wm"]
        assert SECRET not in _every_read(told, GONE)
        blind.use_checkpointer(saver)
        assert blind.get_working_memory(LIVE) == shown["wm"]


def test_a_memory_without_a_store_says_what_to_pass_outside_a_run(tmp_path: Path) -> None:
    """A StateGraph compiled with a store: outside a run the memory cannot see it; the error
    names what works (the store passed to the memory), not compile(store=...)."""
    where = str(tmp_path / "agent.sqlite")
    _first_process("stategraph", "open_sqlite", where)
    with persistence("open_sqlite", where) as (_, store):
        bare = WorkingMemory()
        with pytest.raises(NoStoreError) as raised:
            bare.get_working_memory(LIVE)
        text = str(raised.value)
        assert "WorkingMemory(..., store=store)" in text
        assert "WorkingMemoryMiddleware(..., store=store)" in text
        assert "FACT-1" in WorkingMemory(store=store).get_working_memory(LIVE)


@pytest.mark.parametrize("command", ["report", "inspect"])
def test_the_command_line_reads_a_thread_a_stategraph_process_wrote(
    command: str, tmp_path: Path
) -> None:
    where = str(tmp_path / "agent.sqlite")
    _first_process("stategraph", "plain", where)
    out = tmp_path / "live.html"
    args = (
        ["live", "--db", where, "--out", str(out)]
        if command == "report"
        else ["--db", where, "--thread", "live"]
    )
    done = subprocess.run(
        [sys.executable, "-m", "wm_langgraph", command, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown = out.read_text(encoding="utf-8") if command == "report" else done.stdout
    assert "FACT-1" in shown


def test_an_async_process_reads_a_live_thread_through_aopen_sqlite(tmp_path: Path) -> None:
    """``aopen_sqlite``'s store knows its checkpointer too: the async reads of a new process
    read the live thread, and nothing of the deleted one."""
    import asyncio

    from wm_langgraph import aopen_sqlite

    where = str(tmp_path / "agent.sqlite")
    shown = _first_process("stategraph", "open_sqlite", where)

    async def read() -> tuple[str, str, list[str]]:
        async with aopen_sqlite(where) as (_, store):
            memory = WorkingMemory(store=store)
            live = await memory.aget_working_memory(LIVE)
            gone = await memory.aget_working_memory(GONE)
            ids = [a.id for a in await memory.alist_archives(LIVE)]
            return live, gone, ids

    live, gone, ids = asyncio.run(read())
    assert live == shown["wm"]
    assert gone == ""
    assert ids == shown["archives"]
