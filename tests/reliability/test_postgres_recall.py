"""archive_search on a PostgresStore: the index records persist and a second process (an empty
cache) ranks the same hits. Runs with ``-m postgres`` after ``source .ci/postgres.sh``."""

from __future__ import annotations

import os
import uuid

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage

pytest.importorskip(
    "langgraph.checkpoint.postgres", reason='needs the postgres extra: pip install ".[postgres]"'
)

from tests.common import lookup, thread_config
from tests.integrations.helpers import agent_model, wm_model
from tests.reliability._rel_pg import postgres_backend, setup_postgres
from wm_langgraph import WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.recall.tools import archive_search_text
from wm_langgraph.storage.archives import namespace
from wm_langgraph.storage.search_index import SearchIndex

pytestmark = pytest.mark.postgres

EVERY_TURN = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=False,
)


@pytest.fixture(scope="module")
def pg_url() -> str:
    url = os.environ.get("WM_TEST_POSTGRES_URL", "")
    if not url:
        pytest.skip(
            "WM_TEST_POSTGRES_URL is not set: start a loopback server with "
            "`source .ci/postgres.sh` (CI does this; needs Debian's postgresql package)"
        )
    setup_postgres(url)
    return url


def test_the_index_lives_in_postgres_and_serves_a_fresh_process(pg_url):
    thread = f"recall-{uuid.uuid4().hex[:8]}"
    config = thread_config(thread)
    turns = [
        "We moved the billing database to Postgres on 3 March.",
        "The deploy failed with error E4021.",
        "Remind me to renew the passport before June.",
        "ok",
        "fine",
    ]
    with postgres_backend(pg_url) as (saver, store):
        mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store)
        graph = create_agent(
            agent_model(), [lookup], middleware=[mw], checkpointer=saver, store=store
        )
        for text in turns:
            graph.invoke({"messages": [HumanMessage(text)]}, config)
        first = archive_search_text(mw.memory, config, "when did billing move to postgres")
        assert "3 March" in first.split("\n\n")[1]
        assert store.search(namespace(thread, "search"), limit=10)
        SearchIndex(mw.memory._archives).forget(thread)  # as a new process would start
        again = archive_search_text(mw.memory, config, "when did billing move to postgres")
        assert again == first
        assert "E4021" in archive_search_text(mw.memory, config, "E4021")
