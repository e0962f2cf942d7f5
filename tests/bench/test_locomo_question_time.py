"""Question time in the LoCoMo bench (bench/locomo): the input each system builds when a
question is the user's turn, built without writing anything; and the peer trimming +
retrieval (bench/locomo/retrieval.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if not (ROOT / "bench" / "locomo" / "retrieval.py").exists():
    pytest.skip("bench/locomo is not in this checkout", allow_module_level=True)
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after site-packages: the installed wm_langgraph stays first

from langchain.agents import create_agent  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402

from bench.locomo.data import parse_sample, synthetic_sample  # noqa: E402
from bench.locomo.retrieval import (  # noqa: E402
    HEADER,
    TrimRetrieveMiddleware,
    retrieval_available,
)
from bench.locomo.run import asked_text, choose_slices  # noqa: E402
from bench.locomo.systems import (  # noqa: E402
    QUESTION_ID,
    SYSTEMS,
    build_system,
    langmem_available,
    messages_tokens,
    usable_tokens,
)
from wm_langgraph.testing import ScriptedChatModel  # noqa: E402

BUDGET = 1_500
NEEDS_BM25 = pytest.mark.skipif(
    not retrieval_available(), reason="langchain-community / rank_bm25 not installed ([bench])"
)


def _available(system: str) -> bool:
    if system == "langmem":
        return langmem_available()
    if system == "trimming_retrieval":
        return retrieval_available()
    return system != "wm_langgraph_minilm"  # the [embed] extra: same input as wm_langgraph


PLAYED = [s for s in SYSTEMS if _available(s)]


class _Writes:
    """Records every write a store or a checkpointer receives."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def watch_saver(self, saver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        for name in ("put", "put_writes", "delete_thread", "aput", "aput_writes"):
            original = getattr(saver, name)

            def spy(*args: Any, _name: str = name, _original: Any = original, **kw: Any) -> Any:
                self.seen.append(f"checkpointer.{_name}")
                return _original(*args, **kw)

            monkeypatch.setattr(saver, name, spy)

    def watch_store(self, store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        from langgraph.store.base import PutOp

        kind = type(store)  # its instances' attributes are read-only: patch the class
        original, aoriginal = kind.batch, kind.abatch

        def note(target: Any, ops: list[Any]) -> None:
            if target is store:  # puts and deletes (a delete is a PutOp without a value)
                self.seen += [
                    f"store {op.namespace} {op.key}" for op in ops if isinstance(op, PutOp)
                ]

        def batch(target: Any, ops: Any) -> Any:
            ops = list(ops)
            note(target, ops)
            return original(target, ops)

        async def abatch(target: Any, ops: Any) -> Any:
            ops = list(ops)
            note(target, ops)
            return await aoriginal(target, ops)

        monkeypatch.setattr(kind, "batch", batch)
        monkeypatch.setattr(kind, "abatch", abatch)


def _played(system: str) -> Any:
    conversation = parse_sample(synthetic_sample())
    run = build_system(system, conversation, BUDGET, None)
    for exchange in conversation.exchanges:
        run.play(exchange)
    return conversation, run


def _snapshot(run: Any) -> list[tuple[str, str | None, str]]:
    values = run.graph.get_state(run.config).values
    return [(type(m).__name__, m.id, m.text) for m in values["messages"]]


def _store_items(store: Any) -> list[tuple[tuple[str, ...], str, str]]:
    items = store.search((), limit=100_000)
    return sorted((tuple(i.namespace), i.key, repr(i.value)) for i in items)


@pytest.mark.slow
@pytest.mark.parametrize("system", PLAYED)
def test_the_input_when_asked_is_built_without_writing_anything(system, monkeypatch):
    conversation, run = _played(system)
    before = _snapshot(run)
    store = run.extra.get("store")
    items = _store_items(store) if store is not None else []
    writes = _Writes()
    writes.watch_saver(run.extra["saver"], monkeypatch)
    if store is not None:
        writes.watch_store(store, monkeypatch)
    asked = run.asker()
    inputs = [asked(q.question) for q in conversation.questions]
    assert writes.seen == []
    assert _snapshot(run) == before  # the thread's state is what the replay left
    if store is not None:
        assert _store_items(store) == items
    for q, messages in zip(conversation.questions, inputs, strict=True):
        assert messages[-1].id == QUESTION_ID  # the question is the user's turn
        assert messages[-1].text == q.question
        if system in ("trimming", "trimming_retrieval", "wm_langgraph"):  # bounded by design
            assert messages_tokens(messages) <= usable_tokens(BUDGET), system
    # asked twice, the same input: nothing the first call did changed the second
    assert [m.text for m in asked(conversation.questions[0].question)] == [
        m.text for m in inputs[0]
    ]
    # the spies see a real turn's writes
    for i in range(3):  # turns that outgrow the budget: the memory commits
        run.agent.set_reply("fine " * 200, f"reply-after-{i}")
        run.graph.invoke({"messages": [HumanMessage("so " * 600, id=f"after-{i}")]}, run.config)
    assert any(w.startswith("checkpointer.") for w in writes.seen)
    if system == "wm_langgraph":
        assert any(w.startswith("store ") for w in writes.seen)


@pytest.mark.slow
def test_full_is_the_whole_history_and_the_question():
    conversation, run = _played("full")
    history = run.graph.get_state(run.config).values["messages"]
    question = conversation.questions[0].question
    assert [m.text for m in run.asker()(question)] == [*(m.text for m in history), question]


def test_the_question_itself_never_counts_as_its_answer():
    question = "What did Avery paint last week?"
    messages = [
        HumanMessage("Avery painted a lighthouse."),
        SystemMessage(f"recalled for: {question}"),
        HumanMessage(question),
    ]
    text = asked_text(messages, question)
    assert question not in text
    assert "lighthouse" in text
    assert "recalled for:" in text


# ------------------------------------------------------------------------------------------
# trimming + retrieval


def _history(texts: list[str]) -> list[BaseMessage]:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(t, id=f"m{i}") for i, t in enumerate(texts)]


@NEEDS_BM25
def test_hits_come_before_the_kept_messages_best_first():
    filler = [f"we talked about the weather and lunch number {i} today" for i in range(40)]
    texts = ["my sister Juniper adopted a greyhound named Pixel", *filler]
    texts[7] = "Pixel the greyhound chewed my running shoes"
    history = [*_history(texts), HumanMessage("how is Pixel the greyhound doing", id="q")]
    peer = TrimRetrieveMiddleware(usable=300, slice_tokens=90, count=messages_tokens)
    out = peer.messages_for(history)
    block, kept = out[0], out[1:]
    assert isinstance(block, SystemMessage)
    assert block.text.startswith(HEADER)
    assert kept == history[len(history) - len(kept) :]  # trimming's newest messages, in order
    assert kept[-1].id == "q"
    lines = [line.split("] ", 1)[1] for line in block.text.split("\n\n")[1:]]
    assert set(lines[:2]) == {texts[0], texts[7]}  # the best hits first
    assert len(set(lines)) == len(lines)
    assert messages_tokens([block]) <= 90
    assert messages_tokens(out) <= 300


@NEEDS_BM25
def test_nothing_is_retrieved_when_nothing_was_dropped_or_nothing_matches():
    peer = TrimRetrieveMiddleware(usable=10_000, slice_tokens=2_000, count=messages_tokens)
    history = [*_history(["hello there", "hi"]), HumanMessage("and Pixel?", id="q")]
    assert peer.messages_for(history) == history
    small = TrimRetrieveMiddleware(usable=40, slice_tokens=10, count=messages_tokens)
    long = [*_history(["zzz qqq"] * 20), HumanMessage("Pixel", id="q")]
    out = small.messages_for(long)
    assert not any(isinstance(m, SystemMessage) for m in out)


WORDS = st.sampled_from(["pixel", "greyhound", "lunch", "rain", "paint", "lake", "2023", "May"])


@NEEDS_BM25
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(st.lists(WORDS, min_size=1, max_size=30).map(" ".join), max_size=30),
    query=st.lists(WORDS, min_size=1, max_size=5).map(" ".join),
    usable=st.integers(min_value=20, max_value=600),
    share=st.sampled_from([0.15, 0.25, 0.5]),
    system=st.booleans(),
)
def test_the_input_never_exceeds_usable_and_the_block_its_slice(
    texts, query, usable, share, system
):
    peer = TrimRetrieveMiddleware(usable, int(usable * share), messages_tokens)
    history = [*_history(texts), HumanMessage(query, id="q")]
    prompt = SystemMessage("You are helpful.") if system else None
    merged, kept = peer.model_input(history, prompt)
    whole = ([merged] if merged is not None else []) + kept
    assert messages_tokens(whole) <= max(usable, messages_tokens([prompt] if prompt else []))
    assert kept == history[len(history) - len(kept) :]
    if merged is not None and merged is not prompt:
        block = merged.text.split(f"{prompt.text}\n\n", 1)[-1] if prompt else merged.text
        assert block.startswith(HEADER)
        assert messages_tokens([SystemMessage(block)]) <= int(usable * share)
        shown = {line.split("] ", 1)[1] for line in block.split("\n\n")[1:]}
        dropped = {m.text for m in history[: len(history) - len(kept)]}
        assert shown <= dropped  # hits are messages trimming left out


@NEEDS_BM25
def test_on_create_agent_the_model_gets_the_block_first_and_at_most_usable():
    seen: list[list[BaseMessage]] = []

    def respond(messages: list[BaseMessage], tools: Any, tool_choice: Any) -> AIMessage:
        seen.append(list(messages))
        return AIMessage("ok")

    model = ScriptedChatModel(respond=respond, record_calls=False)
    peer = TrimRetrieveMiddleware(usable=200, slice_tokens=60, count=messages_tokens)
    agent = create_agent(
        model, [], middleware=[peer], checkpointer=InMemorySaver(), system_prompt="Be brief."
    )
    config: Any = {"configurable": {"thread_id": "t"}}
    agent.invoke({"messages": [HumanMessage("my greyhound is called Pixel")]}, config)
    for i in range(15):
        agent.invoke({"messages": [HumanMessage(f"more talk about lunch and rain {i}")]}, config)
    agent.invoke({"messages": [HumanMessage("what is my greyhound called")]}, config)
    last = seen[-1]
    assert isinstance(last[0], SystemMessage)
    assert last[0].text.startswith("Be brief.\n\n" + HEADER)
    assert "Pixel" in last[0].text
    assert all(not isinstance(m, SystemMessage) for m in last[1:])
    assert all(messages_tokens(call) <= 200 for call in seen)
    state = agent.get_state(config).values["messages"]
    assert len(state) == 34  # the state keeps every message; only the request is trimmed


def test_the_slice_with_most_answerable_questions_wins_ties_by_coverage_then_smaller():
    def run(budget: int, share: float, asked: list[bool], covered: list[bool]) -> dict[str, Any]:
        qs = [{"asked": a, "covered": c} for a, c in zip(asked, covered, strict=True)]
        return {"budget": budget, "slice": share, "questions": qs}

    runs = [
        run(4000, 0.15, [True, False], [True, False]),
        run(4000, 0.25, [True, True], [False, False]),
        run(4000, 0.50, [True, False], [True, True]),
        run(8000, 0.15, [True, False], [False, False]),
        run(8000, 0.25, [True, False], [True, False]),
        run(8000, 0.50, [True, False], [True, False]),
    ]
    assert choose_slices(runs, [4000, 8000]) == {4000: 0.25, 8000: 0.25}


# ------------------------------------------------------------------------------------------
# the recall step's latency (bench/recall_step.py)


def test_the_recall_step_is_timed_on_a_thread_of_that_many_archives():
    from bench.recall_step import QUESTIONS, recall_step_latency

    seen: list[tuple[int, str]] = []

    def step(memory: Any, config: Any, query: str) -> object:
        seen.append((len(memory.recall_corpus(config).indexes), query))
        return None

    timing = recall_step_latency(12, rounds=2, step=step)
    assert {n for n, _ in seen} == {12}
    assert [q for _, q in seen[len(QUESTIONS) :]] == [
        QUESTIONS[(i + r) % len(QUESTIONS)] for r in range(2) for i in range(len(QUESTIONS))
    ]
    figures = timing.figures()
    assert figures["calls"] == 2 * len(QUESTIONS) == len(timing.cpu_milliseconds)
    assert figures["step"] == "step"
    assert figures["p50"] <= figures["p95"]


def test_the_default_recall_step_ranks_the_thread_s_archives():
    from langgraph.store.memory import InMemoryStore

    from bench.recall_step import keyword_rank, thread_of_archives
    from wm_langgraph import WorkingMemory

    memory = WorkingMemory(store=InMemoryStore())
    config: Any = {"configurable": {"thread_id": "t"}}
    thread_of_archives(memory, "t", 5, messages=4)
    assert len(memory.list_archives(config)) == 5
    hits = keyword_rank(memory, config, "lake camping")
    assert isinstance(hits, list)
    assert hits
    assert all(h.archive_id is None or h.archive_id.startswith("archive_") for h in hits)
