"""archive_search over the engine's stored index (behaviour §7.6): built when Phase 1 writes an
archive, read through the process cache, lazily built for older archives, confined to the
memory's current timeline, never showing hidden messages; hybrid with the store's vector index.
"""

from __future__ import annotations

import math
import re
import zlib
from collections import Counter
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage, RemoveMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import GetOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from tests.common import lookup, thread_config
from tests.engine._paths import PATHS, make
from tests.integrations.helpers import agent_model, wm_model
from wm_langgraph import WorkingMemoryConfig, WorkingMemoryMiddleware
from wm_langgraph.recall.tools import archive_search_text
from wm_langgraph.storage.archives import namespace
from wm_langgraph.storage.search_index import SearchIndex
from wm_langgraph.storage.sqlite import open_sqlite

EVERY_TURN = WorkingMemoryConfig(
    token_budget=6_000,
    commit_token_threshold_ratio=0.0,
    commit_keep_recent_count=2,
    background=False,
)

TURNS = [
    "I bought a new sedan last week, a blue one.",
    "My sister adopted a kitten called Miso.",
    "The deploy of api-gateway failed with error E4021 on Monday.",
    "We moved the billing database to Postgres on 3 March.",
    "Remind me to renew the passport before June.",
    "Lunch today was a bowl of ramen.",
]


CONCEPTS = {"car": 0, "automobile": 0, "vehicle": 0, "sedan": 0, "cat": 1, "kitten": 1}


class ConceptEmbeddings(Embeddings):
    """Deterministic fake embeddings: words of one concept share a dimension, every other word
    hashes to one; records every text it embeds."""

    def __init__(self, dims: int = 32) -> None:
        self.dims = dims
        self.embedded: list[str] = []

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dims
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            slot = CONCEPTS.get(word, 2 + zlib.crc32(word.encode()) % (self.dims - 2))
            vector[slot] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.embedded.extend(texts)
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


class CountingStore(InMemoryStore):
    """An InMemoryStore that counts the records each batch reads, by namespace kind."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reads: Counter[str] = Counter()

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        for op in ops:
            if isinstance(op, GetOp):
                self.reads[op.namespace[-1]] += 1
        return super().batch(ops)


def _agent(store: Any, name: str | None = None) -> tuple[Any, WorkingMemoryMiddleware]:
    named = {"name": name} if name else {}
    mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store, **named)
    graph = create_agent(
        agent_model(), [lookup], middleware=[mw], checkpointer=InMemorySaver(), store=store
    )
    return graph, mw


def _play(graph: Any, config: Any, turns: list[str] = TURNS) -> None:
    for text in turns:
        graph.invoke({"messages": [HumanMessage(text)]}, config)


def _first_hit(out: str) -> str:
    return out.split("\n\n")[1] if "\n\n" in out else ""


def test_phase1_writes_one_index_record_per_archive_and_search_reads_it():
    store = InMemoryStore()
    graph, mw = _agent(store)
    config = thread_config("indexed")
    _play(graph, config)
    archives = mw.memory.list_archives(config)
    assert len(archives) >= 3
    indexed = {item.key for item in store.search(namespace("indexed", "search"), limit=100)}
    assert indexed == {r.id for r in archives}
    # no vector index: no message text records
    assert not store.search(namespace("indexed", "texts"), limit=10)
    out = archive_search_text(mw.memory, config, "when did the billing database move")
    assert "Postgres on 3 March" in _first_hit(out)
    assert "(archived 20" in _first_hit(out)


def test_a_query_reads_no_index_twice_and_only_the_archives_it_shows():
    store = CountingStore()
    graph, mw = _agent(store)
    config = thread_config("cached")
    _play(graph, config, [f"note {i}: the {w} report" for i, w in enumerate("abcdefghij")])
    _play(graph, config, ["the passport renewal is due in June", "ok", "fine", "thanks"])
    archive_search_text(mw.memory, config, "which report")  # warm
    store.reads.clear()
    out = archive_search_text(mw.memory, config, "passport renewal")
    assert "passport renewal" in _first_hit(out)
    assert store.reads["search"] == 0  # every index comes from the process cache
    assert store.reads["archives"] <= 3  # the hit's archive and its neighbours' only
    assert store.reads["moved"] == 0  # the moved items: one listing, not a get per archive


def test_archives_written_before_the_index_are_indexed_on_first_search():
    store = InMemoryStore()
    graph, mw = _agent(store)
    config = thread_config("legacy")
    _play(graph, config)
    ns = namespace("legacy", "search")
    for item in store.search(ns, limit=100):  # as a store written by an older version
        store.delete(ns, item.key)
    SearchIndex(mw.memory._archives).forget("legacy")
    out = archive_search_text(mw.memory, config, "error E4021 gateway")
    assert "E4021" in _first_hit(out)
    assert len(store.search(ns, limit=100)) == len(mw.memory.list_archives(config))


@pytest.mark.parametrize("kind", PATHS)
def test_search_follows_the_checkpoint_timeline_of_a_fork(kind):
    driver = make(kind, EVERY_TURN)
    cfg = {"configurable": {"thread_id": f"fork-search-{kind}"}}
    driver.invoke([HumanMessage("turn one: the kickoff meeting", id="m-1")], cfg)
    driver.invoke([HumanMessage("turn two: the budget review", id="m-2")], cfg)
    fork_point = driver.graph.get_state(cfg).config
    for i, word in enumerate(["walrus", "narwhal", "pelican"], start=3):
        driver.invoke([HumanMessage(f"turn {i}: the {word} project", id=f"x-{i}")], cfg)
    x_config = driver.graph.get_state(cfg).config
    for i, word in enumerate(["otter", "heron", "lynx"], start=3):
        driver.invoke([HumanMessage(f"turn {i}: the {word} project", id=f"y-{i}")], fork_point)
        fork_point = driver.graph.get_state(cfg).config
    search = next(t for t in driver.wm.tools if t.name == "archive_search")
    on_fork = str(search.invoke({"query": "which project was that"}, cfg))
    assert "otter" in on_fork
    assert "walrus" not in on_fork
    assert "narwhal" not in on_fork
    on_x = str(search.invoke({"query": "which project was that"}, x_config))
    assert "walrus" in on_x
    assert "otter" not in on_x


@pytest.mark.parametrize("kind", PATHS)
def test_hidden_messages_are_never_hits_nor_neighbours(kind):
    driver = make(kind, EVERY_TURN, tolerant=True)
    cfg = {"configurable": {"thread_id": f"hide-search-{kind}"}}
    texts = ["alpha plan review", "secret launch codes 7781", "gamma plan review", "delta"]
    for i, text in enumerate(texts, start=1):
        driver.invoke([HumanMessage(text, id=f"m-{i}")], cfg)
    search = next(t for t in driver.wm.tools if t.name == "archive_search")
    assert "launch codes" in str(search.invoke({"query": "launch codes"}, cfg))
    driver.invoke([RemoveMessage(id="m-2"), HumanMessage("epsilon", id="m-5")], cfg)
    for query in ("launch codes", "what was the plan review about", "7781", "codes 7781"):
        out = str(search.invoke({"query": query}, cfg))
        hits = out.split("\n", 1)[1] if "\n" in out else ""  # the first line echoes the query
        assert "launch codes" not in hits, query


def test_threads_and_named_memories_never_see_each_other():
    store = InMemoryStore()
    alpha, mw_alpha = _agent(store, name="alpha")
    beta, mw_beta = _agent(store, name="beta")
    shared = thread_config("shared")
    _play(alpha, shared, ["the walrus budget is 40k", "alpha notes", "more alpha notes"])
    _play(beta, shared, ["the narwhal budget is 90k", "beta notes", "more beta notes"])
    _play(alpha, thread_config("other"), ["the pelican budget is 10k", "x", "y"])
    out = archive_search_text(mw_alpha.memory, shared, "what was the budget")
    assert "walrus" in out
    assert "narwhal" not in out
    assert "pelican" not in out
    out_b = archive_search_text(mw_beta.memory, shared, "what was the budget")
    assert "narwhal" in out_b
    assert "walrus" not in out_b


def test_a_store_with_a_vector_index_adds_meaning_to_the_keywords():
    embeddings = ConceptEmbeddings()
    store = InMemoryStore(index={"dims": embeddings.dims, "embed": embeddings, "fields": ["text"]})
    graph, mw = _agent(store)
    config = thread_config("hybrid")
    _play(graph, config)
    archived = {str(m.text) for r in mw.memory.list_archives(config) for m in r.messages if m.text}
    # only archived message texts are embedded (no WM versions, meta, index records)
    assert embeddings.embedded
    assert set(embeddings.embedded) <= archived
    out = archive_search_text(mw.memory, config, "what automobile did I purchase")
    assert "sedan" in _first_hit(out)
    # identifiers still rank first
    exact = archive_search_text(mw.memory, config, "why did E4021 happen to my car")
    assert "E4021" in _first_hit(exact)
    # the same conversation without the index: keywords alone find no automobile
    plain, mw_plain = _agent(InMemoryStore())
    _play(plain, config)
    no_index = archive_search_text(mw_plain.memory, config, "what automobile did I purchase")
    assert "sedan" not in _first_hit(no_index)


@pytest.mark.parametrize("kind", PATHS)
def test_every_integration_path_indexes_the_archived_texts_and_finds_by_meaning(kind):
    """StateGraph, create_react_agent and create_agent write the same indexed records (Phase 1
    runs in each path's own hooks), and the search over them ranks by meaning."""
    embeddings = ConceptEmbeddings()
    store = InMemoryStore(index={"dims": embeddings.dims, "embed": embeddings, "fields": ["text"]})
    driver = make(kind, EVERY_TURN, store=store)
    config = thread_config(f"hybrid-{kind}")
    for text in TURNS:
        driver.invoke([HumanMessage(text)], config)
    archived = {m.text.strip() for r in driver.wm.list_archives(config) for m in r.messages}
    assert TURNS[0] in embeddings.embedded  # the sedan turn is archived and embedded
    assert set(embeddings.embedded) <= archived  # only archived message texts are
    out = archive_search_text(driver.wm, config, "what automobile did I purchase")
    assert "sedan" in _first_hit(out)
    assert "E4021" in _first_hit(archive_search_text(driver.wm, config, "why did E4021 happen"))


class NoiseEmbeddings(Embeddings):
    """Embeddings that carry no meaning: each text gets a fixed pseudo-random unit vector."""

    dims = 32

    def __init__(self, salt: int = 0) -> None:
        self.salt = salt

    def _vector(self, text: str) -> list[float]:
        seed = zlib.crc32(f"{self.salt}:{text}".encode())
        vector = [((seed * (i + 7919)) % 2003) / 1001.0 - 1.0 for i in range(self.dims)]
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        return [v / norm for v in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


QUESTIONS = {
    "which kitten did my sister adopt": "Miso",
    "when did we move the billing database to postgres": "3 March",
    "what lunch did I have today": "ramen",
    "remind me when the passport must be renewed": "passport",
}


class UnscoredStore(InMemoryStore):
    """A vector-indexed store whose search gives the order of its hits but no scores."""

    def search(self, *args: Any, **kwargs: Any) -> Any:
        items = super().search(*args, **kwargs)
        for item in items:
            item.score = None
        return items


def test_a_store_that_gives_no_similarity_still_ranks_by_meaning():
    embeddings = ConceptEmbeddings()
    store = UnscoredStore(index={"dims": embeddings.dims, "embed": embeddings, "fields": ["text"]})
    graph, mw = _agent(store)
    config = thread_config("unscored")
    _play(graph, config)
    out = archive_search_text(mw.memory, config, "what automobile did I purchase")
    assert "sedan" in _first_hit(out)
    assert "E4021" in _first_hit(archive_search_text(mw.memory, config, "E4021"))


NEAR_MISSES = [
    "My sister called me on Sunday about her new flat.",
    "The billing team asked about the database backups.",
    "I skipped lunch yesterday because of a meeting.",
    "Today the office was closed for a holiday.",
    "The passport photo booth at the station is broken.",
    "We talked about when to move house.",
]


@pytest.mark.parametrize("salt", range(6))
def test_an_embedding_without_meaning_does_not_outvote_a_clear_keyword_match(salt):
    """Hybrid ranking weighs the store's similarity beside the keyword scores: an embedding
    that ranks at random (a model weak on the domain) leaves a clear keyword winner first,
    among messages that share some of the question's words."""
    embeddings = NoiseEmbeddings(salt)
    store = InMemoryStore(index={"dims": embeddings.dims, "embed": embeddings, "fields": ["text"]})
    graph, mw = _agent(store)
    config = thread_config(f"noise-{salt}")
    _play(graph, config, [*TURNS, *NEAR_MISSES])
    for question, expected in QUESTIONS.items():
        first = _first_hit(archive_search_text(mw.memory, config, question))
        assert expected in first, (question, first)


def test_an_embedding_service_that_fails_leaves_keyword_search_working(caplog):
    class Broken(ConceptEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("embedding service down")

    store = InMemoryStore(index={"dims": 32, "embed": Broken(), "fields": ["text"]})
    graph, mw = _agent(store)
    config = thread_config("broken-embed")
    _play(graph, config)  # no turn fails
    assert "not embedded" in caplog.text
    assert "E4021" in archive_search_text(mw.memory, config, "E4021")


def test_sqlite_store_keeps_the_index_across_processes(tmp_path):
    path = tmp_path / "agent.sqlite"
    config = thread_config("sqlite")
    with open_sqlite(path) as (saver, store):
        mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store)
        graph = create_agent(
            agent_model(), [lookup], middleware=[mw], checkpointer=saver, store=store
        )
        _play(graph, config)
        first = archive_search_text(mw.memory, config, "when is the passport due")
        assert "renew the passport" in _first_hit(first)
    with open_sqlite(path) as (saver, store):  # a new process: an empty cache
        mw = WorkingMemoryMiddleware(wm_model(), config=EVERY_TURN, store=store)
        create_agent(agent_model(), [lookup], middleware=[mw], checkpointer=saver, store=store)
        assert store.search(namespace("sqlite", "search"), limit=5)
        again = archive_search_text(mw.memory, config, "when is the passport due")
        assert _first_hit(again) == _first_hit(first)


def test_the_store_operations_of_a_search_are_reads_only():
    store = CountingStore()
    graph, mw = _agent(store)
    config = thread_config("reads")
    _play(graph, config)
    writes: list[Any] = []
    original = store.batch

    def watch(ops: Any) -> Any:
        ops = list(ops)
        writes.extend(op for op in ops if isinstance(op, PutOp))
        assert not any(isinstance(op, SearchOp) and op.query for op in ops)
        return original(ops)

    store.batch = watch  # type: ignore[method-assign]
    archive_search_text(mw.memory, config, "what did my sister adopt")
    assert not [op for op in writes if op.namespace[-1] in ("search", "texts", "archives")]
