"""Shared test fixtures. Tests are hermetic: sockets are disabled by pytest-socket (see
pyproject), only unix sockets are allowed.

Fixtures (the helpers behind them are in ``tests/common.py``, the fake chat model is
``wm_langgraph.testing.ScriptedChatModel``):

- ``store``: a fresh ``InMemoryStore``;
- ``memory``: builds a ``WorkingMemory`` on that store, ``memory(model, config=...)``;
- ``run_config``: the run config of a thread named after the test;
- ``lookup``: the agents' ``lookup`` tool (``tests.common.lookup_tool`` makes larger results).

``tests/engine/conftest.py`` adds the engine's scripted WM writer (``writer``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory

# The suite's own helpers live in the ``tests`` package of the repository root. CI tests the
# installed wheel, so the root goes *after* site-packages: ``wm_langgraph`` still resolves to the
# installed package, never to the source tree beside it.
_ROOT = str(Path(__file__).resolve().parents[1])
if _ROOT not in sys.path:
    sys.path.append(_ROOT)

from tests.common import lookup as _lookup  # noqa: E402
from tests.common import thread_config  # noqa: E402

# Hypothesis profiles: "ci" (default, modest) and "long" for soak runs:
#   WM_HYPOTHESIS_PROFILE=long pytest tests/core/test_merge_properties.py
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("WM_HYPOTHESIS_PROFILE", "ci"))

MemoryFactory = Callable[..., WorkingMemory]


@pytest.fixture
def store() -> InMemoryStore:
    """A fresh in-memory LangGraph store."""
    return InMemoryStore()


@pytest.fixture
def memory(store: InMemoryStore) -> MemoryFactory:
    """Builds a ``WorkingMemory``: ``memory(model, config=WorkingMemoryConfig(...))``, on the
    test's ``store`` unless another is given."""

    def make(
        model: BaseChatModel | None,
        *,
        config: WorkingMemoryConfig | None = None,
        store: BaseStore | None = store,
        **kwargs: Any,
    ) -> WorkingMemory:
        return WorkingMemory(model, config=config, store=store, **kwargs)

    return make


@pytest.fixture
def run_config(request: pytest.FixtureRequest) -> RunnableConfig:
    """The run config of a thread named after the test."""
    return thread_config(request.node.name)


@pytest.fixture
def lookup() -> BaseTool:
    """The agents' ``lookup`` tool (``"wiki entry for <key>"``)."""
    return _lookup
