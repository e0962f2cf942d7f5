"""What the engine and the guards promise for ANY writer reply, checked through the public reads.

The real-model stage runs these with a 0.5B model as the writer: a check may not depend on how
that model words anything (behaviour §10: CI checks hold for any model output; model quality is
a bench figure). Items are judged by their identity as the guards judge them
(``document.text.match``: whole item, tags and the guards' own markers aside, case and spacing
aside; paths at path boundaries; anchors as the Key Facts guard extracts them), and what the
size contract moved out of the document (``moved_items``) counts as kept.

- 1 nothing lost: the archived messages (timeline order) followed by the live ones are exactly
  the messages the session sent, in order, each once;
- 2 lineage: archives are folded in timeline order (no done archive after a pending one that
  was not deferred), and the current WM is the overview of the newest folded archive, in fold
  order (a deferred archive folded late comes where it was folded);
- 3 guards, between consecutive WM versions: no open Open Issues item leaves unless it was
  marked resolved, moved to Errors & Corrections or moved out; no Errors & Corrections item
  leaves; no path of a Files & Context entry leaves; no anchor of a Key Facts bullet leaves
  the durable sections (a retired value stays as ``superseded:`` in Errors & Corrections).
  Items our code added (the version's ``code_items``: trails, capture) are not append-only
  (behaviour §9): a writer's UPDATE may drop them, recorded;
- 4 no tool pair is split by an archive boundary;
- 5 accounting: pending_tokens equals a rebuild from the live messages;
- 6 budgets: every stored WM version is within the size contract's ceiling, and no input of
  the agent's model is over ``usable`` by the memory's own count;
- 7 every WM version is the canonical seven-section document;
- 8 no instruction planted: no item our code added reads as an instruction to the assistant;
- 9 every archive is folded in, or recorded as failed with a reason (``check_archives_settled``,
  at the end of a session).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
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
from wm_langgraph.context.assemble import compute_budgets
from wm_langgraph.document import SECTIONS, parse_working_memory, render_working_memory
from wm_langgraph.document.compaction import MOVED_MARKER_RE
from wm_langgraph.document.guards import CONSOLIDATION_SENTINEL, is_resolved
from wm_langgraph.document.guards.key_facts import clauses
from wm_langgraph.document.sections import DURABLE_SECTIONS, item_key, section_items
from wm_langgraph.document.text import extract_anchors, extract_paths, missing_anchors
from wm_langgraph.document.text.match import item_present, path_listed, strip_tags
from wm_langgraph.document.text.provenance import reads_as_instruction
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.phase2.size import contract_for
from wm_langgraph.testing import ScriptedChatModel

__all__ = [
    "check_archives_settled",
    "check_guarded_kept",
    "check_invariants",
    "fingerprint",
    "play_checked",
]

_HEADER = re.compile(r"^##[ \t]+\S")
_OPEN, _ERRORS = "Open Issues", "Errors & Corrections"
_FILES, _FACTS = "Files & Context", "Key Facts & Decisions"


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


def _code_keys(code: Mapping[str, Sequence[str]], section: str) -> set[str]:
    return {item_key(i) for i in code.get(section, ())}


def check_guarded_kept(
    old: str,
    new: str,
    *,
    code: Mapping[str, Sequence[str]] | None = None,
    moved: Sequence[str] = (),
    compacted: bool = False,
) -> None:
    """Assert invariant 3 for one step from the WM version ``old`` to ``new``.

    Args:
        old: The earlier WM version.
        new: The next WM version.
        code: Section -> the items of ``old`` our code added (its ``code_items``).
        moved: The texts of the items the size contract moved out of the document.
        compacted: The size contract compacted ``new`` (its dedupe and merge steps may split
            an item into clauses kept elsewhere in its section: each clause must be there).
    """
    code = code or {}
    before, after = parse_working_memory(old), parse_working_memory(new)
    outside = list(moved)

    def present(item: str, candidates: list[str]) -> bool:
        if item_present(item, candidates):
            return True
        parts = clauses(strip_tags(item))
        return compacted and bool(parts) and all(item_present(c, candidates) for c in parts)

    open_now = section_items(after[_OPEN])
    errors_now = section_items(after[_ERRORS])
    for item in section_items(before[_OPEN]):
        if is_resolved(item) or item_key(item) in _code_keys(code, _OPEN):
            continue  # a resolved item may leave; a code-added one may be dropped
        if not strip_tags(item).strip(" .;,:"):
            continue  # nothing but markers
        kept = present(item, [*open_now, *errors_now, *outside])
        assert kept, f"Open Issues lost {strip_tags(item)!r}"
    for item in section_items(before[_ERRORS]):
        if item_key(item) not in _code_keys(code, _ERRORS):
            assert present(item, [*errors_now, *outside]), f"Errors lost {item!r}"
    writers = "\n".join(
        i for i in section_items(before[_FILES]) if item_key(i) not in _code_keys(code, _FILES)
    )
    for path in extract_paths(writers):
        kept = path_listed(path, after[_FILES]) or path_listed(path, "\n".join(moved))
        assert kept, f"Files & Context lost {path!r}"
    durable = "\n".join([*(after[name] for name in DURABLE_SECTIONS), *moved])
    for item in section_items(before[_FACTS]):
        if item == CONSOLIDATION_SENTINEL or MOVED_MARKER_RE.search(item):
            continue
        lost = missing_anchors(extract_anchors(item, include_markers=False), durable)
        assert not lost, f"Key Facts lost {sorted(lost)} of {item!r}"


def _no_instruction(code: Mapping[str, Sequence[str]]) -> None:
    for section, items in code.items():
        for item in items:
            assert not reads_as_instruction(item), f"code planted an instruction in {section}"


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
    moved = [text for _, _, text in wm.moved_items(config)]
    ceiling = contract_for(wm.config).ceiling
    previous, code = "", {}
    for record in versions:  # 7, 6, 8 and 3
        _seven_sections(record.overview)
        size = count_tokens(record.overview)
        assert size <= ceiling, f"{record.id}: WM of {size} tokens over the ceiling {ceiling}"
        _no_instruction(record.metadata.get("code_items") or {})
        if previous and record.overview != previous:
            compacted = any(
                d.get("applied") == "COMPACT" for d in record.metadata.get("decisions") or []
            )
            check_guarded_kept(
                previous, record.overview, code=code, moved=moved, compacted=compacted
            )
        previous, code = record.overview, record.metadata.get("code_items") or {}
    meta = values.get("working_memory") or {}  # 5
    if live and meta.get("last_counted_id") == live[-1].id:
        head = live[: max(0, len(live) - int(meta["keep_recent_count"]))]
        assert meta["pending_tokens"] == sum(wm.count_tokens([m]) for m in head)


def check_archives_settled(wm: Any, config: dict[str, Any]) -> None:
    """Invariant 9: every archive of the thread is folded in (``done``), or recorded as
    failed with a reason (its ``error``), or pending while the thread's Phase 2 is paused by
    its circuit breaker, which records the last error (``phase2_status``): none is left
    without a word."""
    status = wm.phase2_status(config)
    paused = bool(status["paused"] and str(status["last_error"] or "").strip())
    for record in wm.list_archives(config):
        if record.status == "done" or (record.status == "pending" and paused):
            continue
        assert record.status == "failed", f"{record.id} left {record.status}"
        assert str(record.metadata.get("error") or "").strip(), f"{record.id}: no reason"


def _inputs_within_usable(agent_model: ScriptedChatModel, wm: Any) -> None:
    """Invariant 6: no input of the agent's model is over ``usable`` by the memory's count."""
    cfg = wm.config
    usable = compute_budgets(cfg.tokens, cfg.reserve_tokens, cfg.archive_memory_tokens).usable
    for n, call in enumerate(agent_model.calls):
        size = wm.count_tokens(call.messages)
        assert size <= usable, f"agent call {n}: {size} tokens > usable {usable}"


def play_checked(
    writer: BaseChatModel, memory_config: WorkingMemoryConfig, thread_id: str
) -> tuple[WorkingMemory, dict[str, Any]]:
    """Play the scripted coding session through ``create_agent`` + ``WorkingMemoryMiddleware``
    with ``writer`` as the WM writer, check the invariants after every turn, compact at the
    end and check again, with the archives settled. Returns the memory and the thread's
    config."""
    turns = session_messages()
    replies = [m for turn in turns for m in turn if isinstance(m, AIMessage)]
    store = InMemoryStore()
    middleware = WorkingMemoryMiddleware(writer, config=memory_config, store=store)
    agent_model = ScriptedChatModel(replies=replies)
    agent = create_agent(
        agent_model,
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
        _inputs_within_usable(agent_model, wm)
    update = wm.compact(agent.get_state(config).values, config)
    agent.update_state(config, update, as_node=f"{middleware.name}.after_agent")
    check_invariants(agent, wm, config, sent)
    check_archives_settled(wm, config)
    return wm, config
