"""wm_langgraph: a structured, loss-guarded Working Memory for LangGraph agents.

The top level holds what a user of an agent needs: the memory (:class:`WorkingMemory`, the
:class:`WorkingMemoryMiddleware` for ``create_agent``, :class:`WorkingMemoryConfig`), the state
schemas, the archive record, the SQLite persistence helpers, the default offline writer and
the errors to catch. The rest has a public module of its own:

- :mod:`wm_langgraph.document`: the Working Memory document (sections, update tool, merge and
  guards, size warnings, token counts);
- :mod:`wm_langgraph.storage.sqlite`: the versioned SQLite checkpointers;
- :mod:`wm_langgraph.testing`: :class:`~wm_langgraph.testing.OfflineAgentModel`, an offline
  stand-in for the agent's model;
- :mod:`wm_langgraph.display`: the pictures of what the memory did (the parts of a
  :class:`ThreadReport`, which ``WorkingMemory.report`` returns);
- :mod:`wm_langgraph.errors`: every exception of the package.

Names that used to be exported here keep working for this release, with a
:class:`~wm_langgraph.errors.WorkingMemoryDeprecationWarning` naming their new home. See
README.md.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from wm_langgraph import _moved
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.display.report import ThreadReport
from wm_langgraph.errors import (
    ConflictingMiddlewareError,
    NoCheckpointerError,
    NoStoreError,
    WorkingMemoryError,
)
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.middleware import WorkingMemoryAgentState, WorkingMemoryMiddleware
from wm_langgraph.state import (
    ModelInputMessages,
    WorkingMemoryReactState,
    WorkingMemoryState,
    archive_aware_add_messages,
)
from wm_langgraph.storage.archives import ArchiveRecord
from wm_langgraph.storage.sqlite import aopen_sqlite, open_sqlite
from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel

__version__ = "0.1.0"

__all__ = [
    "ArchiveRecord",
    "ConflictingMiddlewareError",
    "ModelInputMessages",
    "NoCheckpointerError",
    "NoStoreError",
    "OfflineWorkingMemoryModel",
    "ThreadReport",
    "WorkingMemory",
    "WorkingMemoryAgentState",
    "WorkingMemoryConfig",
    "WorkingMemoryError",
    "WorkingMemoryMiddleware",
    "WorkingMemoryReactState",
    "WorkingMemoryState",
    "__version__",
    "aopen_sqlite",
    "archive_aware_add_messages",
    "open_sqlite",
]

_MOVED_NAMES: dict[str, str] = {
    "SECTIONS": "wm_langgraph.document",
    "UPDATE_WORKING_MEMORY_TOOL": "wm_langgraph.document",
    "GuardDecision": "wm_langgraph.document",
    "MergeResult": "wm_langgraph.document",
    "count_tokens": "wm_langgraph.document",
    "is_working_memory": "wm_langgraph.document",
    "merge_working_memory": "wm_langgraph.document",
    "parse_update_arguments": "wm_langgraph.document",
    "parse_working_memory": "wm_langgraph.document",
    "render_working_memory": "wm_langgraph.document",
    "section_size_warnings": "wm_langgraph.document",
    "update_tool_schema": "wm_langgraph.document",
    "OfflineAgentModel": "wm_langgraph.testing",
    "AsyncVersionedSqliteSaver": "wm_langgraph.storage.sqlite",
    "VersionedSqliteSaver": "wm_langgraph.storage.sqlite",
}
"""Names this module exported before 0.2, and the public module each lives in now."""


def __getattr__(name: str) -> Any:
    """A name that moved (warn with its new home, then return it from there), or an old
    module path of the package (``wm_langgraph.core``: imported through :mod:`._moved`)."""
    home = _MOVED_NAMES.get(name)
    if home is not None:
        _moved.warn_moved(f"{__name__}.{name}", f"{home}.{name}")
        return getattr(importlib.import_module(home), name)
    if f"{__name__}.{name}" in _moved.MOVED_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The current names and the package's public modules; never a name that moved."""
    modules = {
        name
        for name, value in globals().items()
        if isinstance(value, ModuleType)
        and value.__name__ == f"{__name__}.{name}"
        and value.__name__ not in _moved.MOVED_MODULES
        and not name.startswith("_")
    }
    return sorted({*__all__, *modules})


_moved.install()
