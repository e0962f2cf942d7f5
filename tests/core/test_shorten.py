"""Shortening never leaves half a parenthesis: the offline writer's chat facts carry resolved
dates in parentheses ("last week (the week before 9 June 2023)"), and a cut inside one once left
"last week (the week before 9 June … (2023-06-09)" in a Working Memory."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wm_langgraph.document.text.shorten import PARENTHESIS_GRACE, shorten


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0


def test_a_cut_inside_a_short_parenthesis_finishes_it() -> None:
    text = "We went camping in the hills last week (the week before 9 June 2023) with the kids"
    assert shorten(text, max_words=10) == (
        "We went camping in the hills last week (the week before 9 June 2023) …"
    )


def test_a_cut_inside_a_long_parenthesis_goes_before_it() -> None:
    aside = " ".join(f"w{n}" for n in range(PARENTHESIS_GRACE + 5))
    text = f"I adopted a kitten named Quince ({aside}) yesterday"
    assert shorten(text, max_words=8) == "I adopted a kitten named Quince …"


def test_a_text_that_opens_with_a_parenthesis_is_cut_inside_and_closed() -> None:
    aside = " ".join(f"w{n}" for n in range(PARENTHESIS_GRACE + 5))
    assert shorten(f"({aside}) and more", max_words=3) == "(w0 w1 w2 …)"


def test_short_texts_come_back_whole_and_a_plain_cut_is_unchanged() -> None:
    assert shorten("a  b\n c", max_words=3) == "a b c"
    assert shorten("one two three, four five", max_words=3) == "one two three …"
    assert shorten("事" * 100, max_cjk=10) == "事" * 10 + "…"


_WORDS = st.lists(
    st.sampled_from(["word", "(the", "week", "before)", "(x)", "9", "June", "2023", "(", ")"]),
    max_size=60,
)


@given(words=_WORDS, limit=st.integers(min_value=1, max_value=40))
def test_shortening_keeps_a_prefix_and_balanced_parentheses(words: list[str], limit: int) -> None:
    text = " ".join(words)
    out = shorten(text, max_words=limit)
    if out == text:
        return
    assert out.rstrip(")").endswith(" …")
    kept = out.rsplit(" …", 1)[0]
    assert text.startswith(kept)
    assert len(kept.split(" ")) <= limit + PARENTHESIS_GRACE
    if _balanced(text):
        assert _balanced(out)


def test_a_character_bound_keeps_fewer_words_and_the_parenthesis_rule() -> None:
    text = "We met at the old harbour (the week before 9 June 2023) and talked for hours"
    out = shorten(text, max_words=40, max_chars=60)
    assert out == "We met at the old harbour (the week before 9 June 2023) …"
    assert shorten("x" * 50, max_chars=10) == "x" * 9 + "…"
    assert len(shorten("事" * 50, max_cjk=90, max_chars=10)) <= 10


@given(words=_WORDS, limit=st.integers(min_value=1, max_value=40), chars=st.integers(8, 200))
def test_a_character_bound_is_never_exceeded(words: list[str], limit: int, chars: int) -> None:
    out = shorten(" ".join(words), max_words=limit, max_chars=chars)
    assert len(out) <= chars
