"""The size runs of the benchmark on small inputs: a small window shows the whole WM whenever
it fits, flooding writers stay at the ceiling, the assemble node adds no model input to the
checkpoints."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if not (ROOT / "bench" / "__init__.py").exists():
    pytest.skip("bench/ is not in this checkout", allow_module_level=True)
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from bench.data import generate_session  # noqa: E402
from bench.sizes import assemble_checkpoints, size_runs, window_runs  # noqa: E402
from bench.systems import Tuning  # noqa: E402
from bench.writers import register_writer  # noqa: E402

SMALL = Tuning(chunk_tokens=600, chunk_messages=10, keep_messages=6)


def test_an_8k_window_shows_the_whole_wm_whenever_it_fits() -> None:
    runs = window_runs(
        ["coding"], 5, 60, ["wm_langgraph"], SMALL, windows=(8_000,), log=lambda _: None
    )
    # the baselines of the cost table run beside it: no memory once, trimming per window
    assert [r.system for r in runs] == ["plain", "wm_langgraph", "trimming"]
    run = runs[1]
    fits = [c for c in run.contexts if c["fits"]]
    assert len(fits) > 20
    assert all(c["complete"] for c in fits)
    assert all(c["tokens"] <= c["usable"] for c in run.contexts)
    assert run.over_budget == 0


@pytest.mark.slow
def test_flooding_writers_never_push_the_wm_over_the_ceiling() -> None:
    runs = size_runs(20, 9, [8_000], writers=["200 KB document", "10,000 ops"], log=lambda _: None)
    for run in runs:
        assert run.largest <= run.ceiling
        assert run.moved > 0
        assert run.compactions >= 2


def test_a_writer_can_be_registered_for_the_size_runs() -> None:
    from bench.models import make_model
    from bench.writers import SIZE_WRITERS

    register_writer("test faithful copy", lambda s, seed: make_model("faithful", s.items, seed))
    try:
        (run,) = size_runs(5, 9, [8_000], writers=["test faithful copy"], log=lambda _: None)
        assert run.final > 0
        with pytest.raises(ValueError, match="already registered"):
            register_writer(
                "test faithful copy", lambda s, seed: make_model("faithful", s.items, 1)
            )
    finally:
        SIZE_WRITERS.pop("test faithful copy", None)


def test_the_assemble_node_adds_no_model_input_to_the_checkpoints() -> None:
    without, with_node = assemble_checkpoints(generate_session("chat", 10, 12), seed=3)
    per_checkpoint = with_node.checkpoint_bytes / with_node.checkpoints
    baseline = without.checkpoint_bytes / without.checkpoints
    assert per_checkpoint <= 1.1 * baseline  # each checkpoint the same state, no copy of the input


@pytest.mark.slow
def test_the_drifting_writer_keeps_the_wm_about_as_small_as_the_faithful_one() -> None:
    """Same facts, same paths: the guards' restores and salvage must not duplicate entries.
    Before the Files guard appended only a new path's own entry, the drifting WM was 1.27x the
    faithful one after 100 commits (1.39x after 1,000)."""
    faithful, drifting = size_runs(
        100, 9, [128_000], writers=["faithful", "drifting"], log=lambda _: None
    )
    assert drifting.final <= 1.15 * faithful.final
    assert drifting.facts_kept is not None
    assert drifting.facts_kept >= 0.98


@pytest.mark.parametrize("saver", ["InMemorySaver", "VersionedSqliteSaver"])
def test_on_a_saver_that_stores_channels_by_version_the_assemble_node_costs_little(
    saver: str,
) -> None:
    """InMemorySaver, PostgresSaver and open_sqlite's VersionedSqliteSaver store a channel's
    value once per version: the assemble step changes no stored channel, so its extra
    checkpoint is bookkeeping only."""
    without, with_node = assemble_checkpoints(
        generate_session("chat", 10, 12), seed=3, savers=(saver,)
    )
    assert (with_node.saver, without.saver) == (saver, saver)
    assert with_node.checkpoints > without.checkpoints  # one more superstep per model call
    assert with_node.per_turn <= 1.2 * without.per_turn
