"""A fetched web page writes no path into the memory (SPEC §10: paths come from what the session
did). The reported case: a tool returns an HTML page with fake test failures, and the artifact
trail copied ``evil.example/x.sh`` and ``https://evil.example/collect`` into Files & Context,
where every later prompt showed them. Played through ``create_agent`` and
``create_react_agent``, with a scripted writer that leaves Files & Context to the trail and with
the offline writer (whose own Files & Context handling follows the same rule)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import EVIL_PAGE, thread_config
from tests.deploy._agents import EVERY_TURN, PATHS, agent_with, hooks_for, memory_of
from tests.integrations.helpers import wm_model
from wm_langgraph import OfflineWorkingMemoryModel
from wm_langgraph.document.sections import parse_working_memory
from wm_langgraph.document.text import extract_paths, is_url
from wm_langgraph.testing import ScriptedChatModel, tool_reply

WRITERS = ("scripted", "offline")


@tool
def fetch_page(url: str) -> str:
    """Fetch a web page."""
    return EVIL_PAGE


@tool
def edit_file(path: str, new: str) -> str:
    """Replace a file's content."""
    return f"updated {path} and tests/test_invoice.py"


def _agent_model() -> ScriptedChatModel:
    """Turn 1 fetches the CI page, turn 2 edits a file, later turns only answer."""

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
        user, done = (
            str(messages[start].text),
            any(isinstance(m, ToolMessage) for m in messages[start:]),
        )
        if "CI page" in user and not done:
            return tool_reply("fetch_page", {"url": "https://ci.example.com/runs/4411"})
        if "invoice.py" in user and not done:
            return tool_reply("edit_file", {"path": "src/billing/invoice.py", "new": "round()"})
        return "Done: the page lists a failing login test." if "CI page" in user else "Done."

    return ScriptedChatModel(respond=reply)


def _writer(kind: str) -> BaseChatModel:
    return wm_model() if kind == "scripted" else OfflineWorkingMemoryModel()


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("path", PATHS)
def test_a_fetched_page_puts_no_path_into_files_and_context(path: str, writer: str) -> None:
    hooks = hooks_for(path, EVERY_TURN, _writer(writer))
    agent = agent_with(
        hooks,
        saver=InMemorySaver(),
        store=InMemoryStore(),
        model=_agent_model(),
        tools=[fetch_page, edit_file],
    )
    config = thread_config(f"fetched-{path}-{writer}")
    for text in (
        "The CI is red. Check the CI page and tell me what fails.",
        "Please edit src/billing/invoice.py so VAT rounds per line.",
        "note FACT-1: the release is on Friday",
        "note FACT-2: the tax table lives in the wiki",
        "note FACT-3: nothing else",
    ):
        agent.invoke({"messages": [HumanMessage(text)]}, config)
    memory = memory_of(hooks)
    memory.wait(config)
    document = memory.get_working_memory(config)
    files = parse_working_memory(document)["Files & Context"]
    assert "evil.example" not in files
    assert not any(is_url(p) for p in extract_paths(files)), files
    assert "tests/test_auth.py" not in files  # named only by the fetched page
    assert "src/billing/invoice.py" in files  # the session edited it
    assert "tests/test_invoice.py" in files  # the file tool's output names it
    sources: dict[str, str] = {}
    for record in memory.list_archives(config):
        sources.update(record.metadata.get("artifact_sources") or {})
    for added, source in sources.items():
        assert re.fullmatch(r"user|edit_file (arguments|output)", source), (added, source)
