"""The ``wm-langgraph`` command line (also ``python -m wm_langgraph``).

Commands:

- ``demo``: play a recorded coding-agent session through ``create_agent`` with
  ``WorkingMemoryMiddleware`` and show every commit, the WM after it, guard interventions and the
  tokens the assembled prompt saved. Offline by default. ``--careless`` writes the WM with a
  fault-injecting wrapper (for demonstration) that damages update calls on purpose, to show
  the guards repairing them.
- ``replay FILE``: run your own transcript (JSONL, one OpenAI-style chat message per line)
  through the engine and print (or ``--out``) the final Working Memory. Bad lines are reported
  with their line number and reason; the valid ones are still processed.
- ``inspect --db PATH``: threads of a database, their WM, archives and pending state.
- ``report THREAD --db PATH``: one thread as a self-contained HTML report (timeline, the model
  input of every call by layer, every Working Memory version with its guard decisions, the
  archives, the agent's searches).

``--db`` is a SQLite file or a ``postgresql://`` URL (the ``[postgres]`` extra).

Exit status: 0 on success; 1 when ``replay`` skipped bad lines (the valid ones were processed);
2 on a usage error or an unreadable input; 3 when ``demo`` archived messages but every commit
failed (the writer could not be used: the warnings name the cause).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO, cast

from langchain_core.language_models import BaseChatModel

from wm_langgraph.cli._terminal import SafeOutput
from wm_langgraph.config import WorkingMemoryConfig

__all__ = ["build_parser", "main"]

_DESCRIPTION = (
    "Structured, loss-guarded Working Memory for LangGraph agents. Without OPENAI_API_KEY or "
    "OPENAI_BASE_URL the Working Memory is written by OfflineWorkingMemoryModel, a "
    "deterministic heuristic extractive summariser (no LLM, no network)."
)


_DEFAULTS = WorkingMemoryConfig()
_DB_HELP = "the SQLite file, or a postgresql:// URL (needs the [postgres] extra)"


def _positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def _ratio(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _timeout_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        default=None,
        help="give up on one Working Memory model call after this many seconds (the engine's "
        "model_timeout_seconds and the ChatOpenAI client's timeout; default: no limit). A "
        "timed-out call keeps the previous Working Memory; its messages stay pending",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with the ``demo``, ``replay``, ``inspect`` and ``report``
    subcommands."""
    parser = argparse.ArgumentParser(prog="wm-langgraph", description=_DESCRIPTION)
    from wm_langgraph import __version__

    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="play a recorded coding-agent session through an agent with the middleware",
        description="Play a recorded 13-turn coding-agent session (file reads and edits, "
        "failing tests and fixes, a user correction, decisions, TODOs) through "
        "langchain create_agent + WorkingMemoryMiddleware. Shows progress, each commit, the WM "
        "after it, guard interventions and the tokens the prompt saved; ends with the final WM.",
    )
    demo.add_argument("--db", metavar="PATH", help="keep the run in this SQLite file")
    demo.add_argument(
        "--model",
        choices=("offline", "auto"),
        default="offline",
        help="WM model: 'offline' (default, heuristic summariser) or 'auto' (ChatOpenAI when "
        "OPENAI_API_KEY or OPENAI_BASE_URL is set: OpenAI, or any OpenAI-compatible server "
        "such as llama.cpp, Ollama, vLLM; else offline)",
    )
    _timeout_option(demo)
    demo.add_argument(
        "--brief", action="store_true", help="print the WM only at the end, not after each commit"
    )
    demo.add_argument(
        "--no-compact",
        action="store_true",
        help="do not compact at the end (the newest messages then stay outside the WM)",
    )
    demo.add_argument(
        "--careless",
        action="store_true",
        help="write the WM through a fault-injecting wrapper (for demonstration) that damages "
        "the model's update calls on purpose: unrelated titles, rewrites that drop old bullets, "
        "truncated JSON; shows each guard intervention and checks the session's file paths, "
        "errors and open issues against the final WM",
    )
    demo.add_argument(
        "--seed",
        type=int,
        default=7,
        help="seed of the --careless damage (default: %(default)s)",
    )

    replay = commands.add_parser(
        "replay",
        help="run a JSONL chat transcript through the engine and print the final WM",
        description="Run a transcript (JSONL, one OpenAI-style chat message per line: role, "
        "content, tool_calls, tool_call_id) through the Working Memory engine, one turn per user "
        "message. Bad lines are reported with line number and reason; valid lines are still "
        "processed. The final WM goes to stdout or --out; the report goes to stderr.",
    )
    replay.add_argument("file", metavar="FILE", help="the JSONL transcript")
    replay.add_argument("--out", metavar="PATH", help="write the final WM to this file")
    replay.add_argument("--db", metavar="PATH", help="persist the thread in this SQLite file")
    replay.add_argument(
        "--thread",
        metavar="ID",
        help="thread id; an existing thread of --db is continued (default: a new thread named "
        "replay, replay-2, ...)",
    )
    replay.add_argument(
        "--budget",
        type=_positive_int,
        default=_DEFAULTS.token_budget,
        help="token budget of the model's context (default: %(default)s)",
    )
    replay.add_argument(
        "--threshold",
        type=_ratio,
        default=_DEFAULTS.commit_token_threshold_ratio,
        help="commit when pending tokens reach budget x this ratio, 0..1 (default: %(default)s)",
    )
    replay.add_argument(
        "--keep",
        type=_non_negative_int,
        default=_DEFAULTS.commit_keep_recent_count,
        help="messages kept live by each commit (default: %(default)s)",
    )
    replay.add_argument(
        "--no-compact",
        action="store_true",
        help="do not compact at the end (by default everything is folded into the final WM)",
    )
    replay.add_argument(
        "--model",
        choices=("offline", "auto"),
        default="auto",
        help="WM model: 'auto' (default: ChatOpenAI when OPENAI_API_KEY or OPENAI_BASE_URL is "
        "set, else offline) or 'offline'",
    )
    _timeout_option(replay)

    inspect = commands.add_parser(
        "inspect",
        help="show threads, their WM, archives and pending state in a SQLite database",
        description="List the threads of a wm-langgraph SQLite database; with --thread, show "
        "that thread's pending state, archives (status, size) and Working Memory.",
    )
    inspect.add_argument("--db", metavar="PATH", required=True, help=_DB_HELP)
    inspect.add_argument("--thread", metavar="ID", help="show this thread in detail")
    inspect.add_argument("--json", action="store_true", help="print JSON instead of text")

    report = commands.add_parser(
        "report",
        help="write one thread as a self-contained HTML report",
        description="Write one thread of a database as a self-contained HTML file (no script, "
        "no network): the timeline of turns, archives and commits; the model input of every "
        "call split into its layers against the budget, rebuilt from the checkpoints; every "
        "Working Memory version with its diff and guard decisions; the archives; the agent's "
        "archive searches. Changes nothing and calls no model (opening the database only makes "
        "sure its tables exist). Each call is rebuilt with the settings the thread recorded "
        "for it; a thread from before settings were recorded says so, and its calls are "
        "rebuilt only under settings you give (--budget, --reserve, --wm-tokens, "
        "--no-verbatim-fill; the library's defaults for the ones left out).",
    )
    report.add_argument("thread", metavar="THREAD", help="the thread id")
    report.add_argument("--db", metavar="PATH", required=True, help=_DB_HELP)
    report.add_argument(
        "-o",
        "--out",
        metavar="FILE",
        help="the HTML file to write (default: wm-report-<THREAD>.html here)",
    )
    report.add_argument(
        "--budget",
        type=_positive_int,
        metavar="TOKENS",
        help="the agent's token_budget, for calls whose settings the thread did not record",
    )
    report.add_argument(
        "--reserve",
        type=_non_negative_int,
        metavar="TOKENS",
        help="the agent's reserve_tokens, for calls whose settings the thread did not record",
    )
    report.add_argument(
        "--wm-tokens",
        type=_non_negative_int,
        metavar="TOKENS",
        help="the agent's archive_memory_tokens, for calls whose settings were not recorded",
    )
    report.add_argument(
        "--no-verbatim-fill",
        action="store_true",
        help="the agent ran with verbatim_fill=False (for calls whose settings the thread did "
        "not record)",
    )
    return parser


def _model(choice: str, timeout: float | None = None) -> BaseChatModel:
    if choice == "offline":
        from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel

        return OfflineWorkingMemoryModel()
    from wm_langgraph.writer.binding import resolve_default_model

    return resolve_default_model(timeout=timeout)


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    from wm_langgraph.cli.demo import DEMO_CONFIG, run_demo

    result = run_demo(
        out=out,
        db=args.db,
        config=DEMO_CONFIG.replace(model_timeout_seconds=args.timeout),
        model=_model(args.model, args.timeout),
        show_each_wm=not args.brief,
        compact_at_end=not args.no_compact,
        careless=args.careless,
        seed=args.seed,
    )
    if args.db:
        print(
            f"\nkept in {args.db}; look inside with: wm-langgraph inspect --db {args.db} "
            f"--thread {result.thread_id}",
            file=out,
        )
    if result.commits and not result.folded:
        print(
            f"\nwm-langgraph demo: every commit failed ({result.commits} archived, none folded "
            "into the Working Memory): the writer could not be used, see the Phase 2 warnings "
            "above for the cause",
            file=out,
        )
        return 3
    return 0


def _replay(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from wm_langgraph.cli._replay import replay_file

    config = WorkingMemoryConfig(
        token_budget=args.budget,
        commit_token_threshold_ratio=args.threshold,
        commit_keep_recent_count=args.keep,
        background=False,
        model_timeout_seconds=args.timeout,
    )
    return replay_file(
        args.file,
        config=config,
        model=_model(args.model, args.timeout),
        db=args.db,
        thread_id=args.thread,
        out_path=args.out,
        compact=not args.no_compact,
        out=out,
        err=err,
    )


def _inspect(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from wm_langgraph.cli._inspect import inspect_db

    status: int = inspect_db(args.db, thread_id=args.thread, as_json=args.json, out=out, err=err)
    return status


def _report(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from wm_langgraph.cli._html_report import report_thread

    options = (
        ("token_budget", "--budget", args.budget),
        ("reserve_tokens", "--reserve", args.reserve),
        ("archive_memory_tokens", "--wm-tokens", args.wm_tokens),
    )
    given: dict[str, object] = {name: value for name, _, value in options if value is not None}
    flags = [f"{flag} {value}" for _, flag, value in options if value is not None]
    if args.no_verbatim_fill:
        given["verbatim_fill"] = False
        flags.append("--no-verbatim-fill")
    try:
        config = WorkingMemoryConfig().replace(**given) if given else None
    except ValueError as exc:
        print(f"wm-langgraph report: {exc}", file=err)
        return 2
    return report_thread(
        args.db,
        args.thread,
        config=config,
        given=" ".join(flags),
        output=args.out,
        out=out,
        err=err,
    )


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the command line.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
        out: Where results go (default: ``sys.stdout``).
        err: Where reports and errors go (default: ``sys.stderr``).

    Returns:
        The exit status (see the module docstring).
    """
    # Stored text (archived messages, WM documents) is printed: never raw to a terminal.
    stdout = cast("TextIO", SafeOutput(out if out is not None else sys.stdout))
    stderr = cast("TextIO", SafeOutput(err if err is not None else sys.stderr))
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        return _demo(args, stdout)
    if args.command == "replay":
        return _replay(args, stdout, stderr)
    if args.command == "report":
        return _report(args, stdout, stderr)
    return _inspect(args, stdout, stderr)
