"""The public API is exactly what wm_langgraph/__init__.py exports; an outside acceptance suite
drives these names, so adding or removing one must be a deliberate change of this list."""

from __future__ import annotations

import typing

import wm_langgraph

EXPECTED = [
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


def test_all_is_pinned() -> None:
    # (ruff's RUF022 keeps it isort-sorted: constants, classes, then functions)
    assert wm_langgraph.__all__ == EXPECTED


def test_every_public_name_resolves() -> None:
    for name in wm_langgraph.__all__:
        assert getattr(wm_langgraph, name) is not None, name


def test_sections_are_the_seven_names_in_order() -> None:
    assert wm_langgraph.SECTIONS == (
        "Session Title",
        "Current State",
        "Task & Goals",
        "Key Facts & Decisions",
        "Files & Context",
        "Errors & Corrections",
        "Open Issues",
    )


def test_state_schema_has_the_documented_channels() -> None:
    hints = typing.get_type_hints(wm_langgraph.WorkingMemoryState, include_extras=True)
    assert {"messages", "working_memory", "llm_input_messages"} <= set(hints)


def test_package_ships_type_information() -> None:
    from importlib.resources import files

    assert files("wm_langgraph").joinpath("py.typed").is_file()
