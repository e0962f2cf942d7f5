"""Archive records and WM versions over a BaseStore (design §2.2-§2.3)."""

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.store.memory import InMemoryStore

from wm_langgraph.storage.archives import (
    ArchiveRecord,
    ArchiveStore,
    digest_of,
    thread_id_from_config,
    thread_label,
)


def _record(store, thread, timeline, messages):
    _, archive_id = store.slot(thread, timeline)
    record = ArchiveRecord(
        id=archive_id,
        seq=len(timeline) + 1,
        status="pending",
        messages=messages,
        message_count=len(messages),
        thread_id=thread,
        prev=timeline[-1] if timeline else None,
        digest=digest_of(messages),
    )
    store.put_archive(record)
    return record


def test_labels_are_namespace_safe_and_injective():
    labels = {thread_label(t) for t in ["a.b", "a-b", "a_b", "~a", "", "用户 1", "a/b", "a.b "]}
    assert len(labels) == 8
    assert all("." not in label and label for label in labels)
    assert thread_label("plain-id_1") == "plain-id_1"
    store = ArchiveStore(InMemoryStore())
    store.set_timeline("thread.with.dots", ["archive_001"])
    assert store.timeline("thread.with.dots") == ["archive_001"]


def test_missing_thread_id_is_a_clear_error():
    with pytest.raises(ValueError, match="thread_id"):
        thread_id_from_config({})
    with pytest.raises(ValueError, match="thread_id"):
        thread_id_from_config(None)
    assert thread_id_from_config({"configurable": {"thread_id": 7}}) == "7"


def test_records_round_trip_messages_verbatim():
    store = ArchiveStore(InMemoryStore())
    calls = [{"name": "read", "args": {"path": "src/a.py"}, "id": "c1"}]
    messages = [
        HumanMessage("read it", id="h"),
        AIMessage("", tool_calls=calls, id="a"),
        ToolMessage("content", tool_call_id="c1", id="t", status="error"),
    ]
    record = _record(store, "t1", [], messages)
    assert record.id == "archive_001"
    (loaded,) = store.get_archives("t1", ["archive_001"])
    assert loaded.messages == messages
    assert loaded.messages[1].tool_calls[0]["args"] == {"path": "src/a.py"}
    assert loaded.messages[2].status == "error"


def test_ids_are_numbered_in_order_and_never_reused_after_a_fork():
    store = ArchiveStore(InMemoryStore())
    one = _record(store, "t", [], [HumanMessage("1", id="m1")])
    two = _record(store, "t", [one.id], [HumanMessage("2", id="m2")])
    assert (one.id, two.id) == ("archive_001", "archive_002")
    # a fork from before archive_002 archives other messages: a fresh id
    fork = _record(store, "t", [one.id], [HumanMessage("other", id="m9")])
    assert fork.id == "archive_002_2"
    assert store.get_archives("t", ["archive_002"])[0].messages[0].id == "m2"
    # the records already at that position (any branch's, or an orphan of a crash) are listed
    # with their identity, so a commit can adopt one that holds exactly its messages
    existing, free = store.slot("t", [one.id])
    assert [r.id for r in existing] == ["archive_002", "archive_002_2"]
    assert existing[0].digest == digest_of([HumanMessage("2", id="m2")])
    assert free == "archive_002_3"
    # an edit (same id, other text) is other content: never the same record
    assert digest_of([HumanMessage("2 (edited)", id="m2")]) != existing[0].digest
    # a record on the timeline, or after another archive, is not at that position
    assert store.slot("t", [one.id, two.id])[0] == []
    assert store.slot("t", ["archive_001_9"])[0] == []


def test_records_are_immutable():
    store = ArchiveStore(InMemoryStore())
    one = _record(store, "t", [], [HumanMessage("1", id="m1")])
    store.put_archive(one)  # the same record again: nothing happens
    other = ArchiveRecord(
        id=one.id,
        seq=1,
        status="pending",
        messages=[HumanMessage("1 (edited)", id="m1")],
        message_count=1,
        thread_id="t",
        digest=digest_of([HumanMessage("1 (edited)", id="m1")]),
    )
    with pytest.raises(ValueError, match="immutable"):
        store.put_archive(other)
    with pytest.raises(ValueError, match="immutable"):
        store.update_archives("t", [one.id], messages=[])
    assert store.get_archives("t", [one.id])[0].messages[0].text == "1"


def test_a_new_archive_in_one_write_batch_indexes_its_messages_and_stays_immutable():
    """``put_new_archive`` (a commit's write: the message index, the record and what follows,
    one read and one write batch) gives what ``index_messages`` then ``put_archive`` give; the
    same record again changes nothing; other content under its id raises and writes nothing."""
    from langgraph.store.base import PutOp

    store = ArchiveStore(InMemoryStore())
    messages = [HumanMessage("1", id="m1"), AIMessage("one", id="m2")]
    record = ArchiveRecord(
        id="archive_001",
        seq=1,
        status="pending",
        messages=messages,
        message_count=2,
        thread_id="t",
        digest=digest_of(messages),
    )
    extra = PutOp(("app", "after"), "k", {"v": 1})
    store.put_new_archive(record, then=[extra])
    assert store.get_archives("t", ["archive_001"])[0].messages == messages
    assert store.archived_signatures("t", ["m1", "m2", "m3"], ["archive_001"]).keys() == {
        "m1",
        "m2",
    }
    assert store.store.get(("app", "after"), "k").value == {"v": 1}
    store.put_new_archive(record)  # the very same archive again: nothing changes
    assert store.get_archives("t", ["archive_001"])[0].messages == messages
    edited = [HumanMessage("1 (edited)", id="m1"), HumanMessage("new", id="m7")]
    other = ArchiveRecord(
        id="archive_001",
        seq=1,
        status="pending",
        messages=edited,
        message_count=2,
        thread_id="t",
        digest=digest_of(edited),
    )
    with pytest.raises(ValueError, match="immutable"):
        store.put_new_archive(other, then=[PutOp(("app", "after"), "k2", {"v": 2})])
    assert store.get_archives("t", ["archive_001"])[0].messages == messages
    assert store.archived_signatures("t", ["m7"], ["archive_001"]) == {}  # nothing written
    assert store.store.get(("app", "after"), "k2") is None


def test_current_wm_is_the_newest_version_covering_a_prefix():
    store = ArchiveStore(InMemoryStore())
    assert store.current_wm("t", ["archive_001"]) is None
    store.put_wm("t", ["archive_001"], "WM1", {})
    store.put_wm("t", ["archive_001", "archive_002"], "WM2", {})
    assert store.current_wm("t", ["archive_001", "archive_002", "archive_003"]).text == "WM2"
    # another timeline that shares archive_001 only
    fork = store.current_wm("t", ["archive_001", "archive_002_2"])
    assert fork.text == "WM1"
    assert fork.covers == ["archive_001"]
    with pytest.raises(ValueError, match="at least one archive"):
        store.put_wm("t", [], "x", {})


def test_update_archives_merges_metadata():
    store = ArchiveStore(InMemoryStore())
    _record(store, "t", [], [HumanMessage("1", id="m1")])
    store.update_archives("t", ["archive_001"], status="failed", metadata={"error": "x"})
    store.update_archives("t", ["archive_001"], metadata={"tries": 2})
    (record,) = store.get_archives("t", ["archive_001"])
    assert record.status == "failed"
    assert record.metadata == {"error": "x", "tries": 2}


def test_values_json_cannot_hold_are_stored_and_bytes_come_back():
    from datetime import UTC, datetime

    store = ArchiveStore(InMemoryStore())
    odd = AIMessage(
        "x",
        id="odd",
        additional_kwargs={
            "blob": b"\x00\xffbinary",
            "when": datetime(2026, 1, 2, tzinfo=UTC),
            "score": float("nan"),
        },
    )
    _record(store, "t", [], [odd])
    (record,) = store.get_archives("t", ["archive_001"])
    kwargs = record.messages[0].additional_kwargs
    assert kwargs["blob"] == b"\x00\xffbinary"
    assert kwargs["when"].startswith("2026-01-02")
    assert kwargs["score"] == "nan"
