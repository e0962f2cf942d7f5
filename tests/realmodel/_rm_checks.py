"""Design §3 invariants of one agent thread, checked through the public reads.

- 1 nothing lost: the archived messages (timeline order) followed by the live ones are exactly
  the messages the session sent, in order, each once;
- 2 lineage: archives are folded in timeline order (no done archive after a pending one that
  was not deferred), and the current WM is the overview of the newest folded archive, in fold
  order (a deferred archive folded late comes where it was folded);
- 3 guards: between consecutive WM versions no Errors & Corrections item, no path of Files &
  Context and no Open Issues item disappears, and Key Facts items disappear only through an
  accepted UPDATE (a consolidation) of that section. Items our code added (the artifact and
  error trails, the version's ``code_items``) are not append-only (SPEC §9, capture): a
  writer's UPDATE may drop them, and a path only such items list;
- 4 no tool pair is split by an archive boundary;
- 5 accounting: pending_tokens equals a rebuild from the live messages;
- 7 every WM version is the canonical seven-section document.
"""

from __future__ import annotations

import re
from typing import Any

from _rm_session import session_messages, session_tools
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from lineage import fold_order

from wm_langgraph import WorkingMemory, WorkingMemoryMiddleware
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.document.sections import item_key, section_items
from wm_langgraph.testing import ScriptedChatModel

__all__ = ["check_invariants", "fingerprint", "play_checked"]

_HEADER = re.compile(r"^##[ \t]+\S")
_MARKS = re.compile(r"\[(?:resolved|new)\]", re.I)
_PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)+")


def fingerprint(message: BaseMessage) -> tuple[str, str, str]:
    """What identifies a message of the session: its type, text and tool calls."""
    calls = (
        ",".join(f"{c['name']}:{sorted(c['args'].items())}" for c in message.tool_calls)
        if (hasattr(message, "tool_calls"))
        else ""
    )
    return message.type, message.text, calls


def _seven_sections(text: str) -> None:
    lines = text.split("\n")
    assert lines[0] == "# Working Memory"
    assert [ln for ln in lines if _HEADER.match(ln)] == [f"## {name}" for name in SECTIONS]
    assert render_working_memory(parse_working_memory(text)) == text


def _plain(item: str) -> str:
    return item_key(_MARKS.sub("", item))


def _guarded_kept(
    old: str, new: str, decisions: list[dict[str, Any]], code: dict[str, list[str]]
) -> None:
    before, after = parse_working_memory(old), parse_working_memory(new)
    by_code = {name: {item_key(i) for i in items} for name, items in code.items()}
    for section in ("Errors & Corrections", "Open Issues"):
        body = " ".join(_plain(i) for i in section_items(after[section]))
        for item in section_items(before[section]):
            if item_key(item) not in by_code.get(section, set()):
                assert _plain(item) in body, f"{section} lost {item!r}"
    files = "Files & Context"
    writers = "\n".join(
        i for i in section_items(before[files]) if item_key(i) not in by_code.get(files, set())
    )
    for path in _PATH.findall(writers):
        assert path in after[files], f"Files & Context lost {path!r}"
    consolidated = any(
        d.get("section") == "Key Facts & Decisions" and d.get("applied") == "UPDATE"
        for d in decisions
    )
    if not consolidated:
        body = " ".join(_plain(i) for i in section_items(after["Key Facts & Decisions"]))
        for item in section_items(before["Key Facts & Decisions"]):
            assert _plain(item) in body, f"Key Facts lost {item!r} without a consolidation"


def check_invariants(agent: Any, wm: Any, config: dict[str, Any], sent: list[BaseMessage]) -> None:
    """Assert the invariants above for the thread of ``config`` after ``sent`` was played."""
    values = agent.get_state(config).values
    live = [m for m in values.get("messages", []) if not isinstance(m, SystemMessage)]
    records = wm.list_archives(config)
    archived = [m for record in records for m in record.messages]
    assert [fingerprint(m) for m in archived + live] == [fingerprint(m) for m in sent]
    for record in records:  # 4
        calls = {c["id"] for m in record.messages for c in getattr(m, "tool_calls", None) or []}
        results = {m.tool_call_id for m in record.messages if isinstance(m, ToolMessage)}
        assert calls == results, f"tool pair split at {record.id}"
    # 2: an archive folds in timeline order unless it was deferred (behaviour §6.6): then the ones
    # after it fold, and it is folded late, where the fold order puts it.
    unfolded = [r for r in records if r.status != "done"]
    for record in records:
        if record.status == "done":
            waiting = [
                r.id for r in unfolded if r.seq < record.seq and not r.metadata.get("deferred")
            ]
            assert not waiting, f"{record.id} folded before {waiting}"
    versions = [record for record in fold_order(records) if record.status == "done"]
    current = wm.get_working_memory(config)
    if versions:
        assert current == versions[-1].overview, "the WM is not the newest fold's overview"
    previous, code = "", {}
    for record in versions:  # 7 and 3
        _seven_sections(record.overview)
        if previous and record.overview != previous:
            decisions = record.metadata.get("decisions") or []
            _guarded_kept(previous, record.overview, decisions, code)
        previous, code = record.overview, record.metadata.get("code_items") or {}
    meta = values.get("working_memory") or {}  # 5
    if live and meta.get("last_counted_id") == live[-1].id:
        head = live[: max(0, len(live) - int(meta["keep_recent_count"]))]
        assert meta["pending_tokens"] == sum(wm.count_tokens([m]) for m in head)


def play_checked(
    writer: BaseChatModel, memory_config: WorkingMemoryConfig, thread_id: str
) -> tuple[WorkingMemory, dict[str, Any]]:
    """Play the scripted coding session through ``create_agent`` + ``WorkingMemoryMiddleware``
    with ``writer`` as the WM writer, check the invariants after every turn, compact at the
    end and check again. Returns the memory and the thread's config."""
    turns = session_messages()
    replies = [m for turn in turns for m in turn if isinstance(m, AIMessage)]
    store = InMemoryStore()
    middleware = WorkingMemoryMiddleware(writer, config=memory_config, store=store)
    agent = create_agent(
        ScriptedChatModel(replies=replies),
        session_tools(),
        middleware=[middleware],
        checkpointer=InMemorySaver(),
        store=store,
    )
    wm = middleware.memory
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    sent: list[BaseMessage] = []
    for turn in turns:
        agent.invoke({"messages": [turn[0]]}, config)
        sent += turn
        check_invariants(agent, wm, config, sent)
    update = wm.compact(agent.get_state(config).values, config)
    agent.update_state(config, update, as_node=f"{middleware.name}.after_agent")
    check_invariants(agent, wm, config, sent)
    return wm, config
