"""Two Working Memory middlewares in one agent would share the agent's one ``working_memory``
state value: one of them lost every archive. Such an agent is refused when it is built, with an
error that says why and what to do; one middleware per agent (any name) still builds."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import lookup
from tests.integrations.helpers import agent_model, wm_model
from wm_langgraph import WorkingMemoryMiddleware
from wm_langgraph.errors import ConflictingMiddlewareError


def test_two_named_memories_in_one_agent_are_refused_when_it_is_built() -> None:
    a = WorkingMemoryMiddleware(wm_model(), name="a")
    b = WorkingMemoryMiddleware(wm_model(), name="b")
    with pytest.raises(ConflictingMiddlewareError, match=r"one agent.*'a'.*'b'.*working_memory"):
        create_agent(
            agent_model(),
            [lookup],
            middleware=[a, b],
            checkpointer=InMemorySaver(),
            store=InMemoryStore(),
        )


def test_one_named_memory_beside_other_middleware_builds() -> None:
    agent = create_agent(
        agent_model(),
        [lookup],
        middleware=[ModelCallLimitMiddleware(run_limit=5), WorkingMemoryMiddleware(name="a")],
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
    )
    assert agent is not None


def test_one_middleware_instance_may_serve_several_agents() -> None:
    mw = WorkingMemoryMiddleware(wm_model(), name="shared")
    for _ in range(2):
        create_agent(agent_model(), [lookup], middleware=[mw], checkpointer=InMemorySaver())
