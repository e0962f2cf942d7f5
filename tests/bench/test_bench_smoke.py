"""Smoke run of the benchmark (bench/ lives outside the package, next to tests/)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if not (ROOT / "bench" / "__init__.py").exists():
    pytest.skip("bench/ is not in this checkout", allow_module_level=True)
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after site-packages: the installed wm_langgraph stays first

from bench.data import generate_session  # noqa: E402
from bench.models import make_model  # noqa: E402
from bench.provenance import code_fingerprint, read_stamp  # noqa: E402
from bench.run import Options, main, quick_options, run_benchmark, run_one  # noqa: E402
from bench.systems import SYSTEMS, Tuning, langmem_available  # noqa: E402
from wm_langgraph.recall.search import LITERAL_FALLBACK_ARCHIVES  # noqa: E402

SMALL = Tuning(chunk_tokens=600, chunk_messages=10, keep_messages=6)


def _systems() -> tuple[str, ...]:
    return tuple(s for s in SYSTEMS if s != "langmem" or langmem_available())


@pytest.mark.parametrize("kind", ["coding", "chat"])
def test_sessions_are_deterministic_and_every_needle_is_in_its_turn(kind):
    a = generate_session(kind, 3, 60)
    b = generate_session(kind, 3, 60)
    assert [t.user for t in a.turns] == [t.user for t in b.turns]
    assert [n.check for n in a.needles] == [n.check for n in b.needles]
    assert len({n.check for n in a.needles}) == len(a.needles)
    for needle in a.needles:
        turn = a.turns[needle.turn]
        text = "\n".join(
            [turn.user, turn.answer] + [f"{c.args} {c.result}" for step in turn.steps for c in step]
        )
        assert needle.check in text, needle
    assert generate_session(kind, 4, 60).needles != a.needles


@pytest.mark.parametrize("system", SYSTEMS)
def test_a_faithful_summariser_keeps_every_needle_in_every_system(system):
    if system == "langmem" and not langmem_available():
        pytest.skip("langmem is not installed (pip install '.[bench]'); peer not benchmarked")
    session = generate_session("coding", 5, 40)
    result = run_one(system, session, "faithful", SMALL)
    assert result.compactions >= 3
    assert result.errors == []
    assert result.final.rate() == 1.0, result.final.lost


def test_guards_keep_more_than_the_ablation_under_a_drifting_summariser():
    session = generate_session("coding", 6, 50)
    # An 8k budget: at the default one the verbatim fill shows the whole session, so only the
    # Working Memory carries the older needles here (the commit cadence is the same).
    tuning = replace(SMALL, token_budget=8_000)
    full = run_one("wm_langgraph", session, "drifting", tuning)
    ablation = run_one("wm_no_guards", session, "drifting", tuning)
    assert full.compactions == ablation.compactions >= 5
    assert full.final.rate() > ablation.final.rate()
    assert full.final.rate("path") == 1.0


def test_the_scripted_summariser_answers_the_update_call_with_the_tool():
    session = generate_session("coding", 2, 30)
    result = run_one("wm_langgraph", session, "faithful", SMALL)
    kinds = [r.kind for r in result.records]
    assert kinds[0] == "wm_create"
    assert set(kinds[1:]) - {"wm_capture"} == {"wm_update"}  # and the capture follow-up
    assert all(r.outcome == "ok" for r in result.records)


def test_the_scripted_summariser_applies_its_loss_to_what_it_carries():
    session = generate_session("coding", 2, 30)
    faithful = make_model("faithful", session.items, seed=1)
    drifting = make_model("drifting", session.items, seed=1)
    prior = "\n".join(f"- item {i}" for i in range(200))
    prompt = f"Key facts and decisions:\n{prior}"
    kept = []
    for model in (faithful, drifting):
        reply = model.invoke(
            [
                {"role": "user", "content": "hello"},
                {
                    "role": "user",
                    "content": f"This is summary of the conversation so far: {prompt}\n\n"
                    "Extend this summary by taking into account the new messages above:",
                },
            ]
        )
        kept.append(sum(1 for line in reply.text.splitlines() if line.startswith("- item")))
    assert kept[0] == 200
    assert 100 < kept[1] < 180  # about 70% of 200 carried forward


@pytest.mark.slow
def test_quick_benchmark_writes_results(tmp_path):
    opts: Options = replace(
        quick_options(tmp_path),
        turns=30,
        kinds=("coding",),
        misbehaviours=("raises",),
        misbehaviour_turns=20,
        bloat_commits=6,
        hot_sizes=(20, 60),
        recall_turns=30,
        checkpoint_turns=6,
        at=3,
    )
    results = run_benchmark(opts)
    text = (tmp_path / "RESULTS.md").read_text(encoding="utf-8")
    for heading in (
        "## Provenance",
        "## Needle survival after 3 compactions",
        "## Capture check (wm_langgraph)",
        "## archive_search over",
        "## Misbehaving summarisers",
        "## Cost: summariser calls",
        "## Memory size over 100 commits",
        "## SQLite checkpoint size",
        "## Small context windows: 8k, 16k, 32k",
        "## Cost per call: input and writer tokens",
        "## Working Memory size over",
        "### Past 1,000 commits: 30 commits at the default budget",
        "## Checkpoint bytes per turn, with and without the assemble node",
        "## LoCoMo: real long conversations",
    ):
        assert heading in text
    for system in _systems():
        assert f"| {system} |" in text
    # the cost table: every system, the baselines without a memory beside them
    cost = text.split("## Cost per call", 1)[1].split("\n## ", 1)[0]
    for label in ("no memory (full)", "trimming @ 8k", "SummarizationMiddleware @ 8k"):
        assert f"| {label} |" in cost
    assert "| wm_langgraph @ 8k |" in cost
    windows = results["windows"]
    full = [r for r in windows if r.system == "plain"]
    assert len(full) == 1
    assert all(r.writer == {} for r in windows if r.system in {"plain", "trimming"})
    ours = next(r for r in windows if r.system == "wm_langgraph")
    assert ours.writer["calls"] == len(ours.records)  # every writer call metered
    assert ours.writer["prompt"] > 0
    assert len(ours.input_tokens) == ours.model_calls == len(full[0].input_tokens)
    # while the whole history fits, the input is no memory's, token for token
    pairs = zip(ours.input_tokens, full[0].input_tokens, strict=True)
    fitting = [(a, b) for a, b in pairs if b <= 6_800]
    assert fitting
    assert all(a == b for a, b in fitting)
    assert f"its input equals no memory's on {len(fitting):,}" in cost
    # the capture fates of every wm_langgraph retention run, summed over its rounds
    for run in results["retention"]:
        if run.system == "wm_langgraph":
            assert run.capture["rounds"] >= 1
            fates = {k: v for k, v in run.capture.items() if k not in {"rounds", "asked rounds"}}
            assert sum(fates.values()) > 0
            # the rounds that asked are the follow-up calls the scripted writer answered
            calls = sum(1 for rec in run.records if rec.kind == "wm_capture")
            assert run.capture.get("asked rounds", 0) == calls
            assert f"| coding | {run.behaviour} | {run.capture['rounds']} |" in text
    timings = (tmp_path / "TIMINGS.md").read_text(encoding="utf-8")
    recall = results["recall"]
    assert recall.archives >= 20
    assert all(q.milliseconds for q in recall.queries)
    # once every index is cached, a call reads no index and only the archives its hits show
    for q in recall.queries:
        assert "search" not in q.reads
        assert q.reads.get("moved (search)", 0) <= 1
        # the hits' archives and their neighbours'; no match: the newest archives, literally
        assert q.reads.get("archives", 0) <= max(3 * q.hits, LITERAL_FALLBACK_ARCHIVES)
    for heading in (
        "## Provenance",
        "## Hot path",
        "## archive_search over",
        "## Wall time of each part",
        "## Size runs",
    ):
        assert heading in timings
    # timings live apart from the deterministic tables
    assert "## Hot path" not in text
    assert "| seconds" not in text
    stamps = [read_stamp(t) for t in (text, timings)]
    assert [s["fingerprint"] for s in stamps] == [code_fingerprint()] * 2
    assert [s["command"] for s in stamps] == ["python -m bench --quick"] * 2
    assert stamps[0]["Generated"] == stamps[1]["Generated"]
    assert "Machine" in stamps[1]
    long = results["long_sizes"]
    assert [r.writer for r in long] == ["faithful", "offline model"]
    assert all(len(r.tokens) == 30 and sum(r.sections.values()) > 0 for r in long)
    if not langmem_available():
        assert "langmem" in results["skipped"]


def test_a_quick_run_never_writes_into_bench():
    bench = ROOT / "bench"
    with pytest.raises(SystemExit):
        main(["--quick", "--out", str(bench)])
    with pytest.raises(ValueError, match="never writes into bench"):
        run_benchmark(quick_options(bench))


def test_the_real_model_rows_go_to_their_own_stamped_file(tmp_path, monkeypatch):
    """Without a server: the scripted faithful model stands in for the real one."""
    import bench.realmodel as realmodel

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setattr(
        realmodel, "_writer", lambda: make_model("faithful", _realmodel_items(), seed=1)
    )
    out = tmp_path / "not" / "there"  # --out is created when missing
    assert realmodel.run_real_model(out, seed=7) == 0
    text = (out / "REALMODEL.md").read_text(encoding="utf-8")
    stamp = read_stamp(text)
    assert stamp["fingerprint"] == code_fingerprint()
    assert "--real-model" in stamp["command"]
    assert "| coding | real small model" in text
    assert "sampling seed 0" in stamp["Seeds"]
    assert "Working Memory's size in tokens after each compaction" in text
    assert not (out / "RESULTS.md").exists()


def _realmodel_items():
    from bench.data import generate_coding_session
    from bench.realmodel import TURNS

    return generate_coding_session(7, TURNS).items
