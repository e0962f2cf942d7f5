"""The offline model records a failing test run by its error line, never by a report banner
("============ FAILURES ============ — fixed in …" entries, one per dotted exception)."""

from __future__ import annotations

import pytest

from wm_langgraph.writer.offline._extract import extract_findings
from wm_langgraph.writer.offline._transcript import ToolCallRecord, Turn


def _failed_run(error: str) -> list[Turn]:
    log = (
        "============ FAILURES ============\n___ test_cache_case_64 ___\n"
        "    def test_cache_case_64():\n>       assert run()\n"
        f"E       {error}\n"
        "tests/unit/test_cache_7.py:88: failed\n1 failed, 120 passed"
    )
    call = ToolCallRecord("run_tests", {"target": "tests/unit/test_cache_7.py"}, "")
    return [
        Turn("user", "The tests in tests/unit/test_cache_7.py fail on CI. Fix them."),
        Turn("assistant", "", tool_calls=[call]),
        Turn("tool", log, tool_name="run_tests"),
    ]


@pytest.mark.parametrize(
    "error",
    [
        "sqlite3.OperationalError: no such column: cache_keys.amount_64",
        "psycopg.errors.UniqueViolation: duplicate key value violates unique constraint",
        "KeyError: 'tenant_392' raised in email_digest.load()",
    ],
)
def test_a_failed_run_is_recorded_by_its_error_line(error: str) -> None:
    found = extract_findings(_failed_run(error))
    assert found.errors, found
    assert not any("====" in e or "___" in e for e in found.errors), found.errors
    assert not any(": E " in e for e in found.errors), found.errors  # pytest's marker dropped
    assert any(error.split(":", 1)[0] in e for e in found.errors), found.errors


def test_a_report_without_an_error_line_is_summarised_past_its_banners() -> None:
    turns = _failed_run("assert 3 == 4")
    found = extract_findings(turns)
    assert found.errors
    assert not any(e.split(": ", 1)[-1].startswith("=") for e in found.errors), found.errors
    assert any("assert 3 == 4" in e for e in found.errors), found.errors


@pytest.mark.parametrize(
    "error",
    [
        "KeyError: 'tenant_392' raised in email_digest.load()",
        "IntegrityError: UNIQUE constraint failed: cache_keys.ref_337",
    ],
)
def test_a_failure_told_run_and_fixed_in_one_round_is_one_item(error: str) -> None:
    """The user says the tests fail, the run shows the error, the reply names it as fixed: one
    thing, one item of Errors & Corrections holding the user's words, the error and the fix
    (before: a second item "The tests in … fail on CI — fix: the failure was `…`")."""
    fix = ToolCallRecord("edit_file", {"path": "src/db/email_digest.py"}, "")
    turns = [
        *_failed_run(error),
        Turn("assistant", "", tool_calls=[fix]),
        Turn("tool", "edited src/db/email_digest.py", tool_name="edit_file"),
        Turn("assistant", f"Fixed: the failure was `{error}`. The suite passes now."),
    ]
    found = extract_findings(turns)
    holding = [e for e in found.errors if error.split(":", 1)[0] in e]
    assert len(holding) == 1, found.errors
    assert "tests/unit/test_cache_7.py" in holding[0], found.errors  # the user's words kept
    assert not any("the failure was" in e for e in found.errors), found.errors


def test_a_follow_up_about_failed_things_is_open_not_an_error() -> None:
    """ "Not now, but we must add a dead-letter queue for failed webhooks": a follow-up (Open
    Issues), not an error report (before: filed in Errors & Corrections, or joined to an
    unrelated fix)."""
    said = "Not now, but we must add a dead-letter queue for failed webhooks before the release."
    found = extract_findings([Turn("user", said), Turn("assistant", "Noted.")])
    assert not any("dead-letter" in e for e in found.errors), found.errors
    assert any("dead-letter" in o for o in found.open_items), found.open_items
