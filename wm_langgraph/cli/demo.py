"""The ``demo`` command: a recorded coding-agent session played through a real agent graph.

The session (``demo_session.jsonl``, shipped with the package) is a long conversation of a
coding agent adding rate limiting to a service: user requests, file reads and edits, failing
tests and their fixes, a user correction, decisions with reasons, constraints and open TODOs.
It is replayed through ``langchain.agents.create_agent`` with :class:`WorkingMemoryMiddleware`:

- the agent's model is a :class:`~wm_langgraph.testing.ScriptedChatModel` that answers each
  call with the next recorded assistant message (text and tool calls, with the recorded call
  ids) and records every prompt, whose size the report shows;
- the agent's tools are real tools that return the recorded tool results;
- the Working Memory is written by the offline heuristic summariser (no key, no network),
  unless another model is given;
- with ``careless=True`` the WM writer is :class:`CarelessWorkingMemoryModel`, a
  fault-injecting wrapper for demonstration that damages the writer's update calls on purpose
  (unrelated titles, rewrites that drop old bullets, truncated JSON), so that the guards have
  something to repair. The run then ends with the interventions by section and a check of the
  session's ground truth (file paths, errors, open issues) against the final WM.

After every turn the demo reports progress, each commit (archive size, create/update branch,
guard interventions, the WM after it) and how many tokens the assembled prompt saved compared
with sending the whole history.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, TextIO

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool

from wm_langgraph.cli._careless import CarelessWorkingMemoryModel
from wm_langgraph.cli._chat_jsonl import parse_chat_lines, split_turns
from wm_langgraph.cli._report import Reporter
from wm_langgraph.cli._runtime import free_thread_id, persistence
from wm_langgraph.cli._session_facts import check_retention, retention_lines, session_facts
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document.sections import SECTIONS
from wm_langgraph.messages import message_tokens
from wm_langgraph.middleware import WorkingMemoryMiddleware
from wm_langgraph.testing import ScriptedChatModel
from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel

__all__ = ["DEMO_CONFIG", "DemoResult", "load_demo_session", "run_demo"]

DEMO_CONFIG = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.2,
    commit_keep_recent_count=6,
    background=False,
)
"""Demo settings: a small budget so that the 9k-token session commits several times."""

_SESSION_FILE = "demo_session.jsonl"


def load_demo_session() -> list[BaseMessage]:
    """The shipped demo session as LangChain messages (validated like a ``replay`` file)."""
    text = resources.files("wm_langgraph.cli").joinpath(_SESSION_FILE).read_text("utf-8")
    transcript = parse_chat_lines(text.splitlines())
    if transcript.bad_lines:  # pragma: no cover - the shipped file is tested
        raise RuntimeError(f"demo session is corrupt: {transcript.bad_lines[0]}")
    return transcript.messages


def _agent_model(session: Sequence[BaseMessage]) -> ScriptedChatModel:
    """The demo agent's model: the session's assistant messages, one per call, in order.

    Every reply is a fresh ``AIMessage`` with the recorded text and tool calls (the recorded
    call ids are kept). Every call is recorded (:attr:`ScriptedChatModel.calls`), so the
    report can show the size of each prompt.
    """
    replies = [
        AIMessage(content=m.content, tool_calls=list(m.tool_calls))
        for m in session
        if isinstance(m, AIMessage)
    ]
    return ScriptedChatModel(replies=replies, keep_ids=True, name="demo-agent")


def _recorded_tools(messages: Sequence[BaseMessage]) -> list[BaseTool]:
    """One real tool per tool name of the session, returning the recorded results in order."""
    results: dict[str, deque[str]] = {}
    names: list[str] = []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                calls[str(call["id"])] = (call["name"], call["args"])
                if call["name"] not in names:
                    names.append(call["name"])
        elif isinstance(message, ToolMessage) and message.tool_call_id in calls:
            name, args = calls[message.tool_call_id]
            key = _call_key(name, args)
            results.setdefault(key, deque()).append(str(message.content))
    lock = threading.Lock()

    def make(name: str) -> BaseTool:
        def run(**kwargs: Any) -> str:
            with lock:
                queue = results.get(_call_key(name, kwargs))
                if not queue:
                    return f"Error: no recorded result for {name}({json.dumps(kwargs)})"
                return queue.popleft()

        return StructuredTool.from_function(
            func=run,
            name=name,
            description=f"{name} (replays the recorded result of the demo session)",
            args_schema={"type": "object", "properties": {}, "additionalProperties": True},
        )

    return [make(name) for name in names]


def _call_key(name: str, args: dict[str, Any]) -> str:
    return name + json.dumps(args, sort_keys=True, ensure_ascii=False)


@dataclass(slots=True)
class DemoResult:
    """What a demo run did (also printed)."""

    thread_id: str
    turns: int
    commits: int
    final_working_memory: str
    folded: int = 0
    archive_ids: list[str] = field(default_factory=list)
    guard_interventions: int = 0
    last_prompt_tokens: int = 0
    full_history_tokens: int = 0
    interventions_by_section: dict[str, int] = field(default_factory=dict)


def _served_by(model: BaseChatModel) -> str | None:
    """``model <name> at <endpoint>`` for an OpenAI-style client, else ``None``."""
    name = getattr(model, "model_name", None)
    if not isinstance(name, str):
        return None
    from wm_langgraph.writer.openai import redact_url

    base = getattr(model, "openai_api_base", None)
    return f"model {name} at {redact_url(base) if base else 'the OpenAI API'}"


def run_demo(
    *,
    out: TextIO,
    db: str | None = None,
    config: WorkingMemoryConfig = DEMO_CONFIG,
    model: BaseChatModel | None = None,
    show_each_wm: bool = True,
    compact_at_end: bool = True,
    careless: bool = False,
    seed: int = 7,
) -> DemoResult:
    """Play the demo session through ``create_agent`` + ``WorkingMemoryMiddleware``.

    Args:
        out: Where the report is written.
        db: A SQLite file to keep the run in (checkpointer + store); ``None`` keeps it in memory.
            An existing file gets a new thread (``demo-2``, ``demo-3``…).
        config: Engine settings (the default commits several times over the session).
        model: The model that writes the Working Memory; ``None``: the offline summariser.
        show_each_wm: Print the Working Memory after every commit (always printed at the end).
        compact_at_end: Finish with an explicit compact, so that the final WM covers the whole
            session (otherwise the newest messages stay live, outside the WM).
        careless: Wrap the WM model in :class:`CarelessWorkingMemoryModel` (a fault-injecting
            wrapper for demonstration) and end with the guard interventions by section and a
            ground-truth retention check of the final WM.
        seed: The careless wrapper's seed (ignored without ``careless``).

    Returns:
        A summary of the run.
    """
    session = load_demo_session()
    turns = split_turns(session)
    history = [0]
    for message in session:
        history.append(history[-1] + message_tokens(message))
    reply_positions = [i for i, m in enumerate(session) if isinstance(m, AIMessage)]
    agent_model = _agent_model(session)
    writer = model if model is not None else OfflineWorkingMemoryModel()
    wrapper = CarelessWorkingMemoryModel(inner=writer, seed=seed) if careless else None
    with persistence(db) as (checkpointer, store):
        middleware = WorkingMemoryMiddleware(wrapper or writer, config=config, store=store)
        agent = create_agent(
            agent_model,
            _recorded_tools(session),
            middleware=[middleware],
            checkpointer=checkpointer,
            store=store,
        )
        thread_id = free_thread_id(checkpointer, "demo")
        run_config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        reporter = Reporter(
            out,
            middleware.memory,
            run_config,
            show_each_wm=show_each_wm,
            damage=wrapper.pop_damage if wrapper is not None else None,
        )
        label = _served_by(writer)
        if wrapper is not None:
            label = (
                f"fault-injecting wrapper for demonstration around {type(writer).__name__}: "
                f"damages its update calls on purpose, seed {seed}"
            )
        reporter.header(session, config, thread_id, db, model_label=label)
        last_prompt = last_full = 0
        for number, turn in enumerate(turns, start=1):
            first = turn[0]
            request = first if isinstance(first, HumanMessage) else HumanMessage(first.content)
            agent.invoke({"messages": [HumanMessage(content=request.content)]}, run_config)
            middleware.memory.wait(run_config)
            calls = agent_model.calls
            prompt = sum(message_tokens(m) for m in calls[-1].messages) if calls else 0
            full = history[reply_positions[len(calls) - 1]] if calls else 0
            saved = max(0, full - prompt)
            share = f"{saved / full:.0%}" if full else "0%"
            reporter.turn(
                number,
                len(turns),
                f"prompt {prompt:,} tokens vs full history {full:,} (saved {saved:,}, {share})",
            )
            last_prompt, last_full = prompt, full
        if compact_at_end:
            # An explicit compact (behaviour §7.2): archive the live tail and fold it in, so the
            # final WM covers the whole session. The update goes through the graph's reducers.
            values = agent.get_state(run_config).values
            update = middleware.memory.compact(values, run_config)
            agent.update_state(run_config, update, as_node=f"{middleware.name}.after_agent")
            reporter.note("compact: every live message archived and folded into the WM")
        result = reporter.finish()
        reporter.line(
            f"last prompt {last_prompt:,} tokens instead of {last_full:,} for the full history"
        )
        if wrapper is not None:
            _careless_summary(reporter, wrapper, result.by_section, session, result.final_wm)
            if not compact_at_end:
                reporter.line(
                    "  (--no-compact: the newest messages are still live, outside the WM)"
                )
        return DemoResult(
            thread_id=thread_id,
            turns=len(turns),
            commits=len(result.archive_ids),
            final_working_memory=result.final_wm,
            folded=result.folded,
            archive_ids=result.archive_ids,
            guard_interventions=result.interventions,
            last_prompt_tokens=last_prompt,
            full_history_tokens=last_full,
            interventions_by_section=dict(result.by_section),
        )


def _careless_summary(
    reporter: Reporter,
    wrapper: CarelessWorkingMemoryModel,
    by_section: Mapping[str, int],
    session: Sequence[BaseMessage],
    final_wm: str,
) -> None:
    """What the careless writer broke, what the guards did, and what the final WM still holds."""
    truncated = len(wrapper.cut_off)
    reporter.line()
    reporter.line("== the guards against the careless writer ==")
    reporter.line(
        f"careless writer: {wrapper.update_calls} update calls damaged on purpose "
        f"({truncated} with truncated JSON arguments)"
    )
    counts = ", ".join(f"{name} {by_section[name]}" for name in SECTIONS if by_section.get(name))
    reporter.line(f"guard interventions by section: {counts or 'none'}")
    reporter.line("session ground truth (from the recorded messages) in the final WM:")
    retention = check_retention(session_facts(session), final_wm)
    for line in retention_lines(retention, cut_off=wrapper.cut_off):
        reporter.line(line)
