"""Reliability suite: fuzzing, security, fault injection, concurrency, Postgres scale-out.

Run alone with ``pytest tests/reliability``; the fuzz properties with ``-m fuzz`` (long run:
``WM_FUZZ_EXAMPLES=50000``), the Postgres tests with ``-m postgres`` after
``source .ci/postgres.sh``. At the end of a run the figures gathered by ``_rel_stats`` are
printed (examples fuzzed, scenarios injected, threads x turns driven).
"""

from __future__ import annotations

import pytest
from _rel_stats import FUZZ_EXAMPLES, snapshot


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
