"""Counters the reliability suite prints at the end of a run (see conftest.py).

Fuzz properties call :func:`count` once per generated example, fault-injection and load tests
call :func:`add` with what they drove, so a run reports its figures (examples fuzzed, scenarios
injected, threads x turns) instead of only "passed".
"""

from __future__ import annotations

import os
import threading
from collections import Counter

from hypothesis import HealthCheck, settings

__all__ = ["FUZZ_EXAMPLES", "add", "count", "fuzz_settings", "record", "snapshot"]

_lock = threading.Lock()
_counts: Counter[str] = Counter()

# Short in CI; WM_FUZZ_EXAMPLES=50000 for a long run (per property).
FUZZ_EXAMPLES = int(os.environ.get("WM_FUZZ_EXAMPLES", "150") or "150")

fuzz_settings = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,  # no timing assertions
    database=None,  # hermetic: nothing written into the checkout
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
    ],
    print_blob=True,
)


def count(name: str) -> None:
    """Record one fuzz example of property ``name``."""
    add(f"fuzz examples: {name}")


def add(name: str, amount: int = 1) -> None:
    """Add ``amount`` to the figure ``name``."""
    with _lock:
        _counts[name] += amount


def record(name: str, value: int) -> None:
    """Set the figure ``name`` to a measured ``value`` (the last measurement is printed)."""
    with _lock:
        _counts[name] = value


def snapshot() -> dict[str, int]:
    """All figures so far, sorted by name."""
    with _lock:
        return dict(sorted(_counts.items()))
