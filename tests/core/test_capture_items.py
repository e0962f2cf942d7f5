"""One item per thing (issue 46): the same item across markers, speakers and echoes; never
added twice; a paste told by its shape; sentences never cut at an abbreviation; Current State
never counts as written."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from wm_langgraph.document.sections import parse_working_memory, render_working_memory
from wm_langgraph.document.text.units import (
    extract_units,
    pasted_lines,
    split_sentences,
    statement_key,
)
from wm_langgraph.phase2.capture import Candidate, run_capture

FACTS = "Key Facts & Decisions"
_WORDS = st.sampled_from(
    [
        "billing",
        "invoices",
        "column",
        "currency",
        "service",
        "deploy",
        "runner",
        "image",
        "schema",
        "migration",
        "plan",
        "webhook",
        "retry",
        "payment",
        "nightly",
        "job",
        "staging",
        "key",
        "rotate",
        "customer",
        "team",
        "owner",
    ]
)
_STATEMENTS = st.builds(
    lambda subject, words, number: f"The {subject} {' '.join(words)} is {number} units.",
    _WORDS,
    st.lists(_WORDS, min_size=2, max_size=8),
    st.integers(min_value=2, max_value=99_999),
)
_MARKERS = st.sampled_from(["", "[new] ", "[restored] ", "[⚠ restored] ", "[new] [restored] "])
_PREFIXES = st.sampled_from(["", "User: ", "Noted: ", "Owen: ", "Got it — ", "Noted: User: "])
_ACKS = st.sampled_from(["Noted: ", "Got it: ", "OK, ", "Sure — ", "Understood. ", "好的，"])


def _document(section: str, item: str) -> str:
    return render_working_memory(
        {"Session Title": "Billing service work", "Current State": "Working.", section: f"- {item}"}
    )


@given(
    statement=_STATEMENTS,
    marker=_MARKERS,
    prefix=_PREFIXES,
    section=st.sampled_from([FACTS, "Open Issues", "Errors & Corrections", "Task & Goals"]),
    anchored=st.booleans(),
)
def test_an_item_the_document_holds_is_never_added_again(
    statement: str, marker: str, prefix: str, section: str, anchored: bool
) -> None:
    document = _document(section, f"{marker}{prefix}{statement}")
    anchors = (statement.split()[-2],) if anchored else ()
    candidate = Candidate("decision", statement, FACTS, anchors)
    result = run_capture(document, [candidate], ask=None)
    assert [f.fate for f in result.fates] == ["written"]
    assert result.text == document


@given(statement=_STATEMENTS, marker=_MARKERS, prefix=_PREFIXES)
def test_one_key_across_markers_speakers_and_acknowledgements(
    statement: str, marker: str, prefix: str
) -> None:
    assert statement_key(f"{marker}{prefix}{statement}") == statement_key(statement)
    assert statement_key(f"- {statement.upper()}  ") == statement_key(statement)


@given(statement=_STATEMENTS, ack=_ACKS, cut=st.booleans())
def test_an_echo_is_the_same_item(statement: str, ack: str, cut: bool) -> None:
    echo = statement[: max(20, len(statement) - 8)] + "…" if cut else statement
    alone = extract_units([("user", statement)])
    echoed = extract_units([("user", statement), ("assistant", f"{ack}{echo}")])
    assert [u.text for u in echoed] == [u.text for u in alone]


def test_a_statement_only_in_current_state_is_not_written_and_is_kept() -> None:
    said = "I'm allergic to penicillin"
    document = render_working_memory(
        {"Session Title": "Planning the month", "Current State": f"Latest request: {said}."}
    )
    (unit,) = extract_units([("user", f"{said}, please remember that.")])
    assert unit.explicit
    candidate = Candidate(unit.kind, unit.text, FACTS, unit.anchors, explicit=True)
    result = run_capture(document, [candidate], ask=None)
    assert [f.fate for f in result.fates] == ["added_by_code"]
    assert said in parse_working_memory(result.text)[FACTS]


@given(
    title=st.sampled_from(["Dr.", "Mr.", "Mrs.", "Ms.", "Prof.", "St."]),
    name=st.sampled_from(["Okafor", "Bakker", "Smith", "Louis", "Lee"]),
    before=_STATEMENTS,
)
def test_a_title_before_a_name_ends_no_sentence(title: str, name: str, before: str) -> None:
    text = f"{before} My doctor is {title} {name} at the clinic. The next one starts here."
    parts = split_sentences(text)
    assert f"My doctor is {title} {name} at the clinic." in parts
    assert parts[-1] == "The next one starts here."


def _log(lines: int) -> str:
    return "\n".join(f"P {i:06d} GET /api/orders/{i} 200 {i % 97}ms" for i in range(lines))


@given(lines=st.integers(min_value=5, max_value=60), lead=st.booleans())
def test_a_log_is_a_paste_whatever_its_length(lines: int, lead: bool) -> None:
    head = "Here is what the gateway logged after the deploy on 2026-03-01:\n" if lead else ""
    text = head + _log(lines)
    pasted = pasted_lines(text)
    log_lines = range(1 if lead else 0, lines + (1 if lead else 0))
    assert set(log_lines) <= pasted
    assert not lead or 0 not in pasted or lines + 1 >= 20  # a whole message of 20+ lines


@given(facts=st.lists(_STATEMENTS, min_size=1, max_size=12), lines=st.integers(1, 3))
def test_dense_prose_is_never_a_paste(facts: list[str], lines: int) -> None:
    per_line = max(1, len(facts) // lines)
    rows = [" ".join(facts[i : i + per_line]) for i in range(0, len(facts), per_line)]
    assert pasted_lines("\n".join(rows[:3])) == frozenset()
    units = extract_units([("user", "\n".join(rows[:3]))])
    assert not any(u.pasted for u in units)


def test_the_same_plan_told_of_someone_else_is_not_written() -> None:
    from langchain_core.messages import HumanMessage

    from wm_langgraph.phase2.capture import unit_candidates

    plan = "So, Aiko decided to learn Norwegian because the family reunion is in Bergen."
    document = _document(
        FACTS, "Owen decided to learn Norwegian because the family reunion is in Bergen"
    )
    result = run_capture(document, unit_candidates([HumanMessage(plan)]), ask=None)
    assert [f.fate for f in result.fates] == ["added_by_code"]
    # a bullet about Aiko that says it after her name holds it
    about = "Aiko (12 May): had a quiet week; learns Norwegian because the reunion is in Bergen"
    again = run_capture(_document(FACTS, about), unit_candidates([HumanMessage(plan)]), ask=None)
    assert [f.fate for f in again.fates] == ["written"]


def test_a_correction_without_a_value_is_kept_in_errors_and_corrections() -> None:
    from langchain_core.messages import HumanMessage

    from wm_langgraph.phase2.capture import unit_candidates

    said = "That is wrong: invoices round half to even."
    (candidate,) = unit_candidates([HumanMessage(said)])
    assert candidate.kind == "correction"
    result = run_capture(_document(FACTS, "Deploys go out on Fridays"), [candidate], ask=None)
    assert said in parse_working_memory(result.text)["Errors & Corrections"]
