"""The assembled context is model input, not state: it is never written to a checkpoint
(a copy of the whole context in every checkpoint made the checkpointer grow by a prompt per
step). StateGraph agents get it through ``WorkingMemoryState``; ``create_react_agent``
through ``state_schema=WorkingMemoryReactState``."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.engine._support import WMWriter, agent_model, build_agent, user
from wm_langgraph import WorkingMemory, WorkingMemoryConfig, WorkingMemoryReactState

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from langgraph.prebuilt import create_react_agent

KEY = "llm_input_messages"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def _persisted_keys(saver: InMemorySaver, config: dict[str, Any]) -> set[str]:
    """Every channel name with a non-empty value in any stored checkpoint or pending write of
    the thread, including state nested in Send packets."""
    keys: set[str] = set()

    def add(values: dict[str, Any]) -> None:
        keys.update(k for k, v in values.items() if v not in ([], None))

    for snapshot in saver.list(config):
        add(snapshot.checkpoint["channel_values"])
        for _task, channel, value in snapshot.pending_writes or []:
            keys.add(channel)
            arg = getattr(value, "arg", None)
            if isinstance(arg, dict):
                add(arg)
                state = arg.get("state")
                if isinstance(state, dict):
                    add(state)
    return keys


def _memory() -> WorkingMemory:
    config = WorkingMemoryConfig(token_budget=3_000, commit_keep_recent_count=4, background=False)
    return WorkingMemory(WMWriter().model, config=config, store=InMemoryStore())


def test_state_graph_assemble_output_reaches_the_model_but_no_checkpoint() -> None:
    memory = _memory()
    model = agent_model(tool_every=3, parallel=2)
    saver = InMemorySaver()
    graph = build_agent(memory, model, checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "sg"}}
    for i in range(1, 25):
        # long turns: the history outgrows usable, so the input is the assembled one
        graph.invoke({"messages": [HumanMessage(user(i).text + " context" * 60)]}, config)
    assert any("[Session History Summary]" in m.text for m in model.calls[-1].messages)
    assert "messages" in _persisted_keys(saver, config)
    assert KEY not in _persisted_keys(saver, config)
    assert KEY not in graph.get_state(config).values


@pytest.mark.parametrize("version", ["v2"])
def test_react_agent_with_the_agent_state_schema_checkpoints_no_model_input(version: str) -> None:
    memory = _memory()
    model = agent_model(tool_every=2, parallel=2)
    saver = InMemorySaver()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(
            model,
            [read_file],
            pre_model_hook=memory.pre_model_hook,
            post_model_hook=memory.post_model_hook,
            state_schema=WorkingMemoryReactState,
            checkpointer=saver,
            version=version,  # type: ignore[arg-type]
        )
    config: Any = {"configurable": {"thread_id": f"react-{version}"}}
    for i in range(1, 25):
        out = graph.invoke({"messages": [user(i)]}, config)
        assert out["messages"][-1].type == "ai"
    prompt = model.calls[-1].messages
    assert any("[Session History Summary]" in m.text for m in prompt)
    assert not any(isinstance(m, HumanMessage) and "turn 1:" in m.text for m in prompt)
    assert KEY not in _persisted_keys(saver, config)
