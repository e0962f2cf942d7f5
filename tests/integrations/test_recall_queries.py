"""``archive_search`` as the agent uses it: several phrasings in ``queries`` (``query`` still
works), what a miss says, and the output's token bound, which holds for any input."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from tests.common import thread_config
from tests.integrations.test_recall import Record, Source
from wm_langgraph.document import count_tokens
from wm_langgraph.recall.tools import (
    MAX_QUERIES,
    MAX_RESULT_TOKENS,
    archive_search_text,
    make_archive_tools,
)


def _source() -> Source:
    return _one(
        [
            Record(
                "archive_001",
                1,
                "done",
                [
                    HumanMessage("We adopted a greyhound puppy and named him Pixel."),
                    AIMessage("Pixel is a lovely name for a greyhound."),
                    HumanMessage("The billing database moved to Postgres on 3 March."),
                ],
            ),
            Record(
                "archive_002",
                2,
                "done",
                [HumanMessage("My sister moved to Tromso for work."), AIMessage("Nice!")],
            ),
        ]
    )


def _one(records: list[Record]) -> Source:
    """A source whose one thread ("A") holds ``records``."""
    return Source({"A": records})


def _search() -> Any:
    return make_archive_tools(_source())[1]


def test_several_phrasings_are_searched_and_merged() -> None:
    search = _search()
    config = thread_config("A")
    out = search.invoke({"queries": ["dog name", "greyhound puppy", "sister Tromso"]}, config)
    assert out.startswith("2 match(es)") or "match(es)" in out.splitlines()[0]
    assert "greyhound" in out
    assert "Tromso" in out
    assert "'dog name'" in out.splitlines()[0]
    # each message once, however many phrasings found it
    again = search.invoke({"queries": ["greyhound", "greyhound puppy", "Pixel"]}, config)
    assert again.count("[archive_001 · message 1/3") == 1


def test_query_alone_still_works_and_joins_the_queries() -> None:
    search = _search()
    config = thread_config("A")
    assert "Postgres" in search.invoke({"query": "billing database"}, config)
    both = search.invoke({"query": "billing database", "queries": ["Tromso"]}, config)
    assert "Postgres" in both
    assert "Tromso" in both


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"query": "  "},
        {"queries": []},
        {"queries": ["  ", ""]},
        {"queries": ["x" * 501]},
    ],
)
def test_bad_queries_are_refused_as_text(args: dict[str, Any]) -> None:
    out = _search().invoke(args, thread_config("A"))
    assert out.startswith("Refused")


@pytest.mark.parametrize("queries", [["ok", 3], "not a list but text", 7, {"q": "x"}, [None]])
def test_queries_of_any_type_are_refused_or_read_never_raised(queries: object) -> None:
    out = archive_search_text(_source(), thread_config("A"), None, queries=queries)
    assert out.startswith(("Refused", "No match"))


def test_at_most_max_queries_phrasings_are_searched() -> None:
    phrasings = [f"word{i}" for i in range(MAX_QUERIES)] + ["Tromso"]
    out = _search().invoke({"queries": phrasings}, thread_config("A"))
    assert out.startswith("No match")  # the sixth phrasing, the only one that matches, is not run


def test_a_miss_says_it_is_no_proof_and_lists_the_abstracts() -> None:
    out = _search().invoke({"queries": ["violin lessons"]}, thread_config("A"))
    assert out.startswith("No match for 'violin lessons'")
    assert "does not mean it never happened" in out
    assert "other words" in out


_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=2_000)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    texts=st.lists(_TEXT, min_size=1, max_size=30),
    queries=st.lists(st.text(min_size=1, max_size=500), min_size=1, max_size=MAX_QUERIES),
    shared=st.sampled_from(["", "needle ", "日本語の文章 ", "🦄🦄 "]),
)
def test_the_output_stays_within_its_token_bound_for_any_input(
    texts: list[str], queries: list[str], shared: str
) -> None:
    messages: list[BaseMessage] = [HumanMessage(shared + t) for t in texts]
    half = len(messages) // 2
    source = _one(
        [
            Record("archive_001", 1, "done", messages[:half]),
            Record("archive_002", 2, "done", messages[half:]),
        ]
    )
    search = make_archive_tools(source)[1]
    for asked in ({"queries": queries}, {"query": shared.strip() or queries[0]}):
        out = search.invoke(asked, thread_config("A"))
        assert count_tokens(out) <= MAX_RESULT_TOKENS
