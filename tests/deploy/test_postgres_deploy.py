"""The deploy cases on PostgreSQL (``PostgresSaver`` + ``PostgresStore`` and their async twins),
as people deploy them: tenants with a store each, concurrent threads with a tool that writes the
store, a process killed during background Phase 2 and restarted, store-wide TTL, deletion, a
flaky connection, reads after async runs.

Needs a server: ``source .ci/postgres.sh`` (CI does it) exports WM_TEST_POSTGRES_URL, a
unix-socket URL, so pytest-socket's ``--allow-unix-socket`` suffices; without it, or without the
``[postgres]`` extra, these tests skip and say why. Each test works in PostgreSQL schemas of its
own (``tests/deploy/_pg.py``), dropped when it ends.
"""

from __future__ import annotations

import asyncio
import os
import queue
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

import pytest

pytest.importorskip(
    "langgraph.checkpoint.postgres", reason='needs the postgres extra: pip install ".[postgres]"'
)
import psycopg
from langchain_core.messages import HumanMessage
from langgraph.store.base import Result
from langgraph.store.postgres import PostgresStore

from tests.common import thread_config
from tests.deploy._agents import (
    BACKGROUND,
    EVERY_TURN,
    PATHS,
    agent_with,
    build,
    hooks_for,
    memory_of,
    play_turns,
    remember,
)
from tests.deploy._pg import URL_VARIABLE, Schemas
from tests.deploy.test_purge import _records
from tests.deploy.test_tenants import TENANTS, _check, _Seen
from tests.integrations.helpers import agent_model, ids
from wm_langgraph import WorkingMemory

pytestmark = pytest.mark.postgres

FACT = re.compile(r"FACT-\d+")
RUNS = 10  # per tenant: 20 interleaved runs
WAIT_S = 120.0


@pytest.fixture
def schemas() -> Iterator[Schemas]:
    """Creates PostgreSQL schemas for the test; drops them all when it ends."""
    url = os.environ.get(URL_VARIABLE, "")
    if not url:
        pytest.skip(
            f"{URL_VARIABLE} is not set: start a loopback server with "
            "`source .ci/postgres.sh` (CI does this; needs Debian's postgresql package)"
        )
    made = Schemas(url)
    try:
        yield made
    finally:
        made.drop_all()


def _assert_folded(records: list[Any], document: str) -> None:
    """No message archived twice, and the Working Memory holds every archived fact."""
    archived = [i for record in records for i in ids(record.messages)]
    assert len(archived) == len(set(archived)), "a message was archived twice"
    facts = set(FACT.findall(" ".join(str(m.text) for r in records for m in r.messages)))
    assert facts, "nothing was archived"
    missing = facts - set(FACT.findall(document))
    assert not missing, f"archived but never folded: {sorted(missing)}"


# -- tenants ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_one_memory_serving_two_postgres_tenants_on_one_thread_id_never_leaks(
    schemas: Schemas, path: str
) -> None:
    hooks = hooks_for(path, BACKGROUND)
    seen = {t: _Seen() for t in TENANTS}
    tenant_schemas = {t: schemas.new() for t in TENANTS}
    with (
        tenant_schemas["A"].sync(max_size=4) as (saver_a, store_a),
        tenant_schemas["B"].sync(max_size=4) as (saver_b, store_b),
    ):
        backends = {"A": (saver_a, store_a), "B": (saver_b, store_b)}
        agents = {
            t: agent_with(hooks, saver=saver, store=store, model=seen[t].model)
            for t, (saver, store) in backends.items()
        }
        config = thread_config("1")
        for n in range(RUNS):
            for tenant, base in TENANTS.items():
                message = HumanMessage(f"note FACT-{base + n} for tenant {tenant}")
                agents[tenant].invoke({"messages": [message]}, config)
        assert memory_of(hooks).wait(timeout=WAIT_S)
        _check({t: store for t, (_, store) in backends.items()}, seen)


@pytest.mark.slow
def test_one_middleware_serving_two_async_postgres_tenants_never_leaks(schemas: Schemas) -> None:
    hooks = hooks_for("create_agent", BACKGROUND)
    seen = {t: _Seen() for t in TENANTS}
    tenant_schemas = {t: schemas.new() for t in TENANTS}

    async def run() -> None:
        async with (
            tenant_schemas["A"].aio(max_size=4) as (saver_a, store_a),
            tenant_schemas["B"].aio(max_size=4) as (saver_b, store_b),
        ):
            backends = {"A": (saver_a, store_a), "B": (saver_b, store_b)}
            agents = {
                t: agent_with(hooks, saver=saver, store=store, model=seen[t].model)
                for t, (saver, store) in backends.items()
            }
            config = thread_config("1")
            for n in range(RUNS):
                await asyncio.gather(
                    *(
                        agents[t].ainvoke(
                            {"messages": [HumanMessage(f"note FACT-{base + n} for {t}")]}, config
                        )
                        for t, base in TENANTS.items()
                    )
                )
            assert await memory_of(hooks).await_phase2(timeout=WAIT_S)
            # The async stores' sync API works from threads other than their loop's.
            stores = {t: store for t, (_, store) in backends.items()}
            await asyncio.to_thread(_check, stores, seen)

    asyncio.run(run())


# -- concurrency -----------------------------------------------------------------------------

THREADS, TURNS = 16, 4


@pytest.mark.slow
def test_concurrent_threads_on_async_postgres_with_a_tool_that_writes_the_store(
    schemas: Schemas,
) -> None:
    schema = schemas.new()

    async def run() -> None:
        async with schema.aio(max_size=8) as (saver, store):
            agent, hooks = build(
                "create_agent",
                BACKGROUND,
                saver=saver,
                store=store,
                model=agent_model(tool="remember"),
                tools=[remember],
            )
            threads = [f"c{t}" for t in range(THREADS)]
            failed = await asyncio.gather(
                *(play_turns(agent, thread, TURNS, tool="remember") for thread in threads)
            )
            assert sum(failed) == 0, f"failed turns per thread: {failed}"
            memory = memory_of(hooks)
            assert await memory.await_phase2(timeout=WAIT_S)
            for thread in threads:
                config = thread_config(thread)
                _assert_folded(
                    await memory.alist_archives(config), await memory.aget_working_memory(config)
                )
            assert await store.asearch(("app", "notes"), limit=100)

    asyncio.run(run())


@pytest.mark.slow
def test_concurrent_threads_on_postgres_from_a_thread_pool(schemas: Schemas) -> None:
    with schemas.new().sync(max_size=8) as (saver, store):
        agent, hooks = build("create_react_agent", BACKGROUND, saver=saver, store=store)
        memory = memory_of(hooks)
        threads = [f"p{t}" for t in range(8)]

        def play(thread: str) -> int:
            failed = 0
            for n in range(TURNS):
                try:
                    agent.invoke(
                        {"messages": [HumanMessage(f"note FACT-{n} use lookup")]},
                        thread_config(thread),
                    )
                except Exception:
                    failed += 1
            return failed

        with ThreadPoolExecutor(max_workers=len(threads)) as pool:
            failed = list(pool.map(play, threads))
        assert sum(failed) == 0, f"failed turns per thread: {failed}"
        assert memory.wait(timeout=WAIT_S)
        for thread in threads:
            config = thread_config(thread)
            _assert_folded(memory.list_archives(config), memory.get_working_memory(config))


# -- kill and restart ------------------------------------------------------------------------


class _Victim:
    """The victim process's output lines, read by a thread. (A ``select()`` on the pipe cannot
    see a line already in the reader's buffer: when the answer and the hang were written
    together, one ``readline()`` buffered both and the next ``select()`` waited 120 s for a line
    that had come.) Its stderr goes to a file, so a chatty victim never blocks on a full pipe."""

    def __init__(self, proc: subprocess.Popen[str], stderr: IO[bytes]) -> None:
        self.proc = proc
        self.stderr = stderr
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def _err(self, limit: int) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-limit:]

    def line(self) -> str:
        try:
            got = self.lines.get(timeout=WAIT_S)
        except queue.Empty:  # ask for its threads' stacks (faulthandler), then stop it
            self.proc.send_signal(signal.SIGUSR1)
            time.sleep(2)
            self.proc.kill()
            self.proc.wait(timeout=WAIT_S)
            raise AssertionError(
                f"the victim process gave no answer within {WAIT_S} s; its threads:\n"
                + self._err(12000)
            ) from None
        if got is None:
            self.proc.wait(timeout=WAIT_S)
            raise AssertionError(f"the victim process died:\n{self._err(4000)}")
        return got


@pytest.mark.slow
def test_a_process_killed_during_background_phase2_loses_nothing_after_a_restart(
    schemas: Schemas,
) -> None:
    """SIGKILL a ``create_agent`` process while its background Phase 2 is inside the writer
    call; a new process (new pool, new middleware) on the same database serves the thread on,
    and its commits fold the orphaned archive in: every archived fact reaches the WM once."""
    schema = schemas.new()
    thread = "killed"
    here = Path(__file__).resolve().parent
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(here / "_pg.py"), schema.url, schema.name, thread],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        victim = _Victim(proc, stderr)
        try:
            lines = {victim.line(), victim.line()}  # the answer and the hang, in either order
            assert lines == {"hung", "answered"}, lines
        finally:
            proc.kill()
            proc.wait(timeout=WAIT_S)

    config = thread_config(thread)
    with schema.sync() as (saver, store):
        hooks = hooks_for("create_agent", BACKGROUND, store=store)  # reads before a run
        agent = agent_with(hooks, saver=saver, store=store)
        memory = memory_of(hooks)
        before = [r.id for r in memory.list_archives(config)]
        for n in range(4, 7):
            agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
        assert memory.wait(timeout=WAIT_S)
        after = memory.list_archives(config)
        assert [r.id for r in after][: len(before)] == before
        assert all(r.status == "done" for r in after)
        document = memory.get_working_memory(config)
        _assert_folded(after, document)
        # FACT-2 was archived by the killed process's last turn, its fold never finished.
        assert {f"FACT-{n}" for n in range(6)} <= set(FACT.findall(document))


# -- TTL and deletion ------------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_a_postgres_store_default_ttl_never_expires_the_memory(schemas: Schemas, path: str) -> None:
    ttl = {"default_ttl": 0.0005}  # 30 ms: every record written with the store's default expires
    with schemas.new().sync(ttl=ttl) as (saver, store):  # type: ignore[arg-type]
        agent, hooks = build(path, EVERY_TURN, saver=saver, store=store)
        memory = memory_of(hooks)
        config = thread_config(f"ttl-{path}")
        for n in range(1, 7):
            agent.invoke({"messages": [HumanMessage(f"note FACT-{n} zebra{n}")]}, config)
        before = [r.id for r in memory.list_archives(config)]
        assert len(before) >= 4
        store.put(("app", "probe"), "k", {"v": 1})  # written with the store's default TTL
        time.sleep(0.5)  # idle past the default TTL, then a sweep
        assert store.sweep_ttl() >= 1  # the sweep does expire what carries the default
        assert store.get(("app", "probe"), "k") is None
        assert [r.id for r in memory.list_archives(config)] == before
        assert "FACT-1" in memory.get_working_memory(config)
        search = next(t for t in memory.tools if t.name == "archive_search")
        assert not str(search.invoke({"query": "zebra1"}, config)).startswith("No match")


@pytest.mark.parametrize("path", PATHS)
def test_delete_thread_then_purge_on_postgres_leaves_no_record(schemas: Schemas, path: str) -> None:
    with schemas.new().sync() as (saver, store):
        agent, hooks = build(path, EVERY_TURN, saver=saver, store=store)
        doomed, kept = thread_config(f"delete-{path}"), thread_config(f"keep-{path}")
        for n in range(1, 5):
            agent.invoke({"messages": [HumanMessage(f"my SSN is 078-05-{n:04d} FACT-{n}")]}, doomed)
            agent.invoke({"messages": [HumanMessage(f"other thread FACT-{100 + n}")]}, kept)
        assert _records(store, f"delete-{path}")
        kept_records = len(_records(store, f"keep-{path}"))

        saver.delete_thread(f"delete-{path}")
        assert hooks.purge(doomed) > 0
        assert not _records(store, f"delete-{path}"), "records of the deleted thread remain"
        assert len(_records(store, f"keep-{path}")) == kept_records
        memory: WorkingMemory = memory_of(hooks)
        assert memory.get_working_memory(doomed) == ""
        assert memory.list_archives(doomed) == []
        assert "FACT-101" in memory.get_working_memory(kept)


# -- a flaky store, reads after async runs --------------------------------------------------


class _FlakyPostgresStore(PostgresStore):
    """A ``PostgresStore`` whose batches fail (before running) at ``rate``, as a dropped
    connection does."""

    def __init__(self, conn: Any, rate: float, seed: int) -> None:
        super().__init__(conn)
        self.rng, self.rate, self.failures = random.Random(seed), rate, 0

    def batch(self, ops: Any) -> list[Result]:
        ops = list(ops)
        if self.rng.random() < self.rate:
            self.failures += 1
            raise psycopg.OperationalError("server closed the connection unexpectedly")
        return super().batch(ops)


@pytest.mark.parametrize("path", PATHS)
def test_a_postgres_store_failing_one_batch_in_ten_fails_no_turn(
    schemas: Schemas, path: str
) -> None:
    with schemas.new().sync(max_size=4) as (saver, healthy):
        store = _FlakyPostgresStore(healthy.conn, 0.1, seed=11)
        agent, hooks = build(path, BACKGROUND, saver=saver, store=store)
        memory = memory_of(hooks)
        config = thread_config(f"flaky-{path}")
        for n in range(1, 21):
            agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)  # never raises
        assert memory.wait(config, timeout=WAIT_S)
        assert store.failures > 3  # the store did fail
        store.rate = 0.0
        _assert_folded(memory.list_archives(config), memory.get_working_memory(config))


def test_reads_follow_the_checkpoint_on_async_postgres(schemas: Schemas) -> None:
    """``AsyncPostgresSaver``'s class name starts with ``Async``: reads outside a run still see
    the newest archive at once, and a ``checkpoint_id`` names that checkpoint's timeline."""
    schema = schemas.new()

    async def run() -> None:
        async with schema.aio(max_size=4) as (saver, store):
            agent, hooks = build("create_agent", EVERY_TURN, saver=saver, store=store)
            memory = memory_of(hooks)
            config = thread_config("async-timeline")
            for n in range(1, 6):
                await agent.ainvoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)
                state = await agent.aget_state(config)
                expected = list(state.values["working_memory"]["archives"])
                listed = [r.id for r in await memory.alist_archives(config)]
                assert listed == expected, f"turn {n}: the read lags the checkpoint"
            history = [s async for s in agent.aget_state_history(config)]
            older = next(
                s
                for s in history
                if 0 < len(s.values.get("working_memory", {}).get("archives", [])) < len(expected)
            )
            listed = [r.id for r in await memory.alist_archives(older.config)]
            assert listed == list(older.values["working_memory"]["archives"])

    asyncio.run(run())
