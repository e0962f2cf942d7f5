"""The state of one commit round (``phase2.graph``): a few flat keys and four typed groups.

The flat keys are the graph's interface: the runner's inputs, and what the runner, the
``on_done`` callback and the long-term writer read from a finished round (``batch``, ``late``,
``text``, ``outcome``, ``error``). The rest is grouped by who writes it, each group a frozen
dataclass with explicit defaults that a node replaces whole:

- :class:`RoundPlan` — what ``prepare`` decided; fixed for the round;
- :class:`WriterStep` — the writer call in progress (which slice, on top of which text);
- :class:`WriterReply` — what the writer answered, and the fallback the round took;
- :class:`MergeRecord` — what ``guard_merge`` decided for the slices so far.

The state is never checkpointed (the graph is compiled with ``checkpointer=False`` and runs as
a root run of its own), so the groups need no serialiser; tracers see them as dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from wm_langgraph.phase2.batching import Slice
from wm_langgraph.phase2.capture import Candidate
from wm_langgraph.writer.calls import ErrorKindName
from wm_langgraph.writer.provider import ContextOverflow

__all__ = [
    "Branch",
    "CommitState",
    "FailureKind",
    "MergeRecord",
    "Outcome",
    "RoundInputs",
    "RoundPlan",
    "WriterReply",
    "WriterStep",
]

Outcome = Literal["done", "failed", "noop", "overflow", "split", "deferred", "deadline"]
"""What a round ended in; the runner decides what comes next from it (``phase2.graph``)."""
Branch = Literal["create", "update"]
"""The writer call: a whole document (``create``) or the forced update tool (``update``)."""
FailureKind = ErrorKindName | Literal["deadline"]
"""A writer failure's kind, or ``"deadline"``: the inline run's own time ran out."""


@dataclass(frozen=True, slots=True)
class RoundPlan:
    """What ``prepare`` decided for the round (fixed until ``save``).

    Attributes:
        base_prior: The WM the round starts from (a deferral stores it unchanged).
        covers: The archives that WM covers.
        deferred: The archives that WM lists as deferred.
        slices: The messages of each writer call (one, or an archive's slices), late-fold note
            included.
        errors: Error lines found in the folded tool results (the error trail's candidates).
        overhead_tokens: The prompt without its messages, plus room for a retry note.
        max_tokens: The reply limit sent with each writer call.
        deadline: A monotonic time after which no writer call starts (an inline run's bound).
        code_items: Section -> the items of the base WM that our code added (the trails and
            the capture check), which a writer's UPDATE may drop (carried in the WM version's
            ``code_items``).
        units: The salient units of the folded user and assistant messages, the capture
            check's candidates (``phase2.capture``; checked once, on the last slice).
        dismissed: Keys of the statements the writer dismissed in earlier rounds (the base
            WM version's ``dismissed``; ``phase2.capture.dismissal_key``), oldest first.
        base_decisions: The base WM version's guard decisions: a late fold stores its version
            in that version's place, and keeps them (what its guards wrote stays on record).
    """

    base_prior: str = ""
    covers: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    slices: list[Slice] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    overhead_tokens: int = 0
    max_tokens: int | None = None
    deadline: float | None = None
    code_items: dict[str, list[str]] = field(default_factory=dict)
    units: list[Candidate] = field(default_factory=list)
    dismissed: list[str] = field(default_factory=list)
    base_decisions: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class WriterStep:
    """The writer call in progress.

    Attributes:
        index: The slice it folds (``RoundPlan.slices``).
        prior: The document it builds on: the base WM, then the merge of the previous slice.
        branch: Create or update (an update without a usable reply still falls back to create).
    """

    index: int = 0
    prior: str = ""
    branch: Branch = "create"


@dataclass(frozen=True, slots=True)
class WriterReply:
    """What the writer answered for the current slice.

    Attributes:
        ops: The update tool's section ops; None when no usable update came (then create).
        created: The whole document the create call wrote, if it ran.
        fallback: The last fallback the round took (``"no_tool_call"``, ``"targeted_retry"``,
            ...); kept across slices, it is recorded in the archive's metadata.
        abstracts: Archive id -> the abstract the writer gave it in this call (cleaned, only
            the archives of the slice; a create fallback's replace an update's).
    """

    ops: dict[str, Any] | None = None
    created: str | None = None
    fallback: str | None = None
    abstracts: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class MergeRecord:
    """What ``guard_merge`` decided: for the current slice, and for the slices before it.

    Attributes:
        decisions: The guard decisions (and a compaction's) of the current slice's merge.
        artifact_trail: File paths the merge appended to Files & Context.
        error_trail: Errors the merge appended to Errors & Corrections.
        moved: Items the size contract moved out of the document (JSON-plain, oldest first).
        earlier_decisions: The decisions of the archive's earlier slices.
        earlier_trail: The artifact trail of the archive's earlier slices.
        capture: The capture check's fates so far (``phase2.capture.Fate.as_dict``), every
            slice's.
        captured_items: Section -> the items the capture check's code added so far (paths and
            errors included).
        trail_sources: Path -> where the artifact trail took it from (``user``, ``<tool>
            arguments``, ``<tool> output``), for every slice's added paths.
        abstracts: Archive id -> the abstracts the guards accepted for it, one per slice.
    """

    decisions: list[dict[str, Any]] = field(default_factory=list)
    artifact_trail: list[str] = field(default_factory=list)
    error_trail: list[str] = field(default_factory=list)
    moved: list[dict[str, str]] = field(default_factory=list)
    earlier_decisions: list[dict[str, Any]] = field(default_factory=list)
    earlier_trail: list[str] = field(default_factory=list)
    capture: list[dict[str, str]] = field(default_factory=list)
    captured_items: dict[str, list[str]] = field(default_factory=dict)
    trail_sources: dict[str, str] = field(default_factory=dict)
    abstracts: dict[str, list[str]] = field(default_factory=dict)


class CommitState(TypedDict, total=False):
    """State of one Phase 2 round (one batch, or one archive in slices).

    Inputs (the runner's; only ``thread_id`` is required, see :class:`RoundInputs`):
    ``thread_id``, ``user_id``, ``timeline``, ``deadline``, ``max_archives``, ``job_started``,
    ``writer_works``.

    Results read by callers: ``batch`` (the archives of the round; a split halves it),
    ``late`` (a deferred archive's retry), ``text`` (the merged document), ``outcome``,
    ``error`` (the failure's message, stored in the archives' metadata), with ``error_kind``,
    ``overflow`` (a context-length error's numbers) and ``metrics`` (timings and sizes, stored
    with the WM version). ``prepare`` writes the groups, ``batch``, ``late``, ``error``,
    ``error_kind``, ``overflow`` and ``metrics`` (only ``batch``, ``plan`` and ``outcome`` when
    nothing is pending); ``guard_merge`` writes ``text``, ``save`` writes ``outcome``.
    """

    thread_id: str
    user_id: str | None
    timeline: list[str]
    deadline: float | None
    max_archives: int | None
    job_started: float
    writer_works: bool
    batch: list[str]
    late: bool
    plan: RoundPlan
    step: WriterStep
    reply: WriterReply
    text: str
    merge: MergeRecord
    outcome: Outcome
    error: str | None
    error_kind: FailureKind | None
    overflow: ContextOverflow | None
    metrics: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RoundInputs:
    """The runner's inputs with their defaults (a direct ``invoke`` may give ``thread_id`` only).

    Attributes:
        thread_id: The thread (the archive store's key).
        timeline: The thread's archive ids in order, as its current checkpoint has them.
        deadline: A monotonic time after which no writer call starts (an inline run's bound).
        max_archives: At most this many archives in the batch (a batch being split).
        job_started: The job's wall-clock start: archives it deferred are retried by later jobs.
        writer_works: The job has folded an archive: deferred ones may be retried.
    """

    thread_id: str
    timeline: list[str] = field(default_factory=list)
    deadline: float | None = None
    max_archives: int | None = None
    job_started: float | None = None
    writer_works: bool = False

    @classmethod
    def of(cls, state: CommitState) -> RoundInputs:
        """The inputs of ``state``, defaults for those left out."""
        return cls(
            thread_id=state["thread_id"],
            timeline=list(state.get("timeline") or []),
            deadline=state.get("deadline"),
            max_archives=state.get("max_archives"),
            job_started=state.get("job_started"),
            writer_works=bool(state.get("writer_works")),
        )
