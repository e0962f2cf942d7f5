"""The shared scripted fake model behaves as the other tests rely on."""

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from tests.fakes import ScriptedChatModel, tool_reply


def test_replies_in_order_with_fresh_messages_and_records_calls():
    model = ScriptedChatModel(replies=["one", AIMessage("two")])
    first = model.invoke([HumanMessage("hi")])
    second = model.invoke("again")
    assert (first.content, second.content) == ("one", "two")
    assert first.id != second.id
    assert [c.prompt_text for c in model.calls] == ["hi", "again"]
    with pytest.raises(AssertionError, match="ran out"):
        model.invoke("third")


def test_bind_tools_records_tools_and_choice_and_tool_call_ids_are_fresh():
    def search(q: str) -> str:
        """Search."""
        return q

    model = ScriptedChatModel(replies=[tool_reply("search", {"q": "x"})], repeat_last=True)
    bound = model.bind_tools([search], tool_choice="search")
    a = bound.invoke("go")
    b = bound.invoke("go")
    assert model.bound[0]["tool_choice"] == "search"
    assert model.bound[0]["tools"][0]["function"]["name"] == "search"
    assert model.calls[0].tool_choice == "search"
    assert a.tool_calls[0]["args"] == {"q": "x"}
    assert a.tool_calls[0]["id"] != b.tool_calls[0]["id"]


def test_callable_script_and_raising():
    model = ScriptedChatModel(replies=lambda messages, tools, choice: f"{len(messages)} {tools}")
    assert model.invoke("x").content == "1 None"
    failing = ScriptedChatModel(replies=[RuntimeError("down")])
    with pytest.raises(RuntimeError, match="down"):
        failing.invoke("x")
    assert isinstance(failing.calls[0].error, RuntimeError)


def test_async_invoke_uses_the_same_script():
    model = ScriptedChatModel(replies=["a"])
    assert asyncio.run(model.ainvoke("x")).content == "a"
