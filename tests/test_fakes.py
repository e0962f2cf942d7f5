"""``wm_langgraph.testing``: the scripted chat model behaves as the tests, the bench, the demo and
the notebook rely on."""

import asyncio

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from wm_langgraph.testing import OfflineAgentModel, ScriptedChatModel, tool_reply


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
    model = ScriptedChatModel(respond=lambda messages, tools, choice: f"{len(messages)} {tools}")
    assert model.invoke("x").content == "1 None"
    failing = ScriptedChatModel(replies=[RuntimeError("down")])
    with pytest.raises(RuntimeError, match="down"):
        failing.invoke("x")
    assert isinstance(failing.calls[0].error, RuntimeError)


def test_async_invoke_uses_the_same_script():
    model = ScriptedChatModel(replies=["a"])
    assert asyncio.run(model.ainvoke("x")).content == "a"


def test_a_list_then_respond_and_callables_in_the_list():
    model = ScriptedChatModel(
        replies=["first", lambda messages, tools, choice: f"second {tools}"],
        respond=lambda messages, tools, choice: "then always",
    )
    assert [model.invoke("x").text for _ in range(4)] == [
        "first",
        "second None",
        "then always",
        "then always",
    ]


def test_replies_are_fresh_copies_and_keep_ids_keeps_the_scripted_ids():
    scripted = AIMessage(
        "x",
        id="m1",
        tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1"}],
        response_metadata={"finish_reason": "length"},
    )
    fresh = ScriptedChatModel(replies=[scripted]).invoke("go")
    kept = ScriptedChatModel(replies=[scripted], keep_ids=True).invoke("go")
    assert fresh is not scripted
    assert fresh.id != "m1"
    assert fresh.tool_calls[0]["id"] != "c1"
    assert fresh.response_metadata == {"finish_reason": "length"}
    assert (kept.id, kept.tool_calls[0]["id"]) == ("m1", "c1")
    drawn = ScriptedChatModel(replies=[tool_reply("search", {})], keep_ids=True).invoke("go")
    assert drawn.id
    assert drawn.tool_calls[0]["id"]


def test_a_model_without_tool_calling_and_one_picky_about_tool_choice():
    def search(q: str) -> str:
        """Search."""
        return q

    with pytest.raises(NotImplementedError):
        ScriptedChatModel(tool_calling=False).bind_tools([search])
    picky = ScriptedChatModel(accepted_tool_choices=("any",))
    with pytest.raises(ValueError, match="tool_choice"):
        picky.bind_tools([search], tool_choice="search")
    picky.bind_tools([search], tool_choice="any")
    picky.bind_tools([search])
    assert [b["tool_choice"] for b in picky.bound] == ["any", None]


def test_streaming_sends_words_then_tool_calls_when_enabled():
    def search(q: str) -> str:
        """Search."""
        return q

    reply = tool_reply("search", {"q": "x"}, content="looking it up")
    streaming = ScriptedChatModel(replies=[reply], disable_streaming=False)
    chunks = list(streaming.bind_tools([search]).stream("go"))
    assert [c.content for c in chunks if c.content] == ["looking ", "it ", "up"]
    whole = chunks[0]
    for chunk in chunks[1:]:
        whole += chunk
    assert whole.tool_calls[0]["args"] == {"q": "x"}
    assert len(streaming.calls) == 1
    plain = ScriptedChatModel(replies=["looking it up"])
    assert [c.content for c in plain.stream("go")] == ["looking it up"]


def test_an_async_reply_is_awaited_by_ainvoke_and_refused_by_invoke():
    async def later(messages, tools, choice):
        await asyncio.sleep(0)
        return "later"

    model = ScriptedChatModel(respond=later)
    assert asyncio.run(model.ainvoke("x")).content == "later"
    with pytest.raises(TypeError, match="async"):
        model.invoke("x")
    assert isinstance(model.calls[-1].error, TypeError)


def test_record_calls_off_keeps_no_calls():
    model = ScriptedChatModel(replies=["a"], record_calls=False)
    assert model.invoke("x").content == "a"
    assert model.calls == []


def test_offline_agent_model_acknowledges_accepts_tools_and_records_nothing():
    def search(q: str) -> str:
        """Search."""
        return q

    model = OfflineAgentModel()
    bound = model.bind_tools([search])
    assert bound.invoke([HumanMessage("please   fix the build")]).content == (
        "Noted: please fix the build"
    )
    assert model.invoke([]).content == "Noted."
    assert len(model.invoke([HumanMessage("x" * 200)]).content) == len("Noted: ") + 120
    assert model.calls == []
    assert isinstance(model, ScriptedChatModel)
