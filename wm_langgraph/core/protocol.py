"""PLACEHOLDER - being written (issue 2): update tool schema, tolerant argument parsing,
section size warnings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

UPDATE_TOOL_NAME = "update_working_memory"
UPDATE_WORKING_MEMORY_TOOL: dict[str, Any] = {}


def update_tool_schema(*, strict: bool = False) -> dict[str, Any]:
    raise NotImplementedError


def parse_update_arguments(raw: str | Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    raise NotImplementedError


def section_size_warnings(wm: str) -> str:
    raise NotImplementedError
