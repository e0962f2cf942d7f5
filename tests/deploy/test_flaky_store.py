"""A store that fails a tenth of its operations with transient errors must not fail the user's
turns: the memory's operations are retried (a bounded number of times, with backoff), and an
error that outlasts the retries after the model has answered is logged, not raised."""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Iterable
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import Op, Result
from langgraph.store.memory import InMemoryStore

from tests.common import lookup, thread_config
from tests.deploy._agents import BACKGROUND, EVERY_TURN, PATHS, build, memory_of
from tests.integrations.helpers import agent_model, ids, wm_model
from wm_langgraph import WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.storage.retry import is_transient, retrying


class FlakyStore(InMemoryStore):
    """Fails ``rate`` of its operations (before doing them) with a transient error."""

    def __init__(self, rate: float, seed: int) -> None:
        super().__init__()
        self._rng = random.Random(seed)
        self._rate = rate
        self._lock = threading.Lock()
        self.failures = 0

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        with self._lock:
            fail = self._rng.random() < self._rate
            self.failures += fail
        if fail:
            raise ConnectionError("store connection reset")
        return super().batch(ops)


CONFIGS = {"inline": EVERY_TURN, "background": BACKGROUND}


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(CONFIGS))
@pytest.mark.parametrize("path", PATHS)
def test_a_store_failing_one_operation_in_ten_fails_no_turn(path: str, mode: str) -> None:
    store = FlakyStore(0.1, seed=7)
    agent, hooks = build(path, CONFIGS[mode], saver=InMemorySaver(), store=store)
    memory = memory_of(hooks)
    config = thread_config(f"flaky-{path}-{mode}")
    for n in range(1, 31):
        agent.invoke({"messages": [HumanMessage(f"note FACT-{n}")]}, config)  # never raises
    assert memory.wait(config, timeout=60)
    assert store.failures > 10  # the store did fail, often
    store._rate = 0.0
    archived = [i for record in memory.list_archives(config) for i in ids(record.messages)]
    assert len(archived) == len(set(archived))
    assert "FACT-1" in memory.get_working_memory(config)


def test_only_transient_errors_are_retried_and_the_retries_are_bounded() -> None:
    calls = []

    def always(exc: Exception) -> Any:
        def op() -> None:
            calls.append(exc)
            raise exc

        return op

    with pytest.raises(ConnectionError):
        retrying(always(ConnectionError("reset")), attempts=4, base_delay=0.001)
    assert len(calls) == 4
    calls.clear()
    with pytest.raises(ValueError):
        retrying(always(ValueError("bad value")), base_delay=0.001)
    assert len(calls) == 1
    assert is_transient(sqlite3.OperationalError("database is locked"))
    assert not is_transient(sqlite3.OperationalError("no such table: store"))
    assert not is_transient(KeyError("x"))


@pytest.mark.slow
def test_purging_long_term_facts_is_retried_on_a_flaky_store() -> None:
    """``purge(long_term=True)`` reads and deletes the user's facts through the same retries
    as every other memory record: a store failing half its operations does not fail it."""
    store = FlakyStore(0.0, seed=3)
    config = WorkingMemoryConfig(
        token_budget=6_000,
        commit_token_threshold_ratio=0.0,
        commit_keep_recent_count=2,
        background=False,
        long_term_memory=True,
    )
    mw = WorkingMemoryMiddleware(wm_model(), config=config)
    agent = create_agent(
        agent_model(), [lookup], middleware=[mw], checkpointer=InMemorySaver(), store=store
    )
    run = thread_config("flaky-long-term", user_id="ann")
    for n in range(1, 6):
        agent.invoke({"messages": [HumanMessage(f"decided: use FACT-{n}")]}, run)
    facts = mw.memory.search_long_term(run)
    assert facts, "no long-term fact was written"

    store._rate = 0.5
    deleted = mw.purge(run, long_term=True)
    assert store.failures > 0  # the store did fail during the purge
    store._rate = 0.0
    assert deleted >= len(facts)
    assert mw.memory.search_long_term(run) == []
