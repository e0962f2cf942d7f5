"""One memory instance serving several tenants: each agent has its own store (and checkpointer),
all on the same thread id, with Phase 2 in the background. Background work must stay bound to the
store of the run that scheduled it: no tenant's notes in another tenant's store or model input,
and every tenant gets its own Working Memory.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.deploy._agents import BACKGROUND, Hooks, agent_with, hooks_for, memory_of
from wm_langgraph import WorkingMemoryMiddleware
from wm_langgraph.testing import ScriptedChatModel

TENANTS = {"A": 100, "B": 200}
FACT = re.compile(r"FACT-(\d+)")


class _Seen:
    """An agent model that answers at once and records every fact it was shown."""

    def __init__(self) -> None:
        self.facts: set[int] = set()
        self.model = ScriptedChatModel(respond=self._reply)

    def _reply(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> str:
        for message in messages:
            self.facts |= {int(n) for n in FACT.findall(str(message.text))}
        return "ok"


def _store_facts(store: InMemoryStore) -> set[int]:
    found: set[int] = set()
    for ns in store.list_namespaces(prefix=("wm_langgraph",)):
        for item in store.search(ns, limit=10_000):
            found |= {int(n) for n in FACT.findall(str(item.value))}
    return found


def _has_wm(store: InMemoryStore) -> bool:
    return any(ns[-1] == "wm" for ns in store.list_namespaces(prefix=("wm_langgraph",)))


def _check(stores: dict[str, InMemoryStore], seen: dict[str, _Seen]) -> None:
    for tenant, base in TENANTS.items():
        facts = _store_facts(stores[tenant])
        others = {n for n in facts if not base <= n < base + 100}
        assert not others, f"tenant {tenant}'s store holds another tenant's facts {others}"
        shown = {n for n in seen[tenant].facts if not base <= n < base + 100}
        assert not shown, f"tenant {tenant}'s model was shown another tenant's facts {shown}"
        assert _has_wm(stores[tenant]), f"tenant {tenant} never got a Working Memory"


def _tenant_agents(hooks: Hooks) -> tuple[dict[str, Any], ...]:
    stores = {t: InMemoryStore() for t in TENANTS}
    seen = {t: _Seen() for t in TENANTS}
    agents = {
        t: agent_with(hooks, saver=InMemorySaver(), store=stores[t], model=seen[t].model)
        for t in TENANTS
    }
    return agents, stores, seen


RUNS = 12  # per tenant: 24 interleaved runs


@pytest.mark.slow
@pytest.mark.parametrize("path", ["create_agent", "create_react_agent"])
def test_one_memory_serving_two_tenants_on_one_thread_id_never_leaks(path: str) -> None:
    hooks = hooks_for(path, BACKGROUND)
    memory = memory_of(hooks)
    agents, stores, seen = _tenant_agents(hooks)
    config = thread_config("1")
    for n in range(RUNS):
        for tenant, base in TENANTS.items():
            message = HumanMessage(f"note FACT-{base + n} for tenant {tenant}")
            agents[tenant].invoke({"messages": [message]}, config)
    assert memory.wait(timeout=60)
    _check(stores, seen)


@pytest.mark.slow
def test_one_middleware_serving_two_tenants_async_never_leaks() -> None:
    mw = hooks_for("create_agent", BACKGROUND)
    assert isinstance(mw, WorkingMemoryMiddleware)
    agents, stores, seen = _tenant_agents(mw)
    config = thread_config("1")

    async def run() -> None:
        for n in range(RUNS):
            await asyncio.gather(
                *(
                    agents[tenant].ainvoke(
                        {"messages": [HumanMessage(f"note FACT-{base + n} for {tenant}")]}, config
                    )
                    for tenant, base in TENANTS.items()
                )
            )
        assert await mw.memory.await_phase2(timeout=60)

    asyncio.run(run())
    _check(stores, seen)
