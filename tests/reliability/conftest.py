"""Reliability suite: fuzzing, security, fault injection, concurrency, Postgres scale-out.

Run alone with ``pytest tests/reliability``; the fuzz properties with ``-m fuzz`` (long run:
``WM_FUZZ_EXAMPLES=50000``), the Postgres tests with ``-m postgres`` after
``source .ci/postgres.sh``. At the end of a run the figures gathered by ``_rel_stats`` are
printed (examples fuzzed, scenarios injected, threads x turns driven).
"""

from __future__ import annotations

import os

import pytest
from _rel_stats import FUZZ_EXAMPLES, snapshot

POSTGRES_URL_ENV = "WM_TEST_POSTGRES_URL"


@pytest.fixture
def postgres_url() -> str:
    """The test server's URL, or skip with the reason (no server configured)."""
    url = os.environ.get(POSTGRES_URL_ENV, "")
    if not url:
        pytest.skip(
            f"{POSTGRES_URL_ENV} is not set: start a loopback server with "
            "`source .ci/postgres.sh` (CI does this; needs Debian's postgresql package)"
        )
    return url


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures the reliability tests gathered in this run."""
    figures = snapshot()
    if not figures:
        return
    terminalreporter.section("wm_langgraph reliability figures")
    terminalreporter.write_line(f"WM_FUZZ_EXAMPLES (max per property) = {FUZZ_EXAMPLES}")
    total = 0
    for name, value in figures.items():
        if name.startswith("fuzz examples: "):
            total += value
        terminalreporter.write_line(f"{name}: {value}")
    if total:
        terminalreporter.write_line(f"fuzz examples, all properties: {total}")
