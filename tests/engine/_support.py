"""Helpers for the engine tests: a scripted WM writer, an agent graph, and invariant checks."""

from __future__ import annotations

import re
import threading
from typing import Any

from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langgraph.graph import END, START, StateGraph

from wm_langgraph.document.sections import SECTIONS, render_working_memory
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.messages import message_tokens
from wm_langgraph.state import WorkingMemoryState
from wm_langgraph.testing import ScriptedChatModel

FACT_RE = re.compile(r"FACT-\d{3}")
UPDATE_TOOL = "update_working_memory"
CAPTURE_TOOL = "capture_working_memory"


def folded_text(prompt: str) -> str:
    """The part of a WM prompt that holds the folded messages (the whole prompt as fallback)."""
    match = re.search(r"<messages>(.*)</messages>", prompt, re.S)
    return match.group(1) if match else prompt


def prior_text(prompt: str) -> str:
    match = re.search(r"<(working_memory|prior_summary)>(.*?)</\1>", prompt, re.S)
    return match.group(2) if match else ""


def is_update_call(tools: Any) -> bool:
    return bool(tools) and any(t.get("function", {}).get("name") == UPDATE_TOOL for t in tools)


def is_capture_call(tools: Any) -> bool:
    """The capture check's follow-up (``capture_working_memory`` bound)."""
    return bool(tools) and any(t.get("function", {}).get("name") == CAPTURE_TOOL for t in tools)


def wm_document(facts: list[str], title: str = "Project Falcon migration") -> str:
    body = dict.fromkeys(SECTIONS, "")
    body["Session Title"] = title
    body["Current State"] = "Working through the scripted session."
    body["Task & Goals"] = "- Keep every FACT line."
    body["Key Facts & Decisions"] = "\n".join(f"- {f} noted" for f in facts)
    return render_working_memory(body)


def archive_parts(prompt: str) -> dict[str, str]:
    """Archive id -> its part of the folded messages (split at the engine's marker lines)."""
    folded = folded_text(prompt)
    parts = re.split(r"^\[archive ([A-Za-z0-9_.:-]+)\]$", folded, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def abstract_for(part: str) -> str:
    """What the scripted writer's abstracts say of an archive: its FACT ids."""
    facts = list(dict.fromkeys(FACT_RE.findall(part)))
    return "Abstract of the turns about " + ", ".join(facts) if facts else "Abstract of turns"


class WMWriter:
    """A scripted WM model: create = a document listing the FACT ids of the folded messages;
    update = one update_working_memory call APPENDing the new FACT ids.

    ``mode`` switches behaviour at runtime: "ok", "raise", "no_tool_call", "garbage_args",
    "unreadable_args" (a tool call whose arguments yield no section at all), "crash" (a
    BaseException, like a process dying mid-call).

    ``abstracts`` says what the writer gives the folded archives (in the update call's
    ``abstracts`` argument and after a created document): ``None`` nothing (the default), or a
    function of (archive id, its part of the folded messages) returning the raw value of that
    archive's abstract (any type), or None to leave it out.
    """

    def __init__(self) -> None:
        self.mode = "ok"
        self.abstracts: Any = None
        self.lock = threading.Lock()
        self.model = ScriptedChatModel(respond=self._reply)

    def _reply(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        prompt = messages[-1].text
        facts = list(dict.fromkeys(FACT_RE.findall(folded_text(prompt))))
        if self.mode == "raise":
            return RuntimeError("model down")
        if self.mode == "crash":
            raise SimulatedCrash
        if is_update_call(tools):
            if self.mode == "no_tool_call":
                return "I would rather chat."
            if self.mode == "unreadable_args":
                return {
                    "content": "",
                    "invalid_tool_calls": [
                        {"name": UPDATE_TOOL, "args": "{{{ not json", "id": "x", "error": "bad"}
                    ],
                }
            if self.mode == "garbage_args":
                bad = '{"sections": {"Key Facts & Decisions": {"op": "APPEND", "items": ["'
                bad += '", "'.join(f"{f} noted" for f in facts) + '"'  # braces never closed
                return {
                    "content": "",
                    "invalid_tool_calls": [
                        {"name": UPDATE_TOOL, "args": bad, "id": "x", "error": "bad json"}
                    ],
                }
            sections = {name: {"op": "KEEP"} for name in SECTIONS}
            known = list(dict.fromkeys(FACT_RE.findall(prior_text(prompt)) + facts))
            if len(known) > 20:  # consolidate, as the size warnings ask: 4 facts per bullet
                groups = [known[i : i + 4] for i in range(0, len(known), 4)]
                body = "\n".join(f"- noted: {', '.join(g)}" for g in groups)
                sections["Key Facts & Decisions"] = {"op": "UPDATE", "content": body}
            else:
                sections["Key Facts & Decisions"] = {
                    "op": "APPEND",
                    "items": [f"{f} noted" for f in facts],
                }
            args: dict[str, Any] = {"sections": sections}
            given = self._abstracts(prompt)
            if given:
                args["abstracts"] = [{"archive_id": k, "abstract": v} for k, v in given]
            return {"content": "", "tool_calls": [{"name": UPDATE_TOOL, "args": args}]}
        old = list(dict.fromkeys(FACT_RE.findall(prior_text(prompt))))
        document = wm_document(list(dict.fromkeys(old + facts)))
        given = [(k, v) for k, v in self._abstracts(prompt) if isinstance(v, str)]
        if given:  # a created reply is text: only text abstracts can be written in it
            lines = "\n".join(f"{k}: {v}" for k, v in given)
            document += f"\n\n<archive_abstracts>\n{lines}\n</archive_abstracts>\n"
        return document

    def _abstracts(self, prompt: str) -> list[tuple[str, Any]]:
        if self.abstracts is None:
            return []
        given = [(k, self.abstracts(k, part)) for k, part in archive_parts(prompt).items()]
        return [(k, v) for k, v in given if v is not None]


class SimulatedCrash(BaseException):
    """Raised inside Phase 2 to simulate the process dying mid-call."""


def agent_model(*, tool_every: int = 0, parallel: int = 1) -> ScriptedChatModel:
    """An agent that answers "ack <FACT>"; every ``tool_every``-th user message it first calls
    ``read_file`` (``parallel`` calls at once), then answers."""
    state = {"n": 0}

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            state["n"] += 1
            if tool_every and state["n"] % tool_every == 0:
                calls = [
                    {"name": "read_file", "args": {"path": f"src/mod_{state['n']}_{i}.py"}}
                    for i in range(parallel)
                ]
                return {"content": "", "tool_calls": calls}
            facts = FACT_RE.findall(last.text)
            return f"ack {' '.join(facts)}"
        return "done reading"

    return ScriptedChatModel(respond=reply)


def build_agent(
    wm: WorkingMemory,
    model: ScriptedChatModel,
    *,
    checkpointer: Any,
    store: Any = None,
    tools: Any = None,
):
    """assemble -> agent -> (tools -> assemble | after_turn) -> END; ``tools`` is the tools
    node (default: a ``read_file`` stand-in that answers "contents of <path>")."""

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [model.invoke(state["llm_input_messages"])]}

    def read_file(state: dict[str, Any]) -> dict[str, Any]:
        last = state["messages"][-1]
        return {
            "messages": [
                ToolMessage(
                    f"contents of {tc['args']['path']}", tool_call_id=tc["id"], name="read_file"
                )
                for tc in last.tool_calls
            ]
        }

    def route(state: dict[str, Any]) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "after_turn"

    builder = StateGraph(WorkingMemoryState)
    builder.add_node("assemble", wm.assemble)
    builder.add_node("agent", agent)
    builder.add_node("tools", read_file if tools is None else tools)
    builder.add_node("after_turn", wm.after_turn)
    builder.add_edge(START, "assemble")
    builder.add_edge("assemble", "agent")
    builder.add_conditional_edges("agent", route, ["tools", "after_turn"])
    builder.add_edge("tools", "assemble")
    builder.add_edge("after_turn", END)
    return builder.compile(checkpointer=checkpointer, store=store)


def user(i: int) -> HumanMessage:
    return HumanMessage(f"turn {i}: remember FACT-{i:03d} " + "detail " * 30)


def all_archived(wm: WorkingMemory, config: dict[str, Any]) -> list[BaseMessage]:
    return [m for record in wm.list_archives(config) for m in record.messages]


def assert_nothing_lost(
    wm: WorkingMemory, config: dict[str, Any], live: list[BaseMessage], sent: list[str]
) -> None:
    """Every user message sent is in exactly one archive or live, in order; no id twice."""
    everything = [*all_archived(wm, config), *live]
    ids = [m.id for m in everything]
    assert len(ids) == len(set(ids)), "a message is both archived and live, or archived twice"
    humans = [m.text for m in everything if isinstance(m, HumanMessage)]
    assert humans == sent


# -- random histories for assemble's properties -------------------------------------------


def quarter_count(message: BaseMessage) -> int:
    """A cheap message counter (a quarter of the characters, plus the per-message overhead)."""
    return message_tokens(message, lambda text: len(text) // 4 + 1)


def quarter_total(messages: list[BaseMessage]) -> int:
    return sum(quarter_count(m) for m in messages)


def trimmed(system: SystemMessage | None, history: list[BaseMessage], usable: int) -> Any:
    """The bench's trimming baseline (bench/systems.py ``TrimMiddleware``) with
    :func:`quarter_count`."""
    room = usable - (quarter_count(system) if system is not None else 0)
    kept = trim_messages(
        history,
        strategy="last",
        token_counter=quarter_total,
        max_tokens=room,
        start_on="human",
        include_system=True,
    )
    return ([system] if system is not None else []) + kept


def turn_sizes(history: list[BaseMessage]) -> list[int]:
    """The size of each turn of ``history`` (a user message and every step up to the next)."""
    sizes: list[int] = []
    for message in history:
        if isinstance(message, HumanMessage) or not sizes:
            sizes.append(0)
        sizes[-1] += quarter_count(message)
    return sizes


@st.composite
def histories(draw: Any) -> dict[str, Any]:
    """A random history (message sizes, parallel tool calls), cut into folded, pending and
    live messages at archive boundaries, with a Working Memory, a system prompt and a budget."""
    history: list[BaseMessage] = []
    for t in range(draw(st.integers(1, 14))):
        history.append(HumanMessage("u " * draw(st.integers(1, 300)), id=f"u{t}"))
        for step in range(draw(st.integers(0, 2))):
            ids = [f"c{t}_{step}_{k}" for k in range(draw(st.integers(1, 3)))]
            history.append(
                AIMessage(
                    "",
                    tool_calls=[{"name": "f", "args": {"k": i}, "id": i} for i in ids],
                    id=f"a{t}_{step}",
                )
            )
            history.extend(
                ToolMessage("r " * draw(st.integers(1, 400)), tool_call_id=i, id=f"t{i}")
                for i in ids
            )
        history.append(AIMessage("a " * draw(st.integers(1, 200)), id=f"f{t}"))
    # archive boundaries: never between a tool call and its results
    cuts = [i for i, m in enumerate(history) if not isinstance(m, ToolMessage)]
    folded_end = draw(st.sampled_from(cuts))
    pending_end = draw(st.sampled_from([c for c in cuts if c >= folded_end]))
    if draw(st.booleans()):
        folded_end = pending_end = 0  # no archive yet
    items = draw(st.integers(0, 40))
    wm = "# Working Memory\n\n## Session Title\nT\n\n## Key Facts & Decisions\n" + "\n".join(
        f"- fact {k} " + "w " * 15 for k in range(items)
    )
    return {
        "history": history,
        "folded": history[:folded_end],
        "pending": history[folded_end:pending_end],
        "live": history[pending_end:],
        "wm": wm if folded_end or pending_end else "",
        "system": draw(st.sampled_from([None, "You are careful. " * draw(st.integers(1, 40))])),
        "budget": draw(st.integers(400, 8_000)),
    }
