"""Window accounting (behaviour §6.2; design §3.5) and tool-pair-safe splits (design §3.4)."""

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from wm_langgraph.messages import MessageTokenCache
from wm_langgraph.phase1.window import (
    account_messages,
    ensure_message_ids,
    live_tokens,
    pending_tokens_of,
    rebuild_meta,
    safe_split,
)
from wm_langgraph.state import empty_meta


def count(message):
    return len(message.text) + 1


def human(i):
    return HumanMessage(f"question {i} " + "x" * (i % 7), id=f"h{i}")


def test_new_messages_push_the_window_head_into_pending():
    msgs = [human(i) for i in range(5)]
    meta = account_messages(empty_meta(2), msgs, count)
    assert [w[0] for w in meta["window"]] == ["h3", "h4"]
    assert meta["pending_tokens"] == sum(count(m) for m in msgs[:3])
    more = [*msgs, human(5)]
    meta2 = account_messages(meta, more, count)
    assert meta2["pending_tokens"] == meta["pending_tokens"] + count(msgs[3])
    assert live_tokens(meta2) == sum(count(m) for m in more)


def test_accounting_tokenises_only_new_messages():
    calls = []

    def counting(m):
        calls.append(m.id)
        return count(m)

    cached = MessageTokenCache(counting)  # what the engine accounts with
    msgs = [human(i) for i in range(1000)]
    meta = account_messages(empty_meta(10), msgs, cached)
    calls.clear()
    copies = [m.model_copy() for m in msgs]  # a checkpointer hands back new objects
    account_messages(meta, [*copies, human(1000), human(1001)], cached)
    assert calls == ["h1000", "h1001"]


def test_keep_zero_puts_everything_in_pending_and_system_messages_are_not_counted():
    msgs = [SystemMessage("rules", id="s"), human(1), human(2)]
    meta = account_messages(empty_meta(0), msgs, count)
    assert meta["window"] == []
    assert meta["pending_tokens"] == count(msgs[1]) + count(msgs[2])


def test_mismatched_meta_is_rebuilt_exactly():
    msgs = [human(i) for i in range(6)]
    stale = account_messages(empty_meta(3), [human(100), human(101)], count)
    meta = account_messages(stale, msgs, count)
    assert meta == rebuild_meta(msgs, 3, count)


@settings(max_examples=200, deadline=None)
@given(
    keep=st.integers(0, 6),
    steps=st.lists(
        st.one_of(st.integers(1, 5), st.tuples(st.just("cut"), st.integers(0, 8))), max_size=30
    ),
)
def test_pending_tokens_always_equals_a_rebuild(keep, steps):
    messages = []
    meta = empty_meta(keep)
    n = 0
    for step in steps:
        if isinstance(step, int):
            for _ in range(step):
                n += 1
                messages.append(human(n))
            meta = account_messages(meta, messages, count)
        else:  # a commit: the oldest messages leave, the meta is rebuilt from the rest
            messages = messages[min(step[1], len(messages)) :]
            meta = rebuild_meta(messages, keep, count)
        assert meta["pending_tokens"] == pending_tokens_of(messages, keep, count)


def test_ensure_ids_copies_and_never_mutates():
    original = HumanMessage("hi")
    out, changed = ensure_message_ids([original, human(1)])
    assert changed
    assert original.id is None
    assert out[0].id
    assert out[1].id == "h1"
    assert ensure_message_ids([human(1)]) == ([human(1)], False)


def _tool_turn(tag, n_calls):
    calls = [{"name": "t", "args": {}, "id": f"{tag}c{i}"} for i in range(n_calls)]
    ai = AIMessage("", tool_calls=calls, id=f"{tag}ai")
    results = [
        ToolMessage("ok", tool_call_id=f"{tag}c{i}", id=f"{tag}t{i}") for i in range(n_calls)
    ]
    return [ai, *results]


def _pairs_intact(messages, split):
    left = {m.id for m in messages[:split]}
    for m in messages:
        if isinstance(m, AIMessage) and m.tool_calls:
            ids = {tc["id"] for tc in m.tool_calls}
            side = m.id in left
            for r in messages:
                if isinstance(r, ToolMessage) and r.tool_call_id in ids and (r.id in left) != side:
                    return False
    return True


def test_split_moves_back_before_a_parallel_tool_pair():
    msgs = [human(0), *_tool_turn("a", 3), AIMessage("done", id="fin"), human(1)]
    # index 3 cuts between the 2nd and 3rd tool result of the parallel call
    assert safe_split(msgs, 3) == 1
    assert safe_split(msgs, 5) == 5
    assert _pairs_intact(msgs, safe_split(msgs, 3))


def test_split_keeps_unanswered_tool_calls_with_what_follows():
    calls = [{"name": "t", "args": {}, "id": "x"}, {"name": "t", "args": {}, "id": "y"}]
    running = [
        human(0),
        AIMessage("", tool_calls=calls, id="ai"),
        ToolMessage("1", tool_call_id="x"),
    ]
    assert safe_split(running, 2) == 1  # y's result is still to come: keep the pair live
    msgs = [human(0), AIMessage("", tool_calls=calls[:1], id="ai")]
    msgs_pending = [*msgs, human(1)]
    assert safe_split(msgs_pending, 2) == 2  # the call was abandoned: nothing follows it


@settings(max_examples=200, deadline=None)
@given(
    turns=st.lists(st.tuples(st.booleans(), st.integers(1, 4)), min_size=1, max_size=8),
    split=st.integers(0, 40),
)
def test_no_split_ever_separates_a_tool_pair(turns, split):
    messages = []
    for i, (tools, n) in enumerate(turns):
        messages.append(human(i))
        if tools:
            messages.extend(_tool_turn(f"t{i}", n))
        messages.append(AIMessage(f"answer {i}", id=f"a{i}"))
    cut = safe_split(messages, split)
    assert 0 <= cut <= len(messages)
    assert _pairs_intact(messages, cut)
