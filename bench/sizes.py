"""The size runs: small context windows, the stored document's size contract, and
the checkpoint cost of the assemble node.

* :func:`window_runs` — the retention sessions again inside 8k / 16k / 32k windows, every
  system at the same budget (:attr:`bench.systems.Tuning.window`); for wm_langgraph it also
  logs, per model call, whether the WM was shown whole and whether it would have fit beside
  the newest turn.
* :func:`size_runs` — 1,000 commits with each writer of :data:`bench.writers.SIZE_WRITERS`,
  one commit per turn, straight through ``WorkingMemory.compact``: the WM size after each
  commit against the target and the ceiling.
* :func:`assemble_checkpoints` — the same StateGraph agent with the ``assemble`` node and
  without it (the model node assembling for itself), on each checkpointer.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.store.memory import InMemoryStore

from bench.data import Session, Turn, generate_session
from bench.measure import seeded_global_random
from bench.models import make_model
from bench.play import calibrate, run_one
from bench.systems import Tuning
from bench.writers import SIZE_WRITERS

__all__ = [
    "WINDOWS",
    "CheckpointCost",
    "SizeRun",
    "assemble_checkpoints",
    "size_runs",
    "turn_messages",
    "window_runs",
]

WINDOWS: tuple[int, ...] = (8_000, 16_000, 32_000)
"""The context windows of the small-window runs."""

Log = Callable[[str], None]


def turn_messages(turn: Turn) -> list[BaseMessage]:
    """One session turn as the messages an agent would have produced."""
    out: list[BaseMessage] = [HumanMessage(turn.user, id=f"u-{turn.index}")]
    for s, step in enumerate(turn.steps):
        calls = [{"name": c.name, "args": dict(c.args), "id": c.call_id} for c in step]
        out.append(AIMessage("", tool_calls=calls, id=f"a-{turn.index}-{s}"))
        out.extend(
            ToolMessage(c.result, tool_call_id=c.call_id, name=c.name, id=f"t-{c.call_id}")
            for c in step
        )
    out.append(AIMessage(turn.answer, id=f"f-{turn.index}"))
    return out


# ------------------------------------------------------------------------------ windows


def window_runs(
    kinds: Sequence[str],
    seed: int,
    turns: int,
    systems: Sequence[str],
    tuning: Tuning,
    behaviours: Sequence[str] = ("drifting",),
    windows: Sequence[int] = WINDOWS,
    log: Log = print,
) -> list[Any]:
    """Every system, writer and window on the retention sessions (``RunResult`` list); for the
    cost table also the baselines without a memory: the full history (``plain``, once per
    session: it has no window) and trimming to each window."""

    out: list[Any] = []
    for kind in kinds:
        session = generate_session(kind, seed, turns)
        base = calibrate(session, tuning)
        out.append(run_one("plain", session, behaviours[0], base))
        for window in windows:
            for behaviour in behaviours:
                for system in [*systems, "trimming"]:
                    if system == "wm_no_guards" or (
                        system == "trimming" and behaviour != behaviours[0]
                    ):
                        continue
                    r = run_one(system, session, behaviour, replace(base, window=window))
                    out.append(r)
                    shown = _shown(r)
                    log(
                        f"window {window:>6} {kind:6} {behaviour:9} {system:13} "
                        f"final={100 * (r.final.rate() or 0):5.1f}% wm-whole={shown} "
                        f"over-budget={r.over_budget}/{r.model_calls} {r.seconds:.1f}s"
                    )
    return out


def _shown(r: Any) -> str:
    fits = [c for c in r.contexts if c["fits"]]
    if not r.contexts:
        return "n/a"
    return f"{sum(c['complete'] for c in fits)}/{len(fits)}"


# ------------------------------------------------------------------------------ WM size


@dataclass
class SizeRun:
    """One writer over many commits."""

    writer: str
    window: int
    commits: int
    target: int
    ceiling: int
    tokens: list[int] = field(default_factory=list)
    moved: int = 0
    compactions: int = 0
    facts_kept: float | None = None
    seconds: float = 0.0
    sections: dict[str, int] = field(default_factory=dict)
    """Tokens of each section's body after the last commit."""

    @property
    def final(self) -> int:
        """Tokens after the last commit."""
        return self.tokens[-1] if self.tokens else 0

    @property
    def largest(self) -> int:
        """The largest WM after any commit."""
        return max(self.tokens, default=0)

    @property
    def over_target(self) -> int:
        """Commits after which the WM was over its target."""
        return sum(1 for t in self.tokens if t > self.target)

    @property
    def first_over(self) -> int | None:
        """The first commit (1-based) after which the WM was over its target, if any."""
        return next((i + 1 for i, t in enumerate(self.tokens) if t > self.target), None)


def size_runs(
    commits: int,
    seed: int,
    windows: Sequence[int],
    writers: Sequence[str] | None = None,
    log: Log = print,
) -> list[SizeRun]:
    """``commits`` commits (one per turn of a coding session) with each writer and window."""
    logger = logging.getLogger("wm_langgraph")
    level = logger.level
    logger.setLevel(logging.ERROR)  # the flooding writers make every compaction log
    try:
        return _size_runs(commits, seed, windows, writers, log)
    finally:
        logger.setLevel(level)


def _size_runs(
    commits: int,
    seed: int,
    windows: Sequence[int],
    writers: Sequence[str] | None,
    log: Log,
) -> list[SizeRun]:
    from wm_langgraph import WorkingMemory, WorkingMemoryConfig
    from wm_langgraph.document.sections import SECTIONS, parse_working_memory
    from wm_langgraph.document.tokens import count_tokens
    from wm_langgraph.phase2.size import contract_for

    session = generate_session("coding", seed, commits)
    out: list[SizeRun] = []
    for window in windows:
        for name in writers or list(SIZE_WRITERS):
            model = SIZE_WRITERS[name](session, seed * 7919 + 17)
            config = WorkingMemoryConfig(token_budget=window, background=False)
            memory = WorkingMemory(model, config=config, store=InMemoryStore())
            contract = contract_for(config)
            run = SizeRun(name, window, commits, contract.target, contract.ceiling)
            thread: Any = {"configurable": {"thread_id": f"size-{name}-{window}"}}
            started = time.perf_counter()
            for turn in session.turns[:commits]:
                memory.compact({"messages": turn_messages(turn)}, thread)
                run.tokens.append(count_tokens(memory.get_working_memory(thread)))
            run.seconds = time.perf_counter() - started
            run.moved = len(memory.moved_items(thread))
            run.compactions = sum(
                1
                for a in memory.list_archives(thread)
                if any(d.get("applied") == "COMPACT" for d in a.metadata.get("decisions", []))
            )
            run.facts_kept = _facts_kept(session, memory, thread)
            bodies = parse_working_memory(memory.get_working_memory(thread))
            run.sections = {name: count_tokens(bodies[name]) for name in SECTIONS}
            memory.close()
            out.append(run)
            log(
                f"size {window:>6} {name:16} final={run.final} max={run.largest} "
                f"target={run.target} ceiling={run.ceiling} moved={run.moved} "
                f"compactions={run.compactions} {run.seconds:.0f}s"
            )
    return out


def _facts_kept(session: Session, memory: Any, thread: Any) -> float | None:
    """Share of the session's needles in the stored WM or its moved-out items."""
    needles = session.needles_due(len(session.turns))
    if not needles:
        return None
    moved = "\n".join(text for _, _, text in memory.moved_items(thread))
    text = (memory.get_working_memory(thread) + "\n" + moved).lower()
    return sum(1 for n in needles if n.check.lower() in text) / len(needles)


# ------------------------------------------------------------------------------ checkpoints


@dataclass
class CheckpointCost:
    """Checkpoint bytes of one agent shape over a session, on one checkpointer."""

    shape: str
    turns: int
    checkpoint_bytes: int
    writes_bytes: int
    checkpoints: int
    saver: str = "SqliteSaver"

    @property
    def per_turn(self) -> float:
        """Checkpoint and pending-write bytes per turn."""
        return (self.checkpoint_bytes + self.writes_bytes) / max(1, self.turns)


SHAPES = ("without assemble node", "with assemble node")
POSTGRES_URL_ENV = "WM_TEST_POSTGRES_URL"


def assemble_checkpoints(
    session: Session, seed: int, savers: Sequence[str] = ("SqliteSaver",)
) -> list[CheckpointCost]:
    """The same StateGraph agent with the ``assemble`` node and without it, on each saver.

    ``SqliteSaver`` stores every checkpoint whole; ``VersionedSqliteSaver`` (what
    ``open_sqlite`` gives), ``InMemorySaver`` and ``PostgresSaver`` (the LangGraph
    Platform's) store each channel's value once per version, so a superstep that changes no
    channel costs only the checkpoint's bookkeeping. ``PostgresSaver`` runs only when
    ``WM_TEST_POSTGRES_URL`` names a server (``source .ci/postgres.sh``).
    """
    measure = {
        "SqliteSaver": _sqlite_cost,
        "VersionedSqliteSaver": _sqlite_cost,
        "InMemorySaver": _memory_cost,
        "PostgresSaver": _postgres_cost,
    }
    out = []
    for saver in savers:
        if saver == "PostgresSaver" and not os.environ.get(POSTGRES_URL_ENV):
            continue
        for shape in SHAPES:
            with seeded_global_random(f"assemble-checkpoints {saver} {shape}"):
                out.append(measure[saver](session, seed, shape, saver))
    return out


def _play(session: Session, seed: int, saver: Any, shape: str) -> None:
    graph = _state_graph(session, seed, saver, with_assemble=shape.startswith("with "))
    config: Any = {"configurable": {"thread_id": "ckpt"}, "recursion_limit": 100}
    for turn in session.turns:
        graph.invoke({"messages": [HumanMessage(turn.user, id=f"u-{turn.index}")]}, config)


def _sqlite_cost(session: Session, seed: int, shape: str, saver: str) -> CheckpointCost:
    """Checkpoint bytes (with the per-version channel blobs, if any) and pending writes."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from wm_langgraph.storage.sqlite import VersionedSqliteSaver
    from wm_langgraph.storage.versioned_sqlite import BLOBS_TABLE

    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(Path(tmp) / "c.sqlite", check_same_thread=False)
        try:
            versioned = saver == "VersionedSqliteSaver"
            _play(session, seed, (VersionedSqliteSaver if versioned else SqliteSaver)(conn), shape)
            conn.commit()
            checkpoints = _scalar(
                conn, "select coalesce(sum(length(checkpoint)), 0) from checkpoints"
            )
            if versioned:
                checkpoints += _scalar(
                    conn, f"select coalesce(sum(length(blob)), 0) from {BLOBS_TABLE}"
                )
            writes = _scalar(conn, "select sum(length(value)) from writes")
            n = _scalar(conn, "select count(*) from checkpoints")
            return CheckpointCost(shape, len(session.turns), checkpoints, writes, n, saver)
        finally:
            conn.close()


def _memory_cost(session: Session, seed: int, shape: str, saver_name: str) -> CheckpointCost:
    """Serialized bytes the saver holds: checkpoints and metadata, channel blobs, writes."""
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    _play(session, seed, saver, shape)
    stored = [c for thread in saver.storage.values() for ns in thread.values() for c in ns.values()]
    checkpoint = sum(len(c[0][1]) + len(c[1][1]) for c in stored)
    blobs = sum(len(value[1]) for value in saver.blobs.values())
    writes = sum(len(w[2][1]) for ws in saver.writes.values() for w in ws.values())
    return CheckpointCost(
        shape, len(session.turns), checkpoint + blobs, writes, len(stored), "InMemorySaver"
    )


def _postgres_cost(session: Session, seed: int, shape: str, saver_name: str) -> CheckpointCost:
    """Bytes in the saver's tables (checkpoint and metadata JSON, blobs, writes)."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    url = os.environ[POSTGRES_URL_ENV]
    with psycopg.connect(url, autocommit=True) as conn:
        schema = f"bench_ckpt_{os.getpid()}"
        conn.execute(f"drop schema if exists {schema} cascade")
        conn.execute(f"create schema {schema}")
        try:
            scoped = f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"
            with PostgresSaver.from_conn_string(scoped) as saver:
                saver.setup()
                _play(session, seed, saver, shape)
            stored, count = (
                _scalar(conn, f"select {what} from {schema}.checkpoints")
                for what in (
                    "sum(octet_length(checkpoint::text) + octet_length(metadata::text))",
                    "count(*)",
                )
            )
            blobs, writes = (
                _scalar(conn, f"select sum(octet_length(blob)) from {schema}.{table}")
                for table in ("checkpoint_blobs", "checkpoint_writes")
            )
        finally:
            conn.execute(f"drop schema if exists {schema} cascade")
    return CheckpointCost(shape, len(session.turns), stored + blobs, writes, count, "PostgresSaver")


def _scalar(conn: Any, sql: str) -> int:
    row = conn.execute(sql).fetchone()
    return int(row[0] or 0) if row else 0


def _state_graph(session: Session, seed: int, saver: Any, *, with_assemble: bool) -> Any:
    """assemble? -> agent -> (tools -> assemble? | after_turn) with a replayed agent."""
    from langgraph.graph import END, START, StateGraph

    from bench.systems import ReplayAgent, make_tools
    from wm_langgraph import WorkingMemory, WorkingMemoryConfig, WorkingMemoryState

    cfg = WorkingMemoryConfig(
        token_budget=32_000, commit_token_threshold_ratio=0.04, background=False
    )
    memory = WorkingMemory(
        make_model("faithful", session.items, seed=seed), config=cfg, store=InMemoryStore()
    )
    agent = ReplayAgent()
    tools = {t.name: t for t in make_tools(session)}
    turns = {t.user: t for t in session.turns}

    def model_node(state: dict[str, Any], config: RunnableConfig) -> dict[str, Any]:
        if with_assemble:
            messages = state["llm_input_messages"]
        else:
            messages = memory.build_context(state["messages"], config, state=state).all_messages
        return {"messages": [agent.model.invoke(messages)]}

    def tool_node(state: dict[str, Any]) -> dict[str, Any]:
        last = state["messages"][-1]
        return {
            "messages": [
                ToolMessage(
                    str(tools[c["name"]].invoke({**c["args"], "tool_call_id": c["id"]})),
                    tool_call_id=c["id"],
                    name=c["name"],
                )
                for c in last.tool_calls
            ]
        }

    def route(state: dict[str, Any]) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "after_turn"

    first = "assemble" if with_assemble else "agent"
    builder = StateGraph(WorkingMemoryState)
    if with_assemble:
        builder.add_node("assemble", memory.assemble)
        builder.add_edge("assemble", "agent")
    builder.add_node("agent", model_node)
    builder.add_node("tools", tool_node)
    builder.add_node("after_turn", memory.after_turn)
    builder.add_edge(START, first)
    builder.add_conditional_edges("agent", route, ["tools", "after_turn"])
    builder.add_edge("tools", first)
    builder.add_edge("after_turn", END)
    graph = builder.compile(checkpointer=saver, store=memory.store)
    return _Starter(graph, agent, turns)


class _Starter:
    """``invoke`` that first tells the replayed agent which turn to play."""

    def __init__(self, graph: Any, agent: Any, turns: dict[str, Turn]) -> None:
        self.graph, self.agent, self.turns = graph, agent, turns

    def invoke(self, inputs: dict[str, Any], config: Any) -> Any:
        self.agent.begin_turn(self.turns[inputs["messages"][-1].text], record=False)
        return self.graph.invoke(inputs, config)
