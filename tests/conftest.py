"""Shared test fixtures. Tests are hermetic: sockets are disabled by pytest-socket (see
pyproject), only unix sockets are allowed."""

import os

from hypothesis import HealthCheck, settings

# Hypothesis profiles: "ci" (default, modest) and "long" for soak runs:
#   WM_HYPOTHESIS_PROFILE=long pytest tests/core/test_merge_properties.py
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "long", max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("WM_HYPOTHESIS_PROFILE", "ci"))
