"""The hooks called directly on hand-built states (level 1)."""

import asyncio

import pytest
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph.message import REMOVE_ALL_MESSAGES, add_messages
from langgraph.store.memory import InMemoryStore

from tests.engine._support import WMWriter, user
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory

CFG = {"configurable": {"thread_id": "hand-built"}}


def _conversation(n, start=1):
    out = []
    for i in range(start, start + n):
        out += [user(i).model_copy(update={"id": f"h{i}"}), AIMessage(f"ack {i}", id=f"a{i}")]
    return out


def _memory(**changes):
    cfg = WorkingMemoryConfig(token_budget=4000, background=False, commit_keep_recent_count=4)
    writer = WMWriter()
    return WorkingMemory(writer.model, config=cfg.replace(**changes), store=InMemoryStore()), writer


def _run(hook_name, wm, state, config, mode):
    if mode == "sync":
        return getattr(wm, hook_name)(state, config)
    return asyncio.run(getattr(wm, "a" + hook_name)(state, config))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_after_turn_below_threshold_only_accounts(mode):
    wm, writer = _memory()
    update = _run("after_turn", wm, {"messages": _conversation(2)}, CFG, mode)
    meta = update["working_memory"]
    assert meta["keep_recent_count"] == 4
    assert meta["pending_tokens"] == 0
    assert len(meta["window"]) == 4
    assert "messages" not in update
    assert writer.model.calls == []
    assert wm.list_archives(CFG) == []


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_after_turn_over_threshold_archives_all_but_the_recent_window(mode):
    wm, writer = _memory(commit_token_threshold_ratio=0.1)
    messages = _conversation(12)
    update = _run("after_turn", wm, {"messages": messages}, CFG, mode)
    removed = [m.id for m in update["messages"]]
    assert all(isinstance(m, RemoveMessage) for m in update["messages"])
    assert removed == [m.id for m in messages[:-4]]
    (archive,) = wm.list_archives(CFG)
    assert archive.id == "archive_001"
    assert archive.seq == 1
    assert archive.status == "done"
    assert archive.messages == messages[:-4]
    assert archive.abstract.startswith("20 messages: turn 1: remember FACT-001")
    assert update["working_memory"]["archives"] == ["archive_001"]
    assert update["working_memory"]["pending_tokens"] == 0
    assert "FACT-001" in wm.get_working_memory(CFG)
    assert len(writer.model.calls) == 1


def test_ratio_zero_commits_every_turn():
    wm, _ = _memory(commit_token_threshold_ratio=0.0, commit_keep_recent_count=2)
    state = {"messages": _conversation(2)}
    for turn in range(3, 6):
        update = wm.after_turn(state, CFG)
        state = {
            "messages": add_messages(state["messages"], update.get("messages", [])),
            "working_memory": update["working_memory"],
        }
        state["messages"] = add_messages(state["messages"], _conversation(1, start=turn))
    assert [a.id for a in wm.list_archives(CFG)] == ["archive_001", "archive_002", "archive_003"]


def test_messages_without_ids_get_ids_and_are_replaced_whole():
    wm, _ = _memory(commit_token_threshold_ratio=0.0)
    original = [HumanMessage(f"q{i} FACT-00{i}") for i in range(8)]
    update = wm.after_turn({"messages": original}, CFG)
    assert all(m.id is None for m in original)  # the caller's objects are untouched
    first, *rest = update["messages"]
    assert isinstance(first, RemoveMessage)
    assert first.id == REMOVE_ALL_MESSAGES
    assert [m.text for m in rest] == [m.text for m in original[-4:]]
    assert all(m.id for m in rest)
    assert [m.text for m in wm.list_archives(CFG)[0].messages] == [m.text for m in original[:4]]


def test_compact_archives_everything_and_waits_for_the_wm():
    wm, _ = _memory(background=True)
    messages = [SystemMessage("be brief", id="sys"), *_conversation(3)]
    update = wm.compact({"messages": messages}, CFG)
    assert [m.id for m in update["messages"]] == [m.id for m in messages[1:]]
    assert update["working_memory"]["window"] == []
    assert "FACT-003" in wm.get_working_memory(CFG)  # no wait() needed
    assert wm.list_archives(CFG)[0].status == "done"


def test_assemble_without_memory_is_the_plain_conversation():
    wm, _ = _memory()
    messages = _conversation(2)
    out = wm.assemble({"messages": messages}, CFG)["llm_input_messages"]
    assert out == messages


def test_assemble_puts_system_then_summary_then_live():
    # 12 folded turns and a live one outgrow usable (595 tokens at 700)
    wm, _ = _memory(token_budget=700)
    folded = _conversation(12)
    wm.compact({"messages": folded}, CFG)
    live = [SystemMessage("You are terse.", id="s"), *_conversation(1, start=19)]
    assert wm.count_tokens([*folded, *live]) > 595
    out = wm.assemble({"messages": live}, CFG)["llm_input_messages"]
    assert isinstance(out[0], SystemMessage)
    assert "You are terse." in out[0].text
    assert "[Session History Summary]" in out[1].text
    assert "FACT-003" in out[1].text
    # then the verbatim fill (the newest folded turns, after its note), then the live messages
    assert out[2].text.startswith("[Earlier messages, verbatim]")
    shown = [m.id for m in out[3:-2]]
    assert shown, "no folded turn in the fill"
    assert shown == [m.id for m in folded][len(folded) - len(shown) :]
    assert out[-2:] == live[1:]
    assert wm.count_tokens(out) <= 595


def test_assemble_shows_a_history_that_fits_as_it_is():
    # the same history fits usable at 800 (680 tokens): it is the input, without the memory
    wm, _ = _memory(token_budget=800)
    folded = _conversation(12)
    wm.compact({"messages": folded}, CFG)
    assert wm.get_working_memory(CFG)
    live = [SystemMessage("You are terse.", id="s"), *_conversation(1, start=19)]
    out = wm.assemble({"messages": live}, CFG)["llm_input_messages"]
    assert out == [live[0], *folded, *live[1:]]
    context = wm.build_context(live, CFG)
    assert context.whole_history
    assert context.tokens == wm.count_tokens(out) <= 680


@pytest.mark.parametrize(
    "hook", ["after_turn", "compact", "assemble", "pre_model_hook", "post_model_hook"]
)
def test_hooks_need_a_thread_and_messages(hook):
    wm, _ = _memory()
    with pytest.raises(ValueError, match="thread_id"):
        getattr(wm, hook)({"messages": []}, {})
    with pytest.raises(ValueError, match="'messages'"):
        getattr(wm, hook)({"msgs": []}, CFG)


def test_constructor_is_keyword_only_and_validates():
    with pytest.raises(TypeError):
        WorkingMemory(None, confg=WorkingMemoryConfig())  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        WorkingMemory(None, WorkingMemoryConfig())  # type: ignore[misc]
    with pytest.raises(TypeError, match="model must be"):
        WorkingMemory(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="config must be"):
        WorkingMemory(config={"token_budget": 5}, store=InMemoryStore())  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        WorkingMemory(create_prompt="no placeholders here", store=InMemoryStore())


def test_count_tokens_counts_messages():
    wm, _ = _memory()
    one = wm.count_tokens([HumanMessage("hello world")])
    assert one > 0
    assert wm.count_tokens([HumanMessage("hello world")] * 3) == 3 * one


def test_overflow_guard_is_none_when_the_live_messages_fit():
    wm, writer = _memory()
    assert wm.overflow_guard({"messages": _conversation(2)}, CFG) is None
    assert writer.model.calls == []


def test_overflow_guard_commits_inline_and_keeps_the_newest_turn_tool_pairs_whole():
    wm, _ = _memory(commit_keep_recent_count=10_000)
    calls = [
        {"name": "read_file", "args": {"path": f"src/m{i}.py"}, "id": f"c{i}"} for i in range(3)
    ]
    newest = [
        HumanMessage("now refactor FACT-999", id="newest"),
        AIMessage("", tool_calls=calls, id="ai-tools"),
        *[ToolMessage("x " * 50, tool_call_id=f"c{i}", id=f"t{i}") for i in range(3)],
    ]
    messages = [*_conversation(60), *newest]
    update = wm.overflow_guard({"messages": messages}, CFG)
    assert update is not None
    removed = {m.id for m in update["messages"]}
    assert removed == {m.id for m in messages[:-5]}
    assert wm.list_archives(CFG)[0].status == "done"  # Phase 2 was waited for


def test_tools_are_the_archive_recall_tools():
    wm, _ = _memory()
    assert sorted(t.name for t in wm.tools) == ["archive_expand", "archive_search"]


def test_default_model_is_resolved_on_first_use_and_logged(monkeypatch, caplog):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    wm = WorkingMemory(config=WorkingMemoryConfig(background=False), store=InMemoryStore())
    with caplog.at_level("INFO", logger="wm_langgraph"):
        wm.compact({"messages": _conversation(2)}, CFG)
    assert type(wm.model).__name__ == "OfflineWorkingMemoryModel"
    assert any("OfflineWorkingMemoryModel" in r.getMessage() for r in caplog.records)
    assert "## Key Facts & Decisions" in wm.get_working_memory(CFG)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_compact_runs_phase2_inline_in_both_modes(mode):
    wm, writer = _memory(background=True)
    update = _run("compact", wm, {"messages": _conversation(3)}, CFG, mode)
    assert len(update["messages"]) == 6
    assert "FACT-003" in wm.get_working_memory(CFG)
    assert len(writer.model.calls) == 1
