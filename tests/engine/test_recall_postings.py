"""The recall's ranking over a timeline's merged postings (behaviour §7.6) is the ranking of the
per-archive reference, hit for hit and score for score, on any corpus and any query; the merged
postings the store's index keeps per timeline (extended as it grows, copied for a fork) give
what a fresh index of the same records gives, across threads, stores, replaced records and a
bounded cache."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.store.memory import InMemoryStore

from tests.common import thread_config
from tests.deploy._agents import EVERY_TURN
from tests.engine._reference_rank import reference_rank
from tests.integrations.helpers import wm_model
from wm_langgraph import WorkingMemory
from wm_langgraph.recall.search import Corpus, Hit, rank, store_corpus
from wm_langgraph.recall.tools import archive_search_text
from wm_langgraph.storage.archives import ArchiveRecord, ArchiveStore, StoredMessages, digest_of
from wm_langgraph.storage.search_index import (
    AbstractIndex,
    SearchIndex,
    _Timelines,
    role_label,
    searchable_text,
    shown_parts,
)

WORDS = [
    "lake",
    "camping",
    "camp",
    "sister",
    "guitar",
    "budget",
    "review",
    "plan",
    "the",
    "and",
    "was",
    "deploy",
    "failed",
    "ramen",
    "Postgres",
    "March",
    "E4021",
    "src/app.py",
    "billing_v2",
    "東京タワー",
    "FACT-7",
]
DATES = ["[1:56 pm on 8 May, 2023]", "[10:00 am on 3 March, 2022]"]
CREATED = "2024-01-01T00:00:00+00:00"

Records = list[tuple[str, int, list[BaseMessage], str]]


@st.composite
def _texts(draw: st.DrawFn, most: int = 10) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), max_size=most))
    date = draw(st.sampled_from(["", *DATES]))
    return " ".join([date, *words]).strip()


@st.composite
def _message(draw: st.DrawFn, n: int) -> BaseMessage:
    text = draw(_texts())
    kind = draw(st.sampled_from(["human", "ai", "call", "tool"]))
    if kind == "human":
        return HumanMessage(text, id=f"m{n}")
    if kind == "tool":
        return ToolMessage(text, tool_call_id=f"c{n}", name="lookup", id=f"m{n}")
    calls = []
    if kind == "call":
        calls = [{"name": "lookup", "args": {"q": draw(_texts(3))}, "id": f"c{n}"}]
    return AIMessage(text, tool_calls=calls, id=f"m{n}")


@st.composite
def _records(draw: st.DrawFn, most: int = 8) -> Records:
    count = draw(st.integers(1, most))
    out: Records = []
    n = 0
    for a in range(count):
        size = draw(st.integers(1, 6))
        messages = [draw(_message(n + i)) for i in range(size)]
        n += size
        out.append((f"archive_{a + 1:03d}", a + 1, messages, CREATED))
    return out


@st.composite
def _queries(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(["one", "two", "question", "quoted", "fragment"]))
    if shape == "one":
        return draw(st.sampled_from(WORDS))
    if shape == "two":
        return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=2)))
    if shape == "question":
        words = draw(st.lists(st.sampled_from(WORDS), min_size=3, max_size=7))
        return "what " + " ".join(words) + "?"
    if shape == "quoted":
        a, b = draw(st.lists(st.sampled_from(WORDS), min_size=2, max_size=2))
        return f'where was "{a} {b}" in the plan'
    word = draw(st.sampled_from(WORDS))
    start = draw(st.integers(0, max(0, len(word) - 2)))
    return word[start : start + 3]


@st.composite
def _corpus_cases(draw: st.DrawFn) -> dict[str, Any]:
    records = draw(_records())
    ids = [str(m.id) for r in records for m in r[2]]
    hidden = set(draw(st.lists(st.sampled_from(ids), max_size=3))) if ids else set()
    moved = [
        (f"archive_{i:03d}", "Key Facts & Decisions", draw(_texts(6)))
        for i in range(draw(st.integers(0, 3)))
    ]
    with_abstract = draw(st.lists(st.sampled_from([r[0] for r in records]), max_size=4))
    abstracts = {a: draw(_texts(8)) or "plan" for a in with_abstract}
    semantic = draw(
        st.lists(
            st.tuples(
                st.sampled_from([r[0] for r in records]),
                st.integers(-1, 6),
                st.floats(0.0, 1.0, allow_nan=False),
            ),
            max_size=6,
        )
        | st.none()
    )
    narrow = draw(st.none() | st.integers(0, len(records) - 1))
    return {
        "records": records,
        "hidden": hidden,
        "moved": moved,
        "abstracts": abstracts,
        "semantic": semantic,
        "narrow": narrow,
    }


def _corpus(case: dict[str, Any]) -> Corpus:
    corpus = Corpus.of_records(case["records"], case["moved"])
    corpus.hidden = set(case["hidden"])
    corpus.abstracts = {
        a: AbstractIndex.of(a, "", text) for a, text in case["abstracts"].items() if text.strip()
    }
    found = case["semantic"]
    if found is not None:
        ordered = sorted(found, key=lambda x: -x[2])
        corpus.semantic = lambda query, limit: ordered[:limit]
    if case["narrow"] is not None:  # archive_search's archive_id: one archive, no moved items
        corpus.indexes = [corpus.indexes[case["narrow"]]]
        corpus.moved = []
    return corpus


@settings(max_examples=300)
@given(
    case=_corpus_cases(),
    queries=st.lists(_queries(), min_size=1, max_size=4),
    limit=st.integers(1, 8),
    neighbours=st.booleans(),
    dates=st.booleans(),
)
def test_the_merged_ranking_is_the_per_archive_ranking(
    case: dict[str, Any], queries: list[str], limit: int, neighbours: bool, dates: bool
) -> None:
    merged = _corpus(case)  # one corpus for every query: its merged postings are reused
    for query in queries:
        expected = reference_rank(_corpus(case), query, limit, neighbours=neighbours, dates=dates)
        assert rank(merged, query, limit, neighbours=neighbours, dates=dates) == expected


# -- the store's merged postings: growth, forks, abstracts, hidden messages -------------------


class _Thread:
    """A memory's archives written the way Phase 1 and Phase 2 write them."""

    def __init__(self, archives: ArchiveStore, key: str) -> None:
        self.archives = archives
        self.key = key
        self.index = SearchIndex(archives)
        self.messages: dict[str, list[BaseMessage]] = {}
        self.abstracts: dict[str, str] = {}

    def write(
        self, archive_id: str, seq: int, messages: list[BaseMessage], prev: str | None
    ) -> None:
        record = ArchiveRecord(
            id=archive_id,
            seq=seq,
            status="done",
            messages=messages,
            message_count=len(messages),
            thread_id=self.key,
            created_at=CREATED,
            prev=prev,
            digest=digest_of(messages),
        )
        self.archives.put_archive(record)
        self.index.write(self.key, record)
        self.messages[archive_id] = messages

    def write_abstract(self, archive_id: str, text: str) -> None:
        self.index.write_abstracts(self.key, {archive_id: text})
        self.abstracts[archive_id] = text

    def stored(self, timeline: Sequence[str], hidden: set[str], settled: set[str]) -> Corpus:
        return store_corpus(
            self.index, self.key, timeline, hidden=set(hidden), moved=[], settled=settled
        )

    def fresh(self, timeline: Sequence[str], hidden: set[str]) -> Corpus:
        seqs = {a: n for n, a in enumerate(timeline, start=1)}
        corpus = Corpus.of_records([(a, seqs[a], self.messages[a], CREATED) for a in timeline])
        corpus.hidden = set(hidden)
        corpus.abstracts = {
            a: AbstractIndex.of(a, "", t) for a, t in self.abstracts.items() if a in seqs
        }
        return corpus


@st.composite
def _histories(draw: st.DrawFn) -> list[tuple[str, Any]]:
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(2, 9))):
        kind = draw(st.sampled_from(["grow", "grow", "fork", "abstract", "search", "search"]))
        if kind in {"grow", "fork"}:
            steps.append((kind, (draw(st.integers(0, 3)), draw(_records(3)))))
        elif kind == "abstract":
            steps.append((kind, (draw(st.integers(0, 50)), draw(_texts(6)) or "plan")))
        else:
            search = (draw(_queries()), draw(st.integers(0, 50)), draw(st.integers(1, 2)))
            steps.append((kind, search))
    steps.append(("search", (draw(_queries()), 0, 0)))
    return steps


@settings(max_examples=60)
@given(history=_histories())
def test_the_store_s_merged_postings_follow_growth_forks_and_abstracts(
    history: list[tuple[str, Any]],
) -> None:
    memory = WorkingMemory(store=InMemoryStore())
    thread = _Thread(memory._archives, f"postings-{uuid.uuid4().hex}")
    timeline: list[str] = []
    made = 0
    for kind, arg in history:
        if kind in {"grow", "fork"}:
            back, records = arg
            if kind == "fork":  # a branch from an earlier point of the timeline
                timeline = timeline[: max(0, len(timeline) - back)]
            for _, _, messages, _ in records:
                made += 1
                archive_id = f"archive_{made:03d}"
                renamed = [m.model_copy(update={"id": f"{archive_id}-{m.id}"}) for m in messages]
                thread.write(
                    archive_id, len(timeline) + 1, renamed, timeline[-1] if timeline else None
                )
                timeline.append(archive_id)
        elif kind == "abstract" and timeline:
            thread.write_abstract(timeline[arg[0] % len(timeline)], arg[1])
        elif kind == "search" and timeline:
            query, pick, back = arg
            for seen in (timeline, timeline[: max(1, len(timeline) - back)]):  # and earlier
                ids = [str(m.id) for a in seen for m in thread.messages[a]]
                hidden = {ids[pick % len(ids)]} if pick % 3 == 0 else set()
                settled = set(seen[: pick % (len(seen) + 1)])
                got = rank(thread.stored(seen, hidden, settled), query, 5, dates=True)
                assert got == reference_rank(thread.fresh(seen, hidden), query, 5, dates=True)


def test_an_abstract_written_after_a_search_is_found_by_the_next_one() -> None:
    """Phase 2 writes abstracts after the archives: one written for a settled archive whose
    abstract was looked for (and missing), and one that replaces an earlier abstract, are what
    the next search finds."""
    memory = WorkingMemory(store=InMemoryStore())
    thread = _Thread(memory._archives, f"abstracts-{uuid.uuid4().hex}")
    timeline = ["archive_001", "archive_002"]
    thread.write("archive_001", 1, [HumanMessage("the budget review", id="m1")], None)
    thread.write("archive_002", 2, [HumanMessage("the ramen plan", id="m2")], "archive_001")
    thread.write_abstract("archive_002", "lunch plans")
    settled = set(timeline)

    def search(query: str) -> list[Hit]:
        hits, _ = rank(thread.stored(timeline, set(), settled), query, 5)
        assert hits == rank(thread.fresh(timeline, set()), query, 5)[0]
        return hits

    assert not [h for h in search("walrus aquarium") if h.role == "abstract"]
    thread.write_abstract("archive_001", "walrus aquarium visit")
    thread.write_abstract("archive_002", "pelican sightings")
    assert [h.text for h in search("walrus aquarium") if h.role == "abstract"] == [
        "walrus aquarium visit"
    ]
    assert [h.text for h in search("pelican sightings") if h.role == "abstract"] == [
        "pelican sightings"
    ]
    assert not [h for h in search("lunch plans") if h.role == "abstract"]


def test_searches_from_many_threads_on_a_growing_timeline_see_what_a_fresh_index_sees() -> None:
    memory = WorkingMemory(store=InMemoryStore())
    thread = _Thread(memory._archives, f"threads-{uuid.uuid4().hex}")
    words = ["lake", "camping", "sister", "guitar", "budget", "review", "plan", "ramen"]
    timeline: list[str] = []
    for a in range(1, 61):
        messages: list[BaseMessage] = [
            HumanMessage(f"{words[a % 8]} {words[(a * 3) % 8]} {a}", id=f"h{a}"),
            AIMessage(f"the {words[(a * 5) % 8]} and {words[(a + 1) % 8]}", id=f"a{a}"),
        ]
        thread.write(f"archive_{a:03d}", a, messages, timeline[-1] if timeline else None)
        timeline.append(f"archive_{a:03d}")
    queries = ["what about the lake and camping", "guitar", "sister review plan", "ramen budget"]
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def search(worker: int) -> None:
        barrier.wait()
        for step in range(10, 61, 5):
            seen = timeline[: step - worker]  # each thread on its own prefix, growing
            for query in queries:
                got = rank(thread.stored(seen, set(), set()), query, 5)
                expected = reference_rank(thread.fresh(seen, set()), query, 5)
                if got != expected:
                    errors.append(AssertionError((worker, step, query)))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(search, range(4)))
    assert not errors


def test_stores_and_memories_never_share_merged_postings() -> None:
    first, second = InMemoryStore(), InMemoryStore()
    key = f"same-{uuid.uuid4().hex}"
    threads = [_Thread(WorkingMemory(store=s)._archives, key) for s in (first, second)]
    for n, thread in enumerate(threads):
        word = ["walrus", "narwhal"][n]
        thread.write("archive_001", 1, [HumanMessage(f"the {word} budget", id="m1")], None)
    for n, thread in enumerate(threads):
        hits, _ = rank(thread.stored(["archive_001"], set(), set()), "which budget", 5)
        assert [h.text for h in hits] == [f"the {['walrus', 'narwhal'][n]} budget"]


def test_after_a_reset_the_reused_archive_ids_show_only_the_new_conversation() -> None:
    """A reset deletes the records and the next conversation's archives take the same ids:
    the merged postings cached for the old ones are never searched again."""
    memory = WorkingMemory(wm_model(), config=EVERY_TURN, store=InMemoryStore())
    config = thread_config(f"reset-postings-{uuid.uuid4().hex}")
    _converse(memory, config, "walrus", 4)
    assert "walrus" in archive_search_text(memory, config, "walrus").split("\n", 1)[-1]
    memory.reset(config)
    _converse(memory, config, "narwhal", 4)
    for query in ("walrus", "which animal was it", "secret"):
        shown = " ".join(c.text for c in memory.recall_hits(config, query))
        assert "walrus" not in shown
        assert "walrus" not in archive_search_text(memory, config, query).split("\n", 1)[-1]
    found = archive_search_text(memory, config, "what was the narwhal secret")
    assert "narwhal" in found.split("\n", 1)[-1]


def _converse(memory: WorkingMemory, config: Any, word: str, turns: int) -> None:
    from langchain_core.messages import RemoveMessage

    messages: list[BaseMessage] = []
    for n in range(turns):
        messages += [
            HumanMessage(f"the {word} secret {n}", id=f"{word}-h{n}"),
            AIMessage("ok", id=f"{word}-a{n}"),
        ]
        update = memory.after_turn({"messages": messages}, config)
        gone = {x.id for x in update.get("messages", []) if isinstance(x, RemoveMessage)}
        messages = [x for x in messages if x.id not in gone]


def test_the_cache_holds_a_bounded_number_of_messages_newest_kept() -> None:
    """Merged postings are dropped least recently used first once the cached timelines hold
    more messages than the bound; a timeline dropped is merged again when searched."""
    cache = _Timelines(documents=40, branches=2)
    made: dict[str, Any] = {}

    def read(ids: Sequence[str]) -> list[Any]:
        return [made[i] for i in ids]

    from wm_langgraph.storage.search_index import build_index

    for n in range(30):
        made[f"a{n}"] = build_index(
            f"a{n}", n, [HumanMessage(f"word{n} plan", id=f"m{n}-{i}") for i in range(5)]
        )
    for memory in range(6):  # six memories of four archives (20 messages) each
        timeline = [f"a{memory * 4 + i}" for i in range(4)]
        view = cache.view(("store", memory), timeline, read)
        assert view.archives == [made[a] for a in timeline]
        held = sum(m.documents for k in range(6) for m in cache.entries(("store", k)))
        assert held <= 40
        assert cache.entries(("store", memory))  # the newest is kept
    for fork in range(4):  # forks of one memory: at most two branches kept
        cache.view(("store", 0), ["a0", f"a{20 + fork}"], read)
    assert len(cache.entries(("store", 0))) <= 2


@st.composite
def _any_message(draw: st.DrawFn) -> BaseMessage:
    text = draw(st.sampled_from(["", "plain text", "  [1:56 pm on 8 May, 2023] hi", "ü 東京"]))
    content: Any = text
    if draw(st.booleans()):
        content = [{"type": "text", "text": text}, {"type": "text", "text": "more"}]
    message_id = draw(st.none() | st.just("m-1"))
    kind = draw(st.sampled_from(["human", "ai", "ai-calls", "ai-legacy", "tool", "system"]))
    if kind == "human":
        return HumanMessage(content, id=message_id)
    if kind == "system":
        return SystemMessage(content, id=message_id)
    if kind == "tool":
        name = draw(st.none() | st.just("lookup"))
        status = draw(st.sampled_from(["success", "error"]))
        return ToolMessage(content, tool_call_id="c1", name=name, status=status, id=message_id)
    if kind == "ai-calls":
        calls = [{"name": "lookup", "args": {"q": "x", "raw": b"\x00"}, "id": "c1"}]
        return AIMessage(content, tool_calls=calls, id=message_id)
    if kind == "ai-legacy":  # tool calls only in the provider's raw form
        raw = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        return AIMessage(content, additional_kwargs={"tool_calls": [raw]}, id=message_id)
    return AIMessage(content, id=message_id)


@given(messages=st.lists(_any_message(), min_size=1, max_size=4))
def test_a_stored_message_shows_what_the_message_shows(messages: list[BaseMessage]) -> None:
    """What a hit shows of a stored message (text, role, id) is what the message itself
    gives, whether read from its stored fields or made into a message."""
    value = ArchiveRecord(id="archive_001", seq=1, status="done", messages=messages).to_value()
    stored = StoredMessages(value)
    for position in range(len(messages)):
        made = stored[position]
        expected = (searchable_text(made), role_label(made), str(made.id or ""))
        assert shown_parts(stored, position) == expected
        assert shown_parts(messages, position) == expected


def test_an_archive_written_again_under_its_id_is_searched_as_written() -> None:
    """Records replaced under the same ids (a thread's records deleted, its next conversation
    archived under the ids again): the search reads what was written last, never the merged
    postings of what was there before."""
    memory = WorkingMemory(store=InMemoryStore())
    thread = _Thread(memory._archives, f"rewritten-{uuid.uuid4().hex}")
    thread.write("archive_001", 1, [HumanMessage("the walrus budget review", id="m1")], None)
    hits, _ = rank(thread.stored(["archive_001"], set(), set()), "what about the walrus", 5)
    assert [h.text for h in hits] == ["the walrus budget review"]
    memory._archives.purge(thread.key)  # as reset does: the records go, the ids come back
    thread.write("archive_001", 1, [HumanMessage("the narwhal trip plan", id="m1")], None)
    for query in ("what about the narwhal", "what about the walrus", "narwhal"):
        got = rank(thread.stored(["archive_001"], set(), set()), query, 5)
        assert got == rank(thread.fresh(["archive_001"], set()), query, 5)
