"""The budget is one accounting (behaviour §7.4, docs/budgets.md): the public counter
(``WorkingMemory.count_tokens``), ``pending_tokens`` and assemble count every message alike, and
no model input is over ``usable`` by the memory's own count, on every call of random sessions
(tool calls and their arguments, content blocks with images and reasoning, names, system
prompts and notes, tool artifacts, forks and time travel) on the three paths."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.tools import tool
from langgraph.store.memory import InMemoryStore

from tests.engine._paths import PATHS, Driver, make
from tests.engine._support import WMWriter, user
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.context.assemble import FILL_HEADER, SUMMARY_HEADER, compute_budgets
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.phase1.window import conversation, pending_tokens_of
from wm_langgraph.testing import ScriptedChatModel
from wm_langgraph.writer.prompts import load_prompt

ADDITION = load_prompt("system")
WORDS = [
    "billing",
    "schema",
    "tenant",
    "migration",
    "index",
    "réunion",
    "東京",
    "café",
    "rollout",
    "v1.2",
    "src/app.py",
]


def _words(seed: int, n: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


@tool(response_format="content_and_artifact")
def fetch(path: str, size: int) -> tuple[str, dict[str, Any]]:
    """Fetch a path; the raw bytes come back as an artifact (never sent to the model)."""
    return f"contents of {path}: {_words(size, size)}", {"raw": "x" * 2_000, "path": path}


# ------------------------------------------------------------------------------ sessions


@st.composite
def _turn(draw: Any) -> dict[str, Any]:
    return {
        "words": draw(st.sampled_from([3, 30, 120])),
        "blocks": draw(st.sampled_from(["text", "blocks", "image"])),
        "name": draw(st.sampled_from([None, "ana", "ops_bot"])),
        "note": draw(st.booleans()) and draw(st.booleans()),
        "calls": draw(st.lists(st.sampled_from([5, 60, 400, 3_000]), max_size=3)),
        "answer": draw(st.sampled_from(["plain", "blocks", "reasoning"])),
        "answer_words": draw(st.sampled_from([2, 40])),
        "fork": draw(st.sampled_from([None, None, None, "back", "edit"])),
    }


@st.composite
def sessions(draw: Any) -> dict[str, Any]:
    return {
        "budget": draw(st.sampled_from([1_500, 3_000, 6_000])),
        "keep": draw(st.sampled_from([0, 2, 4])),
        "ratio": draw(st.sampled_from([0.0, 0.1, 0.5])),
        "archive": draw(st.sampled_from([200, 1_000])),
        "system": draw(st.sampled_from([None, "You are careful. " * 8])),
        "turns": draw(st.lists(_turn(), min_size=4, max_size=14)),
    }


def _user(i: int, spec: dict[str, Any]) -> HumanMessage:
    text = f"turn {i}: {_words(i, spec['words'])}"
    content: Any = text
    if spec["blocks"] != "text":
        content = [{"type": "text", "text": text}]
        if spec["blocks"] == "image":
            content.append({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}})
    return HumanMessage(content, name=spec["name"], id=f"u{i}")


def _agent(script: dict[str, Any]) -> ScriptedChatModel:
    """Replies from the current turn's spec: its tool calls first (when it has any), then the
    answer in the spec's shape."""

    def reply(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> Any:
        i, spec = script["turn"], script["spec"]
        step = script["step"]
        script["step"] += 1
        if step == 0 and spec["calls"]:
            calls = [
                {"name": "fetch", "args": {"path": f"src/m{i}_{k}.py", "size": size}}
                for k, size in enumerate(spec["calls"])
            ]
            return {"content": [{"type": "text", "text": "checking"}], "tool_calls": calls}
        text = f"answer {i}: {_words(-i, spec['answer_words'])}"
        if spec["answer"] == "blocks":
            return {"content": [{"type": "text", "text": text}]}
        if spec["answer"] == "reasoning":
            thought = {"type": "reasoning", "reasoning": _words(i + 7, 20)}
            return {"content": [thought, {"type": "text", "text": text}]}
        return text

    return ScriptedChatModel(respond=reply)


def _usable(config: WorkingMemoryConfig) -> int:
    return compute_budgets(
        config.tokens, config.reserve_tokens, config.archive_memory_tokens
    ).usable


def _check_accounting(driver: Driver, cfg: dict[str, Any]) -> None:
    """``pending_tokens`` and the recent window are what the public counter gives."""
    values = driver.values(cfg)
    meta = values.get("working_memory")
    if not meta:
        return
    live = list(values["messages"])
    keep = int(meta["keep_recent_count"])
    assert meta["pending_tokens"] == pending_tokens_of(
        live, keep, lambda m: driver.wm.count_tokens([m])
    )
    window = conversation(live)[max(0, len(conversation(live)) - keep) :]
    assert [int(t) for _, t in meta["window"]] == [driver.wm.count_tokens([m]) for m in window]


def _play(kind: str, session: dict[str, Any]) -> tuple[Driver, int]:
    config = WorkingMemoryConfig(
        token_budget=session["budget"],
        commit_keep_recent_count=session["keep"],
        commit_token_threshold_ratio=session["ratio"],
        archive_memory_tokens=session["archive"],
        background=False,
    )
    usable = _usable(config)
    script: dict[str, Any] = {"turn": 0, "step": 0, "spec": None}
    driver = make(kind, config, model=_agent(script), tools=[fetch], tolerant=True)
    cfg: dict[str, Any] = {"configurable": {"thread_id": f"acct-{kind}"}}
    ends: list[dict[str, Any]] = []  # the config of each turn's end: where a fork goes back to
    for i, spec in enumerate(session["turns"], start=1):
        script.update(turn=i, step=0, spec=spec)
        messages: list[BaseMessage] = [_user(i, spec)]
        if spec["note"]:
            messages.insert(0, SystemMessage(f"note {i}: {_words(i, 10)}", id=f"n{i}"))
        if i == 1 and session["system"]:
            messages.insert(0, SystemMessage(session["system"], id="sys"))
        target = cfg
        if spec["fork"] == "back" and ends:
            target = ends[len(ends) // 2]  # time travel: continue from an earlier checkpoint
        elif spec["fork"] == "edit" and ends:
            live = [m for m in driver.live(cfg) if isinstance(m, HumanMessage)]
            if live:
                edited = HumanMessage(f"edited: {_words(i + 99, 40)}", id=live[0].id)
                target = driver.graph.update_state(
                    ends[-1], {"messages": [edited]}, as_node=driver.last_node
                )
        driver.invoke(messages, target)
        ends.append(driver.graph.get_state(cfg).config)
        _check_accounting(driver, cfg)
    return driver, usable


def _sizes(driver: Driver) -> list[int]:
    return [driver.wm.count_tokens(prompt) for prompt in driver.prompts()]


def _assert_last_resort(prompt: list[BaseMessage], what: str) -> None:
    """Over ``usable`` only as the documented last resort (behaviour §7.4): the newest turn
    alone, with every tool result cut to its marker, and nothing of the memory's own."""
    system = prompt[0] if isinstance(prompt[0], SystemMessage) else None
    rest = prompt[1:] if system is not None else prompt
    assert system is None or ADDITION not in system.text, what
    assert not any(m.text.startswith((SUMMARY_HEADER, FILL_HEADER)) for m in rest), what
    assert [i for i, m in enumerate(rest) if isinstance(m, HumanMessage)] == [0], what
    tools = [m for m in rest if isinstance(m, ToolMessage)]
    assert tools, what
    assert all("characters truncated" in m.text for m in tools), what


@pytest.mark.parametrize("kind", PATHS)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(session=sessions())
def test_no_model_input_is_over_usable_by_the_memorys_own_count(
    kind: str, session: dict[str, Any]
) -> None:
    driver, usable = _play(kind, session)
    prompts = driver.prompts()
    assert prompts
    for n, (prompt, size) in enumerate(zip(prompts, _sizes(driver), strict=True)):
        if size > usable:
            _assert_last_resort(prompt, f"{kind} call {n}: {size} > usable {usable}")


def _spec(**changes: Any) -> dict[str, Any]:
    plain = {"words": 3, "blocks": "text", "name": None, "note": False, "calls": []}
    return {**plain, "answer": "plain", "answer_words": 2, "fork": None, **changes}


@pytest.mark.parametrize("kind", PATHS)
def test_a_working_memory_without_room_takes_the_addition_along(kind: str) -> None:
    """Found by the property above: a newest turn with an image left no room for the Working
    Memory, yet the system-prompt addition that explains it stayed, and the turn's tool
    results were cut to their markers and still went over ``usable`` (1,299 > 1,275)."""
    session = {
        "budget": 1_500,
        "keep": 0,
        "ratio": 0.0,
        "archive": 200,
        "system": None,
        "turns": [
            _spec(calls=[5, 5, 5]),
            _spec(words=120, blocks="image", calls=[5, 5]),
            _spec(),
            _spec(),
        ],
    }
    driver, usable = _play(kind, session)
    assert max(_sizes(driver)) <= usable
    crowded = driver.prompts()[3]  # the image turn after its tool calls
    assert not any(m.text.startswith(SUMMARY_HEADER) for m in crowded)
    assert not any(ADDITION in m.text for m in crowded)
    assert not any("characters truncated" in m.text for m in crowded)  # room for the outputs


# ------------------------------------------------------------------- the reported session


@pytest.mark.parametrize("kind", PATHS)
def test_the_reported_40_turn_session_stays_inside_budget_minus_reserve(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reported session: 40 scripted turns, ``token_budget=6000``, ``reserve_tokens=1000``,
    ``commit_keep_recent_count=4``, ``archive_memory_tokens=2000``, ``background=False``. An
    explicit ``reserve_tokens`` is honoured below 40,000 tokens too (the reserve is the larger
    of it and 15%), so ``usable`` is 5,000 and every input the model got counts at most that,
    by the public counter and by assemble's own total alike (it once was 5,028: the reserve was
    ignored and ``usable`` was 5,100)."""
    import wm_langgraph.memory as memory_module

    config = WorkingMemoryConfig(
        token_budget=6_000,
        reserve_tokens=1_000,
        commit_keep_recent_count=4,
        archive_memory_tokens=2_000,
        background=False,
    )
    assert _usable(config) == 5_000
    totals: list[int] = []
    assemble = memory_module.assemble_context

    def recording(**kwargs: Any) -> Any:
        context = assemble(**kwargs)
        totals.append(context.tokens)
        return context

    monkeypatch.setattr(memory_module, "assemble_context", recording)
    script: dict[str, Any] = {"turn": 0, "step": 0, "spec": None}
    driver = make(kind, config, model=_agent(script), tools=[fetch])
    memory = driver.wm
    cfg: dict[str, Any] = {"configurable": {"thread_id": "reported"}}
    for i in range(1, 41):
        spec = {"calls": [60 * (i % 4)] if i % 3 == 0 else [], "answer": "plain"}
        script.update(turn=i, step=0, spec={**spec, "answer_words": 30})
        driver.invoke([HumanMessage(f"{user(i).text} {_words(i, 60)}")], cfg)
    sizes = [memory.count_tokens(p) for p in driver.prompts()]
    assert max(sizes) <= 6_000 - 1_000
    assert max(sizes) > 4_900  # the input fills usable, as the reported one did
    assert len(memory.list_archives(cfg)) >= 2  # the memory was at work
    assert totals == sizes


def test_tool_messages_and_their_artifacts_count_as_a_provider_is_sent_them() -> None:
    """An artifact stays in the state and is never sent: it costs nothing; the tool's name,
    call id and output do."""
    memory = WorkingMemory(WMWriter().model, store=InMemoryStore())
    plain = ToolMessage("output", tool_call_id="c1", name="fetch")
    with_artifact = ToolMessage("output", tool_call_id="c1", name="fetch", artifact={"x": 1})
    assert memory.count_tokens([with_artifact]) == memory.count_tokens([plain])
    path = _words(3, 100)
    call = AIMessage("", tool_calls=[{"name": "fetch", "args": {"path": path}, "id": "c1"}])
    assert memory.count_tokens([call]) > memory.count_tokens([AIMessage("")]) + 90
