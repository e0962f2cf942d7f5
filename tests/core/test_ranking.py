"""Search terms and BM25 for recall (document.text.ranking): pure functions."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wm_langgraph.document.text.ranking import (
    SEARCH_STOPWORDS,
    bm25,
    idf,
    is_identifier,
    query_identifiers,
    search_terms,
    stem,
)


def test_inflections_meet_on_one_stem():
    assert len({stem(w) for w in ("migrate", "migrating", "migrated", "migration")}) == 1
    assert stem("retries") == stem("retry")
    assert stem("running") == stem("run")
    assert stem("planned") == stem("plan")
    assert stem("classes") == stem("class")
    # not plurals, not English, or too short: unchanged
    assert stem("status") == "status"
    assert stem("analysis") == "analysis"
    assert stem("bus") == "bus"
    assert stem("v2") == "v2"


def test_terms_drop_stop_words_and_case():
    assert search_terms("When did WE move the Billing database?") == ["mov", "bill", "databas"]
    assert search_terms("the of and") == []
    assert not {"the", "what", "when", "did"} - SEARCH_STOPWORDS


def test_cjk_runs_give_character_bigrams():
    assert search_terms("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    assert search_terms("猫") == ["猫"]
    # a mixed run splits by script
    assert search_terms("API接口") == ["api", "接口"]


def test_identifiers_in_queries():
    assert is_identifier("src/app.py")
    assert is_identifier("billing_v2")
    assert is_identifier("E1234")
    assert is_identifier("FACT-1")
    assert not is_identifier("billing")
    assert not is_identifier("...")
    assert query_identifiers("why did src/app.py fail with E1234, again?") == [
        "src/app.py",
        "E1234",
    ]


def test_bm25_prefers_rare_terms_and_short_documents():
    weights = {"rare": idf(100, 2), "common": idf(100, 60)}
    assert weights["rare"] > weights["common"] > 0
    rare = bm25({"rare": 1}, 10, weights, 10.0)
    common = bm25({"common": 1}, 10, weights, 10.0)
    assert rare > common
    assert bm25({"rare": 1}, 5, weights, 10.0) > bm25({"rare": 1}, 50, weights, 10.0)
    assert bm25({}, 10, weights, 10.0) == 0.0


@given(st.text(max_size=200))
def test_terms_never_fail_and_are_lower_case(text):
    for term in search_terms(text):
        assert term
        assert term == term.casefold()
        assert not any(c.isspace() for c in term)
