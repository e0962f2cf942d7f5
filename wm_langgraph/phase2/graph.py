"""Phase 2 as a LangGraph subgraph: fold pending archives into the Working Memory (behaviour
§6.4, §5.4).

::

    prepare ─┬─> create ──────────────┬─> guard_merge ─┬─> save
             │                        │        │        │
             └─> update ─(no call)─> create    └─> next_slice ─> update | create
                       └────────────────┘      (an archive in slices; a model failure goes
                                                straight to save; nothing pending ends at prepare)

- ``prepare`` finds the timeline's current WM and its pending archives and plans the round
  (``phase2.batching``): every message capped in the prompt, a batch of archives that fits the
  messages budget (lowered after a context-length error), or — for one archive larger than the
  budget — its slices. With nothing pending, a *deferred* archive that is due is retried;
  with nothing due either, the run ends (``"noop"``).
- ``update`` forces the ``update_working_memory`` tool; no tool call, or nothing readable → the
  ``create`` fallback with the prior WM as context. A reply cut off at the output limit (or with
  unreadable sections) keeps what was complete and gets one targeted retry for the rest; what
  is still unreadable after it takes the create fallback — an archive is never marked done while
  its content could not be read.
- ``guard_merge`` merges through the guards (a create that replaces a v2 WM goes through them
  too, as per-section UPDATEs), then appends file paths of the folded messages that Files &
  Context does not mention yet (artifact trail) and tool errors that Errors & Corrections lacks
  (error trail), and fits the result to the size contract. ``next_slice`` feeds the next slice
  of an archive on top of the merged text; one WM version is stored for the whole archive.
- ``save`` writes the new WM version, then marks the archives done (last). On failure it says
  what the runner does next (``outcome``):

  - ``"overflow"``: the provider said the prompt exceeds its context — the limit is learned and
    the next round sends less (never the same prompt again); nothing is written;
  - ``"split"``: a batch of several archives failed for a deterministic reason (the provider
    rejected the request, or the reply was unusable) — the next round halves it, to isolate the
    archive at fault;
  - ``"deferred"``: a single archive failed deterministically. It is *deferred* so that it never
    blocks the archives behind it: a WM version covering it is written with the WM unchanged and
    the archive listed under ``deferred``; the archive is marked ``failed`` and its messages
    stay visible to assemble (layer 2) exactly like a pending archive's. It is retried later, on
    top of the newest WM (a *late fold*, its messages labelled as older), up to
    ``max_consecutive_failures`` times, and again after ``resume()``.
  - ``"deadline"``: an inline run's time (``model_timeout_seconds`` in all) ran out in the
    middle of a call — not a writer failure: nothing is written, the runner hands the rest
    of the work to the background;
  - ``"failed"`` (timeouts, 429/5xx, the model down): the old WM stays, the archives stay pending
    and are marked ``failed``; the runner stops and the circuit breaker counts it.

WM lineage with deferral (design §3.2): the WM covering archives 1..N is derived from the WM
covering 1..N-1 plus archive N's messages — or, when N is deferred, is that WM unchanged with N
named in ``deferred``; a deferred archive's messages are folded later into the newest WM. Phase 2
of a thread still runs strictly in archive order; only a deferred archive is folded out of it.

The nodes and their routers live in ``phase2.nodes`` (one documented class or function each),
the round's state in ``phase2.state``; this module wires them and names the run.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from wm_langgraph.phase2.nodes import (
    RETRY_DEFERRED_META,
    CommitDeps,
    Create,
    GuardMerge,
    Prepare,
    Save,
    Update,
    after_create,
    after_merge,
    after_prepare,
    after_slice,
    after_update,
    next_slice,
    unfolded_archive_ids,
)
from wm_langgraph.phase2.state import CommitState

__all__ = [
    "COMMIT_RUN_NAME",
    "COMMIT_TAGS",
    "RETRY_DEFERRED_META",
    "CommitDeps",
    "CommitState",
    "build_commit_graph",
    "commit_run_config",
    "unfolded_archive_ids",
]

COMMIT_RUN_NAME = "wm.commit"
COMMIT_TAGS = ["wm_langgraph", "nostream"]


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


def build_commit_graph(deps: CommitDeps) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Wire the commit pipeline for one WorkingMemory (never checkpointed itself)."""
    graph = StateGraph(CommitState)
    graph.add_node("prepare", Prepare(deps))
    graph.add_node("create", Create(deps))
    graph.add_node("update", Update(deps))
    graph.add_node("guard_merge", GuardMerge(deps))
    graph.add_node("next_slice", next_slice)
    graph.add_node("save", Save(deps))
    graph.add_edge(START, "prepare")
    graph.add_conditional_edges("prepare", after_prepare, ["create", "update", "save", END])
    graph.add_conditional_edges("update", after_update, ["create", "guard_merge", "save"])
    graph.add_conditional_edges("create", after_create, ["guard_merge", "save"])
    graph.add_conditional_edges("guard_merge", after_merge, ["next_slice", "save"])
    graph.add_conditional_edges("next_slice", after_slice, ["create", "update"])
    graph.add_edge("save", END)
    return graph.compile(checkpointer=False, name="wm_commit")
