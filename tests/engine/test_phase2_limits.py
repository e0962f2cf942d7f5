"""Phase 2 limits, unit level: every message kind capped in the writer prompt, an oversized archive
folded in slices, the writer's limits learned from its errors, abandoned calls bounded, and the
settings validated."""

from __future__ import annotations

import threading
from uuid import uuid4

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from tests.common import thread_config
from tests.engine._support import FACT_RE, folded_text
from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.messages import render_messages
from wm_langgraph.phase2.batching import WriterLimits, plan_batch
from wm_langgraph.storage.archives import ArchiveRecord
from wm_langgraph.writer import calls as _calls
from wm_langgraph.writer.provider import ContextOverflow

CONFIG = WorkingMemoryConfig(token_budget=8000, background=False)


@pytest.mark.parametrize(
    "message",
    [
        HumanMessage("HEAD " + "pasted log line\n" * 3000 + " TAIL"),
        AIMessage("HEAD " + "long answer " * 3000 + " TAIL"),
        SystemMessage("HEAD " + "system text " * 3000 + " TAIL"),
        ToolMessage("HEAD " + "tool output " * 3000 + " TAIL", tool_call_id="c1", name="cat"),
    ],
    ids=["user", "assistant", "system", "tool"],
)
def test_every_message_kind_is_capped_in_the_prompt_keeping_both_ends(message):
    text = render_messages([message], max_tool_output_tokens=100, max_message_tokens=100)
    assert "tokens truncated" in text
    assert text.count(" ") < 400
    assert "HEAD" in text
    assert "TAIL" in text


def test_the_writer_sees_a_capped_paste_while_the_archive_keeps_it_verbatim(writer, memory):
    wm = memory(writer.model, config=CONFIG.replace(max_message_tokens=200))
    paste = "FACT-001 " + "ERROR line of the pasted log\n" * 5000 + "FACT-002"
    wm.compact({"messages": [HumanMessage(paste, id="p1")]}, thread_config("paste"))
    (call,) = writer.model.calls
    assert len(folded_text(call.prompt_text)) < 3000
    assert {"FACT-001", "FACT-002"} <= set(FACT_RE.findall(call.prompt_text))
    (archive,) = wm.list_archives(thread_config("paste"))
    assert archive.messages[0].content == paste
    assert archive.status == "done"


def _record(n: int, words: int) -> ArchiveRecord:
    messages = [
        HumanMessage(f"FACT-{n:03d}{k} " + "word " * words, id=f"m{n}-{k}-{uuid4().hex[:4]}")
        for k in range(6)
    ]
    return ArchiveRecord(
        id=f"archive_{n:03d}", seq=n, status="pending", messages=messages, thread_id="t"
    )


def test_an_archive_larger_than_the_budget_is_planned_in_slices_that_each_fit():
    config = WorkingMemoryConfig()
    batch = plan_batch([_record(1, 300), _record(2, 10)], budget=700, config=config, counter=_count)
    assert batch.ids == ["archive_001"]  # alone: the next archive waits for its own round
    assert len(batch.slices) > 1
    assert all(piece.tokens <= 700 for piece in batch.slices)
    joined = "\n\n".join(piece.text for piece in batch.slices)
    assert all(f"FACT-001{k}" in joined for k in range(6))  # every message, in order
    assert joined.index("FACT-0010") < joined.index("FACT-0015")


def test_archives_that_fit_together_are_one_batch_and_max_archives_splits_it():
    config = WorkingMemoryConfig()
    records = [_record(n, 5) for n in range(1, 5)]
    assert plan_batch(records, budget=10_000, config=config, counter=_count).ids == [
        r.id for r in records
    ]
    halved = plan_batch(records, budget=10_000, config=config, counter=_count, max_archives=2)
    assert halved.ids == ["archive_001", "archive_002"]


def test_an_oversized_archive_is_folded_in_slices_into_one_wm_version(writer, memory):
    config = CONFIG.replace(max_prompt_messages_tokens=300)
    wm = memory(writer.model, config=config)
    cfg = thread_config("slices")
    wm.compact({"messages": [HumanMessage("FACT-100 start", id="s0")]}, cfg)
    big = [HumanMessage(f"FACT-2{k:02d} " + "word " * 120, id=f"s{k + 1}") for k in range(8)]
    wm.compact({"messages": big}, cfg)
    updates = writer.model.calls[1:]
    assert len(updates) > 1  # one call per slice
    assert all(len(folded_text(c.prompt_text)) < 3000 for c in updates)
    archives = wm.list_archives(cfg)
    assert [a.status for a in archives] == ["done", "done"]
    assert archives[1].metadata["metrics"]["slices"] == len(updates)
    assert {f"FACT-2{k:02d}" for k in range(8)} <= set(FACT_RE.findall(wm.get_working_memory(cfg)))


def _count(text: str) -> int:
    return max(1, len(text) // 4)


def test_writer_limits_learn_a_smaller_prompt_than_the_one_that_failed():
    limits = WriterLimits()
    assert limits.messages_budget(1000, 100_000) == 100_000
    limits.learn_overflow(40_000, ContextOverflow(limit=32_768, requested=40_211))
    assert limits.prompt_tokens is not None
    assert limits.prompt_tokens < 40_000 * 32_768 / 40_211
    limits.learn_overflow(10_000, ContextOverflow())  # no numbers: half
    assert limits.prompt_tokens == 5_000
    assert limits.messages_budget(1_000, 100_000) == 4_000


def test_a_reply_reservation_too_large_for_the_context_shrinks_max_tokens_not_the_prompt():
    limits = WriterLimits()
    limits.learn_overflow(3_000, ContextOverflow(limit=8192, prompt=3000, completion=14_000))
    assert limits.max_tokens(14_000) == 2048
    assert limits.prompt_tokens is None


def test_a_declared_writer_context_sizes_prompts_and_replies_from_the_start():
    limits = WriterLimits.from_config(WorkingMemoryConfig(writer_context_tokens=32_768))
    assert limits.max_tokens(14_000) == 14_000
    assert limits.prompt_tokens == 32_768 - 14_000
    small = WriterLimits.from_config(WorkingMemoryConfig(writer_context_tokens=8_192))
    assert small.max_tokens(14_000) == 4_096


def test_abandoned_calls_are_one_per_key_and_capped_in_all(monkeypatch):
    monkeypatch.setattr(_calls, "MAX_ABANDONED_CALLS", 3)
    release = threading.Event()
    before = _calls.abandoned_calls()
    try:
        for _ in range(5):  # the same key: one thread, later calls refused
            with pytest.raises((_calls.CallTimeoutError, _calls.CallRefusedError)):
                _calls.call_within(lambda: release.wait(30), 0.02, "test", key="k")
        assert _calls.abandoned_calls() - before == 1
        for n in range(5):  # other keys: capped in all
            with pytest.raises((_calls.CallTimeoutError, _calls.CallRefusedError)):
                _calls.call_within(lambda: release.wait(30), 0.02, "test", key=f"k{n}")
        assert _calls.abandoned_calls() <= 3
    finally:
        release.set()


def test_a_key_whose_abandoned_call_ends_can_call_again():
    release = threading.Event()
    with pytest.raises(_calls.CallTimeoutError):
        _calls.call_within(lambda: release.wait(30), 0.02, "test", key="again")
    release.set()
    assert _calls.call_within(lambda: "fine", 5.0, "test", key="again") == "fine"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_message_tokens", 0),
        ("writer_max_tokens", 10),
        ("writer_context_tokens", 100),
        ("phase2_stall_seconds", 0),
    ],
)
def test_new_settings_are_validated(field, value):
    with pytest.raises(ValueError, match=field):
        WorkingMemoryConfig(**{field: value})
