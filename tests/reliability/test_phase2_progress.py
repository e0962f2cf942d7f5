"""Fault injection: Phase 2 always makes progress.

Each scenario is one that stopped a thread's memory from ever getting better on main:
- a 40k-token paste with a writer whose context is 32k (a context-length error every time)
  blocked the five archives behind it for good;
- four threads whose writer hangs starved a healthy thread's Phase 2;
- abandoned (timed-out) writer calls piled up, one thread each;
- a truncated update reply lost that round's open issue;
- an archive the writer fails on deterministically blocked everything behind it;
- one thread's backlog ran ahead of every other thread;
- ``compact()`` and inline commits waited behind a running job plus their own calls.

The agent is ``create_agent`` + ``WorkingMemoryMiddleware`` with a scripted agent model; the
writer is a real ``ChatOpenAI`` talking to a fake OpenAI-compatible server
(``tests/fake_openai.py``) or a scripted chat model. Liveness bounds (``WAIT_S``) only turn a
hang into a failure; no test asserts a duration.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from _rel_stats import add, record
from fake_openai import Answer, FakeOpenAIServer, chat_openai, prompt_of
from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from wm_langgraph import WorkingMemoryMiddleware
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.document import SECTIONS, count_tokens, render_working_memory
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.testing import ScriptedChatModel

WAIT_S = 60.0
MARK_RE = re.compile(r"(?:BLOCK|PASTE)-[A-Z0-9]+")


def _marks(text: str) -> list[str]:
    return sorted(set(MARK_RE.findall(text)))


def _folded(request_text: str) -> str:
    match = re.search(r"<messages>(.*)</messages>", request_text, re.S)
    return match.group(1) if match else request_text


def _document(marks: list[str], issues: list[str] | None = None) -> str:
    body = dict.fromkeys(SECTIONS, "")
    body["Session Title"] = "Log triage session with pasted logs"
    body["Current State"] = "Reading the pasted logs."
    body["Key Facts & Decisions"] = "\n".join(f"- {m} seen" for m in marks)
    body["Open Issues"] = "\n".join(f"- {i}" for i in issues or [])
    return render_working_memory(body)


def _update_args(marks: list[str], issues: list[str] | None = None) -> dict[str, Any]:
    sections: dict[str, Any] = {name: {"op": "KEEP"} for name in SECTIONS}
    sections["Key Facts & Decisions"] = {"op": "APPEND", "items": [f"{m} seen" for m in marks]}
    if issues:
        sections["Open Issues"] = {"op": "APPEND", "items": issues}
    return {"sections": sections}


def _healthy(request: dict[str, Any]) -> Answer:
    marks = _marks(_folded(prompt_of(request)))
    if not request.get("tools"):
        return Answer(text=_document(marks))
    return Answer(tool_args=json.dumps(_update_args(marks)))


class _Agent:
    """create_agent + WorkingMemoryMiddleware over an in-memory saver and store."""

    def __init__(self, writer: Any, config: WorkingMemoryConfig) -> None:
        self.model = ScriptedChatModel(respond=lambda m, t, c: "noted", repeat_last=True)
        self.store = InMemoryStore()
        self.middleware = WorkingMemoryMiddleware(writer, config=config, store=self.store)
        self.memory: WorkingMemory = self.middleware.memory
        self.graph = create_agent(
            self.model,
            [],
            middleware=[self.middleware],
            checkpointer=InMemorySaver(),
            store=self.store,
        )

    def say(self, thread: str, text: str) -> None:
        self.graph.invoke({"messages": [HumanMessage(text)]}, thread_config(thread))

    def seen_by_agent(self) -> str:
        """What the agent's model received in its latest call."""
        return self.model.calls[-1].prompt_text


@contextmanager
def _agent(writer: Any, config: WorkingMemoryConfig) -> Iterator[_Agent]:
    a = _Agent(writer, config)
    try:
        yield a
    finally:
        a.memory.wait(timeout=WAIT_S)
        a.memory.close()


def _backlog(memory: WorkingMemory, thread: str) -> int:
    return sum(1 for a in memory.list_archives(thread_config(thread)) if a.status != "done")


# -- 1. a 40k-token paste and a writer whose context is 32k --------------------------------------

WRITER_CONTEXT = 32_768


def _log(tokens: int, tag: str) -> str:
    lines, i = [f"PASTE-HEAD{tag} begin of the pasted log"], 0
    while count_tokens("\n".join(lines)) < tokens:
        lines.extend(
            f"{tag} {i + k:06d} GET /api/orders/{i + k} 200 {k % 97}ms" for k in range(200)
        )
        i += 200
    lines.append(f"PASTE-TAIL{tag} end of the pasted log")
    return "\n".join(lines)


def _context_32k(request: dict[str, Any]) -> Answer:
    size = count_tokens(prompt_of(request))
    if size > WRITER_CONTEXT:
        return Answer(
            status=400,
            error={
                "message": f"This model's maximum context length is {WRITER_CONTEXT} tokens. "
                f"However, your messages resulted in {size} tokens. Please reduce the length "
                "of the messages.",
                "type": "invalid_request_error",
                "code": "context_length_exceeded",
            },
        )
    return _healthy(request)


@pytest.mark.parametrize(
    ("flow", "message_cap"), [("live", 4_000), ("backlog", 20_000)], ids=["live", "backlog-20k"]
)
def test_a_40k_paste_with_a_32k_writer_blocks_no_archive_behind_it(flow, message_cap):
    """``live``: the issue's run, each archive folded as it comes. ``backlog``: the writer is
    down meanwhile (the breaker pauses), then back: one job meets all six archives at once.
    With a 20k cap two archives already overflow the writer: the provider's error lowers the
    prompt limit and the batch is retried smaller."""
    add("fault injection: Phase 2 progress scenarios")
    server = FakeOpenAIServer(_context_32k)
    if flow == "backlog":
        server.respond = lambda r: Answer(status=503, error={"message": "overloaded"})
    config = WorkingMemoryConfig(
        commit_token_threshold_ratio=0.1,
        commit_keep_recent_count=2,
        max_message_tokens=message_cap,
    )
    cfg = thread_config("paste")
    with _agent(chat_openai(server), config) as a:
        a.say("paste", _log(39_300, "P"))
        for n in range(1, 7):
            a.say("paste", f"BLOCK-{n:02d} " + _log(16_500, f"B{n}").replace("PASTE-", "X-"))
            assert a.memory.wait(cfg, timeout=WAIT_S)
        back = 0
        if flow == "backlog":
            assert _backlog(a.memory, "paste") == 6
            back = len(server.requests)
            server.respond = _context_32k
            a.memory.resume(cfg, wait=True)
        archives = a.memory.list_archives(cfg)
        assert len(archives) == 6  # the paste, then five 16.5k turns
        backlog = _backlog(a.memory, "paste")
        record(f"backlog after the 40k paste with a 32k writer ({flow}, {message_cap})", backlog)
        assert backlog == 0
        text = a.memory.get_working_memory(cfg)
        # the capped paste showed the writer its start and its end
        assert {"PASTE-HEADP", "PASTE-TAILP"} <= set(_marks(text))
        assert {f"BLOCK-{n:02d}" for n in range(1, 6)} <= set(_marks(text))
        sent = [prompt_of(b) for b in server.requests[back:]]
        too_long = [p for p in sent if count_tokens(p) > WRITER_CONTEXT]
        for prompt in set(too_long):  # answered with less, never the same prompt again
            assert sent.count(prompt) == 1, "a prompt was sent again after an overflow"
        if flow == "backlog":
            assert too_long, "the scenario did not reach the writer's limit"
        record(
            f"prompts over the 32k context, answered smaller ({flow}, {message_cap})", len(too_long)
        )


# -- 2. four hung threads and a healthy one ------------------------------------------------------


class _HangingWriter:
    """Writes the WM for healthy threads; hangs (until released) for prompts that say HANG."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.model = ScriptedChatModel(respond=self._reply)

    def _reply(self, messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        prompt = messages[-1].text
        if "HANG" in prompt:
            self.release.wait(WAIT_S)
            return RuntimeError("released")
        marks = _marks(_folded(prompt))
        if not tools:
            return _document(marks)
        return {
            "content": "",
            "tool_calls": [{"name": "update_working_memory", "args": _update_args(marks)}],
        }


def test_four_hung_threads_do_not_starve_a_healthy_one():
    add("fault injection: Phase 2 progress scenarios")
    writer = _HangingWriter()
    config = WorkingMemoryConfig(
        commit_token_threshold_ratio=0.0,
        commit_keep_recent_count=0,
        phase2_workers=4,
        phase2_stall_seconds=0.2,
        model_timeout_seconds=WAIT_S,  # the hung calls stay hung for the whole test
    )
    try:
        with _agent(writer.model, config) as a:
            for n in range(4):
                a.say(f"hung-{n}", "HANG please")
            started = time.monotonic()
            a.say("healthy", "BLOCK-OK the healthy thread")
            assert a.memory.wait(thread_config("healthy"), timeout=20)
            record(
                "healthy thread Phase 2 latency with 4 hung threads, ms (stall 0.2 s)",
                round((time.monotonic() - started) * 1000),
            )
            assert "BLOCK-OK" in a.memory.get_working_memory(thread_config("healthy"))
            assert not a.memory.wait(thread_config("hung-0"), timeout=0.01)  # still hung
            writer.release.set()
    finally:
        writer.release.set()


# -- 3. abandoned writer calls do not pile up ----------------------------------------------------


def _alive_calls() -> int:
    return sum(1 for t in threading.enumerate() if t.name.startswith("wm_langgraph-wm."))


def test_fifty_timeouts_leave_one_abandoned_call_not_fifty():
    add("fault injection: Phase 2 progress scenarios")
    writer = _HangingWriter()
    config = WorkingMemoryConfig(
        commit_token_threshold_ratio=0.0,
        commit_keep_recent_count=0,
        background=False,
        model_timeout_seconds=0.05,
        max_consecutive_failures=1000,  # keep calling: the breaker is not what bounds this
    )
    before = _alive_calls()
    try:
        with _agent(writer.model, config) as a:
            for n in range(50):
                a.say("timeouts", f"HANG {n}")
            alive = _alive_calls() - before
            record("writer threads alive after 50 timeouts on one thread", alive)
            assert alive <= 1
            assert len(writer.model.calls) == 1  # later commits never started a second one
            assert _backlog(a.memory, "timeouts") == 50  # nothing lost: all pending
    finally:
        writer.release.set()


# -- 4. a truncated update reply: its open issue is visible to the agent -------------------------

TODO = "TODO rotate the staging key before Friday"


def _cut(request: dict[str, Any]) -> Answer:
    """The forced call runs into max_tokens inside Open Issues; the server says tool_calls."""
    folded = _folded(prompt_of(request))
    text = json.dumps(_update_args(_marks(folded), [TODO] if "rotate" in folded else None))
    cut = text.find("rotate the staging")
    if cut < 0:
        return Answer(tool_args=text)
    limit = request.get("max_tokens") or request.get("max_completion_tokens") or 0
    return Answer(tool_args=text[:cut], finish_reason="tool_calls", completion_tokens=limit)


def _truncating(request: dict[str, Any], *, retry_works: bool) -> Answer:
    if not request.get("tools"):
        if retry_works or "rotate" not in _folded(prompt_of(request)):
            return _healthy(request)
        return Answer(text="")  # the create fallback fails too
    if retry_works and "could not be read completely" in prompt_of(request):
        sections = {name: {"op": "KEEP"} for name in SECTIONS}
        sections["Open Issues"] = {"op": "APPEND", "items": [TODO]}
        return Answer(tool_args=json.dumps({"sections": sections}))
    return _cut(request)


def test_a_truncated_reply_s_open_issue_reaches_the_agent_through_the_wm():
    add("fault injection: Phase 2 progress scenarios")
    server = FakeOpenAIServer(lambda r: _truncating(r, retry_works=True))
    config = WorkingMemoryConfig(commit_token_threshold_ratio=0.0, commit_keep_recent_count=0)
    with _agent(chat_openai(server), config) as a:
        a.say("cut", "BLOCK-A1 start")
        assert a.memory.wait(thread_config("cut"), timeout=WAIT_S)
        a.say("cut", f"BLOCK-A2 and {TODO}.")
        assert a.memory.wait(thread_config("cut"), timeout=WAIT_S)
        assert TODO in a.memory.get_working_memory(thread_config("cut"))
        assert _backlog(a.memory, "cut") == 0
        a.say("cut", "BLOCK-A3 what is left?")
        assert TODO in a.seen_by_agent()


def test_a_reply_that_stays_unreadable_leaves_its_messages_visible_not_done():
    add("fault injection: Phase 2 progress scenarios")
    server = FakeOpenAIServer(lambda r: _truncating(r, retry_works=False))
    config = WorkingMemoryConfig(commit_token_threshold_ratio=0.0, commit_keep_recent_count=0)
    with _agent(chat_openai(server), config) as a:
        a.say("stays-cut", "BLOCK-B1 start")
        assert a.memory.wait(thread_config("stays-cut"), timeout=WAIT_S)
        a.say("stays-cut", f"BLOCK-B2 and {TODO}.")
        assert a.memory.wait(thread_config("stays-cut"), timeout=WAIT_S)
        archives = a.memory.list_archives(thread_config("stays-cut"))
        statuses = [r.status for r in archives]
        # never done on the writer's unread reply: the create fallback's reply had no content,
        # so the round's document was extracted from the messages themselves
        assert statuses == ["done", "done"]
        assert archives[1].metadata["fallback"] == "extractive"
        a.say("stays-cut", "BLOCK-B3 what is left?")
        assert TODO in a.seen_by_agent()  # extracted into the Working Memory


# -- 5. a deterministic failure does not block the archives behind it ---------------------------


def _poisoned(request: dict[str, Any]) -> Answer:
    if "POISON" in _folded(prompt_of(request)):
        return Answer(status=400, error={"message": "Invalid prompt: flagged", "code": None})
    return _healthy(request)


def test_an_archive_the_writer_always_rejects_is_deferred_and_the_rest_fold():
    add("fault injection: Phase 2 progress scenarios")
    server = FakeOpenAIServer(_poisoned)
    config = WorkingMemoryConfig(commit_token_threshold_ratio=0.0, commit_keep_recent_count=0)
    with _agent(chat_openai(server), config) as a:
        for text in ["BLOCK-C1 start", "BLOCK-C2 POISON here", "BLOCK-C3", "BLOCK-C4", "BLOCK-C5"]:
            a.say("poison", text)
            assert a.memory.wait(thread_config("poison"), timeout=WAIT_S)
        archives = a.memory.list_archives(thread_config("poison"))
        assert [r.status for r in archives] == ["done", "failed", "done", "done", "done"]
        assert archives[1].metadata["deferred"] is True
        assert {"BLOCK-C1", "BLOCK-C3", "BLOCK-C4", "BLOCK-C5"} <= set(
            _marks(a.memory.get_working_memory(thread_config("poison")))
        )
        assert not a.memory.phase2_status(thread_config("poison"))["paused"]
        a.say("poison", "BLOCK-C6 still there?")
        assert "BLOCK-C2 POISON here" in a.seen_by_agent()  # deferred: visible, verbatim
        attempts = archives[1].metadata["attempts"]
        assert 1 <= attempts <= config.max_consecutive_failures


def test_a_rejected_multi_archive_batch_is_split_to_isolate_the_archive_at_fault():
    add("fault injection: Phase 2 progress scenarios")
    server = FakeOpenAIServer(_poisoned)
    config = WorkingMemoryConfig(commit_token_threshold_ratio=0.0, commit_keep_recent_count=0)
    with _agent(chat_openai(server), config) as a:
        a.say("split", "BLOCK-D1 start")
        assert a.memory.wait(thread_config("split"), timeout=WAIT_S)
        server.respond = lambda r: Answer(status=503, error={"message": "down"})
        for text in ["BLOCK-D2", "BLOCK-D3 POISON", "BLOCK-D4", "BLOCK-D5"]:
            a.say("split", text)
            assert a.memory.wait(thread_config("split"), timeout=WAIT_S)
        server.respond = _poisoned  # back, but one of the four pending archives is poison
        a.memory.resume(thread_config("split"), wait=True)
        statuses = [r.status for r in a.memory.list_archives(thread_config("split"))]
        assert statuses == ["done", "done", "failed", "done", "done"]


# -- 6. one thread's backlog does not run ahead of the others ------------------------------------


def test_threads_take_turns_round_by_round():
    add("fault injection: Phase 2 progress scenarios")
    gate = threading.Event()
    order: list[str] = []

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        prompt = messages[-1].text
        gate.wait(WAIT_S)
        order.append("A" if "BLOCK-A" in prompt else "B")
        marks = _marks(_folded(prompt))
        if not tools:
            return _document(marks)
        return {
            "content": "",
            "tool_calls": [{"name": "update_working_memory", "args": _update_args(marks)}],
        }

    writer = ScriptedChatModel(respond=reply)
    config = WorkingMemoryConfig(
        commit_token_threshold_ratio=0.0,
        commit_keep_recent_count=0,
        phase2_workers=1,
        max_prompt_messages_tokens=40,  # one archive per round
    )
    try:
        with _agent(writer, config) as a:
            for n in range(8):
                a.say("backlog", f"BLOCK-A{n} " + "word " * 30)
            a.say("other", "BLOCK-B1 a single commit")
            gate.set()
            assert a.memory.wait(timeout=WAIT_S)
            assert order.count("A") >= 8
            assert order.index("B") <= 2, order  # B's round came before A's backlog ended
    finally:
        gate.set()


# -- 7. compact() and inline commits are bounded in time -----------------------------------------


def test_compact_does_not_wait_behind_a_running_job_plus_its_own_call():
    """A background round that takes two slow writer calls (an update without a tool call,
    then a hung create) holds the thread for about twice the timeout; compact() must not wait
    for it and then call the writer itself: it hands its work to the background instead."""
    add("fault injection: Phase 2 progress scenarios")
    release = threading.Event()
    callers: list[str] = []
    timeout = 1.0

    def slow(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        callers.append(threading.current_thread().name)
        prompt = messages[-1].text
        if "SLOW" not in _folded(prompt):
            marks = _marks(_folded(prompt))
            if not tools:
                return _document(marks)
            args = _update_args(marks)
            return {"content": "", "tool_calls": [{"name": "update_working_memory", "args": args}]}
        if tools:
            time.sleep(0.9 * timeout)
            return "no tool call"
        release.wait(WAIT_S)
        return RuntimeError("released")

    writer = ScriptedChatModel(respond=slow)
    config = WorkingMemoryConfig(
        commit_token_threshold_ratio=0.0, commit_keep_recent_count=0, model_timeout_seconds=timeout
    )
    try:
        with _agent(writer, config) as a:
            a.say("compact", "BLOCK-K1 first")
            assert a.memory.wait(thread_config("compact"), timeout=WAIT_S)
            calls_before = len(callers)
            a.say("compact", "BLOCK-K2 SLOW")  # its background round: update, then create
            while len(callers) == calls_before:
                time.sleep(0.01)
            state = a.graph.get_state(thread_config("compact")).values
            a.memory.compact(state, thread_config("compact"))
            # by now only the background round's two calls ran: compact made none of its own
            assert len(callers) - calls_before <= 2, "compact waited, then called the writer"
    finally:
        release.set()


def test_an_inline_commit_starts_no_writer_call_after_its_timeout():
    """Three pending archives, one per round, a writer taking 0.3 s per call and a 0.5 s
    timeout: the inline run stops starting calls when its time is up (the rest goes to the
    background), instead of giving every call a full timeout of its own."""
    add("fault injection: Phase 2 progress scenarios")
    starts: list[float] = []
    state = {"down": False}

    def slow(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        if state["down"]:
            return RuntimeError("model down")
        starts.append(time.monotonic())
        time.sleep(0.3)
        marks = _marks(_folded(messages[-1].text))
        if not tools:
            return _document(marks)
        return {
            "content": "",
            "tool_calls": [{"name": "update_working_memory", "args": _update_args(marks)}],
        }

    writer = ScriptedChatModel(respond=slow)
    timeout = 0.5
    config = WorkingMemoryConfig(
        background=False,
        model_timeout_seconds=timeout,
        max_prompt_messages_tokens=30,  # one archive (about 20 tokens) per round
        max_consecutive_failures=100,
    )
    memory = WorkingMemory(writer, config=config, store=InMemoryStore())
    cfg = thread_config("inline")
    try:
        memory.compact({"messages": [HumanMessage("BLOCK-I1", id="i1")]}, cfg)
        state["down"] = True
        for n in (2, 3):
            text = f"BLOCK-I{n} " + "word " * 12
            memory.compact({"messages": [HumanMessage(text, id=f"i{n}")]}, cfg)
        state["down"] = False
        starts.clear()
        began = time.monotonic()
        memory.compact({"messages": [HumanMessage("BLOCK-I4 " + "word " * 12, id="i4")]}, cfg)
        assert starts, "the inline commit called the writer"
        late = [round(s - began, 2) for s in starts if s - began >= timeout]
        assert not late, f"writer calls started after the {timeout} s timeout: {late}"
        assert memory.wait(cfg, timeout=WAIT_S)  # the rest was folded in the background
        assert all(r.status == "done" for r in memory.list_archives(cfg))
    finally:
        memory.close()


def test_the_first_commit_after_a_restart_runs_phase2_once(tmp_path):
    add("fault injection: Phase 2 progress scenarios")
    from wm_langgraph import open_sqlite

    failing = ScriptedChatModel(respond=lambda m, t, c: RuntimeError("model down"))
    config = WorkingMemoryConfig(
        commit_token_threshold_ratio=0.0, commit_keep_recent_count=0, background=False
    )
    cfg = thread_config("restart")
    for process in range(2):  # the second is a restart on the same file
        with open_sqlite(tmp_path / "wm.sqlite") as (_, store):
            memory = WorkingMemory(failing, config=config, store=store)
            before = len(failing.calls)
            memory.compact({"messages": [HumanMessage(f"BLOCK-R{process}")]}, cfg)
            assert len(failing.calls) - before == 1, "Phase 2 ran twice for one commit"
            memory.close()
