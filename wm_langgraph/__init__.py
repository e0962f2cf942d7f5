"""wm_langgraph: a structured, loss-guarded Working Memory for LangGraph agents.

Public API only through this module. See README.md.
"""

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.merge import GuardDecision, MergeResult, merge_working_memory
from wm_langgraph.document.protocol import (
    UPDATE_WORKING_MEMORY_TOOL,
    parse_update_arguments,
    section_size_warnings,
    update_tool_schema,
)
from wm_langgraph.document.sections import (
    SECTIONS,
    is_working_memory,
    parse_working_memory,
    render_working_memory,
)
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.integration.binding import ConflictingMiddlewareError
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.middleware import WorkingMemoryAgentState, WorkingMemoryMiddleware
from wm_langgraph.state import (
    ModelInputMessages,
    WorkingMemoryReactState,
    WorkingMemoryState,
    archive_aware_add_messages,
)
from wm_langgraph.storage.archives import ArchiveRecord, NoStoreError
from wm_langgraph.storage.sqlite import (
    AsyncVersionedSqliteSaver,
    VersionedSqliteSaver,
    aopen_sqlite,
    open_sqlite,
)
from wm_langgraph.testing import OfflineAgentModel
from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel

__version__ = "0.1.0"

__all__ = [
    "SECTIONS",
    "UPDATE_WORKING_MEMORY_TOOL",
    "ArchiveRecord",
    "AsyncVersionedSqliteSaver",
    "ConflictingMiddlewareError",
    "GuardDecision",
    "MergeResult",
    "ModelInputMessages",
    "NoStoreError",
    "OfflineAgentModel",
    "OfflineWorkingMemoryModel",
    "VersionedSqliteSaver",
    "WorkingMemory",
    "WorkingMemoryAgentState",
    "WorkingMemoryConfig",
    "WorkingMemoryMiddleware",
    "WorkingMemoryReactState",
    "WorkingMemoryState",
    "__version__",
    "aopen_sqlite",
    "archive_aware_add_messages",
    "count_tokens",
    "is_working_memory",
    "merge_working_memory",
    "open_sqlite",
    "parse_update_arguments",
    "parse_working_memory",
    "render_working_memory",
    "section_size_warnings",
    "update_tool_schema",
]
