"""A LangGraph Platform app (``langgraph dev`` / LangGraph Server) with Working Memory.

The platform supplies the checkpointer and the store; the middleware is built without
``store=`` and uses the store of each run, so archives and the Working Memory live in the
platform's store and survive a server restart. Run it from this directory::

    pip install "wm-langgraph[dev]"    # brings langgraph-cli[inmem]
    langgraph dev --no-browser

With ``OPENAI_API_KEY`` set the agent and the Working Memory writer use ChatOpenAI; without it
both run offline. Deleting a chat is the thread and the memory's records: ``delete_thread.py``. ``WM_TOKEN_BUDGET``, ``WM_COMMIT_RATIO`` and ``WM_KEEP_RECENT`` tune the
memory (see ``.env.example``).
"""

from __future__ import annotations

import os

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel

from wm_langgraph import WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.testing import OfflineAgentModel


def lookup(key: str) -> str:
    """Look a key up in the team wiki."""
    return f"wiki entry for {key}"


def _agent_model() -> BaseChatModel:
    if os.environ.get("OPENAI_API_KEY"):
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=os.environ.get("WM_AGENT_MODEL", "gpt-4.1-mini"))
    return OfflineAgentModel()


memory_config = WorkingMemoryConfig(
    token_budget=int(os.environ.get("WM_TOKEN_BUDGET", "128000")),
    commit_token_threshold_ratio=float(os.environ.get("WM_COMMIT_RATIO", "0.5")),
    commit_keep_recent_count=int(os.environ.get("WM_KEEP_RECENT", "10")),
)

agent = create_agent(
    _agent_model(),
    [lookup],
    middleware=[WorkingMemoryMiddleware(config=memory_config)],  # no store=: the platform's
)
