"""The real-model stage: tests that talk to a local OpenAI-compatible server (marker
``realmodel``).

They run only when ``WM_TEST_REALMODEL_URL`` names the server's ``/v1`` endpoint, which
``python scripts/realmodel_server.py run -- pytest -m realmodel tests/realmodel`` sets (it
installs llama-cpp-python and a small GGUF model, starts the server on 127.0.0.1 and stops it
afterwards; ``.ci/run`` runs that stage after the main suite). Without it they are skipped with
that reason, so the plain ``pytest`` stays hermetic. Each test allows sockets to 127.0.0.1 only.
"""

from __future__ import annotations

import os

import pytest

URL_ENV = "WM_TEST_REALMODEL_URL"

_SKIP = pytest.mark.skip(
    reason=f"real-model stage: {URL_ENV} is not set (run it with `python "
    "scripts/realmodel_server.py run -- pytest -m realmodel tests/realmodel`, or point "
    f"{URL_ENV} at any OpenAI-compatible /v1 endpoint)"
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    url = os.environ.get(URL_ENV, "").strip()
    for item in items:
        if item.get_closest_marker("realmodel") is None:
            continue
        if not url:
            item.add_marker(_SKIP)
        item.add_marker(pytest.mark.allow_hosts(["127.0.0.1"]))
