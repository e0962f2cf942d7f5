"""Helpers for the size tests: a faithful scripted WM writer and a long fact-per-turn session.

The session: turn ``i`` tells one anchored fact (``FACT-017: …``); every 5th turn the agent also
reads a file (``src/pkg_017/module_017.py``). The writer is faithful: it keeps everything, appends
every new fact and path, and consolidates a section when the update prompt warns about it
(related bullets merged, every fact kept verbatim).
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from tests.engine._support import folded_text, is_update_call, prior_text
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.testing import ScriptedChatModel

UPDATE_TOOL = "update_working_memory"
FACT_LINE = re.compile(r"FACT-\d{3}: [^\n]*?(?= ---|\n|$)")
FACT_ID = re.compile(r"FACT-\d{3}")
PATH_RE = re.compile(r"src/pkg_\d{3}/module_\d{3}\.py")
FACTS = "Key Facts & Decisions"
FILES = "Files & Context"


def fact_text(i: int) -> str:
    return f"FACT-{i:03d}: service node-{i} listens on port {9000 + i}"


def path_of(i: int) -> str:
    return f"src/pkg_{i:03d}/module_{i:03d}.py"


def user_message(i: int) -> HumanMessage:
    return HumanMessage(f"Turn {i}. Please remember {fact_text(i)} --- thanks.", id=f"u{i}")


def _warned(prompt: str) -> set[str]:
    block = re.search(r"<section_size_warnings>(.*?)</section_size_warnings>", prompt, re.S)
    text = block.group(1) if block else ""
    return {name for name in SECTIONS if f"- {name}:" in text}


def _lines(body: str) -> list[str]:
    return [ln[2:] if ln.startswith("- ") else ln for ln in body.splitlines() if ln.strip()]


def faithful_writer() -> ScriptedChatModel:
    """The faithful writer (see the module docstring)."""

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        prompt = messages[-1].text
        folded = folded_text(prompt)
        facts = list(dict.fromkeys(FACT_LINE.findall(folded)))
        paths = list(dict.fromkeys(PATH_RE.findall(folded)))
        if not is_update_call(tools):
            body = dict.fromkeys(SECTIONS, "")
            body["Session Title"] = "Service port inventory for the node fleet"
            body["Current State"] = "Recording one service fact per turn."
            body["Task & Goals"] = "- Remember every service fact and file read."
            body[FACTS] = "\n".join(f"- {f}" for f in facts)
            body[FILES] = "\n".join(f"- {p}: read by the agent" for p in paths)
            return render_working_memory(body)
        prior = parse_working_memory(prior_text(prompt))
        warned = _warned(prompt)
        sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
        new_facts = [f for f in facts if f not in prior[FACTS]]
        new_paths = [f"{p}: read by the agent" for p in paths if p not in prior[FILES]]
        for name, new in ((FACTS, new_facts), (FILES, new_paths)):
            if name in warned:
                items = _lines(prior[name]) + new
                merged = ["; ".join(items[i : i + 4]) for i in range(0, len(items), 4)]
                sections[name] = {"op": "UPDATE", "content": "\n".join(f"- {m}" for m in merged)}
            elif new:
                sections[name] = {"op": "APPEND", "items": new}
        return {
            "content": "",
            "tool_calls": [{"name": UPDATE_TOOL, "args": {"sections": sections}}],
        }

    return ScriptedChatModel(respond=reply)


def fact_agent() -> ScriptedChatModel:
    """Answers each turn; every 5th turn it first reads that turn's file."""

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            n = int(re.search(r"Turn (\d+)", last.text).group(1))  # type: ignore[union-attr]
            if n % 5 == 0:
                return {
                    "content": "",
                    "tool_calls": [{"name": "read_file", "args": {"path": path_of(n)}}],
                }
            return f"Noted fact {n}."
        return "Read it."

    return ScriptedChatModel(respond=reply)


def tool_results(last: AIMessage) -> list[ToolMessage]:
    return [
        ToolMessage(
            f"contents of {tc['args']['path']}: def main(): pass",
            tool_call_id=tc["id"],
            name="read_file",
        )
        for tc in last.tool_calls
    ]
