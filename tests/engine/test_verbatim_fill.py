"""The verbatim fill (behaviour §7.4): the room the layers leave inside ``usable`` holds the
newest already-folded messages word for word, on every integration path, with forks, edits and
removals; the input never exceeds ``usable``; assemble reads no archive twice."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import GetOp, Op, Result
from langgraph.store.memory import InMemoryStore

from tests.engine._paths import PATHS, Driver, make
from tests.engine._support import FACT_RE, WMWriter, agent_model, build_agent, user
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import (
    FILL_HEADER,
    SUMMARY_HEADER,
    assemble_context,
    compute_budgets,
    fill_marker,
)
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.messages import message_tokens

CONFIG = WorkingMemoryConfig(
    token_budget=3_000,
    commit_token_threshold_ratio=0.1,  # a commit every few turns
    commit_keep_recent_count=2,
    background=False,
)
USABLE = compute_budgets(3_000, CONFIG.reserve_tokens, CONFIG.archive_memory_tokens).usable


def _msg(i: int) -> HumanMessage:
    # long enough that a few dozen turns outgrow usable: while the whole history fits, it is
    # the input and there is nothing to fill (tests/engine/test_history_fits.py)
    text = f"{user(i).text} " + "context " * 60
    return HumanMessage(text, id=f"m-{i}")


def _fill_of(prompt: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The fill's messages (after the marker, before the first pending/live message)."""
    marks = [i for i, m in enumerate(prompt) if m.text.startswith(FILL_HEADER)]
    assert len(marks) <= 1
    return list(prompt[marks[0] + 1 :]) if marks else []


def _check_shape(prompt: Sequence[BaseMessage]) -> None:
    """No tool result without its call before it, no call without all its results after it."""
    called: set[str] = set()
    answered = {m.tool_call_id for m in prompt if isinstance(m, ToolMessage)}
    for message in prompt:
        if isinstance(message, AIMessage):
            ids = {str(c["id"]) for c in message.tool_calls}
            assert ids <= answered, "a tool call without its result"
            called |= ids
        elif isinstance(message, ToolMessage):
            assert message.tool_call_id in called, "a tool result without its call"
    assert all(not isinstance(m, SystemMessage) for m in prompt[1:])


def _run(driver: Driver, cfg: dict[str, Any], turns: Iterable[int]) -> None:
    for i in turns:
        driver.invoke([_msg(i)], cfg)


@pytest.mark.parametrize("kind", PATHS)
def test_the_input_fills_its_budget_with_the_newest_folded_turns(kind: str) -> None:
    driver = make(kind, CONFIG, tool_every=3)
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"fill-{kind}"}}
    _run(driver, cfg, range(1, 31))
    archives = driver.wm.list_archives(cfg)
    assert sum(a.status == "done" for a in archives) >= 3
    prompt = driver.prompts()[-1]
    assert driver.wm.count_tokens(prompt) <= USABLE
    fill = _fill_of(prompt)
    assert fill, "no verbatim fill although the budget had room"
    assert isinstance(fill[0], HumanMessage)
    _check_shape(prompt)
    # The fill is the newest archived history, in order, right before the live messages.
    shown = [
        int(f[5:]) for m in prompt for f in FACT_RE.findall(m.text) if isinstance(m, HumanMessage)
    ]
    newest = max(int(f[5:]) for a in archives for m in a.messages for f in FACT_RE.findall(m.text))
    assert newest in shown
    assert sorted(set(shown[-8:])) == list(dict.fromkeys(shown[-8:]))
    # More verbatim history than the live messages alone: at least what trimming minus the WM.
    summary = [m for m in prompt if m.text.startswith(SUMMARY_HEADER)]
    wm_size = driver.wm.count_tokens(summary)
    assert driver.wm.count_tokens(prompt) >= USABLE - wm_size - 700
    # every stored record carries its per-message token counts
    assert all(len(a.message_tokens) == len(a.messages) for a in archives)


@pytest.mark.parametrize("kind", PATHS)
def test_counted_as_a_provider_counts_a_plain_chat_fills_usable_to_within_one_turn(
    kind: str,
) -> None:
    """OpenAI's chat accounting charges a text message its text plus 3 tokens plus 1 for the
    role. Counted that way, the input of a plain chat reaches ``usable`` to within one turn (the
    fill takes whole turns): the memory's own count does not charge the role twice."""
    from wm_langgraph.document import count_tokens

    driver = make(kind, CONFIG)
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"provider-{kind}"}}
    _run(driver, cfg, range(1, 41))
    prompt = driver.prompts()[-1]
    assert _fill_of(prompt), "no verbatim fill although the budget had room"
    provider = sum(count_tokens(m.text) + 4 for m in prompt)
    turn = max(count_tokens(m.text) + 4 for m in prompt[-4:]) * 2
    assert USABLE - turn <= provider <= USABLE
    assert driver.wm.count_tokens(prompt) == provider


@pytest.mark.parametrize("kind", PATHS)
def test_fill_off_leaves_the_room_empty(kind: str) -> None:
    driver = make(kind, CONFIG.replace(verbatim_fill=False))
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"nofill-{kind}"}}
    _run(driver, cfg, range(1, 25))
    assert any(a.status == "done" for a in driver.wm.list_archives(cfg))
    assert not any(_fill_of(p) for p in driver.prompts())


@pytest.mark.parametrize("kind", PATHS)
def test_a_fork_fills_from_its_own_timeline_only(kind: str) -> None:
    driver = make(kind, CONFIG)
    thread = f"fill-fork-{kind}"
    cfg: dict[str, Any] = {"configurable": {"thread_id": thread}}
    checkpoints = []
    for i in range(1, 21):
        driver.invoke([_msg(i)], cfg)
        checkpoints.append(driver.graph.get_state(cfg).config)
    fork_point = checkpoints[7]  # end of turn 8
    # Branch X goes on with its own turns; then the fork (from turn 8) gets turns of its own.
    _run(driver, cfg, range(21, 30))
    edited = HumanMessage("turn 1 (edited): remember FACT-901 instead", id="m-1")
    fork = driver.graph.update_state(fork_point, {"messages": [edited]}, as_node=driver.last_node)
    driver.invoke([HumanMessage("fork turn: remember FACT-800", id="f-800")], fork)
    for n in range(801, 815):
        driver.invoke(
            [HumanMessage(f"fork turn: remember FACT-{n} " + "x " * 120, id=f"f-{n}")], cfg
        )
    assert any(a.status == "done" for a in driver.wm.list_archives(cfg))
    prompts = driver.prompts()[-15:]
    assert any(_fill_of(p) for p in prompts)
    for prompt in prompts:
        seen = {int(f[5:]) for m in prompt for f in FACT_RE.findall(m.text)}
        assert not seen & set(range(9, 30)), "another branch's turns in the fork's input"
        assert driver.wm.count_tokens(prompt) <= USABLE
        _check_shape(prompt)


@pytest.mark.parametrize("kind", PATHS)
def test_the_fill_never_shows_a_removed_or_edited_away_message(kind: str) -> None:
    driver = make(kind, CONFIG, tolerant=True)
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"fill-rm-{kind}"}}
    _run(driver, cfg, range(1, 16))
    archived = [m for a in driver.wm.list_archives(cfg) for m in a.messages]
    assert archived
    victim = next(m for m in reversed(archived) if isinstance(m, HumanMessage))
    driver.graph.update_state(
        cfg, {"messages": [RemoveMessage(id=str(victim.id))]}, as_node=driver.last_node
    )
    # an edit of a live message: the old text must not come back through the fill either
    live = [m for m in driver.live(cfg) if isinstance(m, HumanMessage)]
    old = live[0]
    driver.graph.update_state(
        cfg,
        {"messages": [HumanMessage("edited: remember FACT-902", id=old.id)]},
        as_node=driver.last_node,
    )
    _run(driver, cfg, range(16, 26))
    for prompt in driver.prompts()[-10:]:
        ids = [m.id for m in prompt]
        assert victim.id not in ids
        texts = " ".join(m.text for m in prompt)
        assert old.text not in texts
        assert driver.wm.count_tokens(prompt) <= USABLE


class CountingStore(InMemoryStore):
    """Counts the archive records read."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        self.reads.extend(
            op.key for op in ops if isinstance(op, GetOp) and op.namespace[-1] == "archives"
        )
        return super().batch(ops)


def test_assemble_does_not_read_every_archive_per_call() -> None:
    store = CountingStore()
    memory = WorkingMemory(WMWriter().model, config=CONFIG, store=store)
    graph = build_agent(memory, agent_model(), checkpointer=InMemorySaver(), store=store)
    cfg: dict[str, Any] = {"configurable": {"thread_id": "reads"}}
    for i in range(1, 61):
        graph.invoke({"messages": [_msg(i)]}, cfg)
    archives = memory.list_archives(cfg)
    assert len(archives) >= 8
    state = graph.get_state(cfg).values
    # A cold reader (another process) reads only the newest records the room reaches.
    cold = WorkingMemory(WMWriter().model, config=CONFIG, store=store)
    store.reads.clear()
    assert _fill_of(cold.build_context(state["messages"], cfg, state=state).all_messages)
    assert 0 < len(store.reads) < len(archives)
    assert archives[0].id not in store.reads
    memory.build_context(state["messages"], cfg, state=state)
    store.reads.clear()
    for _ in range(5):
        context = memory.build_context(state["messages"], cfg, state=state)
    assert _fill_of(context.all_messages)
    assert store.reads == [], "records read again although they are cached"
    # a new commit reads only the new record(s)
    graph.invoke({"messages": [_msg(61)]}, cfg)
    graph.invoke({"messages": [_msg(62)]}, cfg)
    store.reads.clear()
    state = graph.get_state(cfg).values
    memory.build_context(state["messages"], cfg, state=state)
    assert len(store.reads) <= 2


# --------------------------------------------------------------- the budget, as a property


def _count(message: BaseMessage) -> int:
    return message_tokens(message, lambda text: len(text) // 4 + 1)


def _trimmed_total(system: SystemMessage, history: list[BaseMessage], usable: int) -> int:
    """What LangChain's ``trim_messages`` sends of ``history`` at ``usable`` (the bench's
    trimming baseline), counted by ``_count``; ``usable`` when it keeps no user message."""
    trimmed = trim_messages(
        [system, *history],
        strategy="last",
        token_counter=lambda ms: sum(_count(m) for m in ms),
        max_tokens=usable,
        start_on="human",
        include_system=True,
    )
    if not any(isinstance(m, HumanMessage) for m in trimmed):
        return usable
    return sum(_count(m) for m in trimmed)


def _conversation(draw: Any, prefix: str, turns: int) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for t in range(turns):
        out.append(HumanMessage("u " * draw(st.integers(1, 120)), id=f"{prefix}u{t}"))
        if draw(st.booleans()):
            calls = draw(st.integers(1, 3))
            ids = [f"{prefix}c{t}-{k}" for k in range(calls)]
            out.append(
                AIMessage(
                    "",
                    tool_calls=[{"name": "f", "args": {}, "id": i} for i in ids],
                    id=f"{prefix}a{t}",
                )
            )
            out.extend(
                ToolMessage("r " * draw(st.integers(1, 200)), tool_call_id=i, id=f"{prefix}t{i}")
                for i in ids
            )
        out.append(AIMessage("a " * draw(st.integers(1, 80)), id=f"{prefix}f{t}"))
    return out


@st.composite
def _cases(draw: Any) -> dict[str, Any]:
    folded = _conversation(draw, "o", draw(st.integers(0, 12)))
    # the archive split may fall inside a turn (never inside a tool pair)
    live = _conversation(draw, "l", draw(st.integers(1, 5)))
    if draw(st.booleans()) and folded and not isinstance(folded[-1], HumanMessage):
        cut = draw(st.integers(0, len(folded) - 1))
        while cut > 0 and isinstance(folded[cut], ToolMessage):
            cut -= 1
        if cut > 0:
            live = folded[cut:] + live
            folded = folded[:cut]
    return {
        "folded": folded,
        "live": live,
        "budget": draw(st.integers(256, 6_000)),
        "wm": "# Working Memory\n\n## Session Title\nT\n\n## Key Facts & Decisions\n"
        + "\n".join(f"- fact {k} " + "w " * 20 for k in range(draw(st.integers(0, 30)))),
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_the_input_never_exceeds_usable_and_the_fill_is_whole_turns(case: dict[str, Any]) -> None:
    context = assemble_context(
        system_message=SystemMessage("sys"),
        working_memory=case["wm"],
        pending_messages=[],
        live_messages=case["live"],
        token_budget=case["budget"],
        reserve_tokens=0,
        archive_memory_tokens=8_000,
        count=_count,
        system_addition="addition",
        folded_messages=case["folded"],
        folded_sizes=[_count(m) for m in case["folded"]],
    )
    prompt = context.all_messages
    total = sum(_count(m) for m in prompt)
    assert total == context.tokens
    newest_turn = case["live"][
        max(i for i, m in enumerate(case["live"]) if isinstance(m, HumanMessage)) :
    ]
    if sum(_count(m) for m in newest_turn) + _count(prompt[0]) <= context.budgets.usable:
        assert total <= context.budgets.usable
    _check_shape(prompt)
    fill = _fill_of(prompt)
    if fill:
        assert isinstance(fill[0], HumanMessage)
        folded_ids = [m.id for m in case["folded"]]
        n = sum(1 for m in fill if m.id in set(folded_ids))
        # the fill is a contiguous run ending at the newest folded message, then the live ones
        assert [m.id for m in fill[:n]] == folded_ids[len(folded_ids) - n :]
        assert [m.id for m in fill[n:]] == [m.id for m in case["live"]]
    shown = {m.id for m in prompt}
    everything = case["folded"] + case["live"]
    if all(m.id in shown for m in case["live"]):
        # The fill holds the newest whole turns that fit the room the system message, the
        # Working Memory and the marker leave, up to what trimming the history sends
        # (never more than trimming: docs/budgets.md).
        conversation = {x.id for x in everything}
        layers = [
            m for m in prompt if m.id not in conversation and not m.text.startswith(FILL_HEADER)
        ]
        limit = min(
            context.budgets.usable,
            _trimmed_total(SystemMessage("sys"), everything, context.budgets.usable),
        )
        room = limit - _count(fill_marker()) - sum(_count(m) for m in layers)
        total, trimmed = 0, set()
        candidate: set[str | None] = set()
        for message in reversed(everything):
            total += _count(message)
            if total > room:
                break
            candidate.add(message.id)
            if isinstance(message, HumanMessage):
                trimmed = set(candidate)
        assert trimmed <= shown


def test_a_working_memory_too_large_to_show_leaves_its_room_to_the_fill() -> None:
    """Found by the property above: the fill's room assumed the WM shown whole; when not even
    the WM's most reduced form fits, that room was left empty although an older turn fit."""
    folded = [HumanMessage("u ", id="ou0")]
    live: list[BaseMessage] = [
        AIMessage("a ", id="of0"),
        HumanMessage("u ", id="ou1"),
        AIMessage("a ", id="of1"),
        HumanMessage("u ", id="ou2"),
        AIMessage("a ", id="of2"),
        HumanMessage("u " * 35, id="lu0"),
        AIMessage("a " * 124, id="lf0"),  # leaves less room than the WM's most reduced form
    ]
    wm = "# Working Memory\n\n## Session Title\nT\n\n## Key Facts & Decisions\n" + "\n".join(
        f"- fact {k} " + "w " * 20 for k in range(6)
    )
    context = assemble_context(
        system_message=SystemMessage("sys"),
        working_memory=wm,
        pending_messages=[],
        live_messages=live,
        token_budget=256,
        reserve_tokens=0,
        archive_memory_tokens=8_000,
        count=_count,
        system_addition="addition",
        folded_messages=folded,
        folded_sizes=[_count(m) for m in folded],
    )
    assert context.wm_omitted == 0
    assert not any("Working Memory" in m.text for m in context.messages)
    assert [m.id for m in _fill_of(context.all_messages)] == ["ou0", *[m.id for m in live]]
    assert context.tokens <= context.budgets.usable


@pytest.mark.parametrize("kind", PATHS)
def test_the_fill_on_the_async_paths(kind: str) -> None:
    import asyncio

    driver = make(kind, CONFIG, tool_every=4)
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"fill-async-{kind}"}}

    async def play() -> None:
        for i in range(1, 26):
            await driver.graph.ainvoke({"messages": [_msg(i)]}, cfg)

    asyncio.run(play())
    assert any(a.status == "done" for a in driver.wm.list_archives(cfg))
    prompt = driver.prompts()[-1]
    assert _fill_of(prompt)
    assert driver.wm.count_tokens(prompt) <= USABLE
    _check_shape(prompt)


def test_a_middleware_that_changes_the_archived_messages_it_receives_does_not_change_the_cache():
    """The fill's (and the pending layer's) messages come from a per-memory cache of records; a
    middleware inside the memory's (or a model wrapper) that edits them in place must change its
    own model input only, never what later calls are shown."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse

    from wm_langgraph import WorkingMemoryMiddleware

    class Marker(AgentMiddleware[Any, Any, Any]):
        """Marks every archived message it is given (those not in the agent's state)."""

        def wrap_model_call(self, request: ModelRequest[Any], handler: Any) -> ModelResponse[Any]:
            live = {m.id for m in request.state["messages"]}
            for message in request.messages:
                if message.id not in live and isinstance(message.content, str):
                    message.content += " [seen]"
                    message.additional_kwargs["seen"] = message.additional_kwargs.get("seen", 0) + 1
                    message.response_metadata.setdefault("marks", []).append(1)
            return handler(request)

    shown: list[BaseMessage] = []
    model = agent_model()

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        shown.extend(m.model_copy(deep=True) for m in messages)  # as the model saw them
        return f"ack {' '.join(FACT_RE.findall(messages[-1].text))}"

    model.respond = reply
    mw = WorkingMemoryMiddleware(WMWriter().model, config=CONFIG)
    agent = create_agent(
        model, [], middleware=[mw, Marker()], checkpointer=InMemorySaver(), store=InMemoryStore()
    )
    cfg: dict[str, Any] = {"configurable": {"thread_id": "mutating-middleware"}}
    for i in range(1, 25):
        agent.invoke({"messages": [_msg(i)]}, cfg)
    marked = [m for m in shown if "[seen]" in m.text]
    assert marked, "no archived message reached the model"
    assert all(m.text.count("[seen]") == 1 for m in marked)
    assert all(m.additional_kwargs.get("seen") == 1 for m in marked)
    assert all(m.response_metadata.get("marks") == [1] for m in marked)
    state = agent.get_state(cfg).values
    again = mw.memory.build_context(state["messages"], cfg, state=state).all_messages
    assert _fill_of(again)
    assert not any("[seen]" in m.text or "seen" in m.additional_kwargs for m in again)


def test_a_detached_message_shares_no_dict_or_list_with_the_cached_one():
    from wm_langgraph.context.records import detached

    blocks: list[str | dict[Any, Any]] = [{"type": "text", "text": "FACT-001"}]
    cached = [
        HumanMessage(blocks, id="h", additional_kwargs={"a": {"b": [1]}}),
        AIMessage("", id="a", tool_calls=[{"name": "t", "args": {"q": ["x"]}, "id": "c"}]),
        ToolMessage("out", tool_call_id="c", artifact={"k": [1]}),
    ]
    before = [m.model_copy(deep=True) for m in cached]
    for message in (detached(m) for m in cached):
        if isinstance(message.content, list):
            message.content[0]["text"] = "changed"  # type: ignore[index]
            message.content.append("more")
        message.additional_kwargs.setdefault("a", {}).setdefault("b", []).append(2)
        message.response_metadata["x"] = 1
        if isinstance(message, AIMessage):
            message.tool_calls[0]["args"]["q"].append("y")
        if isinstance(message, ToolMessage):
            message.artifact["k"].append(2)
    assert cached == before
    assert [type(detached(m)) for m in cached] == [type(m) for m in cached]
