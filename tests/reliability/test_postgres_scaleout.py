"""Scale-out on PostgreSQL: the engine on PostgresSaver + PostgresStore, for real.

Needs a server: ``source .ci/postgres.sh`` (CI does it) exports WM_TEST_POSTGRES_URL, a
unix-socket URL, so pytest-socket's ``--allow-unix-socket`` suffices. Without it these tests
skip and say why.

- One process: many turns with background Phase 2, a model outage, a restart on the same
  database; the design §3 invariants after each.
- Two worker processes serving the same threads, turn by turn alternately, each with its own
  background Phase 2: the Phase 2 jobs of the two processes race on one thread, and the result
  is still exact (nothing lost, each message folded once, in order): Phase 2 is idempotent and
  ordered across processes.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

# The Postgres backends are an optional extra (`pip install ".[postgres]"`): without them the whole
# module skips with that reason instead of failing collection.
pytest.importorskip(
    "langgraph.checkpoint.postgres", reason='needs the postgres extra: pip install ".[postgres]"'
)
from _rel_harness import Conversation, MarkerModel, build_agent, check_assemble, check_thread
from _rel_pg import CONFIG, postgres_backend, setup_postgres
from _rel_stats import add

from wm_langgraph.memory import WorkingMemory
from wm_langgraph.storage.archives import ArchiveStore

pytestmark = pytest.mark.postgres

WAIT_S = 120.0
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def pg_url() -> str:
    url = os.environ.get("WM_TEST_POSTGRES_URL", "")
    if not url:
        pytest.skip(
            "WM_TEST_POSTGRES_URL is not set: start a loopback server with "
            "`source .ci/postgres.sh` (CI does this; needs Debian's postgresql package)"
        )
    setup_postgres(url)
    return url


def _run_id() -> str:
    return uuid.uuid4().hex[:8]


def test_engine_on_postgres_survives_an_outage_and_a_restart(pg_url):
    run = _run_id()
    outage = {"on": False}

    def fault(kind: str, prompt: str, healthy: Any) -> Any:
        return RuntimeError("model outage") if outage["on"] else None

    conversations = [Conversation(f"pg-{run}-{i}") for i in range(3)]
    with postgres_backend(pg_url) as (saver, store):
        wm = WorkingMemory(
            MarkerModel(fault=fault).model, config=CONFIG, store=store, checkpointer=saver
        )
        graph = build_agent(wm, checkpointer=saver, store=store)
        archives = ArchiveStore(store)
        try:
            for _ in range(4):
                for conv in conversations:
                    conv.turn(graph)
            assert wm.wait(timeout=WAIT_S)
            before = {
                c.thread_id: check_thread(wm, graph, archives, c, folded_all=True, complete=True)
                for c in conversations
            }
            outage["on"] = True
            for conv in conversations:
                conv.turn(graph)
            assert wm.wait(timeout=WAIT_S)
            for conv in conversations:
                check_thread(wm, graph, archives, conv, previous_wm_markers=before[conv.thread_id])
                check_assemble(wm, graph, archives, conv)
        finally:
            wm.close()
    # Restart: a new process (new pool, new engine) on the same database, the model is back.
    with postgres_backend(pg_url) as (saver, store):
        wm = WorkingMemory(MarkerModel().model, config=CONFIG, store=store, checkpointer=saver)
        graph = build_agent(wm, checkpointer=saver, store=store)
        archives = ArchiveStore(store)
        try:
            for conv in conversations:
                conv.turn(graph)  # first sight of the thread resumes its pending archives
            assert wm.wait(timeout=WAIT_S)
            for conv in conversations:
                check_thread(
                    wm,
                    graph,
                    archives,
                    conv,
                    previous_wm_markers=before[conv.thread_id],
                    folded_all=True,
                    complete=True,
                )
        finally:
            wm.close()
    add("postgres: single-process turns", sum(c.turns for c in conversations))


class _Worker:
    """A worker process speaking the line protocol of ``_rel_pg.py``.

    Commands go to its stdin (a few bytes each); its stdout and stderr go to files in
    ``logs``, so no pipe can fill up and block either side. An answer is the next line of the
    stdout file, read when it is complete; a worker that exits or stays silent past
    ``WAIT_S`` fails the test with its stderr.
    """

    def __init__(self, url: str, name: str, logs: Path) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [str(HERE), str(HERE.parent), env.get("PYTHONPATH", "")]
        )
        self.name = name
        self.out_path, self.err_path = logs / f"{name}.out", logs / f"{name}.err"
        self._answered = 0
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, str(HERE / "_rel_pg.py"), url, name],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                text=True,
                env=env,
            )

    def ready(self) -> _Worker:
        """Wait for its "ready" line (start several workers first: they import in parallel)."""
        assert self._read().startswith("ready"), f"worker {self.name} did not start"
        return self

    def _stderr(self) -> str:
        return self.err_path.read_text(encoding="utf-8", errors="replace")[-4000:]

    def _read(self) -> str:
        deadline = time.monotonic() + WAIT_S
        while True:
            lines = self.out_path.read_text(encoding="utf-8").split("\n")[:-1]  # complete ones
            if len(lines) > self._answered:
                self._answered += 1
                return lines[self._answered - 1].strip()
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} died:\n{self._stderr()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {self.name} gave no answer:\n{self._stderr()}")
            time.sleep(0.02)

    def ask(self, command: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self._read()

    def wait_for(self, path: Path) -> str:
        """Wait until ``path`` exists (the worker created it) and return its text."""
        deadline = time.monotonic() + WAIT_S
        while not path.exists():
            if self.proc.poll() is not None:
                raise AssertionError(f"worker {self.name} died:\n{self._stderr()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"worker {self.name} never reached {path.name}")
            time.sleep(0.02)
        return path.read_text(encoding="utf-8")

    def kill(self) -> None:
        """SIGKILL, and reap it."""
        self.proc.kill()
        self.proc.wait(timeout=WAIT_S)

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(AssertionError, BrokenPipeError, OSError):
                self.ask("quit")
            try:
                self.proc.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()


@pytest.mark.parametrize(("threads", "turns"), [(3, 12)])
def test_two_processes_serving_the_same_threads_keep_the_invariants(
    pg_url, threads, turns, tmp_path
):
    run = _run_id()
    conversations = [Conversation(f"pg2-{run}-{i}") for i in range(threads)]
    workers = [_Worker(pg_url, "A", tmp_path), _Worker(pg_url, "B", tmp_path)]
    try:
        for worker in workers:
            worker.ready()
        for _ in range(turns // 2):
            for conv in conversations:
                # Two turns back to back on different processes: the second process commits
                # while the first one's background Phase 2 of the same thread may still run.
                for worker in workers:
                    assert worker.ask(f"turn {conv.thread_id} {conv.turns}") == "ok"
                    conv.sent.extend(_turn_ids(conv.thread_id, conv.turns))
                    conv.turns += 1
        calls = folded = 0
        for worker in workers:
            answer = worker.ask("wait").split()
            assert answer[:2] == ["waited", "True"], answer
            calls += int(answer[2])
            folded += int(answer[3])
    finally:
        for worker in workers:
            worker.stop()
    # Check from a third process view: everything each thread said, each message folded once.
    with postgres_backend(pg_url) as (saver, store):
        wm = WorkingMemory(MarkerModel().model, config=CONFIG, store=store, checkpointer=saver)
        graph = build_agent(wm, checkpointer=saver, store=store)
        archives = ArchiveStore(store)
        try:
            for conv in conversations:
                check_thread(wm, graph, archives, conv, folded_all=True, complete=True)
        finally:
            wm.close()
    archived = sum(len(r.messages) for c in conversations for r in _records(pg_url, c.thread_id, c))
    add("postgres: 2 processes, threads x turns", threads * turns)
    add("postgres: 2 processes, Phase 2 model calls", calls)
    # Messages folded more than once by racing jobs of the two processes; each race left one
    # valid WM version and the check above found every message exactly once in the final WM.
    add("postgres: 2 processes, messages folded redundantly by racing jobs", folded - archived)


def test_a_worker_killed_during_phase2_loses_nothing(pg_url, tmp_path):
    """SIGKILL a worker while its background Phase 2 is inside the model call: the other worker
    goes on serving the thread, and its next commit folds the orphaned archive in.

    The kill happens at one observed point: the victim's model call creates a file and then
    blocks for good, and the test kills the victim once that file exists (not after a sleep,
    which left it to chance whether Phase 2 had started, was in the call or was done)."""
    conv = Conversation(f"pgkill-{_run_id()}")
    victim = _Worker(pg_url, "victim", tmp_path)
    survivor = _Worker(pg_url, "survivor", tmp_path)
    inside = tmp_path / "victim-in-model-call"
    try:
        victim.ready(), survivor.ready()
        for _ in range(3):
            assert survivor.ask(f"turn {conv.thread_id} {conv.turns}") == "ok"
            conv.sent.extend(_turn_ids(conv.thread_id, conv.turns))
            conv.turns += 1
        assert survivor.ask("wait").startswith("waited True")
        assert victim.ask(f"block {inside}") == "ok"
        assert victim.ask(f"turn {conv.thread_id} {conv.turns}") == "ok"
        conv.sent.extend(_turn_ids(conv.thread_id, conv.turns))
        conv.turns += 1
        assert victim.wait_for(inside).split()[0] in {"create", "update"}
        victim.kill()  # inside the model call of its Phase 2: the archive stays unfolded
        add("postgres: worker processes killed during Phase 2")
        for _ in range(2):
            assert survivor.ask(f"turn {conv.thread_id} {conv.turns}") == "ok"
            conv.sent.extend(_turn_ids(conv.thread_id, conv.turns))
            conv.turns += 1
        assert survivor.ask("wait").startswith("waited True")
    finally:
        victim.stop()
        survivor.stop()
    with postgres_backend(pg_url) as (saver, store):
        wm = WorkingMemory(MarkerModel().model, config=CONFIG, store=store, checkpointer=saver)
        graph = build_agent(wm, checkpointer=saver, store=store)
        try:
            check_thread(wm, graph, ArchiveStore(store), conv, folded_all=True, complete=True)
        finally:
            wm.close()


def _records(url: str, thread_id: str, conv: Conversation) -> list[Any]:
    with postgres_backend(url, max_size=2) as (_, store):
        archives = ArchiveStore(store)
        return archives.get_archives(thread_id, archives.timeline(thread_id))


def _turn_ids(thread_id: str, n: int) -> list[str]:
    from _rel_harness import expected_turn_ids

    return expected_turn_ids(thread_id, n)
