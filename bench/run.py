"""Run the whole benchmark: bench/RESULTS.md (deterministic tables, + survival.png when
matplotlib is there) and bench/TIMINGS.md (the timings of the same run).

python -m bench            # the full run (its measured run time: bench/README.md)
python -m bench --quick    # smoke run on small sessions, into a temporary directory
python -m bench --locomo DIR [--quick]   # LoCoMo replay (bench/locomo/), see bench/README.md
"""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from bench.capture_shapes import run_shapes
from bench.data import Session, generate_session
from bench.measure import interleaved_seconds, seeded_global_random
from bench.models import make_model
from bench.play import RunResult, calibrate, capture_fates, run_one
from bench.provenance import (
    Stamp,
    code_fingerprint,
    git_commit,
    load_average,
    machine,
    settled_fingerprint,
    versions,
)
from bench.quiet import quiet_loggers
from bench.recall import recall_at_scale
from bench.report import capture_shapes_section, write_plot, write_results
from bench.report_timings import write_timings
from bench.sizes import WINDOWS, assemble_checkpoints, size_runs, window_runs
from bench.systems import SYSTEMS, Tuning, build_system, langmem_available
from bench.writers import SIZE_WRITERS

__all__ = ["Options", "RunResult", "main", "run_benchmark", "run_one"]

HERE = Path(__file__).resolve().parent


@dataclass
class Options:
    """What to run."""

    turns: int = 240
    seed: int = 7
    systems: tuple[str, ...] = SYSTEMS
    kinds: tuple[str, ...] = ("coding", "chat")
    behaviours: tuple[str, ...] = ("faithful", "drifting", "sloppy")
    misbehaviours: tuple[str, ...] = ("title", "update_not_append", "malformed", "empty", "raises")
    extra_seeds: tuple[int, ...] = (8, 9)
    misbehaviour_turns: int = 160
    bloat_commits: int = 100
    hot_sizes: tuple[int, ...] = (100, 1_000, 10_000)
    recall_turns: int = 1_000
    """Turns (one archive each) of the thread ``archive_search`` is timed on."""
    checkpoint_turns: int = 300
    shape_turns: int = 200
    """Turns of each session of the capture runs across session shapes."""
    windows: tuple[int, ...] = WINDOWS
    size_commits: int = 1_000
    size_windows: tuple[int, ...] = (128_000, 8_000)
    size_writers_small: tuple[str, ...] = ("faithful", "drifting", "offline model")
    long_commits: int = 2_000
    long_writers: tuple[str, ...] = ("faithful", "offline model")
    tuning: Tuning = field(default_factory=Tuning)
    at: int = 20
    out: Path = HERE
    quick: bool = False
    jobs: int = 1
    """Processes for the size runs (the longest part); the hot path always runs alone."""


def _log(msg: str) -> None:
    print(msg, flush=True)


# ------------------------------------------------------------------------------------------
# hot path: the per-turn hook at N live messages, no commit


def _synthetic_messages(session: Session, n: int) -> list[Any]:
    out: list[Any] = []
    i = 0
    while len(out) < n:
        turn = session.turns[i % len(session.turns)]
        tag = f"{i}"
        out.append(HumanMessage(turn.user, id=f"u{tag}"))
        for s, step in enumerate(turn.steps):
            calls = [
                {"name": c.name, "args": dict(c.args), "id": f"{c.call_id}-{tag}"} for c in step
            ]
            out.append(AIMessage("", tool_calls=calls, id=f"a{tag}-{s}"))
            out.extend(
                ToolMessage(
                    c.result,
                    tool_call_id=f"{c.call_id}-{tag}",
                    name=c.name,
                    id=f"t{tag}-{c.call_id}",
                )
                for c in step
            )
        out.append(AIMessage(turn.answer, id=f"f{tag}"))
        i += 1
    return out[:n]


HOT_ROUNDS = 15
"""Rounds of the hot-path timing: each round calls every (system, N) hook once."""


def hot_path(
    session: Session, sizes: Sequence[int], systems: Sequence[str], *, rounds: int = HOT_ROUNDS
) -> dict[str, dict[int, list[float]]]:
    """Seconds per call of each system's per-turn hook with N live messages (no compaction).

    Every (system, N) hook is timed side by side (:func:`bench.measure.interleaved_seconds`);
    returns the per-round samples, so a ratio can be taken within each round.
    """
    model = make_model("faithful", session.items, seed=1)
    measured = [s for s in systems if s != "wm_no_guards"]  # same hook as wm_langgraph
    if "wm_langgraph" in measured:
        measured.insert(measured.index("wm_langgraph") + 1, "wm_assemble")
    calls: dict[tuple[str, int], Callable[[], Any]] = {}
    for n in sizes:
        base = _synthetic_messages(session, n)
        turn = _synthetic_messages(session, n + 6)[n : n + 6]
        for system in measured:
            calls[(system, n)] = _hook_call(system, model, base, turn)
    samples = interleaved_seconds(calls, rounds=rounds)
    return {system: {n: samples[(system, n)] for n in sizes} for system in measured}


def _hook_call(system: str, model: Any, base: list[Any], turn: list[Any]) -> Callable[[], Any]:
    """The per-turn hook of ``system`` on ``base`` + ``turn``, ready to be timed."""
    if system in {"wm_langgraph", "wm_assemble"}:
        from langgraph.store.memory import InMemoryStore

        from wm_langgraph.config import WorkingMemoryConfig
        from wm_langgraph.memory import WorkingMemory

        cfg = WorkingMemoryConfig(
            token_budget=10_000_000, commit_token_threshold_ratio=1.0, background=False
        )
        wm = WorkingMemory(model, config=cfg, store=InMemoryStore())
        config: Any = {"configurable": {"thread_id": "hot"}}
        meta = wm.after_turn({"messages": base}, config).get("working_memory")
        state = {"messages": [*base, *turn], "working_memory": meta}
        if system == "wm_assemble":
            live = state["messages"]
            return lambda: wm.build_context(live, config)
        return lambda: wm.after_turn(state, config)
    if system == "langchain":
        from langchain.agents.middleware.summarization import SummarizationMiddleware

        mw = SummarizationMiddleware(model=model, trigger=("tokens", 10**9), keep=("messages", 10))
        state_lc: Any = {"messages": [*base, *turn]}
        return lambda: mw.before_model(state_lc, None)  # type: ignore[arg-type]
    if system == "langmem":
        from langmem.short_term import SummarizationNode

        node = SummarizationNode(model=model, max_tokens=10**9, max_tokens_before_summary=10**9 - 1)
        state_lm = {"messages": [*base, *turn], "context": {}}
        return lambda: node.invoke(state_lm)
    raise ValueError(system)


# ------------------------------------------------------------------------------------------
# checkpoint growth: SQLite bytes after N turns


def checkpoint_bytes(
    session: Session, systems: Sequence[str], tuning: Tuning
) -> dict[str, dict[str, int]]:
    """Bytes of the SQLite checkpointer file after playing ``session`` (faithful summariser)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    out: dict[str, dict[str, int]] = {}
    for system in ("plain", *systems):
        if system == "wm_no_guards":
            continue
        with (
            tempfile.TemporaryDirectory() as tmp,
            seeded_global_random(f"checkpoint-bytes {system}"),
        ):
            path = Path(tmp) / "checkpoints.sqlite"
            conn = sqlite3.connect(path, check_same_thread=False)
            saver = SqliteSaver(conn)
            model = None if system == "plain" else make_model("faithful", session.items, seed=3)
            store = None
            store_conn = None
            if system.startswith("wm_"):
                from langgraph.store.sqlite import SqliteStore

                store_conn = sqlite3.connect(
                    Path(tmp) / "store.sqlite", check_same_thread=False, isolation_level=None
                )
                store = SqliteStore(store_conn)
                store.setup()
            run = build_system(system, session, model, tuning, checkpointer=saver, store=store)
            for turn in session.turns:
                run.play(turn, record=False)
            conn.commit()
            rows = conn.execute("select count(*) from checkpoints").fetchone()[0]
            last = conn.execute(
                "select length(checkpoint) from checkpoints order by rowid desc limit 1"
            ).fetchone()[0]
            writes = conn.execute("select coalesce(sum(length(value)), 0) from writes").fetchone()[
                0
            ]
            conn.close()
            result = {
                "file": path.stat().st_size,
                "checkpoints": rows,
                "last_checkpoint": last,
                "writes": writes,
            }
            if store_conn is not None:
                store_conn.close()
                result["store_file"] = (Path(tmp) / "store.sqlite").stat().st_size
            out[system] = result
    return out


# ------------------------------------------------------------------------------------------


def run_benchmark(opts: Options) -> dict[str, Any]:
    """Run everything in ``opts``; write RESULTS.md (and the plot) and TIMINGS.md into
    ``opts.out``."""
    if opts.quick and opts.out.resolve() == HERE:
        raise ValueError("a --quick run never writes into bench/: its files are the full run's")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _run_benchmark(opts)


class _Phases:
    """Wall seconds of each part of the run, in order."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = time.perf_counter() - started


def _run_benchmark(opts: Options) -> dict[str, Any]:
    fingerprint = code_fingerprint()
    commit = git_commit()
    load_at_start = load_average()
    systems = tuple(s for s in opts.systems if s not in {"langmem"} or langmem_available())
    skipped = [s for s in opts.systems if s not in systems]
    if skipped:
        _log(f"skipping {', '.join(skipped)}: langmem is not installed (pip install '.[bench]')")
    phase = _Phases()
    # first, on a small heap: timings must not pay for the garbage of the other runs
    with phase("hot path"):
        hot = hot_path(generate_session("coding", opts.seed, 120), opts.hot_sizes, systems)
    _log(f"hot path: {_hot_summary(hot)}")
    with phase(f"archive_search over {opts.recall_turns:,} archives"):  # timed: before the pool
        recall = recall_at_scale(opts.recall_turns, seed=opts.seed)
    _log(
        f"recall: {recall.archives} archives, median ms "
        + ", ".join(f"{q.median:.1f}" for q in recall.queries)
    )
    # The size runs take two thirds of the run and depend on nothing else: with jobs > 1 they
    # go to worker processes (each run seeds itself, so the figures are the same either way)
    # while this process runs the other parts.
    pool = _SizePool(opts) if opts.jobs > 1 else None
    retention: list[RunResult] = []
    with phase("retention"):
        for kind in opts.kinds:
            session = generate_session(kind, opts.seed, opts.turns)
            tuning = calibrate(session, opts.tuning)
            for behaviour in opts.behaviours:
                for system in systems:
                    r = run_one(system, session, behaviour, tuning)
                    retention.append(r)
                    _log(
                        f"{kind:6} {behaviour:9} {system:13} compactions={r.compactions:3} "
                        f"final={_pct(r.final.rate())} {r.seconds:.1f}s"
                    )
    robustness: list[RunResult] = []
    with phase("retention, extra seeds"):
        for seed in opts.extra_seeds:
            for kind in opts.kinds:
                session = generate_session(kind, seed, opts.turns)
                tuning = calibrate(session, opts.tuning)
                for behaviour in ("drifting", "sloppy"):
                    for system in systems:
                        if system == "wm_no_guards":
                            continue
                        r = run_one(system, session, behaviour, tuning)
                        robustness.append(r)
                        at = r.at(opts.at)
                        rate = _pct(at.rate() if at else None)
                        _log(f"seed {seed} {kind:6} {behaviour:9} {system:13} @{opts.at}={rate}")
    misbehaving: list[RunResult] = []
    with phase("misbehaving summarisers"):
        session = generate_session("coding", opts.seed + 1, opts.misbehaviour_turns)
        tuning = calibrate(session, opts.tuning)
        for behaviour in opts.misbehaviours:
            for system in systems:
                r = run_one(system, session, behaviour, tuning)
                misbehaving.append(r)
                rate = _pct(r.final.rate())
                _log(f"coding {behaviour:17} {system:13} final={rate} errors={len(r.errors)}")
    bloat: list[RunResult] = []
    with phase("bloating summariser"):
        bloat_tuning = replace(opts.tuning, every_turn=True)
        session = generate_session("coding", opts.seed + 2, opts.bloat_commits + 2)
        for system in systems:
            r = run_one(system, session, "bloating", bloat_tuning, track_memory=True)
            bloat.append(r)
            biggest = max((t for _, t in r.memory_tokens), default=0)
            _log(f"bloat {system:13} commits={r.compactions} max={biggest} tokens")
    with phase("capture across session shapes"):
        capture_shapes = run_shapes(opts.seed, opts.shape_turns, fates=capture_fates, log=_log)
    ckpt_session = generate_session("chat", opts.seed + 3, opts.checkpoint_turns)
    with phase("SQLite checkpoint size"):
        ckpt = checkpoint_bytes(ckpt_session, systems, calibrate(ckpt_session, opts.tuning))
    _log(f"checkpoints: {ckpt}")
    with phase("checkpoint bytes of the assemble node"):
        assemble_cost = assemble_checkpoints(
            ckpt_session,
            seed=3,
            savers=("SqliteSaver", "VersionedSqliteSaver", "InMemorySaver", "PostgresSaver"),
        )
    _log(f"assemble node: {[(c.saver, c.shape, round(c.per_turn)) for c in assemble_cost]}")
    with phase("small context windows"):
        windows = window_runs(
            opts.kinds, opts.seed, opts.turns, systems, opts.tuning, windows=opts.windows, log=_log
        )
    if pool is not None:
        with phase("size runs, waiting for the worker processes"):
            sizes, long_sizes = pool.results()
    else:
        with phase(f"WM size over {opts.size_commits:,} commits"):
            sizes = [r for task in _size_tasks(opts)[0] for r in _size_task(*task)]
        # Past 1,000 commits at the default budget: where a session's growth goes once the
        # sections that only grow (paths, errors) outweigh what a writer can consolidate.
        with phase(f"WM size over {opts.long_commits:,} commits"):
            long_sizes = [r for task in _size_tasks(opts)[1] for r in _size_task(*task)]
    command = _command(opts)
    settled = settled_fingerprint(fingerprint)
    installed = versions()
    generated = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results = {
        "options": opts,
        "systems": systems,
        "skipped": skipped,
        "retention": retention,
        "robustness": robustness,
        "misbehaving": misbehaving,
        "bloat": bloat,
        "capture_shapes": capture_shapes,
        "hot": hot,
        "recall": recall,
        "checkpoints": ckpt,
        "assemble_checkpoints": assemble_cost,
        "windows": windows,
        "sizes": sizes,
        "long_sizes": long_sizes,
        "phases": phase.seconds,
        "command": command,
        "stamp": Stamp(command, _seeds(opts), settled, commit, installed, generated),
        "timings_stamp": Stamp(
            command,
            _seeds(opts),
            settled,
            commit,
            installed,
            generated,
            machine=f"{machine()}; {opts.jobs} process(es) for the size runs; load average "
            f"(1 / 5 / 15 min) {load_at_start} at the start, {load_average()} at the end",
        ),
    }
    opts.out.mkdir(parents=True, exist_ok=True)
    results["plot"] = write_plot(results, opts.out / "survival.png")
    write_results(results, opts.out / "RESULTS.md")
    write_timings(results, opts.out / "TIMINGS.md")
    _log(f"wrote {opts.out / 'RESULTS.md'} and TIMINGS.md in {sum(phase.seconds.values()):.0f}s")
    return results


_SizeTask = tuple[int, int, int, str]
"""One size run: commits, seed, window, writer."""


def _size_tasks(opts: Options) -> tuple[list[_SizeTask], list[_SizeTask]]:
    """The size runs, one writer and window each, in the order the report lists them: the
    runs over ``size_commits`` commits, then the long runs."""
    sized: list[_SizeTask] = [
        (opts.size_commits, opts.seed + 2, window, writer)
        for window in opts.size_windows
        for writer in (SIZE_WRITERS if window == opts.size_windows[0] else opts.size_writers_small)
    ]
    long = [(opts.long_commits, opts.seed + 2, 128_000, w) for w in opts.long_writers]
    return sized, long


def _size_task(commits: int, seed: int, window: int, writer: str) -> list[Any]:
    return size_runs(commits, seed, [window], writers=[writer], log=_log)


def _size_worker_init() -> None:
    warnings.simplefilter("ignore")
    for name in ("langgraph", "wm_langgraph", "langchain"):
        logging.getLogger(name).setLevel(logging.ERROR)


class _SizePool:
    """The size runs in ``opts.jobs`` worker processes, longest first."""

    def __init__(self, opts: Options) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self._sized, self._long = _size_tasks(opts)
        self._executor = ProcessPoolExecutor(
            max_workers=opts.jobs,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_size_worker_init,
        )
        tasks = self._sized + self._long
        # longest first (commits x writer weight is unknown; commits is a fair proxy)
        order = sorted(tasks, key=lambda t: -t[0])
        self._futures = {task: self._executor.submit(_size_task, *task) for task in order}

    def results(self) -> tuple[list[Any], list[Any]]:
        try:
            sized = [r for t in self._sized for r in self._futures[t].result()]
            long = [r for t in self._long for r in self._futures[t].result()]
        finally:
            self._executor.shutdown()
        return sized, long


def _seeds(opts: Options) -> str:
    return (
        f"sessions seed {opts.seed} (retention, small windows, hot path), {opts.seed + 1} "
        f"(misbehaving models), {opts.seed + 2} (bloat, WM size), {opts.seed + 3} (checkpoints), "
        f"extra retention seeds {', '.join(map(str, opts.extra_seeds)) or 'none'}; the "
        "summariser's loss process is seeded from the session seed, identical for every "
        "system; LangGraph's channel-version suffixes (global `random`) are seeded per "
        "checkpoint run"
    )


def _hot_summary(hot: dict[str, dict[int, list[float]]]) -> str:
    """Median µs per call and, within each round, the ratio to wm_langgraph's hook."""
    import statistics

    from bench.report_timings import REFERENCE, ratio

    parts = []
    for system, per in hot.items():
        for n, samples in per.items():
            cell = f"{system} N={n}: {1e6 * statistics.median(samples):.0f} µs"
            if REFERENCE in hot and system != REFERENCE:
                cell += f" ({ratio(samples, hot[REFERENCE][n]):.2f}x {REFERENCE})"
            parts.append(cell)
    return "; ".join(parts)


def _command(opts: Options) -> str:
    if opts.quick:
        return "python -m bench --quick"
    default = Options()
    flags = [f"--seed {opts.seed}"] if opts.seed != default.seed else []
    flags += [f"--turns {opts.turns}"] if opts.turns != default.turns else []
    return " ".join(["python -m bench", *flags])


def _pct(x: float | None) -> str:
    return "  n/a" if x is None else f"{100 * x:5.1f}%"


def quick_options(out: Path) -> Options:
    """A smoke run that takes seconds."""
    return Options(
        turns=50,
        kinds=("coding", "chat"),
        behaviours=("drifting",),
        misbehaviours=("malformed", "raises"),
        misbehaviour_turns=30,
        bloat_commits=12,
        hot_sizes=(50, 200),
        recall_turns=40,
        checkpoint_turns=20,
        shape_turns=40,
        windows=(8_000,),
        size_commits=25,
        size_windows=(8_000,),
        long_commits=30,
        tuning=Tuning(chunk_tokens=600, chunk_messages=10, keep_messages=6),
        extra_seeds=(),
        at=5,
        out=out,
        quick=True,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run on small sessions, written to a temporary directory",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for RESULTS.md, TIMINGS.md and survival.png (default: bench/, or a "
        "temporary directory for --quick, which never writes into bench/)",
    )
    parser.add_argument("--seed", type=int, default=7, help="session seed (default 7)")
    parser.add_argument("--turns", type=int, default=240, help="turns per session (default 240)")
    parser.add_argument(
        "--size-jobs",
        type=int,
        default=None,
        help="processes for the Working Memory size runs, the longest part (default: up to 2 "
        "for the full run, 1 for --quick); the hot path always runs alone first",
    )
    parser.add_argument(
        "--real-model",
        action="store_true",
        help="only the 'real small model' rows: a short coding session written by the model at "
        "OPENAI_BASE_URL (see bench/realmodel.py) -> REALMODEL.md",
    )
    parser.add_argument(
        "--capture-shapes",
        action="store_true",
        help="only the capture runs across session shapes (bench/capture_shapes.py): their "
        "table on standard output (200 turns a shape; 40 with --quick)",
    )
    parser.add_argument(
        "--load",
        action="store_true",
        help="only the load run (bench/load.py): N concurrent threads in this one process on "
        "PostgreSQL, a writer with a fixed delay, background Phase 2 -> LOAD.md (with --quick: "
        "a short correctness run, written to a temporary directory)",
    )
    parser.add_argument(
        "--pg-url",
        metavar="URL",
        help="the PostgreSQL server for --load (default: $WM_TEST_POSTGRES_URL, which "
        "`source .ci/postgres.sh` exports after starting a throw-away server)",
    )
    parser.add_argument("--threads", type=int, default=None, help="--load: threads (50)")
    parser.add_argument("--load-turns", type=int, default=None, help="--load: turns each (30)")
    parser.add_argument(
        "--writer-delay", type=float, default=None, help="--load: seconds per writer call (2.5)"
    )
    parser.add_argument(
        "--agent-delay", type=float, default=None, help="--load: seconds per agent call (1.0)"
    )
    parser.add_argument(
        "--phase2-workers",
        type=int,
        default=None,
        help="--load: the memory's phase2_workers (default: the config's default)",
    )
    from bench.locomo.run import add_arguments

    add_arguments(parser)
    args = parser.parse_args(argv)
    with quiet_loggers("langgraph", "wm_langgraph", "langchain"):
        return _dispatch(parser, args, argv)


def _dispatch(
    parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str] | None
) -> int:
    if args.locomo is not None:
        from bench.locomo.run import locomo_main

        words = ["python -m bench", *(sys.argv[1:] if argv is None else argv)]
        return locomo_main(args, " ".join(words))
    if args.load:
        return _load(parser, args, argv)
    if args.real_model:
        from bench.realmodel import run_real_model

        return run_real_model(args.out or HERE, seed=args.seed)
    if args.capture_shapes:
        turns = quick_options(HERE).shape_turns if args.quick else Options().shape_turns
        shapes = run_shapes(args.seed, turns, fates=capture_fates, log=_log)
        print("\n".join(capture_shapes_section(shapes)))
        return 0
    if args.quick:
        out = args.out or Path(tempfile.gettempdir()) / "wm_langgraph_bench_quick"
        if out.resolve() == HERE:
            parser.error("--quick never writes into bench/: its files are the full run's")
        opts = replace(quick_options(out), jobs=args.size_jobs or 1)
    else:
        opts = Options(
            out=args.out or HERE,
            seed=args.seed,
            turns=args.turns,
            jobs=args.size_jobs or min(2, os.cpu_count() or 1),
        )
    run_benchmark(opts)
    return 0


def _load(
    parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str] | None
) -> int:
    from bench import load

    url = load.url_from(args.pg_url)
    if url is None:
        parser.error(f"--load needs a PostgreSQL server: {load.START_SERVER}")
    words = ["python -m bench", *(sys.argv[1:] if argv is None else argv)]
    command = " ".join(w for w in words if not w.startswith("postgresql://"))
    opts = load.quick_options(url) if args.quick else load.LoadOptions(url=url)
    given = {
        "threads": args.threads,
        "turns": args.load_turns,
        "writer_delay_s": args.writer_delay,
        "agent_delay_s": args.agent_delay,
        "phase2_workers": args.phase2_workers,
    }
    opts = replace(opts, command=command, **{k: v for k, v in given.items() if v is not None})
    out = args.out or (load.default_out() if args.quick else HERE)
    if args.quick and out.resolve() == HERE:
        parser.error("--quick never writes into bench/: its files are the full run's")
    return load.load_main(opts, out)


if __name__ == "__main__":
    sys.exit(main())
