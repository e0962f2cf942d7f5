"""RESULTS.md sections of the size runs (bench/sizes.py): small windows, the WM size contract,
the checkpoint cost of the assemble node."""

from __future__ import annotations

from typing import Any

from bench.cost import LABELS, CostRow, cost_lines, equal_while_it_fits, pool
from bench.systems import BASELINES, window_limits

__all__ = [
    "checkpoint_assemble_section",
    "cost_section",
    "long_size_section",
    "size_section",
    "window_section",
]

SURVIVAL_TARGET = 0.98
DRIFT_RATIO_TARGET = 1.3
CHECKPOINT_RATIO_TARGET = 1.2


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def _whole(r: Any) -> tuple[int, int]:
    fits = [c for c in r.contexts if c["fits"]]
    return sum(c["complete"] for c in fits), len(fits)


def window_section(runs: list[Any], at: int) -> list[str]:
    """Survival and WM visibility in 8k / 16k / 32k windows."""
    runs = [r for r in runs if r.system not in BASELINES]  # they are the cost table's
    if not runs:
        return []
    rows = []
    for r in runs:
        survival = r.at(at)
        shown, fits = _whole(r)
        whole = f"{shown}/{fits}" if r.contexts else "n/a"
        rows.append(
            [
                r.kind,
                f"{r.window:,}",
                r.behaviour,
                r.system,
                r.compactions,
                _pct(survival.rate() if survival else None),
                _pct(r.final.rate()),
                whole,
                f"{r.over_budget}/{r.model_calls}",
            ]
        )
    lines = [
        "## Small context windows: 8k, 16k, 32k",
        "",
        "The retention sessions again, every system inside the same window: wm_langgraph with "
        "`token_budget` = window (same commit cadence); LangMem `max_tokens` = the window's "
        "usable part (window minus the 15% reply reserve) and `max_summary_tokens` = the size "
        "target wm_langgraph holds its WM to; LangChain also summarises once its context "
        "passes the usable part. *overall* is survival after the "
        f"{at}th compaction (as above), *final* after the whole session. *WM whole when it "
        "fits*: model calls where the whole Working Memory fitted beside the newest turn, and "
        "how many of them showed it whole. *over budget*: model calls whose input exceeded "
        "the usable part.",
        "",
        *_table(
            [
                "session",
                "window",
                "summariser",
                "system",
                "compactions",
                "overall",
                "final",
                "WM whole when it fits",
                "over budget",
            ],
            rows,
        ),
        "Targets (small windows):",
        "",
    ]
    for r in runs:
        if r.system != "wm_langgraph" or r.behaviour != "drifting":
            continue
        survival = r.at(at)
        rate = survival.rate() if survival else None
        met = rate is not None and rate >= SURVIVAL_TARGET
        shown, fits = _whole(r)
        lines.append(
            f"- {r.kind}, {r.window:,}: overall {_pct(rate)} "
            f"({'met' if met else 'NOT met'}, target ≥ 98%); WM whole in {shown} of {fits} "
            f"calls where it fitted ({'met' if shown == fits else 'NOT met'})"
        )
    return [*lines, ""]


def size_section(runs: list[Any]) -> list[str]:
    """The WM size contract over many commits."""
    if not runs:
        return []
    from bench.writers import FLOOD_EVERY

    commits = runs[0].commits
    rows = [
        [
            r.writer,
            f"{r.window:,}",
            f"{r.target:,}",
            f"{r.ceiling:,}",
            f"{r.final:,}",
            f"{r.largest:,}",
            r.over_target,
            f"{r.moved:,}",
            r.compactions,
            _pct(r.facts_kept),
        ]
        for r in runs
    ]
    lines = [
        f"## Working Memory size over {commits:,} commits",
        "",
        f"One commit per turn of a {commits:,}-turn coding session, each writer on its own "
        "thread (`WorkingMemory.compact`, Phase 2 inline). *target* and *ceiling* are the size "
        "contract of that window (target = max(1,000, min(1.5 × archive_memory_tokens, 30% of "
        "usable)), ceiling = 1.5 × target). *over target*: commits after which the WM was above "
        "its target. *moved out*: items the last-resort step moved into the store record "
        "(`archive_search` finds them), *compactions*: commits where the code compacted. "
        "*needles kept*: the session's needles found in the stored WM or its moved-out items. "
        f"The flooding writers return a 200 KB document / 10,000 new items on every "
        f"{FLOOD_EVERY}th call ({commits // FLOOD_EVERY} floods), faithful otherwise; the test "
        "suite floods on every call.",
        "",
        *_table(
            [
                "writer",
                "window",
                "target",
                "ceiling",
                "final",
                "max",
                "over target",
                "moved out",
                "compactions",
                "needles kept",
            ],
            rows,
        ),
        "Targets (size contract):",
        "",
    ]
    for r in runs:
        ok = r.largest <= r.ceiling
        lines.append(
            f"- {r.writer}, {r.window:,}: max {r.largest:,} tokens "
            f"({'at or under' if ok else 'OVER'} the ceiling {r.ceiling:,})"
        )
    by = {(r.writer, r.window): r for r in runs}
    for window in sorted({r.window for r in runs}):
        faithful, drifting = by.get(("faithful", window)), by.get(("drifting", window))
        if faithful and drifting and faithful.final:
            ratio = drifting.final / faithful.final
            met = "met" if ratio <= DRIFT_RATIO_TARGET else "NOT met"
            lines.append(
                f"- drifting / faithful after {commits:,} commits, {window:,}: "
                f"{drifting.final:,} / {faithful.final:,} = {ratio:.2f}x ({met}, target ≤ 1.3x)"
            )
    return [*lines, ""]


_GROWTH_ONLY = ("Files & Context", "Errors & Corrections")
"""Sections no writer may shrink: every path stays, errors are append-only."""


def long_size_section(runs: list[Any]) -> list[str]:
    """The size runs past 1,000 commits: when the target is first crossed, and by what."""
    if not runs:
        return []
    from wm_langgraph.document.sections import SECTIONS

    commits = runs[0].commits
    short = {
        "Session Title": "title",
        "Current State": "state",
        "Task & Goals": "goals",
        "Key Facts & Decisions": "facts",
        "Files & Context": "files",
        "Errors & Corrections": "errors",
        "Open Issues": "open",
    }
    rows = []
    for r in runs:
        growth = sum(r.sections.get(name, 0) for name in _GROWTH_ONLY)
        rows.append(
            [
                r.writer,
                f"{r.window:,}",
                f"{r.target:,}",
                f"{r.ceiling:,}",
                "never" if r.first_over is None else f"{r.first_over:,}",
                f"{r.largest:,}",
                f"{r.final:,}",
                f"{r.moved:,}",
                *(f"{r.sections.get(name, 0):,}" for name in SECTIONS),
                f"{growth:,} ({growth / r.final:.0%})" if r.final else "n/a",
            ]
        )
    return [
        f"### Past 1,000 commits: {commits:,} commits at the default budget",
        "",
        "The same coding session, longer. *first over target*: the first commit after which the "
        "WM was above its target. The section columns are the tokens of each section's body after "
        "the last commit; *paths + errors* is what Files & Context (every path stays) and Errors "
        "& Corrections (append-only) hold together, the part no writer may consolidate away. A "
        "session that keeps producing new paths and distinct errors crosses the target whatever "
        "the writer; from then on the ceiling's compaction holds the document, moving the oldest "
        "items into the searchable record.",
        "",
        *_table(
            [
                "writer",
                "window",
                "target",
                "ceiling",
                "first over target",
                "max",
                "final",
                "moved out",
                *(short[name] for name in SECTIONS),
                "paths + errors",
            ],
            rows,
        ),
    ]


def checkpoint_assemble_section(costs: list[Any]) -> list[str]:
    """Checkpoint bytes per turn with and without the assemble node, per checkpointer."""
    if not costs:
        return []
    rows = [
        [
            getattr(c, "saver", "SqliteSaver"),
            c.shape,
            c.turns,
            c.checkpoints,
            f"{c.checkpoint_bytes:,}",
            f"{c.writes_bytes:,}",
            f"{c.per_turn:,.0f}",
        ]
        for c in costs
    ]
    lines = [
        "## Checkpoint bytes per turn, with and without the assemble node",
        "",
        "The same StateGraph agent (two-person chat, faithful summariser): with an `assemble` "
        "node before the model (README wiring, `WorkingMemoryState`), and without it (the model "
        "node calls `memory.build_context` itself). The assembled context is an untracked "
        "channel, never written to a checkpoint or a pending write; what remains is the one "
        "checkpoint LangGraph writes per superstep. `SqliteSaver` stores every checkpoint "
        "whole, so that extra checkpoint costs one copy of the state per model call. "
        "`VersionedSqliteSaver` (what `open_sqlite` gives), `InMemorySaver` (also behind "
        "`langgraph dev`) and `PostgresSaver` (LangGraph Platform) store a channel's value "
        "once per version: the assemble step changes no "
        "stored channel, so its checkpoint costs only its bookkeeping. *checkpoint bytes* "
        "include those per-version channel blobs. PostgresSaver runs only when "
        "`WM_TEST_POSTGRES_URL` names a server.",
        "",
        *_table(
            [
                "checkpointer",
                "agent",
                "turns",
                "checkpoints",
                "checkpoint bytes",
                "writes bytes",
                "bytes/turn",
            ],
            rows,
        ),
    ]
    savers = list(dict.fromkeys(getattr(c, "saver", "SqliteSaver") for c in costs))
    for saver in savers:
        by = {c.shape: c for c in costs if getattr(c, "saver", "SqliteSaver") == saver}
        with_node, without = by.get("with assemble node"), by.get("without assemble node")
        if with_node and without and without.per_turn:
            ratio = with_node.per_turn / without.per_turn
            steps = with_node.checkpoints / max(1, without.checkpoints)
            met = "met" if ratio <= CHECKPOINT_RATIO_TARGET else "NOT met"
            lines.append(
                f"- {saver}: with / without {ratio:.2f}x bytes per turn ({met}, target ≤ "
                f"{CHECKPOINT_RATIO_TARGET}x), for {steps:.2f}x the checkpoints."
            )
    lines.append("")
    return lines


def cost_section(runs: list[Any]) -> list[str]:
    """What each system costs inside each window: input tokens per agent call, the writer's
    tokens per turn (the small-window runs, pooled over the sessions)."""
    full = [r for r in runs if r.system == "plain"]
    windows = sorted({r.window for r in runs if r.window})
    if not full or not windows:
        return []
    order = ("trimming", "langchain", "langmem", "wm_langgraph")
    rows: list[CostRow] = [pool(LABELS["plain"], "plain", (_as_cost(r) for r in full))]
    notes: list[str] = []
    for window in windows:
        by = {s: [r for r in runs if r.window == window and r.system == s] for s in order}
        for system in order:
            if by[system]:
                label = f"{LABELS[system]} @ {window / 1000:g}k"
                rows.append(pool(label, system, (_as_cost(r) for r in by[system])))
        ours, trimming = by["wm_langgraph"], by["trimming"]
        if ours and trimming:
            usable = window_limits(window)[0]
            mine = pool("", "wm_langgraph", (_as_cost(r) for r in ours))
            theirs = pool("", "trimming", (_as_cost(r) for r in trimming))
            same, fitting = equal_while_it_fits(
                [(r.input_tokens, f.input_tokens) for r in ours for f in full if f.kind == r.kind],
                usable,
            )
            notes.append(
                f"- {window / 1000:g}k: wm_langgraph {mine.mean:,.0f} tokens per call against "
                f"trimming's {theirs.mean:,.0f} "
                f"({'at most' if mine.mean <= theirs.mean else 'MORE than'} trimming's); "
                f"on the {fitting:,} calls whose whole history fits usable ({usable:,}), its "
                f"input equals no memory's on {same:,}"
            )
    return [
        "## Cost per call: input and writer tokens",
        "",
        "Every agent-model call of the small-window runs above (the drifting writer), pooled "
        "over the coding and chat sessions, and the same sessions through `create_agent` "
        "without a memory (*no memory*: the full history, whatever the window) and with "
        "trimming to the window's usable part (`trim_messages`, newest first, starting on a "
        "user message). Tokens are counted for every system with the memory's counter "
        "(`message_tokens`: text + 4 per message, tool calls with their arguments). *writer*: "
        "the memory's own model calls (wm_langgraph: create / update and the capture "
        "follow-up; SummarizationMiddleware and LangMem: their summary calls), prompt "
        "including the tools bound to the call, per turn played.",
        "",
        *cost_lines(rows),
        *notes,
        "",
    ]


def _as_cost(r: Any) -> dict[str, Any]:
    return {"tokens": r.input_tokens, "turns": r.played, "writer": r.writer}
