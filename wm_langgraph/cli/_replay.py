"""The ``replay`` command: a JSONL transcript through the Working Memory engine.

Private helper of the CLI. The transcript is split into turns (each user message with what
follows it) and fed to a one-node LangGraph (``wm.after_turn``) with a checkpointer and a store,
exactly as an agent graph would add them; commits happen by the configured threshold. At the
end the thread is compacted (unless disabled) so the final WM covers the whole transcript.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TextIO, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from wm_langgraph.cli._chat_jsonl import load_chat_jsonl, split_turns
from wm_langgraph.cli._report import Reporter
from wm_langgraph.cli._runtime import free_thread_id, persistence
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.state import WorkingMemoryState

__all__ = ["replay_file"]

_NODE = "after_turn"


def replay_file(
    path: str,
    *,
    config: WorkingMemoryConfig,
    model: BaseChatModel | None,
    db: str | None,
    thread_id: str | None,
    out_path: str | None,
    compact: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    """Replay ``path`` and write the final Working Memory; see the CLI help for the options.

    Returns:
        0 when every line was used, 1 when bad lines were skipped, 2 when the file cannot be
        read or has no valid message.
    """
    try:
        transcript = load_chat_jsonl(path)
    except (OSError, UnicodeDecodeError) as exc:
        print(f"wm-langgraph replay: cannot read {path}: {exc}", file=err)
        return 2
    for bad in transcript.bad_lines:
        print(f"{path}: skipped {bad}", file=err)
    if not transcript.messages:
        print(f"wm-langgraph replay: {path} has no valid message", file=err)
        return 2
    turns = split_turns(transcript.messages)
    with persistence(db) as (checkpointer, store):
        if thread_id is None:
            thread_id = free_thread_id(checkpointer, "replay")
        run_config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        memory = WorkingMemory(model, config=config, store=store, checkpointer=checkpointer)

        def after_turn(state: WorkingMemoryState, config: RunnableConfig) -> dict[str, Any]:
            update: dict[str, Any] = memory.after_turn(state, config)
            return update

        builder = StateGraph(WorkingMemoryState)
        builder.add_node(_NODE, after_turn)
        builder.add_edge(START, _NODE)
        builder.add_edge(_NODE, END)
        graph = builder.compile(checkpointer=checkpointer, store=store)
        reporter = Reporter(err, memory, run_config, show_each_wm=False)
        print(
            f"replaying {len(transcript.messages)} messages in {len(turns)} turns "
            f"(thread {thread_id}, token_budget={config.tokens:,}, "
            f"threshold={config.commit_token_threshold_ratio}, "
            f"keep={config.commit_keep_recent_count})",
            file=err,
        )
        for number, turn in enumerate(turns, start=1):
            graph.invoke(WorkingMemoryState(messages=cast("list[AnyMessage]", turn)), run_config)
            memory.wait(run_config)
            live = graph.get_state(run_config).values.get("messages") or []
            reporter.turn(number, len(turns), f"{len(live)} live messages")
        if compact:
            values = graph.get_state(run_config).values
            if values.get("messages"):
                graph.update_state(run_config, memory.compact(values, run_config), as_node=_NODE)
                reporter.note("compact: every live message archived and folded into the WM")
        wm = reporter.finish(show_wm=False).final_wm
        failed = [r.id for r in memory.list_archives(run_config) if r.status != "done"]
    if failed:
        print(f"archives not folded into the WM yet: {', '.join(failed)}", file=err)
    if out_path:
        Path(out_path).write_text(wm, encoding="utf-8")
        print(f"final Working Memory written to {out_path}", file=err)
    else:
        print(wm.rstrip() if wm else "(no Working Memory: nothing was committed)", file=out)
    return 1 if transcript.bad_lines else 0
