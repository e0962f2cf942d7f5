"""Phase 2 as a LangGraph subgraph: fold pending archives into the Working Memory (SPEC §5-§6).

::

    prepare ─┬─> create ──────────────┬─> guard_merge ─> save
             │                        │
             └─> update ─(no call)─> create
                       └────────────────┘      (a model failure goes straight to save)

- ``prepare`` finds the timeline's current WM and its pending archives, picks a batch (all of
  them unless the rendered messages exceed ``max_prompt_messages_tokens``), renders only those
  messages (O(delta) prompt) and chooses the branch: no prior v2 WM → create, else update.
- ``update`` forces the ``update_working_memory`` tool; no tool call → ``create`` with the prior
  WM as context; unparseable arguments are repaired by ``parse_update_arguments``.
- ``guard_merge`` merges through the guards (a create that replaces a v2 WM goes through them
  too, as per-section UPDATEs), then appends file paths of the folded messages that Files &
  Context does not mention yet (artifact trail).
- ``save`` writes the new WM version, then marks the archives done (last). A model failure
  keeps the old WM; the archives stay pending (visible to assemble) and are marked ``failed``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from wm_langgraph.core.merge import merge_working_memory
from wm_langgraph.core.sections import SECTIONS, is_working_memory, parse_working_memory
from wm_langgraph.core.tokens import TokenCounter
from wm_langgraph.engine.archives import ArchiveRecord, ArchiveStore
from wm_langgraph.engine.config import WorkingMemoryConfig
from wm_langgraph.engine.llm import GenerationError, generate_create, generate_update
from wm_langgraph.engine.render import extract_paths_from_messages, render_messages
from wm_langgraph.models import ToolCallingNotSupportedError

__all__ = [
    "COMMIT_RUN_NAME",
    "COMMIT_TAGS",
    "CommitDeps",
    "CommitState",
    "build_commit_graph",
    "commit_run_config",
]

logger = logging.getLogger("wm_langgraph")

COMMIT_RUN_NAME = "wm.commit"
COMMIT_TAGS = ["wm_langgraph", "nostream"]
FILES_SECTION = "Files & Context"


class CommitState(TypedDict, total=False):
    """State of one Phase 2 run (not checkpointed; JSON-plain for tracing)."""

    thread_id: str
    user_id: str | None
    timeline: list[str]
    prior: str
    covers: list[str]
    batch: list[str]
    messages_text: str
    paths: list[str]
    branch: Literal["create", "update"]
    fallback: str | None
    created: str | None
    ops: dict[str, Any] | None
    text: str
    decisions: list[dict[str, str]]
    artifact_trail: list[str]
    error: str | None
    outcome: Literal["done", "failed", "noop"]
    metrics: dict[str, Any]


@dataclass(frozen=True, slots=True)
class CommitDeps:
    """What the commit graph needs from its :class:`~wm_langgraph.WorkingMemory`."""

    get_model: Callable[[], BaseChatModel]
    archives: ArchiveStore
    config: WorkingMemoryConfig
    counter: TokenCounter
    create_prompt: str | None = None
    update_prompt: str | None = None
    on_done: Callable[[CommitState], None] | None = None


def commit_run_config(
    thread_id: str, archive_ids: list[str], callbacks: Any = None
) -> RunnableConfig:
    """The run config of a commit: named ``wm.commit``, tagged, linked to its thread."""
    config: RunnableConfig = {
        "run_name": COMMIT_RUN_NAME,
        "tags": list(COMMIT_TAGS),
        "metadata": {"thread_id": thread_id, "wm_archive_ids": list(archive_ids)},
    }
    if callbacks is not None:
        config["callbacks"] = callbacks
    return config


def _select_batch(records: list[ArchiveRecord], limit: int) -> list[ArchiveRecord]:
    batch: list[ArchiveRecord] = []
    total = 0
    for record in records:
        if batch and total + record.token_count > limit:
            break
        batch.append(record)
        total += record.token_count
    return batch


def _missing(thread_id: str, archive_id: str, offset: int) -> ArchiveRecord:
    """A stand-in for an archive record that is gone from the store (deleted by hand, or a
    store restored from an older backup): it is covered with no messages, so the lineage moves
    on instead of retrying forever."""
    logger.warning("wm_langgraph: archive record %s is missing from the store", archive_id)
    return ArchiveRecord(
        id=archive_id, seq=offset, status="pending", metadata={"missing": True}, thread_id=thread_id
    )


def build_commit_graph(deps: CommitDeps) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Compile the commit pipeline for one WorkingMemory (never checkpointed itself)."""
    cfg = deps.config

    def _meta(state: CommitState) -> dict[str, Any]:
        return {"thread_id": state["thread_id"], "wm_archive_ids": list(state.get("batch", []))}

    def prepare(state: CommitState) -> CommitState:
        started = time.monotonic()
        thread_id, timeline = state["thread_id"], list(state.get("timeline") or [])
        current = deps.archives.current_wm(thread_id, timeline)
        covers = current.covers if current else []
        pending_ids = timeline[len(covers) :]
        found = {r.id: r for r in deps.archives.get_archives(thread_id, pending_ids)}
        pending = [found.get(i) or _missing(thread_id, i, n) for n, i in enumerate(pending_ids)]
        if not pending:
            return {"outcome": "noop", "covers": covers, "batch": []}
        batch = _select_batch(pending, cfg.max_prompt_messages_tokens)
        hidden = deps.archives.hidden_ids(thread_id)  # removed after they were archived
        messages = [m for record in batch for m in record.messages if m.id not in hidden]
        text = render_messages(
            messages, counter=deps.counter, max_tool_output_tokens=cfg.max_tool_output_tokens
        )
        prior = current.text if current else ""
        return {
            "prior": prior,
            "covers": covers,
            "batch": [r.id for r in batch],
            "messages_text": text,
            "paths": extract_paths_from_messages(messages),
            "branch": "update" if prior and is_working_memory(prior) else "create",
            "fallback": None,
            "error": None,
            "metrics": {
                "started": time.time(),
                "prepare_ms": round((time.monotonic() - started) * 1000, 3),
                "prior_wm_tokens": deps.counter(prior),
                "delta_tokens": deps.counter(text),
                "delta_messages": len(messages),
                "pending_archives": len(pending),
            },
        }

    def create(state: CommitState, config: RunnableConfig) -> CommitState:
        started = time.monotonic()
        try:
            created = generate_create(
                deps.get_model(),
                prior=state.get("prior", ""),
                messages_text=state["messages_text"],
                prompt=deps.create_prompt,
                config=config,
                metadata=_meta(state),
                timeout=cfg.model_timeout_seconds,
            )
        except GenerationError as exc:
            return {"error": str(exc), "metrics": _timed(state, "create_ms", started)}
        return {"created": created, "metrics": _timed(state, "create_ms", started)}

    def update(state: CommitState, config: RunnableConfig) -> CommitState:
        started = time.monotonic()
        try:
            ops = generate_update(
                deps.get_model(),
                working_memory=state["prior"],
                messages_text=state["messages_text"],
                prompt=deps.update_prompt,
                config=config,
                metadata=_meta(state),
                timeout=cfg.model_timeout_seconds,
            )
        except GenerationError as exc:
            return {"error": str(exc), "metrics": _timed(state, "update_ms", started)}
        except ToolCallingNotSupportedError:
            # A model without tool calling can still write the whole document (SPEC §5's
            # no-tool-call path); its output goes through the guards like any update.
            return {"ops": None, "fallback": "no_tool_support", **_m(state, "update_ms", started)}
        if ops is None:
            return {"ops": None, "fallback": "no_tool_call", **_m(state, "update_ms", started)}
        if not ops:
            # A call whose arguments yield no section at all folded nothing in; accepting it
            # would mark the archives done and drop their messages from assemble unread.
            fallback = "unreadable_arguments"
            return {"ops": None, "fallback": fallback, **_m(state, "update_ms", started)}
        return {"ops": ops, **_m(state, "update_ms", started)}

    def guard_merge(state: CommitState, config: RunnableConfig) -> CommitState:
        prior = state.get("prior", "")
        ops = state.get("ops")
        created = state.get("created")
        if ops is None and created is not None and prior and is_working_memory(prior):
            new = parse_working_memory(created)
            ops = {name: {"op": "UPDATE", "content": new[name]} for name in SECTIONS}
        if ops is not None:
            result = merge_working_memory(prior, ops, guards=cfg.guards)
            text, decisions = result.text, [d.as_dict() for d in result.decisions]
        else:
            text = merge_working_memory(created or "", {}, guards=cfg.guards).text
            decisions = []
        files_body = parse_working_memory(text)[FILES_SECTION]
        missing = [p for p in state.get("paths", []) if p not in files_body]
        if missing:
            appended = merge_working_memory(
                text, {FILES_SECTION: {"op": "APPEND", "items": missing}}, guards=cfg.guards
            )
            text = appended.text
        record = RunnableLambda(lambda x: x, name="wm.guards")
        record.invoke(
            {"decisions": decisions, "artifact_trail": missing},
            {
                **config,
                "metadata": {
                    **(config.get("metadata") or {}),
                    "guard_decisions": decisions,
                    "artifact_trail": missing,
                },
            },
        )
        return {"text": text, "decisions": decisions, "artifact_trail": missing}

    def save(state: CommitState) -> CommitState:
        thread_id, batch = state["thread_id"], state.get("batch", [])
        metrics = {**state.get("metrics", {}), "total_ms": _elapsed_ms(state)}
        if state.get("error"):
            deps.archives.update_archives(
                thread_id,
                batch,
                status="failed",
                metadata={"error": state["error"], "failed_at": time.time()},
            )
            return {"outcome": "failed", "metrics": metrics}
        text = state["text"]
        covers = [*state.get("covers", []), *batch]
        info = {
            "branch": state.get("branch"),
            "fallback": state.get("fallback"),
            "decisions": state.get("decisions", []),
            "artifact_trail": state.get("artifact_trail", []),
            "metrics": metrics,
        }
        deps.archives.put_wm(thread_id, covers, text, info)
        done_state: CommitState = {**state, "outcome": "done", "metrics": metrics}
        if deps.on_done is not None:
            deps.on_done(done_state)
        deps.archives.update_archives(  # last: the WM version that covers them exists now
            thread_id,
            batch,
            status="done",
            overview=text,
            metadata={**info, "error": None},
        )
        return {"outcome": "done", "metrics": metrics}

    def after_prepare(state: CommitState) -> str:
        if state.get("outcome") == "noop":
            return END
        return state["branch"]

    def after_update(state: CommitState) -> str:
        if state.get("error"):
            return "save"
        return "create" if state.get("ops") is None else "guard_merge"

    def after_create(state: CommitState) -> str:
        return "save" if state.get("error") else "guard_merge"

    graph = StateGraph(CommitState)
    graph.add_node("prepare", prepare)
    graph.add_node("create", create)
    graph.add_node("update", update)
    graph.add_node("guard_merge", guard_merge)
    graph.add_node("save", save)
    graph.add_edge(START, "prepare")
    graph.add_conditional_edges("prepare", after_prepare, ["create", "update", END])
    graph.add_conditional_edges("update", after_update, ["create", "guard_merge", "save"])
    graph.add_conditional_edges("create", after_create, ["guard_merge", "save"])
    graph.add_edge("guard_merge", "save")
    graph.add_edge("save", END)
    return graph.compile(checkpointer=False, name="wm_commit")


def _elapsed_ms(state: CommitState) -> float:
    started = state.get("metrics", {}).get("started")
    return round((time.time() - started) * 1000, 3) if isinstance(started, float) else 0.0


def _timed(state: CommitState, key: str, started: float) -> dict[str, Any]:
    return {**state.get("metrics", {}), key: round((time.monotonic() - started) * 1000, 3)}


def _m(state: CommitState, key: str, started: float) -> CommitState:
    return {"metrics": _timed(state, key, started)}
