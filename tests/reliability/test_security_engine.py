"""Security of the engine: thread isolation of the archive tools, no message text in logs at
INFO and above, and bad input that fails clearly (before anything is written) or is handled.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from _rel_harness import Conversation, MarkerModel, build_agent, check_thread, expected_turn_ids
from _rel_stats import add, count, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.memory import WorkingMemory
from wm_langgraph.storage.archives import ArchiveStore

CONFIG = WorkingMemoryConfig(
    token_budget=4_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    reserve_tokens=0,
    background=False,
)
ALPHA, BRAVO = "ALPHA-SECRET-7731", "BRAVO-SECRET-9902"


def _store_snapshot(store: InMemoryStore) -> list[tuple[tuple[str, ...], str, Any]]:
    items = [
        (tuple(namespace), item.key, item.value)
        for namespace in store.list_namespaces(prefix=("wm_langgraph",))
        for item in store.search(namespace, limit=10_000)
    ]
    return sorted(items, key=repr)


@pytest.fixture(scope="module")
def two_threads() -> Any:
    store = InMemoryStore()
    wm = WorkingMemory(MarkerModel().model, config=CONFIG, store=store)
    graph = build_agent(wm, checkpointer=InMemorySaver(), store=store)
    alpha, bravo = Conversation("alpha"), Conversation("bravo")
    for _ in range(3):
        alpha.turn(graph, filler=ALPHA)
    for _ in range(6):
        bravo.turn(graph, filler=BRAVO)
    yield wm, graph, store, alpha, bravo
    wm.close()


def _tools(wm: WorkingMemory) -> dict[str, Any]:
    return {tool.name: tool for tool in wm.tools}


# -- archive tools: only the calling thread's archives --------------------------------------------


def test_the_fixture_threads_have_archives(two_threads):
    wm, graph, store, alpha, bravo = two_threads
    archives = ArchiveStore(store)
    check_thread(wm, graph, archives, alpha, folded_all=True)
    check_thread(wm, graph, archives, bravo, folded_all=True)
    assert len(wm.list_archives(alpha.config)) == 2
    assert len(wm.list_archives(bravo.config)) == 5


def test_expand_serves_only_the_calling_threads_archive(two_threads):
    wm, _, _, alpha, _ = two_threads
    expand = _tools(wm)["archive_expand"]
    own = expand.invoke({"archive_id": "archive_001"}, config=alpha.config)
    assert ALPHA in own
    assert BRAVO not in own
    # archive_004 exists, but only in bravo's thread: alpha is refused.
    foreign = expand.invoke({"archive_id": "archive_004"}, config=alpha.config)
    assert foreign.startswith("Refused")
    assert BRAVO not in foreign


def test_search_never_crosses_threads(two_threads):
    wm, _, _, alpha, _ = two_threads
    search = _tools(wm)["archive_search"]
    assert search.invoke({"query": BRAVO}, config=alpha.config).startswith("No match")
    assert "MARK[bravo" not in search.invoke({"query": "MARK"}, config=alpha.config)
    hits = search.invoke({"query": "SECRET"}, config=alpha.config)
    assert ALPHA in hits
    assert BRAVO not in hits


_BAD_IDS = [
    "../bravo/archives/archive_001",
    "..",
    "archive_001/../../bravo",
    "archive_001\\..\\x",
    "/etc/passwd",
    "~Mbravo",
    "archive_001\x00",
    "archive_001;DROP TABLE store",
    "%2e%2e%2farchive_001",
    "",
    " ",
    "archive_" + "9" * 5_000,
    "ＡＲＣＨＩＶＥ_001",
]


@pytest.mark.parametrize("archive_id", _BAD_IDS)
def test_malformed_and_path_like_ids_are_refused(two_threads, archive_id):
    wm, _, _, alpha, _ = two_threads
    tools = _tools(wm)
    add("security: bad archive ids refused")
    out = tools["archive_expand"].invoke({"archive_id": archive_id}, config=alpha.config)
    assert out.startswith("Refused")
    assert BRAVO not in out
    searched = tools["archive_search"].invoke(
        {"query": "SECRET", "archive_id": archive_id}, config=alpha.config
    )
    assert BRAVO not in searched
    assert searched.startswith("Refused") or archive_id.strip() == ""


def test_a_thread_id_shaped_like_a_path_sees_an_empty_namespace(two_threads):
    wm, _, _, _, _ = two_threads
    expand = _tools(wm)["archive_expand"]
    for thread_id in ["../bravo", "bravo/..", "bravo ", "BRAVO", "~bravo", "bravo\x00"]:
        out = expand.invoke(
            {"archive_id": "archive_001"}, config={"configurable": {"thread_id": thread_id}}
        )
        assert out.startswith("Refused")
        assert BRAVO not in out


def test_tools_without_a_thread_refuse(two_threads):
    wm, _, _, _, _ = two_threads
    out = _tools(wm)["archive_expand"].invoke({"archive_id": "archive_001"}, config={})
    assert out.startswith("Refused")


@fuzz_settings
@given(archive_id=st.text(max_size=60), query=st.text(min_size=1, max_size=40))
def test_no_archive_id_or_query_reaches_another_thread(two_threads, archive_id, query):
    count("security: archive tool inputs")
    wm, _, _, alpha, _ = two_threads
    tools = _tools(wm)
    outputs = [
        tools["archive_expand"].invoke({"archive_id": archive_id}, config=alpha.config),
        tools["archive_search"].invoke(
            {"query": query, "archive_id": archive_id}, config=alpha.config
        ),
        tools["archive_search"].invoke({"query": query}, config=alpha.config),
    ]
    for out in outputs:
        assert isinstance(out, str)
        assert "MARK[bravo" not in out  # bravo's messages carry this marker
        assert BRAVO not in out or BRAVO in query + archive_id  # (an echo of the query)


# -- logging: message text never at INFO or above --------------------------------------------------

SECRET = "hunter2-PASSWORD-5f3a"


def _leaks(caplog: pytest.LogCaptureFixture, secret: str) -> list[str]:
    formatter = logging.Formatter("%(levelname)s %(name)s %(message)s")
    return [
        formatter.format(record)
        for record in caplog.records
        if record.levelno >= logging.INFO and secret in formatter.format(record)
    ]


def _faulty(kind: str) -> Any:
    def fault(call_kind: str, prompt: str, healthy: Any) -> Any:
        if kind == "raises":
            return RuntimeError("upstream error")
        if kind == "no_tool_call" and call_kind == "update":
            return "Nothing new."
        if kind == "bad_arguments" and call_kind == "update":
            return {
                "content": "",
                "tool_calls": [{"name": "update_working_memory", "args": {"raw": "{{{"}}],
            }
        return None

    return fault


@pytest.mark.parametrize("kind", ["healthy", "raises", "no_tool_call", "bad_arguments"])
def test_message_text_is_never_logged_at_info_or_above(caplog, kind):
    caplog.set_level(logging.DEBUG)
    store = InMemoryStore()
    wm = WorkingMemory(MarkerModel(fault=_faulty(kind)).model, config=CONFIG, store=store)
    graph = build_agent(wm, checkpointer=InMemorySaver(), store=store)
    conv = Conversation(f"logs-{kind}")
    try:
        for _ in range(4):
            conv.turn(graph, filler=f"my password is {SECRET}")
        state = graph.get_state(conv.config).values
        wm.assemble(state, conv.config)
        graph.update_state(conv.config, wm.compact(state, conv.config), as_node="after_turn")
        wm.resume(conv.config, wait=True)
    finally:
        wm.close()
    add("security: log records inspected", len(caplog.records))
    assert _leaks(caplog, SECRET) == []


def test_a_model_reply_that_quotes_the_conversation_is_not_logged(caplog):
    """A refusal or a broken create reply often quotes what it was given."""
    caplog.set_level(logging.DEBUG)

    def quoting(call_kind: str, prompt: str, healthy: Any) -> Any:
        if call_kind == "create":
            return f"I'm sorry, I can't store credentials like {SECRET}."
        return None

    wm = WorkingMemory(MarkerModel(fault=quoting).model, config=CONFIG, store=InMemoryStore())
    graph = build_agent(wm, checkpointer=InMemorySaver(), store=wm.store)
    conv = Conversation("logs-quoting")
    try:
        for _ in range(3):
            conv.turn(graph, filler=f"my password is {SECRET}")
    finally:
        wm.close()
    assert any(r.levelno >= logging.WARNING for r in caplog.records)  # the failure is reported
    assert _leaks(caplog, SECRET) == []


# -- bad input: a clear error before anything is written, or a defined behaviour -----------------


@pytest.fixture
def fresh() -> Any:
    store = InMemoryStore()
    wm = WorkingMemory(MarkerModel().model, config=CONFIG, store=store)
    yield wm, store
    wm.close()


_CFG = {"configurable": {"thread_id": "bad-input"}}


@pytest.mark.parametrize(
    ("state", "config", "error"),
    [
        (None, _CFG, TypeError),
        ([HumanMessage("hi")], _CFG, TypeError),
        ("hello", _CFG, TypeError),
        ({}, _CFG, ValueError),
        ({"messages": "hello"}, _CFG, ValueError),
        ({"messages": [42]}, _CFG, (TypeError, ValueError, NotImplementedError)),
        ({"messages": [None]}, _CFG, (TypeError, ValueError, NotImplementedError)),
        ({"messages": [object()]}, _CFG, (TypeError, ValueError, NotImplementedError)),
        ({"messages": [{"foo": "bar"}]}, _CFG, (TypeError, ValueError, NotImplementedError)),
        ({"messages": [HumanMessage("hi")]}, None, ValueError),
        ({"messages": [HumanMessage("hi")]}, {}, ValueError),
        ({"messages": [HumanMessage("hi")]}, {"configurable": {"thread_id": ""}}, ValueError),
    ],
)
@pytest.mark.parametrize("hook", ["after_turn", "compact", "assemble"])
def test_bad_input_raises_a_clear_error_and_writes_nothing(fresh, hook, state, config, error):
    add("security: bad inputs rejected")
    wm, store = fresh
    before = _store_snapshot(store)
    with pytest.raises(error) as info:
        getattr(wm, hook)(state, config)
    assert str(info.value)  # says what is wrong
    assert _store_snapshot(store) == before


def _odd_messages() -> list[Any]:
    big = "enormous " * 250_000  # ~2.2 MB in one message
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5_000}}
    return [
        {"role": "user", "content": "a dict message"},
        ("user", "a tuple message"),
        HumanMessage(id="blocks", content=[{"type": "text", "text": "look at this"}, image]),
        HumanMessage(id="image-only", content=[image]),
        HumanMessage(id="empty", content=""),
        AIMessage(id="blank-ai", content=""),
        HumanMessage(id="huge", content=big),
        AIMessage(
            id="bad-call",
            content="",
            invalid_tool_calls=[{"name": "x", "args": "{not json", "id": "c0", "error": "bad"}],
        ),
        ToolMessage(id="orphan", content="a result without its call", tool_call_id="nowhere"),
        AIMessage(
            id="pending-call",
            content="",
            tool_calls=[{"name": "read_file", "args": {"path": "a.py"}, "id": "c1"}],
        ),
        ToolMessage(id="result", content="x = 1", tool_call_id="c1", name="read_file"),
        HumanMessage(id="last", content="thanks"),
    ]


def test_odd_but_valid_messages_are_committed_verbatim(fresh):
    wm, _ = fresh
    messages = _odd_messages()
    update = wm.compact({"messages": messages}, _CFG)
    add("security: odd messages committed", len(messages))
    archived = [m for record in wm.list_archives(_CFG) for m in record.messages]
    assert len(archived) == len(messages)
    by_id = {m.id: m for m in archived}
    for original in messages:
        if isinstance(original, HumanMessage | AIMessage | ToolMessage):
            assert by_id[original.id].content == original.content  # verbatim
    document = wm.get_working_memory(_CFG)
    assert document.startswith("# Working Memory")
    assert "working_memory" in update


def test_a_message_json_cannot_hold_does_not_wedge_the_thread(tmp_path):
    """The checkpointer stores bytes (msgpack), the SQLite/Postgres store keeps JSON: a message
    with bytes in additional_kwargs used to make every commit of its thread raise (TypeError in
    the archive write), so the thread could never commit again. Now it is archived (bytes
    verbatim) and the thread goes on."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    from wm_langgraph.storage.sqlite import open_sqlite

    odd = {"signature": b"\x00\xffsig", "score": float("nan")}
    with open_sqlite(tmp_path / "odd.sqlite") as (checkpointer, store):
        assert isinstance(checkpointer, SqliteSaver)
        wm = WorkingMemory(MarkerModel().model, config=CONFIG, store=store)
        graph = build_agent(wm, checkpointer=checkpointer, store=store)
        conv = Conversation("odd")
        try:
            message = HumanMessage(id="odd-u0", content="odd MARK[odd-u0]", additional_kwargs=odd)
            graph.invoke({"messages": [message]}, conv.config, durability="sync")
            conv.sent.extend(expected_turn_ids("odd", 0))
            conv.turns = 1
            for _ in range(3):
                conv.turn(graph)
            archived = {m.id: m for r in wm.list_archives(conv.config) for m in r.messages}
            kept = archived["odd-u0"].additional_kwargs
            assert kept["signature"] == b"\x00\xffsig"  # verbatim
            assert kept["score"] == "nan"  # JSON (and Postgres jsonb) cannot hold a NaN
            check_thread(wm, graph, ArchiveStore(store), conv, folded_all=True)
        finally:
            wm.close()
