"""A small agent, a marker-recording WM model and the design §3 invariant checks.

Every message the harness sends carries a unique marker ``MARK[<thread>-<kind><turn>]``. The WM
model (a :class:`ScriptedChatModel` callable) records, in Errors & Corrections (append-only,
so the guards keep every line), one ``seen <marker>`` item per marker of the messages it is
asked to fold in, in prompt order. So a thread's Working Memory is a log of what Phase 2 folded,
and the invariants become exact checks:

- nothing lost: live messages + the messages of the timeline's archives == every message sent,
  in order, each once;
- lineage: the WM's markers == the markers of the archives it covers, in order, no duplicates
  (each WM derived from the previous one plus the delta; Phase 2 never out of order or twice);
- never worse: a later WM's markers start with an earlier WM's markers.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from _rel_stats import add
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from lineage import fold_order

from tests.common import thread_config
from wm_langgraph.document import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.phase2.graph import unfolded_archive_ids
from wm_langgraph.state import WorkingMemoryState
from wm_langgraph.storage.archives import ArchiveStore
from wm_langgraph.testing import ScriptedChatModel, tool_reply

__all__ = [
    "ERRORS",
    "Conversation",
    "MarkerModel",
    "build_agent",
    "check_assemble",
    "check_thread",
    "expected_turn_ids",
    "markers_in",
    "wm_markers",
]

ERRORS = "Errors & Corrections"
MARK_RE = re.compile(r"MARK\[([^\]]+)\]")
_MESSAGES_RE = re.compile(r"<messages>\n(.*)\n</messages>", re.S)
_PRIOR_RE = re.compile(
    r"<(?:prior_summary|working_memory)>\n(.*?)\n</(?:prior_summary|working_memory)>", re.S
)

# A fault returns a reply (str / dict / AIMessage / exception) to use instead of the healthy one,
# or None to answer normally. It gets the call kind ("create" | "update"), the prompt text and
# the healthy reply.
Fault = Callable[[str, str, Any], Any]


def markers_in(text: str) -> list[str]:
    """The markers of ``text``, in order."""
    return MARK_RE.findall(text)


def wm_markers(document: str) -> list[str]:
    """The markers a WM recorded as folded (``seen <marker>`` items), in order."""
    body = parse_working_memory(document)[ERRORS] if document else ""
    return re.findall(r"seen MARK\[([^\]]+)\]", body)


class MarkerModel:
    """Builds the marker-recording ScriptedChatModel; ``fault`` may override any call."""

    def __init__(self, fault: Fault | None = None) -> None:
        self.fault = fault
        self.calls: list[tuple[str, list[str]]] = []  # (kind, markers folded)
        self._lock = threading.Lock()
        self.model = ScriptedChatModel(respond=self._reply)

    def _reply(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        prompt = "\n".join(m.text for m in messages)
        kind = "update" if tools else "create"
        found = _MESSAGES_RE.search(prompt)
        marks = markers_in(found.group(1)) if found else []
        with self._lock:
            self.calls.append((kind, marks))
        healthy = self._healthy(kind, prompt, marks)
        if self.fault is not None:
            override = self.fault(kind, prompt, healthy)
            if override is not None:
                return override
        return healthy

    @staticmethod
    def _healthy(kind: str, prompt: str, marks: list[str]) -> Any:
        items = [f"seen MARK[{m}]" for m in marks]
        if kind == "update":
            sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
            if items:
                sections[ERRORS] = {"op": "APPEND", "items": items}
            return tool_reply("update_working_memory", {"sections": sections})
        prior_match = _PRIOR_RE.search(prompt)
        prior = prior_match.group(1) if prior_match else ""
        bodies = parse_working_memory(prior) if "## " in prior else dict.fromkeys(SECTIONS, "")
        bodies["Session Title"] = bodies["Session Title"] or "Marker log of the reliability run"
        bodies["Current State"] = f"Folded {len(marks)} messages."
        old_errors = bodies[ERRORS].strip()
        new_lines = "\n".join(f"- {item}" for item in items)
        bodies[ERRORS] = "\n".join(part for part in (old_errors, new_lines) if part)
        return render_working_memory(bodies)


def build_agent(wm: Any, *, checkpointer: Any, store: Any) -> Any:
    """agent -> after_turn. The agent answers deterministically; every third turn it calls a
    tool first (an AI message with a tool call, its ToolMessage, then the answer)."""

    def agent(state: dict[str, Any]) -> dict[str, Any]:
        last = state["messages"][-1]
        thread, _, turn = str(last.id).rpartition("-u")
        base = f"{thread}-"
        n = int(turn) if turn.isdigit() else 0
        out: list[BaseMessage] = []
        if n % 3 == 2:
            call_id = f"call-{thread}-{n}"
            out.append(
                AIMessage(
                    id=f"{base}c{n}",
                    content=f"reading a file MARK[{base}c{n}]",
                    tool_calls=[
                        {"name": "read_file", "args": {"path": f"src/mod_{n}.py"}, "id": call_id}
                    ],
                )
            )
            out.append(
                ToolMessage(
                    id=f"{base}r{n}",
                    content=f"def f{n}(): pass  MARK[{base}r{n}]",
                    tool_call_id=call_id,
                    name="read_file",
                )
            )
        out.append(AIMessage(id=f"{base}a{n}", content=f"answer {n} MARK[{base}a{n}]"))
        return {"messages": out}

    builder = StateGraph(WorkingMemoryState)
    builder.add_node("agent", agent)
    builder.add_node("after_turn", wm.after_turn)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "after_turn")
    builder.add_edge("after_turn", END)
    return builder.compile(checkpointer=checkpointer, store=store)


def expected_turn_ids(thread_id: str, n: int) -> list[str]:
    """Ids of the messages of turn ``n`` (user first), in order."""
    ids = [f"{thread_id}-u{n}"]
    if n % 3 == 2:
        ids += [f"{thread_id}-c{n}", f"{thread_id}-r{n}"]
    return [*ids, f"{thread_id}-a{n}"]


@dataclass
class Conversation:
    """One thread driven turn by turn; ``sent`` lists every message id that reached state."""

    thread_id: str
    sent: list[str] = field(default_factory=list)
    turns: int = 0

    @property
    def config(self) -> RunnableConfig:
        return thread_config(self.thread_id)

    def turn(self, graph: Any, *, filler: str = "") -> None:
        """Send the next user message and record the turn's ids (raises what the graph raises;
        then :meth:`reconcile` says what reached the checkpoint)."""
        n = self.turns
        self.turns += 1
        text = f"user turn {n} of {self.thread_id} MARK[{self.thread_id}-u{n}] {filler}"
        message = HumanMessage(id=f"{self.thread_id}-u{n}", content=text)
        graph.invoke({"messages": [message]}, self.config, durability="sync")
        self.sent.extend(expected_turn_ids(self.thread_id, n))

    def reconcile(self, graph: Any, archives: ArchiveStore) -> None:
        """After a crash: take what durably reached state and store as sent (a turn whose
        input never reached the checkpoint did not happen; its user simply resends)."""
        self.sent = all_ids(graph, archives, self.config)


def _live_and_timeline(graph: Any, config: RunnableConfig) -> tuple[list[str], list[str]]:
    values = graph.get_state(config).values
    live = [str(m.id) for m in values.get("messages", []) if not isinstance(m, SystemMessage)]
    timeline = list((values.get("working_memory") or {}).get("archives") or [])
    return live, timeline


def all_ids(graph: Any, archives: ArchiveStore, config: RunnableConfig) -> list[str]:
    """Archived (timeline order) then live message ids of a thread."""
    live, timeline = _live_and_timeline(graph, config)
    thread_id = str(config["configurable"]["thread_id"])
    records = archives.get_archives(thread_id, timeline)
    assert [r.id for r in records] == timeline, "an archive of the timeline is missing"
    return [str(m.id) for r in records for m in r.messages] + live


def check_thread(
    wm: Any,
    graph: Any,
    archives: ArchiveStore,
    conversation: Conversation,
    *,
    previous_wm_markers: Sequence[str] = (),
    folded_all: bool = False,
    complete: bool = False,
    exact_reads: bool = True,
) -> list[str]:
    """Assert the design §3 invariants for one thread; return the WM's markers.

    Args:
        wm: The WorkingMemory.
        graph: The compiled agent.
        archives: An ArchiveStore over the same store.
        conversation: The thread and every message id it sent.
        previous_wm_markers: The WM markers seen earlier (never worse: still a prefix).
        folded_all: Also require that every archive is folded into the WM.
        complete: Also require that the WM recorded every archived message (the model was
            healthy whenever an archive was folded).
        exact_reads: Also require that the config-only reads (``get_working_memory``,
            ``list_archives``) agree with the state's timeline.
    """
    config = conversation.config
    thread_id = conversation.thread_id
    # 1. Nothing lost: every message live or in exactly one archive, in order.
    ids = all_ids(graph, archives, config)
    assert ids == conversation.sent, "messages lost, duplicated or reordered"
    # 4. No tool pair split across an archive boundary (or between archives and live).
    _, timeline = _live_and_timeline(graph, config)
    for record in archives.get_archives(thread_id, timeline):
        calls = {c["id"] for m in record.messages for c in getattr(m, "tool_calls", None) or []}
        results = {m.tool_call_id for m in record.messages if isinstance(m, ToolMessage)}
        assert calls == results, f"a tool pair is split at {record.id}: {calls ^ results}"
    # 5. Accounting: pending_tokens equals a rebuild from the live messages (when the meta has
    # accounted the newest message; after a failed turn it catches up on the next one).
    values = graph.get_state(config).values
    meta = values.get("working_memory") or {}
    convo = [m for m in values.get("messages", []) if not isinstance(m, SystemMessage)]
    if convo and meta.get("last_counted_id") == convo[-1].id:
        head = convo[: max(0, len(convo) - int(meta["keep_recent_count"]))]
        rebuilt = sum(wm.count_tokens([m]) for m in head)
        assert meta["pending_tokens"] == rebuilt, "pending_tokens differs from a rebuild"
        add("invariant checks: pending_tokens == rebuild")
    # 7 + 2. The WM: seven sections, markers == folded archives' markers in order.
    current = archives.current_wm(thread_id, timeline)
    document = current.text if current else ""
    if exact_reads:
        assert wm.get_working_memory(config) == document
        assert [r.id for r in wm.list_archives(config)] == timeline
    # Items the size contract moved out of the document are kept, not lost: they count as
    # held, before the document's own (they are older).
    moved = [
        item.get("text", "")
        for _, items in archives.moved_items(thread_id, current.covers if current else [])
        for item in items
        if item.get("section") == ERRORS
    ]
    markers = [*re.findall(r"seen MARK\[([^\]]+)\]", "\n".join(moved)), *wm_markers(document)]
    if current is not None:
        assert len(parse_working_memory(document)) == len(SECTIONS)
        covered = fold_order(archives.get_archives(thread_id, current.covers))
        folded = [m for r in covered for msg in r.messages for m in markers_in(msg.text)]
        assert markers == [m for m in folded if m in set(markers)], "WM lineage out of order"
        assert len(markers) == len(set(markers)), "a message folded twice"
    # 6. Never worse.
    assert list(markers[: len(previous_wm_markers)]) == list(previous_wm_markers), "WM got worse"
    if folded_all:
        assert current is not None or not timeline
        if timeline:
            assert current is not None
            assert current.covers == timeline, "pending archives were not folded in"
            assert not current.info.get("deferred"), "deferred archives were not folded in"
    if complete and timeline:
        folded = [
            m
            for r in fold_order(archives.get_archives(thread_id, timeline))
            for msg in r.messages
            for m in markers_in(msg.text)
        ]
        assert markers == folded, "the WM does not hold every archived message"
    return markers


def check_assemble(wm: Any, graph: Any, archives: ArchiveStore, conversation: Conversation) -> None:
    """Layer 1 + 2 of assemble: the WM and every pending archive's and live message reach the
    model input (nothing of a failed or interrupted Phase 2 disappears from view)."""
    config = conversation.config
    state = graph.get_state(config).values
    out = wm.assemble(state, config)["llm_input_messages"]
    seen = set(markers_in("\n".join(m.text for m in out)))
    live, timeline = _live_and_timeline(graph, config)
    current = archives.current_wm(conversation.thread_id, timeline)
    pending = archives.get_archives(conversation.thread_id, unfolded_archive_ids(current, timeline))
    wanted = [m for r in pending for msg in r.messages for m in markers_in(msg.text)]
    wanted += [f"{i}" for i in live]
    missing = [m for m in wanted if m not in seen]
    assert not missing, f"not visible to the model: {missing}"
