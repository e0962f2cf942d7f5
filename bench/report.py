"""Write RESULTS.md (the deterministic tables) and the survival plot from the results of
bench/run.py; the timings of the same run go to TIMINGS.md (bench/report_timings.py)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from bench.locomo.report import results_section as locomo_section
from bench.measure import Survival, kinds_present
from bench.provenance import measured_on, read_stamp, stamp_lines
from bench.report_sizes import (
    checkpoint_assemble_section,
    cost_section,
    long_size_section,
    size_section,
    window_section,
)

__all__ = ["write_plot", "write_results"]

TARGET_KINDS = ("path", "constraint", "todo")


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *(_row(r) for r in rows), ""]


def write_plot(results: dict[str, Any], path: Path) -> str | None:
    """Survival curves (one panel per behaviour x session kind); None without matplotlib."""
    at = results["options"].at
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    runs = results["retention"]
    panels = sorted({(r.behaviour, r.kind) for r in runs if r.behaviour != "faithful"})
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, (behaviour, kind) in zip(axes[0], panels, strict=True):
        for r in runs:
            if (r.behaviour, r.kind) != (behaviour, kind):
                continue
            xs = [c for c, _ in r.curve]
            ys = [100 * (s.rate() or 0) for _, s in r.curve]
            ax.plot(xs, ys, label=r.system, linewidth=1.6)
        ax.axvline(at, color="grey", linestyle=":", linewidth=1)
        ax.set_title(f"{behaviour} summariser, {kind} session", fontsize=10)
        ax.set_xlabel("compactions")
        ax.set_ylabel("needles in assembled context (%)")
        ax.set_ylim(0, 102)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def _survival_rows(runs: list[Any], kinds: list[str], at: int) -> list[list[Any]]:
    rows = []
    for r in runs:
        s: Survival | None = r.at(at)
        cells = [r.kind, r.behaviour, r.system, r.compactions]
        cells.append(_pct(s.rate()) if s else f"(only {r.compactions})")
        cells.append(_pct(s.rate(summary_only=True)) if s else "")
        cells += [_pct(s.rate(k)) if s else "" for k in kinds]
        cells += [_pct(r.final.rate()), r.final.stale]
        rows.append(cells)
    return rows


def _targets(runs: list[Any], at: int) -> list[str]:
    out = []
    for kind in sorted({r.kind for r in runs}):
        wm = next(
            (
                r
                for r in runs
                if (r.system, r.kind, r.behaviour) == ("wm_langgraph", kind, "drifting")
            ),
            None,
        )
        if wm is not None:
            s = wm.at(at)
            if s is None:
                out.append(f"- drifting, {kind}: only {wm.compactions} compactions — not measured")
            else:
                overall = s.rate() or 0
                verdict = "met" if overall >= 0.98 else "NOT met"
                parts = [f"overall {_pct(overall)} ({verdict}, target ≥ 98%)"]
                for k in TARGET_KINDS:
                    rate = s.rate(k)
                    if rate is not None:
                        parts.append(f"{k} {_pct(rate)} ({'met' if rate >= 1.0 else 'NOT met'})")
                out.append(f"- drifting, {kind}, after {at} compactions: " + "; ".join(parts))
        sl = [r for r in runs if r.kind == kind and r.behaviour == "sloppy"]
        wm_s = next((r for r in sl if r.system == "wm_langgraph"), None)
        peers = [r for r in sl if r.system in {"langmem", "langchain"}]
        if wm_s is not None and peers:

            def rate(r: Any) -> float:
                s = r.at(at) or r.final
                return s.rate() or 0.0

            best = max(peers, key=rate)
            lead = rate(wm_s) - rate(best)
            verdict = "met" if lead > 0 else "NOT met"
            out.append(
                f"- sloppy, {kind}: wm_langgraph {_pct(rate(wm_s))} vs best peer {best.system} "
                f"{_pct(rate(best))} — ahead by {100 * lead:.1f} points ({verdict})"
            )
    return out


def _cost_rows(runs: list[Any]) -> list[list[Any]]:
    rows = []
    for r in runs:
        recs = [c for c in r.records if c.outcome != "raised"]
        if not recs:
            continue
        prompt = statistics.mean(c.prompt_tokens for c in recs)
        inputs = statistics.mean(c.prior_tokens + c.new_tokens for c in recs)
        early = statistics.mean(c.prompt_tokens for c in recs[:5])
        late = statistics.mean(c.prompt_tokens for c in recs[-5:])
        rows.append(
            [
                r.kind,
                r.system,
                f"{len(r.records) / r.turns:.3f}",
                f"{len(r.records) / max(r.compactions, 1):.2f}",
                f"{prompt:.0f}",
                f"{inputs:.0f}",
                f"{prompt / max(inputs, 1):.2f}",
                f"{early:.0f} → {late:.0f}",
                max(c.prompt_tokens for c in recs),
                sum(c.new_tokens for c in recs),
            ]
        )
    return rows


def write_results(results: dict[str, Any], path: Path) -> None:
    """Write the Markdown report."""
    opts = results["options"]
    runs = results["retention"]
    kinds = kinds_present([r.final for r in runs])
    lines: list[str] = [
        "# wm_langgraph benchmark results",
        "",
        "The deterministic figures of `python -m bench`: on the code of the fingerprint below, "
        "with the same seeds and package versions, every table here comes out the same on every "
        "run, but for two columns of the SQLite checkpoint table (it says why); "
        "`tests/bench/test_results_fresh.py` fails when the code has changed since. "
        "The timings of the same run are in [TIMINGS.md](TIMINGS.md); the LoCoMo figures, "
        "which need a dataset that is never committed, are copied from "
        "[LOCOMO.md](LOCOMO.md) with the code they were measured on.",
        "",
        *stamp_lines(results["stamp"]),
    ]
    if results["skipped"]:
        lines += [f"Skipped systems (not installed): {', '.join(results['skipped'])}.", ""]
    lines += _setup_section(opts)
    at = opts.at
    lines += [f"## Needle survival after {at} compactions", ""]
    if results.get("plot"):
        lines += [f"![survival curves]({results['plot']})", ""]
    lines += [
        "Share of the needles introduced so far that are present in the context the agent's "
        "model actually receives (summary + verbatim messages), measured on the first model "
        "call after the compaction of that number (column header). *summary-only* restricts "
        "to needles no longer in the verbatim part (only the summary can carry them). "
        "*final* is measured after the whole session. *stale* counts updated facts whose old "
        "value is still presented as current in the summary at the end (also counted lost).",
        "",
    ]
    header = [
        "session",
        "summariser",
        "system",
        "compactions",
        "overall",
        "summary-only",
        *kinds,
        "final",
        "stale",
    ]
    lines += _table(header, _survival_rows(runs, kinds, at))
    lines += ["### Targets (retention)", "", *_targets(runs, at), ""]
    lines += _robustness_section(runs, results.get("robustness", []), at)
    lines += ["### What wm_langgraph lost", ""]
    for r in [*runs, *results["misbehaving"]]:
        if r.system == "wm_langgraph" and r.final.lost:
            lines += [
                f"- {r.behaviour}, {r.kind}: lost at the end ({len(r.final.lost)}): "
                + "; ".join(f"`{x}`" for x in r.final.lost[:12]),
                "",
            ]
    lines += _capture_section(runs)
    lines += capture_shapes_section(results.get("capture_shapes", []))
    lines += _recall_section(results.get("recall"))
    lines += _misbehaving_section(results["misbehaving"])
    lines += ["## Cost: summariser calls and commit prompt size", ""]
    lines += [
        "Calls of the summariser model (drifting runs). *prompt* is the mean prompt size in "
        "tokens; *WM + new* is the mean size of the prior memory (WM or previous summary) plus "
        "the new messages being folded in; *early → late* compares the mean prompt of the first "
        "and last five compactions; *history folded* is the sum of the new-message tokens of "
        "all calls (the whole conversation the prompts never had to re-send).",
        "",
    ]
    lines += _table(
        [
            "session",
            "system",
            "calls/turn",
            "calls/compaction",
            "prompt",
            "WM + new",
            "ratio",
            "early → late",
            "max prompt",
            "history folded",
        ],
        _cost_rows([r for r in runs if r.behaviour == "drifting"]),
    )
    lines += _bloat_section(results["bloat"])
    lines += _checkpoint_section(results["checkpoints"], opts.checkpoint_turns)
    lines += window_section(results.get("windows", []), at)
    lines += cost_section(results.get("windows", []))
    lines += size_section(results.get("sizes", []))
    lines += long_size_section(results.get("long_sizes", []))
    lines += checkpoint_assemble_section(results.get("assemble_checkpoints", []))
    lines += locomo_section(BENCH / "LOCOMO.md", results["stamp"].fingerprint)
    lines += _real_model_pointer(BENCH / "REALMODEL.md", results["stamp"].fingerprint)
    path.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")


BENCH = Path(__file__).resolve().parent
"""bench/: where the committed LOCOMO.md and REALMODEL.md are read from."""
REALMODEL_CAPTURE_BEGIN = "<!-- realmodel-capture: begin -->"
REALMODEL_CAPTURE_END = "<!-- realmodel-capture: end -->"
"""Around REALMODEL.md's capture and notes-quality tables, which RESULTS.md copies."""


def _real_model_pointer(path: Path, fingerprint: str) -> list[str]:
    """One paragraph naming REALMODEL.md and the code it was measured on."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    stamp = read_stamp(text)
    rows: list[str] = []
    if REALMODEL_CAPTURE_BEGIN in text and REALMODEL_CAPTURE_END in text:
        rows = [
            "Its capture check and the cleanliness of its notes (the real writer's row first):",
            "",
            *text.split(REALMODEL_CAPTURE_BEGIN, 1)[1]
            .split(REALMODEL_CAPTURE_END, 1)[0]
            .strip("\n")
            .split("\n"),
            "",
        ]
    return [
        "## Real small model",
        "",
        "A coding session that outgrows its window, whose Working Memory a real model (served "
        "locally) writes, next to the scripted summarisers on the same session: "
        "[REALMODEL.md](REALMODEL.md), "
        f"written by `{stamp.get('command', 'python -m bench --real-model')}` "
        f"{measured_on(stamp, fingerprint, 'the tables above')}. It needs a model server, so "
        "`python -m bench` does not regenerate it.",
        "",
        *rows,
    ]


def _setup_section(opts: Any) -> list[str]:
    t = opts.tuning
    return [
        "## Set-up",
        "",
        f"- Sessions: generated by `bench/data.py` — a coding-agent session ({opts.turns} turns: "
        "file reads/edits via tool calls, failing tests with exact error strings and fixes, user "
        "corrections, decisions with reasons, constraints, TODOs, numbers later corrected) and a "
        f"LoCoMo-style two-person chat ({opts.turns} exchanges over dated sessions: people, "
        "places, dates, numbers, preferences, plans, facts that change).",
        "- Every system is a real agent graph around the same replayed agent (`bench/systems.py`): "
        "`wm_langgraph` = `create_agent` + `WorkingMemoryMiddleware`; `wm_no_guards` = the same "
        "with `WorkingMemoryConfig(guards=False)` (ablation); `langmem` = "
        "`create_react_agent` with LangMem `SummarizationNode` as pre-model hook; `langchain` = "
        "`create_agent` + LangChain `SummarizationMiddleware`.",
        f"- Compaction cadence made comparable: wm_langgraph commits when {t.chunk_tokens} tokens "
        f"lie outside its {t.keep_messages}-message recent window (token_budget {t.token_budget}, "
        f"Phase 2 inline); LangMem summarises every {t.chunk_tokens} new tokens "
        "(max_tokens_before_summary); LangChain triggers at "
        f"{t.keep_messages + t.chunk_messages} messages and keeps {t.keep_messages} (a message "
        "trigger, because its token trigger counts the growing summary; "
        "trim_tokens_to_summarize disabled so its summariser always sees the previous summary "
        "— both choices favour the peer).",
        "",
        "### Scripted summarisers (`bench/models.py`) — the same process for every system",
        "",
        "The model reads the prior memory into items (a WM bullet, or a line of the peer's "
        "summary), carries each forward except that it is dropped with probability *carry loss* "
        "(the title is never dropped), notes every new item whose source text occurs in the "
        "messages it is given except that each is missed with probability *capture miss*, "
        "replaces a corrected fact by its new value plus a `Superseded: …` line, and writes it "
        "back: for wm_langgraph as protocol ops (a loss-free model KEEPs and APPENDs; a lossy "
        "model rewrites every changed section with UPDATE, which is where its loss shows), for "
        "the peers as the whole rewritten summary text. When the update prompt warns that a "
        "section is oversized, the model consolidates it (bullets merged three to a line).",
        "",
        *_table(
            ["model", "definition"],
            [
                ["faithful", "carry loss 0, capture miss 0"],
                ["drifting", "carry loss 0.30 per rewrite, capture miss 0 (classic summary drift)"],
                ["sloppy", "carry loss 0.30, capture miss 0.20"],
                [
                    "title",
                    "faithful, but from the 2nd call on rewrites the title (unrelated words)",
                ],
                [
                    "update_not_append",
                    "faithful, but answers UPDATE with only the new items where APPEND was due "
                    "(peers: the summary keeps only the new items of those topics)",
                ],
                [
                    "malformed",
                    'faithful, but every 3rd call: truncated JSON / `{"raw": …}` wrapper / no '
                    "`sections` wrapper / curly quotes (peers: the summary text cut at 60%)",
                ],
                ["empty", "faithful, but every 3rd call returns nothing"],
                ["raises", "faithful, but every 3rd call raises"],
                [
                    "bloating",
                    "faithful plus 8 redundant verbose lines per call; "
                    "never consolidates when warned",
                ],
            ],
        ),
    ]


CAPTURE_HEADER = [
    "session",
    "summariser",
    "rounds",
    "follow-up calls (of rounds)",
    "candidates",
    "written",
    "added on follow-up",
    "added by code",
    "dismissed",
    "dismissed earlier (not asked)",
    "skipped",
]
"""The columns of :func:`capture_rows`."""


def capture_rows(runs: list[Any]) -> list[list[Any]]:
    """The capture check's fates per wm_langgraph run, summed over its rounds."""
    rows = []
    for r in runs:
        fates = getattr(r, "capture", None)
        if r.system != "wm_langgraph" or not fates:
            continue
        calls = fates.get("asked rounds", 0)
        rounds = fates.get("rounds", 0)
        counts = {k: v for k, v in fates.items() if k not in {"rounds", "asked rounds"}}
        total = sum(counts.values())

        def share(n: int, of: int = total) -> str:
            return f"{n} ({100 * n / of:.1f}%)" if of else str(n)

        skipped = sorted(
            (k.split(": ", 1)[1], v) for k, v in counts.items() if k.startswith("skipped")
        )
        earlier = sum(v for k, v in counts.items() if k.startswith("dismissed: "))
        rows.append(
            [
                r.kind,
                r.behaviour,
                rounds,
                share(calls, rounds),
                total,
                share(counts.get("written", 0)),
                share(counts.get("added_on_followup", 0)),
                share(counts.get("added_by_code", 0)),
                share(counts.get("dismissed", 0)),
                earlier,
                "; ".join(f"{reason} {n}" for reason, n in skipped) or "0",
            ]
        )
    return rows


def _capture_section(runs: list[Any]) -> list[str]:
    """The capture check's fates per wm_langgraph retention run (issue: capture)."""
    rows = capture_rows(runs)
    if not rows:
        return []
    return [
        "## Capture check (wm_langgraph)",
        "",
        "Every Phase 2 round looks up the salient units of the folded messages (and the paths "
        "and errors the trails found) in the new Working Memory; what is missing is put to the "
        "writer in one follow-up call if it carries an anchor or is a TODO, decision, "
        "constraint or correction, and what the writer still leaves out is added by code when "
        "an anchor pins it down or, in a working session, when it is such a commitment "
        "(`docs/`, capture). Fates summed over the rounds of each "
        "retention run (the scripted summarisers answer the follow-up as they note things: a "
        "catalogue item is added, still missed with the sloppy writer's probability; anything "
        "else is dismissed). "
        "*dismissed earlier*: statements the writer had dismissed in an earlier round, not "
        "asked again. The session's filler (small talk, acknowledgements with numbers) is what "
        "the faithful writer dismisses.",
        "",
        *_table(CAPTURE_HEADER, rows),
        "",
    ]


CAPTURE_SHAPES_HEADER = [
    "session shape",
    "turns",
    "rounds",
    "facts",
    "kept",
    "lost",
    "added by code",
    "e.g. lost",
]
"""The columns of :func:`capture_shapes_section`."""


def capture_shapes_section(results: list[Any]) -> list[str]:
    """The capture check across session shapes (``bench/capture_shapes.py``), the worst
    marked."""
    if not results:
        return []
    worst = min(results, key=lambda r: r.rate)
    rows = [
        [
            f"**{r.shape}** (worst)" if r is worst else r.shape,
            r.turns,
            r.capture.get("rounds", 0),
            r.facts,
            f"{r.kept} ({100 * r.rate:.1f}%)",
            r.facts - r.kept,
            r.capture.get("added_by_code", 0),
            "; ".join(f"`{x}`" for x in r.lost[:2]) or "-",
        ]
        for r in results
    ]
    return [
        "### Capture across session shapes (8k window, a writer that leaves out 30%)",
        "",
        "The bench's two sessions and sessions of other shapes (`bench/data.py: SHAPES`: other "
        "turn lengths, fact densities, tool loads, a coding session where the user also tells "
        "personal facts), replayed through `create_agent` + `WorkingMemoryMiddleware` at an 8k "
        "window with the default commit cadence (half the window pending: a round folds about "
        "4,000 tokens), with the *omitting* writer (`bench/models.py`): it leaves out 30% of "
        "each round's new facts and says nothing when the capture check asks. *kept*: the "
        "fact's ground-truth text is in the memory's own notes at the end (the Working Memory, "
        "or the items its size contract moved out, which `archive_search` finds); facts of the "
        "last turns that no round has folded yet are not counted (they are live messages). "
        f"Worst shape: **{worst.shape}**, {100 * worst.rate:.1f}% kept.",
        "",
        *_table(CAPTURE_SHAPES_HEADER, rows),
        "",
    ]


def _recall_section(recall: Any) -> list[str]:
    """What ``archive_search`` reads per call on a thread of about 1,000 archives."""
    if recall is None:
        return []
    rows = []
    for q in recall.queries:
        reads = "; ".join(f"{kind} {n}" for kind, n in q.reads.items()) or "none"
        rows.append([q.kind, f"`{q.query}`", q.hits, reads])
    return [
        f"## archive_search over {recall.archives:,} archives",
        "",
        f"A chat session of {recall.turns:,} turns with a commit every turn (the faithful "
        f"summariser): {recall.archives:,} archives, {recall.messages:,} messages. *reads*: "
        "the store records one call reads, by namespace kind, once every index has been read "
        "(a per-process cache keeps them; archives are immutable): never every archive per "
        "query, only the archives the hits show (and their neighbours'). The latency is in "
        "[TIMINGS.md](TIMINGS.md).",
        "",
        *_table(["kind", "query", "hits", "reads per call"], rows),
        "",
    ]


def _misbehaving_section(runs: list[Any]) -> list[str]:
    if not runs:
        return []
    rows = [
        [
            r.behaviour,
            r.system,
            r.compactions,
            _pct(r.final.rate()),
            _pct(r.final.rate(summary_only=True)),
            "yes" if r.title_kept else "no",
            len(r.errors),
            r.calls,
        ]
        for r in runs
    ]
    return [
        "## Misbehaving summarisers (coding session)",
        "",
        "Final needle survival in the assembled context; *title kept*: the original session title "
        "is still in the context; *failed turns*: agent turns that raised (the peer's summariser "
        "error reached the agent).",
        "",
        *_table(
            [
                "model",
                "system",
                "compactions",
                "final",
                "summary-only",
                "title kept",
                "failed turns",
                "summariser calls",
            ],
            rows,
        ),
    ]


def _bloat_section(runs: list[Any]) -> list[str]:
    if not runs:
        return []
    rows = []
    for r in runs:
        sizes = dict(r.memory_tokens)
        marks = []
        for k in (25, 50, 75, 100):
            hits = [tok for c, tok in r.memory_tokens if c >= k]
            marks.append(hits[0] if hits else "")
        rows.append([r.system, r.compactions, *marks, max(sizes.values() or [0])])
    return [
        "## Memory size over 100 commits with a bloating model",
        "",
        "Tokens (cl100k) of the WM / running summary after the k-th compaction; compaction after "
        "every turn.",
        "",
        *_table(["system", "compactions", "@25", "@50", "@75", "@100", "max"], rows),
    ]


def _checkpoint_section(ckpt: dict[str, dict[str, int]], turns: int) -> list[str]:
    if not ckpt:
        return []
    rows = [
        [
            s,
            f"{v['file']:,}",
            v["checkpoints"],
            f"{v['last_checkpoint']:,}",
            f"{v['writes']:,}",
            f"{v['store_file']:,}" if "store_file" in v else "",
        ]
        for s, v in ckpt.items()
    ]
    return [
        f"## SQLite checkpoint size after {turns} turns",
        "",
        "SqliteSaver file after the same two-person chat (faithful summariser); *last checkpoint* "
        "is the size of the newest checkpoint blob (what every further step rewrites); "
        "wm_langgraph keeps archives and WM versions in a separate SqliteStore (*store file*). "
        "The one figure of RESULTS.md that is not exactly reproducible: LangGraph saves "
        "pending writes from a background thread, so their order in the file varies from run "
        "to run (and with it the *checkpoint file bytes*, by a page or two), and so does "
        "whether the id that the messages reducer sets in place on LangChain's summary message "
        "is already there when that write is serialised (its *writes bytes*, by 37 bytes a "
        "summary).",
        "",
        *_table(
            [
                "system",
                "checkpoint file bytes",
                "checkpoints",
                "last checkpoint bytes",
                "writes bytes",
                "store file bytes",
            ],
            rows,
        ),
    ]


def _robustness_section(runs: list[Any], extra: list[Any], at: int) -> list[str]:
    if not extra:
        return []
    every = [r for r in [*runs, *extra] if r.behaviour in {"drifting", "sloppy"}]
    systems = [
        s for s in ("wm_langgraph", "langmem", "langchain") if any(r.system == s for r in every)
    ]
    keys = sorted({(r.kind, r.behaviour) for r in every})
    rows = []
    for kind, behaviour in keys:
        for system in systems:
            rates = []
            for r in every:
                if (r.kind, r.behaviour, r.system) == (kind, behaviour, system):
                    s = r.at(at)
                    rates.append(s.rate() if s is not None else None)
            got = [x for x in rates if x is not None]
            if not got:
                continue
            rows.append(
                [
                    kind,
                    behaviour,
                    system,
                    ", ".join(_pct(x) for x in rates),
                    _pct(statistics.mean(got)),
                    _pct(min(got)),
                ]
            )
    return [
        "### Across seeds",
        "",
        f"Overall survival after {at} compactions for the first seed and the extra seeds "
        "(new sessions and a new loss draw each).",
        "",
        *_table(["session", "summariser", "system", "per seed", "mean", "min"], rows),
    ]
