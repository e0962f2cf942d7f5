"""Play one bench session through one system: the retention runs' unit (``run_one``), shared by
the whole run (bench/run.py), the size runs (bench/sizes.py) and the real-model rows
(bench/realmodel.py)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

from bench.cost import WRITER_SYSTEMS, WriterMeter, input_tokens, metered
from bench.data import Session, Turn
from bench.measure import Survival, measure_survival
from bench.models import CallRecord, make_model, records_of
from bench.systems import Tuning, build_system
from wm_langgraph.phase2.capture import EARLIER

__all__ = ["RunResult", "calibrate", "capture_fates", "run_one"]


@dataclass
class RunResult:
    """One system run on one session with one summariser."""

    system: str
    kind: str
    behaviour: str
    turns: int
    compactions: int
    calls: int
    errors: list[str]
    curve: list[tuple[int, Survival]]
    final: Survival
    records: list[CallRecord]
    memory_tokens: list[tuple[int, int]]
    title_kept: bool
    seconds: float
    window: int | None = None
    contexts: list[dict[str, int]] = field(default_factory=list)
    over_budget: int = 0
    model_calls: int = 0
    capture: dict[str, int] = field(default_factory=dict)
    """wm_langgraph only: the capture check's fates over the run (``fate`` or
    ``fate: reason`` for a dismissal in an earlier round and the skips), ``rounds``, the
    rounds (archives) that recorded a check, and ``asked rounds``, those with a follow-up call."""
    input_tokens: list[int] = field(default_factory=list)
    """Input tokens of every agent-model call, by the memory's counter (bench/cost.py)."""
    writer: dict[str, int] = field(default_factory=dict)
    """The writer's calls, prompt and output tokens (``{}`` for a system without one)."""
    played: int = 0
    """Turns played (user messages sent): the session's and the closing probe."""
    memory: str = ""
    """The memory's own text after the last turn (wm_langgraph: the Working Memory document;
    a peer: its summary)."""

    def at(self, k: int) -> Survival | None:
        """Survival measured right after the k-th compaction (None if there were fewer)."""
        for c, s in self.curve:
            if c >= k:
                return s
        return None


def calibrate(session: Session, tuning: Tuning) -> Tuning:
    """Set LangChain's message trigger to the session's messages per ``chunk_tokens``."""
    from wm_langgraph.document.tokens import count_tokens

    messages = 0
    tokens = 0
    for t in session.turns:
        messages += 2 + sum(1 + len(step) for step in t.steps)
        tokens += count_tokens(t.user) + count_tokens(t.answer)
        tokens += sum(count_tokens(c.result) + 20 for step in t.steps for c in step)
    per_message = tokens / max(messages, 1)
    chunk = max(2, round(tuning.chunk_tokens / per_message))
    return replace(tuning, chunk_messages=chunk)


def _probe_turn(index: int) -> Turn:
    return Turn(index, "Where do we stand? Give me a short status.", (), "Status noted.", ())


def run_one(
    system: str,
    session: Session,
    behaviour: str,
    tuning: Tuning,
    *,
    track_memory: bool = False,
    model: Any = None,
    wm_overrides: dict[str, Any] | None = None,
) -> RunResult:
    """Play ``session`` through ``system`` with a fresh ``behaviour`` summariser (or ``model``,
    a real chat model, labelled ``behaviour``; ``wm_overrides``: extra ``WorkingMemoryConfig``
    fields, such as a slow local writer's timeout)."""
    if model is None:
        model = make_model(behaviour, session.items, seed=session.seed * 7919 + 17)
    meter = WriterMeter()
    callbacks = getattr(model, "callbacks", None)
    if system in WRITER_SYSTEMS:
        metered(model, meter)
    try:
        run = build_system(system, session, model, tuning, wm_overrides=wm_overrides)
        return _play(run, system, session, behaviour, tuning, model, track_memory, meter)
    finally:
        if system in WRITER_SYSTEMS:
            model.callbacks = callbacks  # a model used again is metered by its next run only


def _play(
    run: Any,
    system: str,
    session: Session,
    behaviour: str,
    tuning: Tuning,
    model: Any,
    track_memory: bool,
    meter: WriterMeter,
) -> RunResult:
    started = time.perf_counter()
    compactions: list[int] = []
    errors: list[str] = []
    memory_tokens: list[tuple[int, int]] = []
    from wm_langgraph.document.tokens import count_tokens

    turns = [*session.turns, _probe_turn(len(session.turns))]
    for turn in turns:
        err = run.play(turn)
        if err:
            errors.append(f"turn {turn.index}: {err}")
        compactions.append(run.compactions())
        if track_memory and (len(compactions) < 2 or compactions[-1] != compactions[-2]):
            memory_tokens.append((compactions[-1], count_tokens(run.memory_text())))
    seconds = time.perf_counter() - started
    curve: list[tuple[int, Survival]] = []
    last = 0
    for t in range(1, len(turns)):
        c = compactions[t - 1]
        if c > last:
            messages = run.agent.first_input(t)
            if messages is not None:
                curve.append((c, measure_survival(session, t, messages)))
            last = c
    final_input = run.agent.first_input(len(session.turns)) or []
    final = measure_survival(session, len(session.turns), final_input)
    title_kept = session.title.lower() in "\n".join(m.text for m in final_input).lower()
    over_budget = 0
    if tuning.window:
        from bench.systems import window_limits

        usable = window_limits(tuning.window)[0]
        over_budget = sum(
            1
            for _, _, messages in run.agent.inputs
            if sum(count_tokens(m.text) + 4 for m in messages) > usable
        )
    return RunResult(
        system,
        session.kind,
        behaviour,
        len(session.turns),
        compactions[-1],
        len(records_of(model)),
        errors,
        curve,
        final,
        records_of(model),
        memory_tokens,
        title_kept,
        seconds,
        window=tuning.window,
        contexts=list(run.extra.get("contexts", [])),
        over_budget=over_budget,
        model_calls=len(run.agent.inputs),
        capture=capture_fates(run),
        input_tokens=[input_tokens(messages) for _, _, messages in run.agent.inputs],
        writer=meter.figures() if system in WRITER_SYSTEMS else {},
        played=len(turns),
        memory=run.memory_text(),
    )


def capture_fates(run: Any) -> dict[str, int]:
    """The capture check's fates recorded in the archives of a wm_langgraph run (``{}`` for
    a peer): counts per fate, a dismissal in an earlier round and each skip reason apart,
    ``rounds`` (archives with a check) and ``asked rounds`` (a follow-up call was made)."""
    memory = run.extra.get("memory")
    if memory is None:
        return {}
    out: dict[str, int] = {"rounds": 0}
    seen: set[str] = set()
    for record in memory.list_archives(run.config):
        meta = record.metadata or {}
        fates = meta.get("capture")
        if not isinstance(fates, list):
            continue
        # the archives of one round carry the same record of it: count the round once
        key = json.dumps([record.overview, fates, meta.get("metrics")], default=str)
        if key in seen:
            continue
        seen.add(key)
        out["rounds"] += 1
        metrics = meta.get("metrics")
        if isinstance(metrics, dict) and metrics.get("capture_asked"):
            out["asked rounds"] = out.get("asked rounds", 0) + 1
        for fate in fates:
            name = str(fate.get("fate"))
            reason = str(fate.get("reason") or "")
            if name == "skipped" or (name == "dismissed" and reason == EARLIER):
                name = f"{name}: {reason}"
            out[name] = out.get(name, 0) + 1
    return out
