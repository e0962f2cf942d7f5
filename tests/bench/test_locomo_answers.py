"""The end-to-end answer run's own parts: LoCoMo's token F1 on hand-made answers, the seeded
sample, tool calls written as text, and the LOCOMO.md section it replaces."""

from __future__ import annotations

import pytest

pytest.importorskip("nltk")

from bench.locomo.answer import (
    ANSWERS_BEGIN,
    ANSWERS_END,
    sample_questions,
    tool_call_in_text,
    with_answers,
)
from bench.locomo.data import parse_sample, synthetic_sample
from bench.locomo.f1 import answer_f1, normalize_answer, token_f1


def test_normalisation_drops_commas_case_punctuation_articles_and_and() -> None:
    assert normalize_answer("The Cat, and a DOG!") == "cat dog"
    assert normalize_answer("  8 May,  2023 ") == "8 may 2023"
    assert normalize_answer("an apple's core.") == "apples core"
    assert normalize_answer("Sandy's band-aid") == "sandys bandaid"


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        ("Pixel", "Pixel", 1.0),
        ("the dog Pixel", "Pixel", 2 * (1 / 2) * 1 / (1 / 2 + 1)),  # "dog pixel" vs "pixel"
        ("running shoes", "run shoe", 1.0),  # Porter stems meet
        ("cats", "dogs", 0.0),
        ("", "Pixel", 0.0),
        ("7 May 2023", "7 May, 2023", 1.0),
        ("May 2023", "7 May 2023", 2 * 1.0 * (2 / 3) / (1.0 + 2 / 3)),
        ("pixel pixel", "pixel", 2 * 0.5 * 1.0 / 1.5),  # repeats count once per gold token
    ],
)
def test_token_f1_on_hand_made_cases(prediction: str, gold: str, expected: float) -> None:
    assert token_f1(prediction, gold) == pytest.approx(expected)


def test_multi_hop_takes_the_best_part_per_gold_part() -> None:
    # gold parts: "Tromso", "Porto"; the prediction's parts: "Porto", "Oslo"
    assert answer_f1("Porto, Oslo", "Tromso, Porto", 1) == pytest.approx(0.5)
    assert answer_f1("Tromso and Porto", "Tromso, Porto", 1) == pytest.approx(2 * 0.5 / 1.5)
    assert answer_f1("Porto, Tromso", "Tromso, Porto", 1) == pytest.approx(1.0)


def test_open_domain_scores_against_the_gold_before_its_semicolon() -> None:
    assert answer_f1("National park", "National park; she likes the outdoors", 3) == 1.0
    assert answer_f1("outdoors", "National park; she likes the outdoors", 3) == 0.0


def test_temporal_and_single_hop_use_the_plain_token_f1() -> None:
    for category in (2, 4):
        assert answer_f1("7 May 2023", "7 May 2023", category) == 1.0
    with pytest.raises(ValueError, match="categories 1-4"):
        answer_f1("not mentioned", "x", 5)


def test_the_sample_is_seeded_stated_and_in_order() -> None:
    conversation = parse_sample(synthetic_sample(), "conv-synthetic")
    first = sample_questions(conversation, 3, seed=40)
    assert first == sample_questions(conversation, 3, seed=40)
    assert len(first) == 3
    assert set(first) <= set(conversation.questions)
    order = [conversation.questions.index(q) for q in first]
    assert order == sorted(order)
    assert sample_questions(conversation, 99, seed=1) == list(conversation.questions)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"name": "archive_search", "arguments": {"queries": ["dog"]}}',
            ("archive_search", {"queries": ["dog"]}),
        ),
        (
            "Let me look.\n<tool_call>\n"
            '{"name": "archive_search", "arguments": "{\\"query\\": \\"dog\\"}"}\n</tool_call>',
            ("archive_search", {"query": "dog"}),
        ),
        ('{"name": "rm_rf", "arguments": {}}', None),  # not a tool the request offers
        ("Pixel", None),
        ('{"name": "archive_search", "arguments": "not json"}', None),
        ("{broken", None),
    ],
)
def test_a_tool_call_written_as_text_is_read_only_for_offered_tools(text, expected) -> None:
    assert tool_call_in_text(text, ["archive_search", "archive_expand"]) == expected


def test_the_answers_section_is_replaced_or_appended() -> None:
    section = f"{ANSWERS_BEGIN}\nnew\n{ANSWERS_END}"
    assert with_answers("# LoCoMo\n", section).endswith(section + "\n")
    old = f"# LoCoMo\n\nbefore\n\n{ANSWERS_BEGIN}\nold\n{ANSWERS_END}\n\nafter\n"
    replaced = with_answers(old, section)
    assert "old" not in replaced
    assert "new" in replaced
    assert replaced.index("before") < replaced.index("new") < replaced.index("after")
