"""archive_search as a ranked search in plain words (behaviour §7.6), over a hand-built source.

The engine's stored index, forks, removals and stores: tests/engine/test_recall_index.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from tests.common import thread_config
from wm_langgraph.recall.search import LITERAL_FALLBACK_ARCHIVES
from wm_langgraph.recall.tools import MAX_HIT_CHARS, archive_search_text


@dataclass
class Record:
    id: str
    seq: int
    status: str
    messages: list[BaseMessage]
    abstract: str | None = None
    created_at: str = ""


@dataclass
class Source:
    records: list[Record]
    moved: list[tuple[str, str, str]] = field(default_factory=list)

    def list_archives(self, config: RunnableConfig) -> Sequence[Record]:
        return list(self.records)

    def moved_items(self, config: RunnableConfig) -> list[tuple[str, str, str]]:
        return list(self.moved)


def _chat(*texts: str) -> list[BaseMessage]:
    return [(HumanMessage if i % 2 == 0 else AIMessage)(t) for i, t in enumerate(texts)]


FILLER = _chat(
    "Can you look at the failing deploy? The deploy failed again this morning.",
    "The deploy failed because the deploy job timed out; I restarted the deploy.",
    "Thanks. What about the dashboard colours?",
    "I changed the dashboard to the dark theme.",
)
DB = _chat(
    "We should move the billing data somewhere sturdier.",
    "Agreed: I migrated the billing database to Postgres 16 on 3 March, all tables copied.",
    "Great, and the old MySQL box?",
    "It is switched off; backups are kept for 30 days.",
)
PATH = _chat(
    "The traceback points at src/app.py line 42: KeyError 'region'.",
    "Fixed: src/app.py now reads the region with a default.",
)
CHINESE = _chat(
    "数据库迁移什么时候开始？",
    "数据库迁移已经在周五完成了，所有表都复制好了。",
    "好的，谢谢。",
    "不客气。",
)


def _source(*chunks: list[BaseMessage], stamp: str = "") -> Source:
    return Source(
        [
            Record(f"archive_{n:03d}", n, "done", list(chunk), created_at=stamp)
            for n, chunk in enumerate(chunks, start=1)
        ]
    )


def _hits(out: str) -> list[str]:
    return out.split("\n\n")[1:]


def _labels(out: str) -> list[str]:
    return [h.split("\n", 1)[0] for h in _hits(out)]


def test_a_question_in_plain_words_finds_what_no_substring_would():
    source = _source(FILLER, DB, FILLER)
    out = archive_search_text(
        source, thread_config("A"), "When did we migrate billing to postgres?"
    )
    assert out.startswith(tuple(f"{n} match(es)" for n in range(1, 13)))
    assert _labels(out)[0] == "[archive_002 · message 2/4 · assistant]"
    assert "3 March" in _hits(out)[0]


def test_identifiers_rank_first_when_they_match_literally():
    deploys = _chat(*(f"The deploy failed again, deploy number {i}." for i in range(6)))
    source = _source(deploys, PATH, deploys)
    out = archive_search_text(source, thread_config("A"), "why the deploy failed src/app.py")
    first, second = _labels(out)[:2]
    assert first.startswith("[archive_002")
    assert second.startswith("[archive_002")
    # the identifier alone is looked up literally
    only = archive_search_text(source, thread_config("A"), "src/app.py")
    assert {label[:12] for label in _labels(only)} == {"[archive_002"}


def test_a_chinese_question_finds_the_chinese_answer():
    source = _source(FILLER, CHINESE, DB)
    out = archive_search_text(source, thread_config("A"), "数据库迁移是哪天完成的？")
    assert _labels(out)[0].startswith("[archive_002 · message ")
    assert "周五完成" in _hits(out)[0]  # the answer, as the hit or as its neighbour
    assert archive_search_text(source, thread_config("A"), "周五").startswith("1 match(es)")


def test_keywords_need_every_word_but_a_question_ranks_partial_matches():
    source = _source(FILLER, DB)
    assert archive_search_text(source, thread_config("A"), "billing kubernetes").startswith(
        "No match"
    )
    assert "billing" in archive_search_text(source, thread_config("A"), "billing postgres")
    question = archive_search_text(source, thread_config("A"), "is billing on kubernetes now")
    assert _labels(question)[0].startswith("[archive_002")


def test_a_hit_brings_its_neighbouring_turns_and_its_time():
    source = _source(FILLER, DB, stamp="2026-03-03T09:15:00+00:00")
    out = archive_search_text(source, thread_config("A"), "where did the MySQL box go")
    hit = _hits(out)[0]
    lines = hit.split("\n")
    assert lines[0] == "[archive_002 · message 3/4 · user]"
    assert lines[1] == "Great, and the old MySQL box?"
    assert any(ln.startswith("  before · message 2/4 · assistant: Agreed") for ln in lines)
    assert any(ln.startswith("  after · message 4/4 · assistant: It is switched") for ln in lines)
    assert lines[-1] == "  (archived 2026-03-03 09:15 UTC)"
    assert "archive_expand(archive_id, offset=<message number - 1>)" in out.split("\n")[0]


def _positions(out: str) -> list[tuple[str, int]]:
    found = [re.match(r"\[(archive_\d+) · message (\d+)/", label) for label in _labels(out)]
    return [(m.group(1), int(m.group(2))) for m in found if m]


def test_a_question_gets_hits_that_are_not_each_others_neighbours():
    """Adjacent messages share their words (and their neighbours' scores): the next hit is a
    message the earlier hits do not show already."""
    talk = [f"small talk number {i} about the weather" for i in range(20)]
    talk[5] = "We planted tomatoes in the garden, three rows of tomatoes."
    talk[6] = "Tomatoes need sun; the garden gets it all afternoon."
    talk[7] = "The garden tomatoes will be ready in August."
    talk[15] = "My sister grows tomatoes on her balcony."
    source = _source(_chat(*talk))
    out = archive_search_text(source, thread_config("A"), "when are the garden tomatoes ready?")
    positions = _positions(out)
    assert positions[0][1] in {6, 7, 8}
    assert ("archive_001", 16) in positions[:2]  # the other place, not a neighbour's repeat
    # the messages the first hit shows as neighbours come after the other place
    assert abs(positions[0][1] - positions[1][1]) > 2
    # every message is still reachable: the neighbours of a hit show the ones moved back
    assert "three rows of tomatoes" in out
    assert "ready in August" in out


def test_literal_matches_of_a_question_are_never_moved_back():
    lines = [f"filler line {i} with nothing in it" for i in range(10)]
    lines[3] = "The error E4711 came from the billing job."
    lines[4] = "E4711 again, now in the export job."
    source = _source(_chat(*lines))
    out = archive_search_text(source, thread_config("A"), "where did error E4711 come from")
    assert _positions(out)[:2] in (
        [("archive_001", 4), ("archive_001", 5)],
        [("archive_001", 5), ("archive_001", 4)],
    )


def test_neighbours_reach_into_the_adjacent_archives():
    source = _source(FILLER, PATH, DB)
    out = archive_search_text(source, thread_config("A"), "src/app.py default")
    hit = _hits(out)[0]
    assert hit.startswith("[archive_002 · message 2/2 · assistant]")
    assert "  before · message 1/2 · user: The traceback" in hit
    assert "  after · archive_003 message 1/4 · user: We should move" in hit


def test_equal_scores_put_the_newest_archive_first():
    same = _chat("the same words here", "reply")
    source = _source(same, list(same), list(same))
    assert [label[:12] for label in _labels(archive_search_text(source, {}, "x"))] == []
    out = archive_search_text(source, thread_config("A"), "same words")
    newest_first = ["[archive_003", "[archive_002", "[archive_001"]
    assert [label[:12] for label in _labels(out)] == newest_first


def test_a_fragment_of_a_word_is_found_literally_in_the_newest_archives_only():
    old = _chat("the token XQZ-77812-alpha was issued")
    filler = [_chat(f"nothing here {i}") for i in range(LITERAL_FALLBACK_ARCHIVES)]
    assert "XQZ-77812-alpha" in archive_search_text(
        _source(old, *filler[:3]), thread_config("A"), "7781"
    )
    # beyond the newest archives a fragment is not searched (no query reads every archive)
    assert archive_search_text(_source(old, *filler), thread_config("A"), "7781").startswith(
        "No match"
    )
    # a whole word is found at any age
    assert "XQZ-77812-alpha" in archive_search_text(
        _source(old, *filler), thread_config("A"), "token issued"
    )


def test_moved_items_are_ranked_with_the_messages():
    source = _source(FILLER, DB)
    source.moved = [("archive_001", "Key Facts & Decisions", "Billing runs on Postgres 16")]
    out = archive_search_text(source, thread_config("A"), "what database does billing use")
    assert any(label.startswith("[moved out of the Working Memory · Key Facts") for label in
               _labels(out))  # fmt: skip
    scoped = archive_search_text(
        source, thread_config("A"), "billing postgres", archive_id="archive_002"
    )
    assert "moved out" not in scoped


@settings(max_examples=60, deadline=None)
@given(query=st.text(min_size=1, max_size=80))
def test_any_query_gives_bounded_text(query):
    source = _source(FILLER, DB, PATH, CHINESE, stamp="2026-03-03T09:15:00+00:00")
    out = archive_search_text(source, thread_config("A"), query)
    assert isinstance(out, str)
    if re.match(r"^\d+ match\(es\)", out):
        for hit in _hits(out):
            label, _, body = hit.partition("\n")
            assert label.startswith("[archive_")
            assert len(body) <= MAX_HIT_CHARS


def test_the_model_is_told_to_search_in_plain_words():
    from wm_langgraph.context.fit import _note
    from wm_langgraph.writer.prompts import load_prompt

    system = load_prompt("system")
    assert "archive_search" in system
    assert "plain words" in system
    assert "plain words" in _note(3)
