"""The offline writer on conversations: a chat folds into a Working Memory that holds its people,
places, events and their dates (relative dates resolved against the session date), consolidated
per speaker within the size contract (plans in Task & Goals) — not chit-chat, not rhetorical
questions, not a date line as the title. Every conversation here is invented."""

from __future__ import annotations

import random
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from wm_langgraph import OfflineWorkingMemoryModel, WorkingMemory, WorkingMemoryConfig
from wm_langgraph.document import parse_working_memory
from wm_langgraph.document.merge import merge_working_memory
from wm_langgraph.document.protocol import section_size_warnings
from wm_langgraph.document.sections import render_working_memory, section_items
from wm_langgraph.document.tokens import count_tokens
from wm_langgraph.messages import render_messages
from wm_langgraph.phase2.size import contract_for
from wm_langgraph.writer.generate import generate_create, generate_update
from wm_langgraph.writer.offline._chat import consolidate_chat, read_context

SESSIONS: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "[10:05 am on 3 February, 2022]",
        [
            ("Hey Ruben! I finally adopted a tabby kitten named Quince yesterday.", "user"),
            ("Hi Lotte! That's awesome! How is she doing?", "assistant"),
            ("She's great. My partner Joris built her a climbing tower.", "user"),
            ("I started pottery classes in Utrecht last week. I love the wheel.", "assistant"),
            ("Wow, that sounds amazing! What do you make?", "user"),
            ("Mostly bowls. I'm going to sell some at the Leiden market next month.", "assistant"),
        ],
    ),
    (
        "[6:40 pm on 20 March, 2022]",
        [
            ("Hey Ruben! I got a new job as a florist in Haarlem two days ago.", "user"),
            ("Congrats Lotte! You deserve it.", "assistant"),
            ("Thanks! We're planning to visit Porto in May.", "user"),
            ("I sold 14 bowls at the market last weekend.", "assistant"),
            ("That's so cool!", "user"),
            ("My sister Femke is getting married next year.", "assistant"),
        ],
    ),
]


def _messages(sessions: list[tuple[str, list[tuple[str, str]]]]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    n = 0
    for header, turns in sessions:
        for i, (text, role) in enumerate(turns):
            shown = f"{header} {text}" if i == 0 else text
            n += 1
            kind = HumanMessage if role == "user" else AIMessage
            out.append(kind(shown, id=f"m{n}"))
    return out


def _fold(messages: list[BaseMessage], config: WorkingMemoryConfig, every: int = 6) -> str:
    memory = WorkingMemory(OfflineWorkingMemoryModel(), config=config, store=InMemoryStore())
    run: Any = {"configurable": {"thread_id": "chat"}}
    for start in range(0, len(messages), every):
        memory.compact({"messages": messages[start : start + every]}, run)
    return memory.get_working_memory(run)


def test_a_scripted_chat_folds_into_its_people_places_events_and_dates() -> None:
    wm = _fold(_messages(SESSIONS), WorkingMemoryConfig(background=False))
    sections = parse_working_memory(wm)
    facts = sections["Key Facts & Decisions"] + "\n" + sections["Task & Goals"]
    for needle in (
        "Quince",
        "2 February 2022",  # "yesterday" in the first session
        "Joris",
        "Utrecht",
        "Leiden",
        "March 2022",  # "next month" in the first session
        "Haarlem",
        "18 March 2022",  # "two days ago" in the second session
        "Porto",
        "14 bowls",
        "Femke",
        "2023",  # "next year" in the second session
    ):
        assert needle in facts, (needle, facts)
    # plans are the speakers' goals
    assert "Leiden" in sections["Task & Goals"]
    assert "Porto" in sections["Task & Goals"]
    assert "Utrecht" in sections["Key Facts & Decisions"]
    # per speaker, dated by session
    assert any(i.startswith("Lotte (3 February 2022):") for i in section_items(facts))
    assert any(i.startswith("Ruben (20 March 2022):") for i in section_items(facts))
    # no chit-chat as a fact, no question as an open issue, no date line as the title
    for chatter in ("That's awesome", "sounds amazing", "so cool", "You deserve it"):
        assert chatter not in wm
    assert "?" not in sections["Open Issues"]
    assert sections["Session Title"] == "Chat between Lotte and Ruben"
    assert "2022" not in sections["Session Title"]
    context = read_context(sections["Current State"])
    assert (context.user, context.assistant) == ("Lotte", "Ruben")
    assert context.when is not None
    assert context.when.isoformat() == "2022-03-20"


def test_the_create_path_never_titles_a_chat_with_its_date_line() -> None:
    messages = [*_messages(SESSIONS[:1])[:1], AIMessage("Oh nice.", id="r")]
    wm = generate_create(
        OfflineWorkingMemoryModel(), prior="", messages_text=render_messages(messages)
    )
    title = parse_working_memory(wm)["Session Title"]
    assert "am on" not in title
    assert "2022" not in title
    assert "[" not in title


def test_a_chat_round_dates_a_session_continued_from_the_previous_round() -> None:
    first = _messages(SESSIONS[:1])
    later = [
        HumanMessage("I repainted the kitchen yesterday.", id="x1"),
        AIMessage("I visited Maastricht yesterday with my mother.", id="x2"),
        HumanMessage("I'm going to run a half marathon in Rotterdam next month.", id="x3"),
    ]
    wm = _fold([*first, *later], WorkingMemoryConfig(background=False), every=6)
    sections = parse_working_memory(wm)
    facts = sections["Key Facts & Decisions"] + "\n" + sections["Task & Goals"]
    assert "Maastricht" in facts
    assert "2 February 2022" in facts
    assert "Rotterdam" in facts
    assert "March 2022" in facts


def test_a_coding_transcript_is_not_read_as_a_chat() -> None:
    messages = [
        HumanMessage("We decided to use Redis because the queue needs persistence.", id="a"),
        AIMessage("Fine, I'll wire it into src/queue/worker.py.", id="b"),
        HumanMessage("I love that. Also I went through the logs yesterday.", id="c"),
    ]
    wm = generate_create(
        OfflineWorkingMemoryModel(), prior="", messages_text=render_messages(messages)
    )
    state = parse_working_memory(wm)["Current State"]
    assert "Chat between" not in state


def test_chat_consolidation_keeps_anchored_clauses_and_drops_unanchored_ones_first() -> None:
    moods = [
        "calm",
        "quiet",
        "lazy",
        "slow",
        "warm",
        "cosy",
        "long",
        "short",
        "late",
        "early",
        "soft",
        "loud",
        "busy",
        "odd",
        "fine",
        "mild",
        "dull",
        "wild",
        "rainy",
        "sunny",
    ]
    items = [
        f"Lotte ({d} February 2022): I adopted a kitten named Quince{d}; we had a {moods[d - 1]} "
        f"relaxing evening together at home with some friends and family"
        for d in range(1, 21)
    ]
    out = consolidate_chat(items, max_tokens=400, max_bullets=8)
    body = "\n".join(out)
    assert len(out) <= 8
    assert count_tokens(body) <= 400
    for d in range(1, 21):
        assert f"Quince{d}" in body
    assert body.count("relaxing evening") < 20  # the unanchored clauses left first
    # without a goal to meet, nothing leaves
    assert "\n".join(consolidate_chat(items, 10_000, 20)).count("relaxing evening") == 20


def _kayak_memory(days: int) -> str:
    facts = "\n".join(
        f"- Lotte ({d} February 2022): I paddled my green kayak Kayak{d} across the lake near "
        f"Bergen with my cousin Joris and then we stopped for a long picnic on the small island"
        for d in range(1, days + 1)
    )
    return render_working_memory(
        {
            "Session Title": "Chat between Lotte and Ruben",
            "Current State": "Chat between Lotte (user) and Ruben (assistant). "
            "Latest session: 28 February 2022.",
            "Key Facts & Decisions": facts,
        }
    )


def test_a_chat_warned_only_for_its_bullet_count_is_regrouped_not_cut() -> None:
    """Key Facts over 25 bullets but under 1,500 tokens, in a document under its size target:
    the offline writer merged the bullets *and* cut every clause to 12 words (goal 0.7 x 1,500),
    so "I went to an … (LGBTQ)" kept the anchor and lost the fact. Regrouping alone meets the
    warning; the clauses stay whole."""
    wm = _kayak_memory(28)
    key_facts = parse_working_memory(wm)["Key Facts & Decisions"]
    assert 1_050 < count_tokens(key_facts) < 1_500
    assert "Key Facts" in section_size_warnings(wm)  # 28 bullets > 25
    more = [HumanMessage("[9:00 am on 28 February, 2022] Hey Ruben! I bought a red canoe.")]
    ops = generate_update(
        OfflineWorkingMemoryModel(), working_memory=wm, messages_text=render_messages(more)
    )
    assert ops is not None
    op = ops["Key Facts & Decisions"]
    assert op["op"] == "UPDATE"
    body = op["content"]
    assert "…" not in body
    assert body.count("on the small island") == 28
    assert len(section_items(body)) <= 25
    assert count_tokens(body) <= 1_500
    result = merge_working_memory(wm, ops)
    assert not [d for d in result.decisions if d.reason], "the guards accept it as it is"


def test_a_chat_over_its_size_target_is_regrouped_never_cut() -> None:
    """SPEC §11: an item is never shortened with "…" so that a name, number or identifier is
    lost. Over its target the chat's Key Facts is regrouped within the item bound; what is
    still over stays whole, for the size contract to move out whole."""
    wm = _kayak_memory(28)
    ops = generate_update(
        OfflineWorkingMemoryModel(),
        working_memory=wm,
        messages_text=render_messages([HumanMessage("I bought a red canoe in Bergen.")]),
        size_target=1_000,
    )
    assert ops is not None
    body = ops["Key Facts & Decisions"]["content"]
    assert "…" not in body
    for d in range(1, 29):
        assert f"Kayak{d}" in body
    assert body.count("on the small island") == 28  # every clause whole
    assert all(count_tokens(item) <= 150 for item in section_items(body))  # the item bound


def test_chat_consolidation_never_shortens_a_clause() -> None:
    items = [
        f"Lotte ({d} February 2022): I paddled my green kayak Kayak{d} across the wide lake "
        f"near Bergen with my cousin Joris and then we all stopped for a long quiet picnic on "
        f"the small island in the middle"
        for d in range(1, 11)
    ]
    whole = "\n".join(consolidate_chat(items, 10_000, 20))
    out = "\n".join(consolidate_chat(items, count_tokens(whole) - 20, 20))
    # over the goal, no clause loses its last words: the size contract moves whole items
    assert out.count("a long quiet picnic on the small island in the middle") == 10
    assert "…" not in out


def test_small_talk_questions_leave_nothing_open_but_real_questions_do() -> None:
    """Found by the long-chat property (seed 1669): a chunk ending on "How was your week?"
    before the round was read as a chat put the greeting into Open Issues for good."""
    wm = _fold(_random_chat(1669, 12), WorkingMemoryConfig(background=False, token_budget=4_000), 8)
    assert "How was your week" not in parse_working_memory(wm)["Open Issues"]
    asked = [
        HumanMessage("[4:00 am on 1 June, 2021] How are you doing today?"),
        AIMessage("Fine, thanks."),
        HumanMessage("How is your migration of orders.db going?"),
    ]
    wm = _fold(asked, WorkingMemoryConfig(background=False), every=3)
    issues = parse_working_memory(wm)["Open Issues"]
    assert "How are you" not in issues
    assert "orders.db" in issues


_WORDS = ["kayak", "garden", "violin", "bakery", "festival", "lake", "novel", "mural"]
_PLACES = ["Bergen", "Lyon", "Graz", "Cork", "Turku", "Split", "Ghent", "Bilbao"]


def _random_chat(seed: int, sessions: int) -> list[BaseMessage]:
    rng = random.Random(seed)
    chat: list[tuple[str, list[tuple[str, str]]]] = []
    for s in range(sessions):
        header = f"[{rng.randint(1, 11)}:00 am on {s + 1} June, 2021]"
        turns: list[tuple[str, str]] = []
        for t in range(8):
            role = "user" if t % 2 == 0 else "assistant"
            place, word = rng.choice(_PLACES), rng.choice(_WORDS)
            text = rng.choice(
                [
                    f"I went to the {word} show in {place} yesterday.",
                    f"My cousin {place}son bought a {word} last week.",
                    f"We're planning to visit {place} next month for the {word}.",
                    "That's awesome!",
                    f"I love my {word} so much, it cost {rng.randint(10, 900)} euros.",
                    "How was your week?",
                ]
            )
            turns.append((text, role))
        chat.append((header, turns))
    return _messages(chat)


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.integers(min_value=0, max_value=10_000))
def test_a_long_chat_stays_within_its_size_contract(seed: int) -> None:
    config = WorkingMemoryConfig(background=False, token_budget=4_000)
    contract = contract_for(config)
    wm = _fold(_random_chat(seed, 12), config, every=8)
    assert count_tokens(wm) <= contract.ceiling
    sections = parse_working_memory(wm)
    assert "?" not in sections["Open Issues"]
    assert sections["Key Facts & Decisions"].strip()


def test_chat_consolidation_never_cuts_a_resolved_date_in_half() -> None:
    """Reported in conv-26 of the LoCoMo replay: ``last week (the week before 9 June …
    (2023-06-09)``. Every shortening step of the consolidation keeps a resolved date whole."""
    items = [
        f"Lotte ({d} February 2022): I paddled my green kayak Kayak{d} across the lake near "
        f"Bergen and we had a long picnic last week (the week before {d} February 2022) with "
        f"my cousin Joris on the small island in the middle of the lake"
        for d in range(1, 21)
    ]
    whole = count_tokens("\n".join(consolidate_chat(items, 10_000, 20)))
    for goal in range(whole - 10, whole // 3, -10):
        for line in consolidate_chat(items, goal, 20):
            assert line.count("(") == line.count(")"), line
            for date in line.split("(the week before ")[1:]:
                assert re.match(r"\d{1,2} February 2022\)", date), line
