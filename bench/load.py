"""``python -m bench --load``: what one worker process carries on PostgreSQL.

One process, one event loop (as one worker of an ASGI server or ``langgraph up`` runs): N
conversations (threads) at once through ``langchain.agents.create_agent`` +
``WorkingMemoryMiddleware`` on an ``AsyncPostgresSaver`` and an ``AsyncPostgresStore`` over
one ``AsyncConnectionPool``, with Phase 2 in the background (the default). Every turn is a
tool turn: the user's message, the agent's tool call, the tool's result, the agent's answer.

Time is spent where a deployment spends it, and stated:

- **the agent's model** answers each call after ``--agent-delay`` seconds (default 1.0: a
  hosted model's short tool decision or answer), awaited on the loop (``asyncio.sleep``), so a
  conversation's turn takes about two of them; it is a script, not a model;
- **the writer** (the Working Memory's model) is the package's offline writer, which builds a
  real document, behind a fixed ``--writer-delay`` per call (default 2.5 s: a hosted
  mini-class model writing a 200-400-token tool call at 100-150 tokens/s after about half a
  second to its first token), slept in the Phase 2 worker thread as a blocking HTTP client
  would;
- the memory's settings are the defaults but for ``token_budget``: 8,000, a small window so
  that a 30-turn conversation (a tool result of about 300 tokens a turn) commits about every
  nine turns and Phase 2 has work. (At 4,000 the defaults' commit point lies past the mid-turn
  overflow guard's, which then commits inline and waits for the writer: that measures the
  writer's delay, not the memory.) Every setting it ran with is written into the results.

Measured: turns per second while the load runs; the wall time of the ``after_turn`` hook
(``aafter_agent``) and of ``assemble`` (``awrap_model_call`` up to the model call) as the agent
sees them, p50 / p95 / max; every second, the Phase 2 backlog (archives written and not yet
folded into a Working Memory version, read from the store's table), the process's RSS and the
PostgreSQL connections (the pool's and the server's count); the drain time (from the last turn
to an empty backlog). Then nothing is lost: for every thread the transcript (archives + live
messages) is exactly the conversation played, every archived message is in an archive, and
every archive is folded (``done``) or ``failed`` with its error recorded.

``--quick`` plays a short load (a few threads, short delays) as a correctness check; the test
suite runs it (``tests/bench/test_load.py``, marker ``postgres``), asserting no figure.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import tool
from pydantic import PrivateAttr

from bench.provenance import (
    Stamp,
    code_fingerprint,
    git_commit,
    load_average,
    machine,
    settled_fingerprint,
    stamp_lines,
)
from wm_langgraph import WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel

__all__ = ["URL_VARIABLE", "LoadOptions", "LoadResult", "load_main", "run_load"]

URL_VARIABLE = "WM_TEST_POSTGRES_URL"
START_SERVER = (
    "start a throw-away PostgreSQL server on this machine with `source .ci/postgres.sh` (it "
    f"exports {URL_VARIABLE}), or pass --pg-url postgresql://..."
)
PAD = (
    "The deployment runbook says the service reads its settings from the environment, "
    "retries idempotent calls three times with jittered backoff, and pages the on-call "
    "engineer when the error budget burns faster than twice the monthly rate. "
)


@dataclass(frozen=True)
class LoadOptions:
    """What one load run plays (see the module docstring)."""

    url: str
    threads: int = 50
    turns: int = 30
    agent_delay_s: float = 1.0
    writer_delay_s: float = 2.5
    budget: int = 8_000
    phase2_workers: int | None = None
    pool_size: int = 20
    sample_every_s: float = 1.0
    drain_timeout_s: float = 600.0
    command: str = "python -m bench --load"


@dataclass
class Sample:
    """One second of the run."""

    at_s: float
    turns: int
    backlog: int
    archives: int
    rss_mib: float
    pool_size: int
    pool_in_use: int
    server_connections: int


@dataclass
class LoadResult:
    """What one load run measured."""

    options: LoadOptions
    settings: dict[str, Any]
    load_s: float
    drain_s: float | None
    turns: int
    after_turn_ms: list[float]
    assemble_ms: list[float]
    samples: list[Sample]
    lost: list[str] = field(default_factory=list)
    archives: int = 0
    folded: int = 0
    failed: dict[str, str] = field(default_factory=dict)
    messages: int = 0
    archived_messages: int = 0
    failed_turns: list[str] = field(default_factory=list)
    rss_start_mib: float = 0.0
    writer_calls: int = 0
    inner: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    cpu_s: float = 0.0


# -- the models and the tool ---------------------------------------------------------------


class PacedAgent(BaseChatModel):
    """The agent's model: a script (call ``lookup`` once per user turn, then answer) whose
    every call takes ``delay_s`` seconds, awaited on the event loop."""

    delay_s: float = 1.0

    @property
    def _llm_type(self) -> str:
        return "paced-agent-script"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Accept the tools (the script knows which one it calls)."""
        return self.bind(**kwargs)

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1] if messages else None
        if isinstance(last, ToolMessage):
            return AIMessage(f"Checked it: {str(last.content)[:160]} I will keep that in mind.")
        asked = str(last.content) if last is not None else ""
        key = asked.split("svc-", 1)[-1].split(" ", 1)[0] if "svc-" in asked else "general"
        call = {"name": "lookup", "args": {"key": f"svc-{key}"}, "id": f"call_{uuid.uuid4().hex}"}
        return AIMessage("", tool_calls=[call])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        time.sleep(self.delay_s)
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        await asyncio.sleep(self.delay_s)
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])


class DelayedWriter(OfflineWorkingMemoryModel):
    """The offline writer, each call taking ``delay_s`` seconds more (a blocking client)."""

    delay_s: float = 2.5
    _calls: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def calls(self) -> int:
        """Calls so far."""
        with self._lock:
            return self._calls

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        time.sleep(self.delay_s)
        with self._lock:
            self._calls += 1
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


@tool
async def lookup(key: str) -> str:
    """Look a service up in the runbook."""
    return f"runbook entry for {key}: " + PAD * 6


def _user_message(thread: int, turn: int) -> str:
    return (
        f"Turn {turn} of ticket T-{thread}: please check svc-{thread}-{turn} again. "
        f"FACT-{thread}-{turn}: its deploy window is {turn % 12 + 1} PM and its owner is "
        f"team-{thread % 7}. We decided to keep retries at {turn % 5 + 1}."
    )


# -- timing the hooks ------------------------------------------------------------------------


class TimedMiddleware(WorkingMemoryMiddleware):
    """The middleware, recording the wall time of after_turn and of assemble (the time from
    the hook's start to the model call) as the agent sees them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As ``WorkingMemoryMiddleware``."""
        super().__init__(*args, **kwargs)
        self.after_turn_ms: list[float] = []
        self.assemble_ms: list[float] = []

    async def aafter_agent(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """``aafter_agent``, timed."""
        started = time.perf_counter()
        try:
            return await super().aafter_agent(state, runtime)
        finally:
            self.after_turn_ms.append((time.perf_counter() - started) * 1000)

    async def awrap_model_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        """``awrap_model_call``, its part before the model call timed."""
        started = time.perf_counter()

        async def timed(assembled: Any) -> Any:
            self.assemble_ms.append((time.perf_counter() - started) * 1000)
            return await handler(assembled)

        return await super().awrap_model_call(request, timed)


@contextmanager
def inner_timings(into: dict[str, list[tuple[float, float]]]) -> Iterator[None]:
    """While inside: the wall and CPU milliseconds of the hooks' own work in the thread that
    runs it (``Session.after_turn``, ``WorkingMemory.build_context``), per call, in ``into``
    (``"after_turn"``, ``"assemble"``): what the outer wall time adds to it is waiting (for a
    worker thread, the event loop, the CPU)."""
    from wm_langgraph.memory import WorkingMemory
    from wm_langgraph.phase1.session import Session

    originals = {
        "after_turn": (Session, "after_turn"),
        "assemble": (WorkingMemory, "build_context"),
    }
    saved = {name: getattr(owner, attr) for name, (owner, attr) in originals.items()}

    def timed(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return func(*args, **kwargs)
            finally:
                into.setdefault(name, []).append(
                    ((time.perf_counter() - wall) * 1000, (time.thread_time() - cpu) * 1000)
                )

        return run

    for name, (owner, attr) in originals.items():
        setattr(owner, attr, timed(name, saved[name]))
    try:
        yield
    finally:
        for name, (owner, attr) in originals.items():
            setattr(owner, attr, saved[name])


# -- sampling --------------------------------------------------------------------------------

_BACKLOG_SQL = """
SELECT
  (SELECT count(*) FROM store WHERE prefix LIKE 'wm_langgraph.%.archives') AS archives,
  (SELECT coalesce(sum(jsonb_array_length(value->'covers')), 0) FROM store
     WHERE prefix LIKE 'wm_langgraph.%.wm' AND key = 'latest') AS folded,
  (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()) AS connections
"""


def _rss_mib() -> float:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


class Sampler:
    """Every ``every`` seconds, in a thread of its own on a connection of its own: the backlog,
    the RSS and the connections."""

    def __init__(self, url: str, schema: str, pool: Any, every: float) -> None:
        """Sample ``schema`` on the server at ``url``; ``pool`` is the app's pool."""
        import psycopg

        self._conn = psycopg.connect(
            url, autocommit=True, options=f"-c search_path={schema}", prepare_threshold=None
        )
        self._pool = pool
        self._every = every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="load-sampler", daemon=True)
        self.samples: list[Sample] = []
        self.turns = 0
        self._t0 = time.monotonic()

    def start(self) -> None:
        """Start sampling (time 0 is now)."""
        self._t0 = time.monotonic()
        self._thread.start()

    def now(self) -> Sample:
        """One sample, taken now."""
        row = self._conn.execute(_BACKLOG_SQL).fetchone()
        archives, folded, connections = (int(v) for v in row) if row else (0, 0, 0)
        stats = self._pool.get_stats()
        size = int(stats.get("pool_size", 0))
        return Sample(
            at_s=time.monotonic() - self._t0,
            turns=self.turns,
            backlog=archives - folded,
            archives=archives,
            rss_mib=_rss_mib(),
            pool_size=size,
            pool_in_use=size - int(stats.get("pool_available", 0)),
            server_connections=connections - 1,  # not the sampler's own
        )

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.samples.append(self.now())

    def stop(self) -> None:
        """Stop sampling and close the connection."""
        self._stop.set()
        self._thread.join()
        self._conn.close()


# -- the run ---------------------------------------------------------------------------------


@contextmanager
def _schema(url: str) -> Iterator[str]:
    """A fresh PostgreSQL schema, dropped with everything in it at the end."""
    import psycopg

    name = f"wm_load_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{name}"')
    try:
        yield name
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _settings(config: WorkingMemoryConfig) -> dict[str, Any]:
    return {f.name: getattr(config, f.name) for f in fields(config) if f.init}


async def _conversation(
    agent: Any, thread: int, turns: int, result: LoadResult, sampler: Sampler
) -> None:
    config: RunnableConfig = {"configurable": {"thread_id": f"load-{thread}"}}
    for turn in range(1, turns + 1):
        try:
            await agent.ainvoke({"messages": [HumanMessage(_user_message(thread, turn))]}, config)
        except Exception as exc:  # recorded: a failed turn is a finding, not a crash
            result.failed_turns.append(f"load-{thread} turn {turn}: {type(exc).__name__}: {exc}")
        sampler.turns += 1


async def _check_nothing_lost(memory: Any, opts: LoadOptions, result: LoadResult) -> None:
    """Every thread's transcript is the conversation played; every archive is folded or
    failed with its error (see the module docstring)."""
    for thread in range(opts.threads):
        config: RunnableConfig = {"configurable": {"thread_id": f"load-{thread}"}}
        page = await memory.atranscript(config)
        records = await memory.alist_archives(config)
        result.messages += page.total
        asked = [str(m.content) for m in page.messages if isinstance(m, HumanMessage)]
        wanted = [_user_message(thread, turn) for turn in range(1, opts.turns + 1)]
        if asked != wanted:
            result.lost.append(f"load-{thread}: {len(asked)} of {len(wanted)} user messages")
        if page.total != 4 * opts.turns:
            result.lost.append(f"load-{thread}: {page.total} messages, {4 * opts.turns} played")
        ids = [m.id for m in page.messages]
        if len(set(ids)) != len(ids):
            result.lost.append(f"load-{thread}: a message appears twice")
        for record in records:
            result.archives += 1
            result.archived_messages += record.message_count
            if record.message_count != len(record.messages):
                result.lost.append(f"load-{thread} {record.id}: messages missing from the record")
            if record.status == "done":
                result.folded += 1
            elif record.status == "failed" and record.metadata.get("error"):
                result.failed[f"load-{thread} {record.id}"] = str(record.metadata["error"])
            else:
                result.lost.append(f"load-{thread} {record.id}: {record.status}, no reason")


async def _run(opts: LoadOptions, schema: str) -> LoadResult:
    from langchain.agents import create_agent
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.store.postgres.aio import AsyncPostgresStore
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    kwargs = {
        "autocommit": True,
        "prepare_threshold": 0,
        "row_factory": dict_row,
        "options": f"-c search_path={schema}",
    }
    pool = AsyncConnectionPool(
        opts.url, min_size=2, max_size=opts.pool_size, kwargs=kwargs, open=False
    )
    await pool.open()
    try:
        saver, store = AsyncPostgresSaver(pool), AsyncPostgresStore(pool)  # type: ignore[arg-type]
        await saver.setup()
        await store.setup()
        config = WorkingMemoryConfig(token_budget=opts.budget)
        if opts.phase2_workers is not None:
            config = config.replace(phase2_workers=opts.phase2_workers)
        writer = DelayedWriter(delay_s=opts.writer_delay_s)
        middleware = TimedMiddleware(writer, config=config)
        agent = create_agent(
            PacedAgent(delay_s=opts.agent_delay_s),
            [lookup],
            middleware=[middleware],
            checkpointer=saver,
            store=store,
        )
        result = LoadResult(opts, _settings(config), 0.0, None, 0, [], [], [])
        sampler = Sampler(opts.url, schema, pool, opts.sample_every_s)
        result.rss_start_mib = _rss_mib()
        sampler.start()
        started, cpu = time.monotonic(), time.process_time()
        with inner_timings(result.inner):
            await asyncio.gather(
                *(_conversation(agent, t, opts.turns, result, sampler) for t in range(opts.threads))
            )
        result.load_s = time.monotonic() - started
        result.cpu_s = time.process_time() - cpu
        result.turns = sampler.turns
        drained = await middleware.memory.await_phase2(timeout=opts.drain_timeout_s)
        while drained and sampler.now().backlog > 0:  # folded in the store, not only finished
            await asyncio.sleep(0.1)
            if time.monotonic() - started - result.load_s > opts.drain_timeout_s:
                drained = False
        result.drain_s = time.monotonic() - started - result.load_s if drained else None
        await asyncio.sleep(opts.sample_every_s)  # one sample after the drain
        sampler.stop()
        result.samples = sampler.samples
        result.after_turn_ms = middleware.after_turn_ms
        result.assemble_ms = middleware.assemble_ms
        result.writer_calls = writer.calls
        await _check_nothing_lost(middleware.memory, opts, result)
        return result
    finally:
        await pool.close()


def run_load(opts: LoadOptions) -> LoadResult:
    """Play the load on a fresh schema of the server at ``opts.url`` (dropped afterwards)."""
    with _schema(opts.url) as schema:
        return asyncio.run(_run(opts, schema))


# -- the report ------------------------------------------------------------------------------


def _pct(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def _latency_row(name: str, values: Sequence[float]) -> str:
    return (
        f"| {name} | {len(values):,} | {_pct(values, 0.5):.1f} | {_pct(values, 0.95):.1f} | "
        f"{max(values, default=float('nan')):.1f} | "
        f"{statistics.fmean(values) if values else float('nan'):.1f} |"
    )


def _timeline(result: LoadResult) -> list[str]:
    rows = [
        "| t (s) | turns done | archives | backlog | RSS (MiB) | pool in use / size | "
        "server connections |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    step = max(1, len(result.samples) // 40)
    shown = result.samples[::step]
    if result.samples and shown[-1] is not result.samples[-1]:
        shown.append(result.samples[-1])
    rows += [
        f"| {s.at_s:.1f} | {s.turns:,} | {s.archives:,} | {s.backlog:,} | {s.rss_mib:.0f} | "
        f"{s.pool_in_use} / {s.pool_size} | {s.server_connections} |"
        for s in shown
    ]
    return rows


def report_lines(result: LoadResult, stamp: Stamp) -> list[str]:
    """LOAD.md."""
    opts = result.options
    peak_rss = max((s.rss_mib for s in result.samples), default=float("nan"))
    peak_backlog = max((s.backlog for s in result.samples), default=0)
    peak_conn = max((s.server_connections for s in result.samples), default=0)
    drain = (
        f"{result.drain_s:.1f} s"
        if result.drain_s is not None
        else (f"not drained within {opts.drain_timeout_s:.0f} s")
    )
    settings = ", ".join(f"`{k}={v!r}`" for k, v in result.settings.items())
    lost = (
        "nothing"
        if not result.lost
        else f"{len(result.lost)} findings: " + "; ".join(result.lost[:10])
    )
    return [
        "# Load: one worker process on PostgreSQL",
        "",
        "What `python -m bench --load` measured (bench/load.py says how it plays and why its "
        "delays are what they are). Timings depend on the machine and on what else it ran "
        "(the load averages below); the test suite runs a short version as a correctness "
        "check only.",
        "",
        *stamp_lines(stamp),
        "## The load",
        "",
        f"- {opts.threads} conversations at once in one process (one event loop), "
        f"{opts.turns} tool turns each (user, tool call, tool result, answer): "
        f"`create_agent` + `WorkingMemoryMiddleware`, `AsyncPostgresSaver` + "
        f"`AsyncPostgresStore` on one `AsyncConnectionPool` (max {opts.pool_size}), "
        "PostgreSQL on this machine",
        f"- the agent's model: a script taking {opts.agent_delay_s:g} s per call (awaited); the "
        f"writer: the offline writer plus {opts.writer_delay_s:g} s per call (blocking), "
        f"{result.writer_calls:,} calls",
        f"- Working Memory settings (the defaults but `token_budget`"
        f"{'' if opts.phase2_workers is None else ' and `phase2_workers`'}): {settings}",
        "",
        "## Throughput",
        "",
        f"- {result.turns:,} turns in {result.load_s:.1f} s: "
        f"**{result.turns / result.load_s:.1f} turns per second** "
        f"({len(result.failed_turns)} turns failed); the process used {result.cpu_s:.1f} CPU "
        f"seconds meanwhile, **{1000 * result.cpu_s / max(1, result.turns):.1f} ms of CPU per "
        "turn** (all of it: the agent's graph, the checkpointer, the store's driver, the "
        "memory's hooks and Phase 2, the sampler), the figure that depends least on what else "
        "the machine ran",
        f"- Phase 2 backlog: peak {peak_backlog:,} archives; drained **{drain}** after the "
        "last turn",
        f"- RSS: {result.rss_start_mib:.0f} MiB before the load, peak {peak_rss:.0f} MiB; "
        f"PostgreSQL connections: peak {peak_conn} on the server (pool max {opts.pool_size}, "
        "the sampler's own not counted)",
        "",
        "## Hook latency (ms, wall time as the agent sees it)",
        "",
        "| hook | calls | p50 | p95 | max | mean |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        _latency_row("after_turn (`aafter_agent`)", result.after_turn_ms),
        _latency_row("assemble (`awrap_model_call` to the model call)", result.assemble_ms),
        *[
            _latency_row(f"{label}: {kind}", [pair[index] for pair in result.inner.get(name, [])])
            for name, label in (
                ("after_turn", "after_turn's own work"),
                ("assemble", "assemble's own work"),
            )
            for index, kind in ((0, "wall in its thread"), (1, "CPU of its thread"))
        ],
        "",
        'The rows "own work" time the hook\'s work inside the worker thread that runs it '
        "(`Session.after_turn`, `WorkingMemory.build_context`): wall time there, and the CPU "
        "time that thread used. The gap to the outer row is waiting for a worker thread; the "
        "gap between wall and CPU inside is waiting for the store (through the event loop) "
        "and for the CPU and the GIL.",
        "",
        "## Nothing lost",
        "",
        f"- {result.messages:,} messages in the transcripts of {opts.threads} threads "
        f"({4 * opts.turns * opts.threads:,} played), {result.archived_messages:,} of them in "
        f"{result.archives:,} archives; {result.folded:,} archives folded, "
        f"{len(result.failed)} failed with their error recorded",
        f"- lost or unexplained: {lost}",
        "",
        f"## Over time (sampled every {opts.sample_every_s:g} s; rows thinned to about 40)",
        "",
        *_timeline(result),
        "",
    ]


def load_main(opts: LoadOptions, out: Path) -> int:
    """Run the load and write ``out / LOAD.md``; 1 when anything was lost or a turn failed."""
    fingerprint = code_fingerprint()
    commit = git_commit()
    load_at_start = load_average()
    result = run_load(opts)
    stamp = Stamp(
        command=opts.command,
        seeds="none: the conversations are fixed texts; the order of concurrent work varies",
        fingerprint=settled_fingerprint(fingerprint),
        commit=commit,
        machine=f"{machine()}; load average (1 / 5 / 15 min) {load_at_start} at the start, "
        f"{load_average()} at the end",
        extra=(("PostgreSQL", _server_version(opts.url)),),
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "LOAD.md").write_text("\n".join(report_lines(result, stamp)), encoding="utf-8")
    print(f"wrote {out / 'LOAD.md'}")
    return 1 if result.lost or result.failed_turns else 0


def _server_version(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    return f"{row[0] if row else 'unknown'} on this machine (unix socket or loopback)"


def quick_options(url: str) -> LoadOptions:
    """The short version (the test suite's correctness check)."""
    return LoadOptions(
        url=url,
        threads=4,
        turns=8,
        agent_delay_s=0.01,
        writer_delay_s=0.05,
        budget=2_500,
        pool_size=5,
        sample_every_s=0.2,
        drain_timeout_s=120.0,
        command="python -m bench --load --quick",
    )


def default_out() -> Path:
    """Where ``--quick`` writes (never bench/)."""
    return Path(tempfile.gettempdir()) / "wm_langgraph_bench_load"


def url_from(given: str | None) -> str | None:
    """The server: ``--pg-url``, else the variable ``.ci/postgres.sh`` exports."""
    return given or os.environ.get(URL_VARIABLE) or None
