"""The archive recall tools over a hand-built archive source (no engine needed).

End-to-end runs over the real WorkingMemory live in test_agents.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from tests.common import thread_config
from wm_langgraph.document import count_tokens
from wm_langgraph.recall.tools import (
    MAX_HIT_CHARS,
    MAX_RESULT_TOKENS,
    MAX_SEARCH_HITS,
    PAGE_CHARS,
    PAGE_MESSAGES,
    make_archive_tools,
)


@dataclass
class Record:
    id: str
    seq: int
    status: str
    messages: list[BaseMessage]
    abstract: str | None = None


@dataclass
class Source:
    threads: dict[str, list[Record]] = field(default_factory=dict)

    def list_archives(self, config: RunnableConfig) -> Sequence[Record]:
        thread = (config.get("configurable") or {}).get("thread_id")
        if thread is None:
            raise ValueError("thread_id missing")
        return list(self.threads.get(str(thread), []))


@pytest.fixture
def source() -> Source:
    a1 = Record(
        "archive_001",
        1,
        "done",
        [
            HumanMessage("Please set up the Postgres database for the billing service"),
            AIMessage(
                "",
                tool_calls=[{"name": "run", "args": {"cmd": "createdb billing"}, "id": "c1"}],
            ),
            ToolMessage("CREATE DATABASE ok", tool_call_id="c1", name="run"),
            AIMessage("The billing database exists now."),
        ],
        abstract="Created the billing database.",
    )
    a2 = Record(
        "archive_002",
        2,
        "pending",
        [HumanMessage("Rename the database to BILLING_v2"), AIMessage("Renamed to billing_v2.")],
    )
    other = Record("archive_001", 1, "done", [HumanMessage("secret plans of thread B")], "B")
    other3 = Record("archive_003", 3, "done", [HumanMessage("thread B only")], "B3")
    return Source({"A": [a1, a2], "B": [other, other3]})


def tools(source: Source) -> dict[str, object]:
    return {t.name: t for t in make_archive_tools(source)}


def test_tool_names_and_argument_schemas(source):
    expand, search = make_archive_tools(source)
    assert (expand.name, search.name) == ("archive_expand", "archive_search")
    assert set(expand.args) == {"archive_id", "offset"}
    assert set(search.args) == {"query", "queries", "archive_id"}
    # the injected config never shows up in what the model sees
    assert "config" not in expand.tool_call_schema.model_json_schema()["properties"]


def test_expand_shows_abstract_count_and_verbatim_messages(source):
    expand, _ = make_archive_tools(source)
    out = expand.invoke({"archive_id": "archive_001"}, config=thread_config("A"))
    assert "Created the billing database." in out
    assert "4 messages" in out
    assert "set up the Postgres database" in out
    assert "createdb billing" in out
    assert "CREATE DATABASE ok" in out
    assert "[End of archive.]" in out
    assert "secret plans" not in out


def test_expand_pages_long_archives_and_says_how_to_continue():
    long = [HumanMessage(f"message number {i} " + "x" * 50) for i in range(PAGE_MESSAGES * 2 + 5)]
    source = Source({"A": [Record("archive_001", 1, "done", long, "long one")]})
    expand, _ = make_archive_tools(source)
    first = expand.invoke({"archive_id": "archive_001"}, config=thread_config("A"))
    assert "message number 0 " in first
    assert f"message number {PAGE_MESSAGES} " not in first
    assert f"offset={PAGE_MESSAGES})" in first
    seen = []
    offset = 0
    while True:
        page = expand.invoke(
            {"archive_id": "archive_001", "offset": offset}, config=thread_config("A")
        )
        seen += [i for i in range(len(long)) if f"message number {i} " in page]
        if "[End of archive.]" in page:
            break
        offset = int(page.rsplit("offset=", 1)[1].split(")")[0])
    assert seen == list(range(len(long)))


def test_expand_page_stays_bounded_with_huge_messages():
    huge = [HumanMessage("A" * (PAGE_CHARS * 3)), HumanMessage("second")]
    source = Source({"A": [Record("archive_001", 1, "done", huge)]})
    expand, _ = make_archive_tools(source)
    out = expand.invoke({"archive_id": "archive_001"}, config=thread_config("A"))
    assert len(out) < PAGE_CHARS + 1000
    assert "more characters of this message not shown" in out
    assert "offset=1)" in out


def test_expand_refuses_bad_offsets(source):
    expand, _ = make_archive_tools(source)
    assert "past the end" in expand.invoke(
        {"archive_id": "archive_001", "offset": 9}, thread_config("A")
    )
    assert "Refused" in expand.invoke(
        {"archive_id": "archive_001", "offset": -1}, thread_config("A")
    )


@pytest.mark.parametrize(
    "bad",
    ["../archive_001", "/etc/passwd", "archive_001/../../x", "..\\archive_001", "a\\b", ".."],
)
def test_path_like_ids_are_refused_as_text(source, bad):
    for tool in make_archive_tools(source):
        args = (
            {"archive_id": bad}
            if tool.name == "archive_expand"
            else {"query": "x", "archive_id": bad}
        )
        out = tool.invoke(args, config=thread_config("A"))
        assert out.startswith("Refused"), out
        assert "path" in out


@pytest.mark.parametrize("bad", ["", " ", "archive 001", "archive_001;rm", "ä" * 3, "x" * 500])
def test_malformed_ids_are_refused_as_text(source, bad):
    expand, _ = make_archive_tools(source)
    out = expand.invoke({"archive_id": bad}, config=thread_config("A"))
    assert out.startswith("Refused")
    assert len(out) < 400


def test_other_threads_archives_are_refused(source):
    expand, search = make_archive_tools(source)
    out = expand.invoke({"archive_id": "archive_003"}, config=thread_config("A"))
    assert out.startswith("Refused")
    assert "archive_001, archive_002" in out
    assert "thread B only" not in out
    # the same id in another thread names that thread's archive, never ours
    out_b = expand.invoke({"archive_id": "archive_001"}, config=thread_config("B"))
    assert "secret plans" in out_b
    assert "billing" not in out_b
    assert search.invoke({"query": "billing"}, config=thread_config("B")).startswith("No match")
    assert "Refused" in search.invoke(
        {"query": "x", "archive_id": "archive_003"}, thread_config("A")
    )


def test_no_thread_in_config_is_a_refusal_not_an_exception(source):
    expand, search = make_archive_tools(source)
    assert "thread_id" in expand.invoke({"archive_id": "archive_001"}, config={})
    assert "thread_id" in search.invoke({"query": "billing"}, config={})


def test_search_is_literal_case_insensitive_newest_first(source):
    _, search = make_archive_tools(source)
    out = search.invoke({"query": "BILLING"}, config=thread_config("A"))
    assert out.index("[archive_002") < out.index("[archive_001")
    assert "BILLING_v2" in out
    assert "message 1/4 · user" in out
    tool_hit = search.invoke({"query": "create database"}, config=thread_config("A"))
    assert "[archive_001 · message 3/4 · tool result (run)]" in tool_hit
    assert "secret" not in out
    # literal: regex metacharacters are plain text
    assert search.invoke({"query": "billing.*x"}, config=thread_config("A")).startswith("No match")
    # tool-call arguments are searchable too
    assert "[archive_001 · message 2/4 · assistant]" in search.invoke(
        {"query": "createdb"}, thread_config("A")
    )


def test_search_in_one_archive(source):
    _, search = make_archive_tools(source)
    out = search.invoke(
        {"query": "billing", "archive_id": "archive_001"}, config=thread_config("A")
    )
    assert "[archive_001" in out
    assert "[archive_002" not in out


def test_search_limits_are_the_spec_values():
    # Behaviour §7.6: at most 12 hits of at most 1,500 characters each.
    assert (MAX_SEARCH_HITS, MAX_HIT_CHARS) == (12, 1_500)


def test_search_caps_hits_and_hit_size():
    needle = "NEEDLE"
    messages = [HumanMessage("y" * 5000 + needle + "z" * 5000) for _ in range(MAX_SEARCH_HITS)]
    source = Source(
        {
            "A": [
                Record("archive_001", 1, "done", messages),
                Record("archive_002", 2, "done", list(messages)),
            ]
        }
    )
    _, search = make_archive_tools(source)
    out = search.invoke({"query": "needle"}, config=thread_config("A"))
    assert count_tokens(out) <= MAX_RESULT_TOKENS
    blocks = out.split("\n\n")[1:]
    hits = [b for b in blocks if b.startswith("[archive_")]
    assert 1 <= len(hits) < MAX_SEARCH_HITS  # the token bound leaves the rest out
    assert all(h.startswith("[archive_002") for h in hits)
    for hit in hits:
        body = hit.split("\n", 1)[1]
        assert len(body) <= MAX_HIT_CHARS
        assert needle in body
    assert "more matched" in out
    assert f"{2 * MAX_SEARCH_HITS - len(hits)} more hit(s) not shown" not in out  # 12 ranked
    assert f"{MAX_SEARCH_HITS - len(hits)} more hit(s) not shown" in out


def test_search_refuses_empty_query(source):
    _, search = make_archive_tools(source)
    assert search.invoke({"query": "  "}, config=thread_config("A")).startswith("Refused")


def test_tools_read_the_thread_under_tool_node_in_a_graph(source):
    node = ToolNode(make_archive_tools(source))

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        call = {"name": "archive_search", "args": {"query": "plans"}, "id": "s1"}
        return {"messages": [AIMessage("", tool_calls=[call])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", node)
    builder.add_edge(START, "agent")
    builder.add_edge("agent", "tools")
    builder.add_edge("tools", END)
    graph = builder.compile(checkpointer=InMemorySaver())
    out_a = graph.invoke({"messages": [HumanMessage("go")]}, thread_config("A"))["messages"][-1]
    out_b = graph.invoke({"messages": [HumanMessage("go")]}, thread_config("B"))["messages"][-1]
    assert isinstance(out_a, ToolMessage)
    assert out_a.content.startswith("No match")
    assert "secret plans of thread B" in out_b.content


def test_search_excerpt_is_centred_on_the_match_even_after_case_changing_text():
    text = "ß" * 3000 + " Straße NEEDLE here " + "x" * 3000
    source = Source({"A": [Record("archive_001", 1, "done", [HumanMessage(text)])]})
    _, search = make_archive_tools(source)
    out = search.invoke({"query": "needle"}, config=thread_config("A"))
    body = out.split("\n\n")[1].split("\n", 1)[1]
    assert "NEEDLE" in body
    assert len(body) <= MAX_HIT_CHARS
    assert body.startswith("…")
    assert body.endswith("…")
