"""The capture check across session shapes: does a writer's omission stay an omission?

Each shape of :data:`bench.data.SHAPES` (the bench's coding and chat sessions, and chats and
coding sessions with other turn lengths, fact densities, tool loads and mixes) is replayed
through ``wm_langgraph`` (``create_agent`` + ``WorkingMemoryMiddleware``) at an 8k window with
the default commit cadence (a commit when half the window is pending), so a round folds about
4,000 tokens, with the *omitting* writer (``bench/models.py``): it leaves out 30% of each
round's new facts and says nothing when the capture check asks. A fact is *kept* when its
ground-truth text (the needle's check, case-insensitive) is in the memory's own notes at the
end: the Working Memory, or the items the size contract moved out of it (``archive_search``
finds them). Needles retired by a later turn do not count, nor those of the last turns that no
round has folded yet (they are still live messages).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bench.data import SHAPES, Shape, generate_shaped_session
from bench.models import make_model
from bench.systems import SystemRun, Tuning, build_system

__all__ = ["ShapeResult", "run_shapes"]

WINDOW = 8_000
"""The context window of every shape run."""
PENDING_SHARE = 0.5
"""A commit when this share of the window is pending (``commit_token_threshold_ratio``)."""


@dataclass
class ShapeResult:
    """One shape's run.

    Attributes:
        shape: The shape's name.
        turns: Turns replayed.
        facts: Needles due at the end.
        kept: Of those, the ones in the memory's notes (the WM or its moved-out items).
        lost: A few of the lost needles' checks (for the report).
        capture: The capture check's fates over the run (see ``bench.run.capture_fates``).
    """

    shape: str
    turns: int
    facts: int
    kept: int
    lost: list[str] = field(default_factory=list)
    capture: dict[str, int] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        """The kept share (1.0 without facts)."""
        return self.kept / self.facts if self.facts else 1.0


Fates = Callable[[SystemRun], dict[str, int]]
"""The capture check's fates of a run (``bench.run.capture_fates``)."""


def run_shape(
    shape: Shape, seed: int, turns: int, fates: Fates, window: int = WINDOW
) -> ShapeResult:
    """Replay one shape with the omitting writer (module docstring)."""
    session = generate_shaped_session(shape, seed, turns)
    model = make_model("omitting", session.items, seed=seed * 7919 + 17)
    tuning = Tuning(chunk_tokens=int(PENDING_SHARE * window), window=window)
    run = build_system("wm_langgraph", session, model, tuning)
    for turn in session.turns:
        run.play(turn)
    memory = run.extra["memory"]
    notes = "\n".join(
        [run.memory_text(), *(text for _, _, text in memory.moved_items(run.config))]
    ).casefold()
    # Facts of the turns no round has folded yet are in the live messages, not yet the memory's.
    folded = max(
        (
            int(str(m.id)[2:])
            for record in memory.list_archives(run.config)
            for m in record.messages
            if str(m.id).startswith("u-")
        ),
        default=-1,
    )
    due = [n for n in session.needles_due(len(session.turns)) if n.turn <= folded]
    lost = [n.check for n in due if n.check.casefold() not in notes]
    return ShapeResult(shape.name, turns, len(due), len(due) - len(lost), lost, fates(run))


def run_shapes(
    seed: int,
    turns: int,
    *,
    fates: Fates,
    shapes: Sequence[Shape] = SHAPES,
    log: Callable[[str], None] | None = None,
) -> list[ShapeResult]:
    """Every shape's run, in :data:`SHAPES` order."""
    out: list[ShapeResult] = []
    for shape in shapes:
        result = run_shape(shape, seed, turns, fates)
        out.append(result)
        if log is not None:
            log(
                f"capture shape {shape.name:20} kept {result.kept}/{result.facts} "
                f"({100 * result.rate:.1f}%)"
            )
    return out
