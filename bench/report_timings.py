"""Write TIMINGS.md: the timings of a ``python -m bench`` run (RESULTS.md holds its
deterministic tables). Comparisons are stated as ratios taken within one round of the
side-by-side timing (:func:`bench.measure.interleaved_seconds`), never across runs."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from bench.provenance import stamp_lines

__all__ = ["REFERENCE", "ratio", "write_timings"]

REFERENCE = "wm_langgraph"
"""The hook the others are compared with, at the same N."""


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def ratio(top: list[float], bottom: list[float]) -> float:
    """Median over the rounds of top / bottom within each round."""
    return statistics.median(t / b for t, b in zip(top, bottom, strict=True) if b > 0)


def write_timings(results: dict[str, Any], path: Path) -> None:
    """Write the timings report."""
    lines = [
        "# wm_langgraph benchmark timings",
        "",
        "Timings of the same run as [RESULTS.md](RESULTS.md) (its deterministic tables). They "
        "depend on the machine and on whatever else it ran meanwhile (the load averages below); "
        "where systems are compared, the comparison is a ratio measured side by side in this "
        "run. The run time of `python -m bench` is stated once, in [README.md](README.md).",
        "",
        *stamp_lines(results["timings_stamp"]),
    ]
    lines += _hot_section(results["hot"])
    lines += _recall_section(results.get("recall"))
    lines += _phase_section(results.get("phases", {}))
    lines += _size_seconds_section(results.get("sizes", []), results.get("long_sizes", []))
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


def _hot_section(hot: dict[str, dict[int, list[float]]]) -> list[str]:
    if not hot:
        return []
    sizes = sorted({n for per in hot.values() for n in per})
    rounds = min(len(t) for per in hot.values() for t in per.values())
    lo, hi = sizes[0], sizes[-1]
    medians = [
        [
            system,
            *(f"{1e6 * statistics.median(per[n]):,.0f}" for n in sizes),
            f"{ratio(per[hi], per[lo]):.1f}x",
        ]
        for system, per in hot.items()
    ]
    lines = [
        "## Hot path: the per-turn hook, no compaction",
        "",
        "The hook each system runs every turn, below the compaction threshold, with N live "
        "messages: wm_langgraph `after_turn` with a new turn of 6 messages; LangChain "
        "`SummarizationMiddleware.before_model`; LangMem `SummarizationNode`. `wm_assemble` is "
        "wm_langgraph's assemble (`build_context`, run before each model call): it renders the "
        "N live messages it returns, so it grows with N by nature — in normal operation the "
        "commits keep N small.",
        "",
        f"Measured side by side: after one warm-up call each, {rounds} rounds each call every "
        "(system, N) hook once, starting one place further along each round; garbage "
        "collection is paused within a round. Every ratio below is the median over the rounds "
        "of the ratio within one round, so a slow moment of the machine weighs on both of its "
        "terms.",
        "",
        "Median microseconds per call; the last column is the ratio of the largest N to the "
        "smallest within each round:",
        "",
        *_table(
            ["system", *(f"N={n:,}" for n in sizes), f"N={hi:,} / N={lo:,}"],
            medians,
        ),
    ]
    reference = hot.get(REFERENCE)
    if reference is not None and len(hot) > 1:
        rows = [
            [system, *(f"{ratio(per[n], reference[n]):.2f}x" for n in sizes)]
            for system, per in hot.items()
            if system != REFERENCE
        ]
        lines += [
            "Each hook's time over wm_langgraph's `after_turn` at the same N (below 1: faster "
            "than wm_langgraph's):",
            "",
            *_table(["system", *(f"N={n:,}" for n in sizes)], rows),
        ]
    return lines


RECALL_TARGET_MS = 50
"""The search latency a query must stay within at 1,000 archives (issue: recall)."""


def _recall_section(recall: Any) -> list[str]:
    if recall is None:
        return []
    rows = [[q.kind, f"`{q.query}`", f"{q.median:.1f}", f"{q.p95:.1f}"] for q in recall.queries]
    worst = max(q.p95 for q in recall.queries)
    verdict = "met" if worst <= RECALL_TARGET_MS else "not met"
    return [
        f"## archive_search over {recall.archives:,} archives",
        "",
        f"The tool's call (`archive_search_text`: parse, rank, read the hits, format) on a thread "
        f"of {recall.archives:,} archives ({recall.messages:,} messages; RESULTS.md lists the "
        f"records each call reads), after one call of each query; "
        f"{len(recall.queries[0].milliseconds)} rounds, every query once per round. "
        f"Milliseconds per call. Slowest 95th percentile {worst:.1f} ms: target "
        f"≤ {RECALL_TARGET_MS} ms {verdict}. Building the thread took "
        f"{recall.build_seconds:,.0f} s.",
        "",
        *_table(["kind", "query", "median ms", "p95 ms"], rows),
    ]


def _phase_section(phases: dict[str, float]) -> list[str]:
    if not phases:
        return []
    return [
        "## Wall time of each part",
        "",
        "Seconds each part of the run took, one after the other in the main process (not "
        "comparisons). With more than one process for the size runs (see *Machine*), they ran "
        "in worker processes beside the other parts, sharing the CPUs with them; the last row "
        "is then only what remained to wait for.",
        "",
        *_table(["part", "seconds"], [[name, f"{s:,.0f}"] for name, s in phases.items()]),
    ]


def _size_seconds_section(sizes: list[Any], long_sizes: list[Any]) -> list[str]:
    runs = [*sizes, *long_sizes]
    if not runs:
        return []
    rows = [[r.writer, f"{r.window:,}", f"{r.commits:,}", f"{r.seconds:,.0f}"] for r in runs]
    return [
        "## Size runs: seconds per writer",
        "",
        "Wall seconds of each writer's commits in the size runs (RESULTS.md, *Working Memory "
        "size*), in their worker processes when there were several; they include the "
        "scripted writer's own work, which differs by writer, so they are no comparison of the "
        "code.",
        "",
        *_table(["writer", "window", "commits", "seconds"], rows),
    ]
