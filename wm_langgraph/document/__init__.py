"""The Working Memory document and its rules: pure functions, no LangGraph, no I/O, no models.

- :mod:`.sections`: the seven sections; parsing, rendering, normalisation.
- :mod:`.protocol`: the ``update_working_memory`` tool and the size warnings of the update
  prompt; :mod:`.arguments` (with :mod:`.json_repair`) reads a model's arguments tolerantly.
- :mod:`.ops`: section ops and guard outcomes; :mod:`.items`: what a written item may be.
- :mod:`.guards`: one guard per section; :mod:`.merge` applies ops through them.
- :mod:`.compaction`: the hard size contract of the stored document.
- :mod:`.create_repair`: a create reply repaired before it is normalised.
- :mod:`.text`: text analysis (meaningful words, anchors, paths, matching), CJK-aware.
- :mod:`.tokens`: token counting (offline cl100k counts).

The names a user of the document needs are exported here: the sections and their parsing and
rendering, the update tool and its arguments, the merge with its guard decisions, the size
warnings and the token count.
"""

from __future__ import annotations

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

__all__ = [
    "SECTIONS",
    "UPDATE_WORKING_MEMORY_TOOL",
    "GuardDecision",
    "MergeResult",
    "count_tokens",
    "is_working_memory",
    "merge_working_memory",
    "parse_update_arguments",
    "parse_working_memory",
    "render_working_memory",
    "section_size_warnings",
    "update_tool_schema",
]
