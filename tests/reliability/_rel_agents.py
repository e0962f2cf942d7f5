"""The two agent integrations under fault injection: agents, a scripted agent model, checks.

- ``langchain.agents.create_agent`` with :class:`~wm_langgraph.WorkingMemoryMiddleware`
  (``before_model`` overflow guard with its inline commit, ``wrap_model_call`` assemble,
  ``after_agent`` commit), the meta in the agent state;
- ``langgraph.prebuilt.create_react_agent`` with ``wm.pre_model_hook`` / ``wm.post_model_hook``
  (``version="v2"``), the meta in the agent state too (the hooks' input schema adds the
  ``working_memory`` channel).

The agent's own model is scripted: it calls the agent's ``read_file`` tool as often as the user
message asks (``calls=K size=S``), then answers. Every message it writes, and every tool
result, carries a marker and has the marker as its id, so the exact checks of
``_rel_harness.check_thread`` apply. :class:`Run` drives a thread and after every turn checks
the design §3 invariants, that the WM is never worse than after the turn before, and that the
pending archives and live messages were in what the agent model actually received.
"""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from _rel_checks import assert_seven_sections
from _rel_faults import Crasher, crashing_sqlite
from _rel_harness import Conversation, check_thread, markers_in
from _rel_stats import add
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import create_react_agent
from langgraph.store.memory import InMemoryStore

from wm_langgraph import WorkingMemoryMiddleware, open_sqlite
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import SUMMARY_HEADER, compute_budgets
from wm_langgraph.document import parse_working_memory
from wm_langgraph.document.sections import item_key, section_items
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.storage.archives import ArchiveStore
from wm_langgraph.testing import ModelCall, ScriptedChatModel, tool_reply

__all__ = [
    "BASE",
    "OVERFLOW",
    "PATHS",
    "WAIT_S",
    "Agent",
    "AgentConversation",
    "Run",
    "agent",
    "assert_overflow_committed",
    "turn_ids",
]

BASE = WorkingMemoryConfig(
    token_budget=4_000,
    commit_token_threshold_ratio=0.0,  # commit after every turn
    commit_keep_recent_count=2,
    reserve_tokens=0,
    background=False,
    max_consecutive_failures=3,
    failure_cooldown_seconds=1e6,
)
WAIT_S = 60.0  # generous bound: a deadlock fails the test instead of hanging it
PATHS = ["middleware", "react"]
OVERFLOW = {"calls": 3, "size": 900}  # three tool results that outgrow the budget mid-turn
GUARDED = ("Errors & Corrections", "Files & Context", "Open Issues", "Key Facts & Decisions")
_USER_RE = re.compile(r"MARK\[(?P<t>[^\]]+)-u(?P<n>\d+)\] calls=(?P<calls>\d+) size=(?P<size>\d+)")


# -- the agent: a scripted model and a tool of its own ------------------------------------------


def turn_ids(thread_id: str, n: int, calls: int) -> list[str]:
    """Ids (= markers) of turn ``n``: the user message, ``calls`` tool round trips, the answer."""
    ids = [f"{thread_id}-u{n}"]
    for k in range(calls):
        suffix = f"x{k}" if k else ""
        ids += [f"{thread_id}-c{n}{suffix}", f"{thread_id}-r{n}{suffix}"]
    return [*ids, f"{thread_id}-a{n}"]


def _agent_reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
    """The agent's script; every message it writes has its marker as id (exact checks)."""
    start = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    found = _USER_RE.search(messages[start].text)
    assert found, "the newest user message did not reach the agent model"
    t, n = found["t"], int(found["n"])
    done = sum(isinstance(m, ToolMessage) for m in messages[start:])
    if done < int(found["calls"]):
        suffix = f"x{done}" if done else ""
        args = {"path": f"src/mod_{n}_{done}.py", "mark": f"{t}-r{n}{suffix}"}
        args["size"] = int(found["size"])
        mark = f"{t}-c{n}{suffix}"
        return {**tool_reply("read_file", args, content=f"reading a file MARK[{mark}]"), "id": mark}
    return {"content": f"answer {n} MARK[{t}-a{n}]", "id": f"{t}-a{n}"}


@tool
def read_file(
    path: str, mark: str, size: int, tool_call_id: Annotated[str, InjectedToolCallId]
) -> ToolMessage:
    """Read a file of the project."""
    body = f"contents of {path}: def f(): pass  MARK[{mark}] " + "lorem " * size
    return ToolMessage(id=mark, content=body, tool_call_id=tool_call_id, name="read_file")


class AgentConversation(Conversation):
    """A thread of one agent; turn ``n`` calls the tool once when ``n % 3 == 2``."""

    def turn(
        self,
        graph: Any,
        *,
        filler: str = "",
        calls: int | None = None,
        size: int = 0,
        asynchronous: bool = False,
    ) -> None:
        n = self.turns
        self.turns += 1
        calls = (1 if n % 3 == 2 else 0) if calls is None else calls
        text = f"user turn {n} MARK[{self.thread_id}-u{n}] calls={calls} size={size} {filler}"
        payload = {"messages": [HumanMessage(id=f"{self.thread_id}-u{n}", content=text)]}
        if asynchronous:  # the hooks' async twins
            asyncio.run(graph.ainvoke(payload, self.config, durability="sync"))
        else:
            graph.invoke(payload, self.config, durability="sync")
        self.sent.extend(turn_ids(self.thread_id, n, calls))


@dataclass
class Agent:
    """An agent with Working Memory: ``graph`` has ``invoke``/``ainvoke``/``get_state``."""

    kind: str
    wm: WorkingMemory
    graph: Any
    archives: ArchiveStore
    model: ScriptedChatModel


@contextmanager
def agent(
    kind: str, path: Path | None, wm_model: Any, crasher: Crasher | None = None, **changes: Any
) -> Iterator[Agent]:
    """An agent of ``kind`` with Working Memory on the SQLite file ``path`` (None: in memory,
    for ``ainvoke``; the SQLite checkpointer is sync only)."""
    if path is None:
        opened: Any = nullcontext((InMemorySaver(), InMemoryStore()))
    elif crasher is not None:
        opened = crashing_sqlite(str(path), crasher)
    else:
        opened = open_sqlite(path)
    model = ScriptedChatModel(respond=_agent_reply, keep_ids=True)
    with opened as (checkpointer, store):
        config = BASE.replace(**changes)
        archives = ArchiveStore(store)
        if kind == "middleware":
            mw = WorkingMemoryMiddleware(wm_model, config=config, store=store)
            wm = mw.memory
            graph: Any = create_agent(
                model, [read_file], middleware=[mw], checkpointer=checkpointer, store=store
            )
        else:
            # A new process reads the thread before its first run: a memory whose graph it
            # does not build (create_react_agent) is told the checkpointer.
            wm = WorkingMemory(wm_model, config=config, store=store, checkpointer=checkpointer)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated in favour of create_agent
                react = create_react_agent(
                    model,
                    [read_file, *wm.tools],
                    pre_model_hook=wm.pre_model_hook,
                    post_model_hook=wm.post_model_hook,
                    checkpointer=checkpointer,
                    store=store,
                    version="v2",
                )
            # The hooks' input schema gives the agent a working_memory channel: the meta is
            # checkpointed with the messages, as with the middleware.
            graph = react
        try:
            yield Agent(kind, wm, graph, archives, model)
        finally:
            wm.wait(timeout=WAIT_S)
            if crasher is not None and crasher.dead:
                wm._runner.shutdown()  # a killed process runs no exit code: only stop threads
            else:
                wm.close()


# -- checks ---------------------------------------------------------------------------------------


def _visible(a: Agent, conv: Conversation) -> list[BaseMessage]:
    """What the next model call must show: the pending archives' and the live messages."""
    config = conv.config
    values = a.graph.get_state(config).values
    timeline = list((values.get("working_memory") or {}).get("archives") or [])
    current = a.archives.current_wm(conv.thread_id, timeline)
    covered = len(current.covers) if current else 0
    pending = a.archives.get_archives(conv.thread_id, timeline[covered:])
    messages = [m for r in pending for m in r.messages]
    return messages + [m for m in values.get("messages", []) if not isinstance(m, SystemMessage)]


def _assert_model_saw(a: Agent, call: ModelCall, wanted: list[BaseMessage], user: str) -> None:
    """The agent model's input holds the user's message and every pending and live message;
    only when they cannot all fit the budget (counted here, not by assemble) may the oldest
    turns be left out."""
    seen = set(markers_in(call.prompt_text))
    assert user in seen, "the user's message did not reach the model"
    marks = [mark for m in wanted for mark in markers_in(m.text)]
    missing = [m for m in marks if m not in seen]
    add("fault injection (agents): model-input checks")
    if not missing:
        return
    head = [m for m in call.messages if isinstance(m, SystemMessage)]
    head += [m for m in call.messages if m.text.startswith(SUMMARY_HEADER)]
    head += [m for m in call.messages if m.id == user]
    budgets = compute_budgets(
        a.wm.config.token_budget, a.wm.config.reserve_tokens, a.wm.config.archive_memory_tokens
    )
    need = a.wm.count_tokens([*head, *wanted])
    assert need > budgets.usable, f"not visible to the agent model (though it fits): {missing}"
    assert missing == marks[: len(missing)], f"a newer message was dropped: {missing}"
    add("fault injection (agents): budget-dropped oldest turns")


def _assert_not_worse(before: str, after: str) -> None:
    """Never a placeholder, never fewer sections or items of the guarded kinds."""
    if not before:
        if after:
            assert_seven_sections(after)
        return
    assert after, "the Working Memory disappeared"
    assert_seven_sections(after)
    old, new = parse_working_memory(before), parse_working_memory(after)
    assert [n for n in old if old[n].strip() and not new[n].strip()] == [], "a section emptied"
    for name in GUARDED:
        kept = {item_key(i) for i in section_items(new[name])}
        lost = [i for i in section_items(old[name]) if item_key(i) not in kept]
        assert not lost, f"{name} lost {lost}"


@dataclass
class Run:
    """Drives one thread and checks it after every turn."""

    a: Agent
    conv: AgentConversation
    before: list[str]  # WM markers before the fault (never worse: stays a prefix)
    document: str = ""  # the WM after the previous turn
    asynchronous: bool = False  # drive the agent with ainvoke

    def turn(self, *, calls: int | None = None, size: int = 0) -> None:
        wanted = _visible(self.a, self.conv)
        first = len(self.a.model.calls)
        self.conv.turn(self.a.graph, calls=calls, size=size, asynchronous=self.asynchronous)
        assert self.a.wm.wait(self.conv.config, timeout=WAIT_S)
        user = f"{self.conv.thread_id}-u{self.conv.turns - 1}"
        calls = self.a.model.calls[first:]
        _assert_model_saw(self.a, calls[0], wanted, user)
        for call in calls[1:]:  # the newest turn is never dropped, overflow or not
            assert user in markers_in(call.prompt_text), "the user's message left the model input"
        self.check()

    def check(self, **kwargs: Any) -> list[str]:
        add("fault injection (agents): invariant checks")
        markers = check_thread(
            self.a.wm,
            self.a.graph,
            self.a.archives,
            self.conv,
            previous_wm_markers=self.before,
            **kwargs,
        )
        values = self.a.graph.get_state(self.conv.config).values
        timeline = list((values.get("working_memory") or {}).get("archives") or [])
        current = self.a.archives.current_wm(self.conv.thread_id, timeline)
        document = current.text if current else ""
        _assert_not_worse(self.document, document)
        self.document = document
        return markers


def assert_overflow_committed(run: Run) -> None:
    """The last turn outgrew the budget mid-turn: the overflow guard archived everything before
    the newest user message (an archive ends right before it, the next starts with it)."""
    n = run.conv.turns - 1
    user = f"{run.conv.thread_id}-u{n}"
    records = run.a.wm.list_archives(run.conv.config)
    starts = [i for i, r in enumerate(records) if r.messages and r.messages[0].id == user]
    assert starts, "the tool loop outgrew the budget but the overflow guard did not commit"
    assert starts[0] > 0
    assert records[starts[0] - 1].messages[-1].id == run.conv.sent[run.conv.sent.index(user) - 1]
    add("fault injection (agents): mid-turn overflow commits")
