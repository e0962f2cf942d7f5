"""Token counts on the hot path: each message is tokenised once per process, never reused for
a message whose rendering changed, and assemble counts each message once."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    ToolMessage,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.store.memory import InMemoryStore

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import assemble_context
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.messages import MessageTokenCache, message_tokens
from wm_langgraph.testing import ScriptedChatModel

CFG = {"configurable": {"thread_id": "tokens"}}


def _count(message: BaseMessage) -> int:
    return message_tokens(message, counter=len)


def _history(turns: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i in range(turns):
        out += [
            HumanMessage(f"user text {i} unique-{i}", id=f"h{i}"),
            AIMessage(
                "",
                tool_calls=[{"name": "read_file", "args": {"path": f"src/m{i}.py"}, "id": f"c{i}"}],
                id=f"a{i}",
            ),
            ToolMessage(
                f"contents of m{i} " * 3, tool_call_id=f"c{i}", name="read_file", id=f"t{i}"
            ),
            AIMessage(f"answer {i}", id=f"r{i}"),
        ]
    return out


class _Recording:
    """A text token counter that records what it was asked to count."""

    def __init__(self) -> None:
        self.texts: Counter[str] = Counter()

    def __call__(self, text: str) -> int:
        self.texts[text] += 1
        return len(text.split())

    def calls_mentioning(self, marker: str) -> int:
        return sum(n for text, n in self.texts.items() if marker in text)


def _memory(counter: _Recording) -> WorkingMemory:
    config = WorkingMemoryConfig(
        token_budget=1_000_000, commit_token_threshold_ratio=1.0, background=False
    )
    return WorkingMemory(
        ScriptedChatModel(replies=["unused"]),
        config=config,
        token_counter=counter,
        store=InMemoryStore(),
    )


def test_repeated_assembles_tokenise_each_message_once_even_when_deserialised_afresh():
    counter = _Recording()
    wm = _memory(counter)
    history = _history(30)
    serde = JsonPlusSerializer()
    blob = serde.dumps_typed(history)
    first = wm.build_context(serde.loads_typed(blob), CFG)
    for _ in range(3):  # a checkpointer hands back new message objects every invocation
        again = wm.build_context(serde.loads_typed(blob), CFG)
        assert again.tokens == first.tokens
        assert [m.id for m in again.messages] == [m.id for m in first.messages]
    for i in (0, 17, 29):
        assert counter.calls_mentioning(f"unique-{i}") == 1
        assert counter.calls_mentioning(f"contents of m{i} ") == 1


def test_after_turn_counts_feed_assemble_and_new_messages_are_counted_once():
    counter = _Recording()
    wm = _memory(counter)
    history = _history(5)
    meta = wm.after_turn({"messages": history}, CFG)["working_memory"]
    wm.build_context(history, CFG)
    assert counter.calls_mentioning("unique-3") == 1
    grown = [*history, *_history(6)[-4:]]
    wm.after_turn({"messages": grown, "working_memory": meta}, CFG)
    wm.build_context(grown, CFG)
    wm.build_context(grown, CFG)
    assert counter.calls_mentioning("unique-5") == 1
    assert counter.calls_mentioning("unique-3") == 1


def test_build_context_tokens_equal_an_uncached_count_of_what_it_returns(memory):
    wm = memory(ScriptedChatModel(replies=["unused"]), config=WorkingMemoryConfig())
    history = _history(20)
    wm.build_context(history, CFG)
    context = wm.build_context(history, CFG)
    assert context.tokens == sum(message_tokens(m) for m in context.all_messages)


def _variants() -> list[BaseMessage]:
    """Messages sharing one id whose renderings differ in exactly one field each."""
    call = {"name": "grep", "args": {"q": "x"}, "id": "c1"}
    return [
        HumanMessage("hello there", id="same"),
        HumanMessage("hello there, a longer text this time", id="same"),
        HumanMessage([{"type": "text", "text": "block text that is rather long"}], id="same"),
        HumanMessage([{"type": "image_url", "image_url": {"url": "x"}}], id="same"),
        HumanMessage("hello there", name="a_rather_long_author_name_x", id="same"),
        ChatMessage("hello there", role="mod", id="same"),
        ChatMessage("hello there", role="moderator-with-a-much-longer-role", id="same"),
        AIMessage("", tool_calls=[call], id="same"),
        AIMessage("", tool_calls=[{**call, "args": {"q": "a much longer query"}}], id="same"),
        AIMessage("", tool_calls=[{**call, "name": "a_long_tool_name_here"}], id="same"),
        AIMessage("", tool_calls=[{**call, "id": "c1-with-a-longer-id-too"}], id="same"),
        AIMessage(
            "",
            invalid_tool_calls=[
                {"name": "grep", "args": "{broken", "id": "c9", "error": "bad json"}
            ],
            id="same",
        ),
        AIMessage(
            "",
            additional_kwargs={"function_call": {"name": "legacy_fn", "arguments": "{}"}},
            id="same",
        ),
        ToolMessage("out", tool_call_id="c1", id="same"),
        ToolMessage("out", tool_call_id="c1", name="named_tool_result", id="same"),
        ToolMessage("out", tool_call_id="c1", status="error", id="same"),
        ToolMessage("out", tool_call_id="c1-with-a-longer-id", id="same"),
        ToolMessage("a longer output of the tool", tool_call_id="c1", id="same"),
    ]


def test_a_changed_message_with_the_same_id_is_counted_afresh():
    variants = _variants()
    truth = [_count(m) for m in variants]
    assert len(set(truth)) == len(truth)  # every edit changes the count
    cache = MessageTokenCache(_count)
    for _ in range(2):
        assert [cache(m) for m in variants] == truth


def test_uncacheable_content_is_counted_every_time():
    calls: list[BaseMessage] = []

    def count(message: BaseMessage) -> int:
        calls.append(message)
        return _count(message)

    cache = MessageTokenCache(count)
    odd = HumanMessage([{"type": "text", "text": "hi", (1, 2): "tuple key"}], id="odd")
    assert cache(odd) == cache(odd) == _count(odd)
    assert len(calls) == 2
    assert len(cache) == 0


def test_the_cache_is_bounded_and_stays_correct_after_eviction():
    calls: list[Any] = []

    def count(message: BaseMessage) -> int:
        calls.append(message.id)
        return _count(message)

    cache = MessageTokenCache(count, max_entries=10)
    messages = [HumanMessage("x" * i, id=f"m{i}") for i in range(1, 26)]
    assert [cache(m) for m in messages] == [_count(m) for m in messages]
    assert len(cache) <= 10
    assert cache(messages[-1]) == _count(messages[-1])
    assert calls.count("m25") == 1  # the newest entries stay
    assert cache(messages[0]) == _count(messages[0])
    assert calls.count("m1") == 2  # the oldest went
    with pytest.raises(ValueError, match="max_entries"):
        MessageTokenCache(count, max_entries=0)


def test_assemble_counts_each_message_once():
    counted: Counter[str | None] = Counter()

    def count(message: BaseMessage) -> int:
        counted[message.id] += 1
        return _count(message)

    live = _history(10)
    context = assemble_context(
        system_message=None,
        working_memory="",
        pending_messages=[],
        live_messages=live,
        token_budget=100_000,
        reserve_tokens=0,
        archive_memory_tokens=0,
        count=count,
    )
    assert context.messages == live
    assert context.tokens == sum(_count(m) for m in live)
    assert all(counted[m.id] == 1 for m in live)
