"""The public API is exactly what wm_langgraph/__init__.py exports; an outside acceptance suite
drives these names, so adding or removing one must be a deliberate change of this list. Names
that left the top level keep working for this release, with a deprecation warning."""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import wm_langgraph
import wm_langgraph.document
from wm_langgraph.errors import WorkingMemoryDeprecationWarning

EXPECTED = [
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

# Names the top level exported before; each keeps working for this release, with a warning
# that names its new home, and is the very object of that home.
MOVED = {
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

DOCUMENT_API = sorted(name for name, home in MOVED.items() if home == "wm_langgraph.document")


def test_all_is_pinned() -> None:
    # (ruff's RUF022 keeps it isort-sorted: constants, classes, then functions)
    assert wm_langgraph.__all__ == EXPECTED


def test_every_public_name_resolves() -> None:
    for name in wm_langgraph.__all__:
        assert getattr(wm_langgraph, name) is not None, name


def test_sections_are_the_seven_names_in_order() -> None:
    assert wm_langgraph.document.SECTIONS == (
        "Session Title",
        "Current State",
        "Task & Goals",
        "Key Facts & Decisions",
        "Files & Context",
        "Errors & Corrections",
        "Open Issues",
    )


def test_the_display_module_exports_the_pictures() -> None:
    import wm_langgraph.display

    assert wm_langgraph.display.__all__ == [
        "ArchiveView",
        "CommitView",
        "ModelInputView",
        "ThreadReport",
        "WorkingMemoryView",
    ]
    assert wm_langgraph.ThreadReport is wm_langgraph.display.ThreadReport
    assert callable(wm_langgraph.WorkingMemory.report)


def test_state_schema_has_the_documented_channels() -> None:
    hints = typing.get_type_hints(wm_langgraph.WorkingMemoryState, include_extras=True)
    assert {"messages", "working_memory", "llm_input_messages"} <= set(hints)


def test_package_ships_type_information() -> None:
    from importlib.resources import files

    assert files("wm_langgraph").joinpath("py.typed").is_file()


def test_dir_lists_only_current_names() -> None:
    listed = set(dir(wm_langgraph))
    assert set(EXPECTED) <= listed
    assert listed.isdisjoint(MOVED)
    assert {"document", "storage", "errors"} <= listed  # the public modules are listed too
    assert not any(name.startswith("_") and name != "__version__" for name in listed)


@pytest.mark.parametrize(("name", "home"), sorted(MOVED.items()))
def test_a_moved_name_still_resolves_warns_with_its_home_and_is_the_same_object(name, home):
    new = getattr(importlib.import_module(home), name)
    with pytest.warns(WorkingMemoryDeprecationWarning) as caught:
        old = getattr(wm_langgraph, name)
    assert old is new
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"moved to {home}.{name}" in message
    assert caught[0].filename == __file__  # the warning points at the caller's line
    assert issubclass(caught[0].category, DeprecationWarning)


def test_a_from_import_of_a_moved_name_warns_once() -> None:
    with pytest.warns(WorkingMemoryDeprecationWarning, match="wm_langgraph.testing") as caught:
        from wm_langgraph import OfflineAgentModel  # noqa: F401
    assert len(caught) == 1


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = wm_langgraph.no_such_name  # type: ignore[attr-defined]


def test_the_document_module_exports_the_document_api() -> None:
    assert set(wm_langgraph.document.__all__) == set(DOCUMENT_API)
    for name in DOCUMENT_API:
        assert getattr(wm_langgraph.document, name) is not None, name


def test_importing_the_package_warns_nothing() -> None:
    """Nothing in the package itself uses a moved name or module path."""
    code = (
        "import warnings; warnings.filterwarnings('error', message=r'wm_langgraph\\..* moved to');"
        "import wm_langgraph, wm_langgraph.cli.main, wm_langgraph.document, wm_langgraph.testing"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_repository_uses_no_moved_name() -> None:
    """README, examples, notebooks, bench and tests take moved names from their new homes
    (this file, which tests the deprecations, aside)."""
    root = Path(__file__).resolve().parents[1]
    names = "|".join(sorted(MOVED, key=len, reverse=True))
    imports = re.compile(r"from wm_langgraph import (\([^)]*\)|[^\n]*)")
    attribute = re.compile(rf"\bwm_langgraph\.({names})\b")
    word = re.compile(rf"\b({names})\b")
    paths = [root / "README.md", root / "docs" / "guide.md"]
    for folder in ("tests", "bench", "examples", "scripts", "notebooks"):
        paths += [p for p in (root / folder).rglob("*") if p.suffix in {".py", ".ipynb", ".md"}]
    found = []
    for path in paths:
        if path.name == Path(__file__).name:
            continue
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(root)
        found += [f"{where}: {m.group(0)}" for m in attribute.finditer(text)]
        for match in imports.finditer(text):
            found += [f"{where}: from wm_langgraph import {w}" for w in word.findall(match[1])]
    assert not found
