"""``examples/platform_app`` served by ``langgraph dev`` and driven through ``langgraph_sdk``.

The app builds ``WorkingMemoryMiddleware`` without ``store=``: the server's store must hold the
archives and the Working Memory, so they survive a server restart (the in-memory runtime
writes its checkpoints and store to ``.langgraph_api/`` and reads them back). The server binds
127.0.0.1 on a free port, runs offline (no key: offline agent and writer models) in a copy of
the example, and is stopped by its PID. This test runs in CI: it enables sockets for itself.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "platform_app"
START_TIMEOUT_S = 90.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _langgraph_cli() -> str:
    beside = Path(sys.executable).with_name("langgraph")
    found = str(beside) if beside.exists() else shutil.which("langgraph")
    assert found, "langgraph-cli is a dev extra: pip install '.[dev]'"
    return found


def _ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            pass
    except OSError:
        return False
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/ok", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextmanager
def _server(app: Path, port: int) -> Iterator[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LANGSMITH_"))}
    env.update(
        WM_COMMIT_RATIO="0",  # commit every turn
        WM_KEEP_RECENT="2",
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGSMITH_TRACING="false",
    )
    log = (app / f"server-{port}.log").open("wb")
    command = [_langgraph_cli(), "dev", "--no-browser", "--no-reload"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--allow-blocking"]
    proc = subprocess.Popen(command, cwd=app, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _ready(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                tail = (app / f"server-{port}.log").read_text(errors="replace")[-3000:]
                pytest.fail(f"langgraph dev did not start (exit {proc.returncode}):\n{tail}")
            time.sleep(0.5)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # a clean shutdown flushes the in-memory runtime
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        log.close()


def _turn(client: Any, thread_id: str, text: str) -> None:
    client.runs.wait(thread_id, "agent", input={"messages": [{"role": "user", "content": text}]})


def _memory_items(client: Any, thread_id: str, kind: str) -> list[dict[str, Any]]:
    found = client.store.search_items(("wm_langgraph", thread_id, kind), limit=100)
    return list(found["items"])


def _newest_wm(client: Any, thread_id: str) -> dict[str, Any]:
    versions = _memory_items(client, thread_id, "wm")
    if not versions:
        return {"text": "", "covers": []}
    return dict(max(versions, key=lambda item: len(item["value"].get("covers") or []))["value"])


def _archive_keys(client: Any, thread_id: str) -> set[str]:
    return {item["key"] for item in _memory_items(client, thread_id, "archives")}


def _wait_until_folded(client: Any, thread_id: str) -> dict[str, Any]:
    """The newest WM once it covers every archive (Phase 2 runs in the background)."""
    deadline = time.monotonic() + 60
    while True:
        wm = _newest_wm(client, thread_id)
        if set(wm["covers"]) >= _archive_keys(client, thread_id) or time.monotonic() > deadline:
            return wm
        time.sleep(0.5)


def _archived_text(client: Any, thread_id: str) -> str:
    items = _memory_items(client, thread_id, "archives")
    return " ".join(str(m["data"]["content"]) for i in items for m in i["value"]["messages"])


@pytest.mark.slow
@pytest.mark.enable_socket
def test_langgraph_dev_serves_the_example_and_the_memory_survives_a_restart(tmp_path):
    from langgraph_sdk import get_sync_client

    app = tmp_path / "app"
    shutil.copytree(EXAMPLE, app)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"

    with _server(app, port):
        client = get_sync_client(url=url)
        thread_id = client.threads.create()["thread_id"]
        for n in range(1, 6):
            _turn(client, thread_id, f"note FACT-{n}: the build server is build-{n}.example.com")
        archives_before = _archive_keys(client, thread_id)
        assert archives_before, "the server's store has no archive: the memory used its own"
        wm_before = _wait_until_folded(client, thread_id)
        assert set(wm_before["covers"]) == archives_before
        assert "FACT-1" in wm_before["text"]
        # The README's platform read: the current Working Memory under the fixed key "latest".
        # It is written right after the version it copies (two store writes): poll briefly.
        deadline = time.monotonic() + 10
        while True:
            latest = client.store.get_item(("wm_langgraph", thread_id, "wm"), "latest")
            if latest["value"]["covers"] == wm_before["covers"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert latest["value"]["text"] == wm_before["text"]
        assert latest["value"]["covers"] == wm_before["covers"]
        assert "FACT-1" in _archived_text(client, thread_id)

    port = _free_port()
    with _server(app, port):
        client = get_sync_client(url=f"http://127.0.0.1:{port}")
        assert _archive_keys(client, thread_id) == archives_before, "a restart lost archives"
        assert _newest_wm(client, thread_id) == wm_before, "a restart lost the Working Memory"
        state = client.threads.get_state(thread_id)["values"]
        live = [str(m["content"]) for m in state["messages"]]
        assert not any("FACT-1:" in text for text in live)  # archived, not back live
        for n in range(6, 9):
            _turn(client, thread_id, f"note FACT-{n}: the build server is build-{n}.example.com")
        archives_after = _archive_keys(client, thread_id)
        assert archives_after > archives_before
        wm_after = _wait_until_folded(client, thread_id)
        # The same lineage goes on: the new version covers the old archives, then the new ones.
        assert wm_after["covers"][: len(wm_before["covers"])] == wm_before["covers"]
        assert set(wm_after["covers"]) == archives_after
        assert "FACT-6" in _archived_text(client, thread_id)


def _example_module(app: Path, name: str) -> Any:
    """A module of the copied example (the client-side helpers it ships)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"platform_app_{name}", app / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.enable_socket
def test_deleting_a_thread_on_the_platform_deletes_its_memory_and_the_id_starts_afresh(
    tmp_path,
):
    """The platform's thread delete plus the example's record sweep (``delete_thread.py``, the
    platform's ``purge``) leave no record of the thread in the server's store, and a new thread
    on the same id starts a memory of its own: nothing of the old one comes back."""
    from langgraph_sdk import get_sync_client

    app = tmp_path / "app"
    shutil.copytree(EXAMPLE, app)
    helpers = _example_module(app, "delete_thread")
    secret = "078-05-1120"
    port = _free_port()
    with _server(app, port):
        client = get_sync_client(url=f"http://127.0.0.1:{port}")
        thread_id = client.threads.create()["thread_id"]
        kept = client.threads.create()["thread_id"]
        for n in range(1, 5):
            _turn(client, thread_id, f"note FACT-{n}: my SSN is {secret}")
            _turn(client, kept, f"note FACT-{50 + n}: the port is 80{n}")
        assert secret in _wait_until_folded(client, thread_id)["text"] + _archived_text(
            client, thread_id
        )
        _wait_until_folded(client, kept)

        assert helpers.delete_thread(client, thread_id) > 0
        assert not _memory_items(client, thread_id, "archives")
        assert not client.store.search_items(["wm_langgraph", thread_id], limit=10)["items"]
        assert _archive_keys(client, kept), "another thread lost its records"

        client.threads.create(thread_id=thread_id)  # the same id, a new conversation
        for n in range(10, 14):
            _turn(client, thread_id, f"note FACT-{n}: the build server is build-{n}.example.com")
        wm = _wait_until_folded(client, thread_id)
        assert "FACT-10" in wm["text"]
        assert secret not in wm["text"] + _archived_text(client, thread_id)
        assert "FACT-1:" not in wm["text"] + _archived_text(client, thread_id)
