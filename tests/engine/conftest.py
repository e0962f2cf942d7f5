"""Engine-test fixtures: the scripted Working Memory writer (``tests/engine/_support.py``)."""

from __future__ import annotations

import pytest

from tests.engine._support import WMWriter


@pytest.fixture
def writer() -> WMWriter:
    """A scripted WM writer (``writer.model``); ``writer.mode`` switches its faults."""
    return WMWriter()
