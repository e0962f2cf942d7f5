"""The LoCoMo mode of the bench on its own synthetic chat (the dataset is never needed here)."""

from __future__ import annotations

import json
import logging
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if not (ROOT / "bench" / "locomo" / "__init__.py").exists():
    pytest.skip("bench/locomo is not in this checkout", allow_module_level=True)
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after site-packages: the installed wm_langgraph stays first

from bench.locomo.data import load_locomo, parse_sample, synthetic_sample  # noqa: E402
from bench.locomo.retrieval import SLICES, retrieval_available  # noqa: E402
from bench.locomo.run import evidence_in_hits  # noqa: E402
from bench.locomo.score import content_words, coverage, words  # noqa: E402
from bench.locomo.systems import (  # noqa: E402
    SYSTEMS,
    embedding_available,
    langmem_available,
    usable_tokens,
)
from bench.provenance import code_fingerprint, read_stamp  # noqa: E402
from bench.run import main  # noqa: E402

# systems whose input is kept inside `usable` by construction
BOUNDED = ("trimming", "trimming_retrieval", "wm_langgraph", "wm_langgraph_minilm")


def _systems() -> tuple[str, ...]:
    """The systems the quick run plays here (an optional one only where its extra is)."""
    optional = {
        "langmem": langmem_available(),
        "wm_langgraph_minilm": embedding_available(),
        "trimming_retrieval": retrieval_available(),
    }
    return tuple(s for s in SYSTEMS if optional.get(s, True))


def _main(argv: list[str]) -> int:
    """The bench's main, which quietens these loggers for its own output; their levels are
    given back, or a later test of this process that expects a wm_langgraph warning would see
    none."""
    loggers = [logging.getLogger(name) for name in ("langgraph", "wm_langgraph", "langchain")]
    levels = [logger.level for logger in loggers]
    try:
        return main(argv)
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("locomo_quick")
    assert _main(["--locomo", "--quick", "--out", str(out)]) == 0
    data = json.loads((out / "locomo_results.json").read_text(encoding="utf-8"))
    # the slice tuning's runs of the slices not chosen are in the file, not in the tables
    return out, data["meta"], [r for r in data["results"] if not r.get("tuning_only")]


@pytest.mark.slow
def test_every_system_is_run_and_scored(quick):
    _, meta, results = quick
    conversation = parse_sample(synthetic_sample())
    assert sorted(r["system"] for r in results) == sorted(_systems())
    for r in results:
        assert r["errors"] == [], (r["system"], r["errors"])
        assert len(r["questions"]) == len(conversation.questions) == 5
        assert r["calls"] == len(conversation.exchanges) == len(r["tokens"])
        assert {q["category"] for q in r["questions"]} == {1, 2, 3, 4}
        for q in r["questions"]:
            assert isinstance(q["covered"], bool)
            assert q["covered"] or not q["covered_all"]
            assert isinstance(q["asked"], bool)  # answerable when asked
            assert q["asked"] or not q["asked_all"]
        assert len(r["asked_tokens"]) == len(r["questions"])
    assert meta["budgets"] == [1_500]


@pytest.mark.slow
def test_the_peer_s_slice_is_tuned_and_the_chosen_one_runs(quick):
    _, meta, results = quick
    if not retrieval_available():
        pytest.skip("langchain-community / rank_bm25 not installed ([bench])")
    tried = meta["slice_tuning"]
    assert sorted(row["slice"] for row in tried) == sorted(SLICES)
    assert {row["conv"] for row in tried} == {"conv-synthetic"}  # the tuning conversations only
    chosen = [row for row in tried if row["chosen"]]
    assert len(chosen) == 1
    peer = next(r for r in results if r["system"] == "trimming_retrieval")
    assert peer["slice"] == chosen[0]["slice"]
    assert peer["slice_source"] == "tuned on conv-synthetic"
    best = max(row["asked"] for row in tried)
    assert chosen[0]["asked"] == best
    assert peer["layers"]["recalled"] > 0  # the final input holds retrieved messages


@pytest.mark.slow
def test_full_transcript_covers_every_answerable_question(quick):
    _, _, results = quick
    full = next(r for r in results if r["system"] == "full")
    assert all(q["covered"] and q["covered_all"] for q in full["questions"])
    assert full["final_tokens"] > usable_tokens(1_500)  # the chat does not fit the budget


@pytest.mark.slow
def test_bounded_systems_stay_inside_usable_and_the_budget_bites(quick):
    _, _, results = quick
    usable = usable_tokens(1_500)
    for r in results:
        if r["system"] in BOUNDED:
            assert max(r["tokens"]) <= usable, r["system"]
            assert r["final_tokens"] <= usable
    trimming = next(r for r in results if r["system"] == "trimming")
    assert not all(q["covered"] for q in trimming["questions"])  # early facts are trimmed


@pytest.mark.slow
def test_wm_langgraph_commits_and_the_recall_hook_runs(quick):
    _, _, results = quick
    wm = next(r for r in results if r["system"] == "wm_langgraph")
    assert wm["archives"] >= 1
    assert wm["memory_tokens"] > 0
    assert wm["layers"]["summary"] > 0
    assert all(isinstance(q["recall"], bool) for q in wm["questions"])
    assert all("memory" in q for q in wm["questions"])
    for q in wm["questions"]:  # visible or found: covered by the input, or found by recall
        assert q["found"] == bool(q["covered"] or q["recall"])
        assert q["recall"] or not q["recall_own"]  # the hit alone is within the hit shown


@pytest.mark.slow
def test_report_is_written_with_every_table(quick):
    out, _, _ = quick
    report = (out / "LOCOMO.md").read_text(encoding="utf-8")
    for heading in (
        "## Answerable when asked",
        "<!-- asked: copied into RESULTS.md -->",
        "### Per conversation (answerable when asked)",
        "## Coverage",
        "### Per conversation",
        "### By question category",
        "### By evidence age",
        "### The memory alone",
        "Per conversation (memory alone):",
        "## Fill",
        "## Cost (input tokens per agent call, writer tokens per turn)",
        "### Layers of the final input",
        "## Definitions",
    ):
        assert heading in report
    cost = report.split("<!-- cost: copied into RESULTS.md -->", 1)[1].split("<!-- /cost", 1)[0]
    assert "| system | agent calls | mean input / call |" in cost
    rows = {
        line.split(" | ")[0].strip("| "): line
        for line in cost.splitlines()
        if line.startswith("| ") and not line.startswith("| system")
    }
    assert "- | - | -" in rows["full"]  # no writer
    ours = next(line for label, line in rows.items() if label.startswith("wm_langgraph @"))
    assert "- | - | -" not in ours
    for system in _systems():
        assert f"| {system}" in report
    assert "| archive_search recall@5 | recall@5 (hit only) | visible or found |" in report
    assert "| mean fill | mean fill, history > usable | min fill |" in report
    fill = report.split("## Fill", 1)[1].split("### Layers", 1)[0]
    rows = {
        cells[0]: cells
        for line in fill.splitlines()
        if line.startswith("| ") and not line.startswith("| system")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    full = [cells for label, cells in rows.items() if label.startswith("full (vs")]
    assert full
    assert all(cells[5] == "n/a" for cells in full)  # no history beside itself
    ours = [cells for label, cells in rows.items() if label.startswith("wm_langgraph @")]
    assert ours
    assert all(cells[5] != "n/a" for cells in ours)
    assert "| seconds" not in report  # wall times have their own file
    timings = (out / "LOCOMO_TIMINGS.md").read_text(encoding="utf-8")
    assert "## Replay time per system" in timings
    assert "## The recall step" in timings
    assert "| 10 | 80 |" in timings  # --quick: 10 and 100 archives, 8 questions x 10 rounds
    for text in (report, timings):
        stamp = read_stamp(text)
        assert stamp["fingerprint"] == code_fingerprint()
        assert stamp["command"] == f"python -m bench --locomo --quick --out {out}"


def test_the_fill_over_crowded_calls_counts_only_calls_whose_history_exceeds_usable():
    from bench.locomo.report import _fill

    runs = [{"conv": "c", "tokens": [10, 50, 90, 98], "final_tokens": 98}]
    history = {"c": [10, 50, 120, 300]}  # the first two calls: the whole chat fits in 100
    final, final_fill, mean, crowded, low, high, over = _fill(runs, 100, history)
    assert (final, final_fill, mean, low, high, over) == (
        "98",
        "0.98",
        "0.62",
        "0.10",
        "0.98",
        "0 of 4",
    )
    assert crowded == "0.94"  # (0.90 + 0.98) / 2
    assert _fill(runs, 100)[3] == "n/a"  # without the full run there is no history to compare
    assert _fill(runs, 100, {"c": [1]})[3] == "n/a"  # another replay's calls do not line up


def test_a_quick_run_never_writes_into_bench():
    assert main(["--locomo", "--quick", "--out", str(ROOT / "bench")]) == 2


def test_a_zip_of_per_conversation_files_is_read(tmp_path):
    """The layout of data/locomo10.zip today: one flat JSON object per conversation."""
    sample = synthetic_sample(seed=3)
    flat = {**sample["conversation"], "qa": sample["qa"]}
    with zipfile.ZipFile(tmp_path / "locomo10.zip", "w") as archive:
        archive.writestr("data/multimodal_dialog/locomo10_v2/7.json", json.dumps(flat))
    conversations, source, sha = load_locomo(tmp_path)
    assert [c.conv_id for c in conversations] == ["conv-7"]
    assert source == "locomo10.zip"
    assert len(sha) == 64
    out = tmp_path / "out"
    argv = ["--locomo", str(tmp_path), "--systems", "trimming", "--budgets", "1500"]
    assert _main([*argv, "--conversations", "7", "--out", str(out)]) == 0
    assert "conv-7" in (out / "LOCOMO.md").read_text(encoding="utf-8")


def test_replay_shape():
    conversation = parse_sample(synthetic_sample())
    first = conversation.lines[0]
    assert first.shown.startswith("[2:10 pm on 8 March, 2024] ")
    assert any("[image: " in line.shown for line in conversation.lines)
    # every message is played exactly once, speaker A as user turns, B as replies
    played = [
        line
        for e in conversation.exchanges
        for line in (*e.opening, *e.user, *e.reply)  # opening: B before A's first message
    ]
    assert played == list(conversation.lines)
    assert all(all(line.user for line in e.user) for e in conversation.exchanges)
    assert all(not line.user for e in conversation.exchanges for line in e.reply)
    assert conversation.adversarial == 1
    ages = {conversation.age_of(q) for q in conversation.questions}
    assert ages <= {"first", "middle", "last"}


def test_scoring_rules():
    assert content_words("The sunday before 25 May, 2023") == ["sunday", "25", "may", "2023"]
    assert content_words("two paintings") == ["2", "painting"]
    bag = words("[1:56 pm on 8 May, 2023] I painted 2 lakes on the 25th")
    assert coverage("25 May 2023", bag) == (True, True)
    assert coverage("Sunday 25 May 2023", bag) == (True, False)  # 3 of 4 words
    assert coverage("Sunday in June 2024", bag) == (False, False)
    assert coverage("no", bag) == (False, False)  # no content word


def test_evidence_matching_of_search_hits():
    evidence = ["I adopted a greyhound yesterday, we named him Pixel."]
    hit = "[archive_001 · message 3/10]\n…  I adopted a  greyhound YESTERDAY, we named him Pixel."
    assert evidence_in_hits([hit], evidence)
    assert not evidence_in_hits(["[archive_001]\nsomething else"], evidence)


def test_the_slice_is_tuned_on_26_and_30_only_and_the_others_run_with_it(tmp_path):
    if not retrieval_available():
        pytest.skip("langchain-community / rank_bm25 not installed ([bench])")
    with zipfile.ZipFile(tmp_path / "locomo10.zip", "w") as archive:
        for stem, seed in (("26", 0), ("7", 3)):
            sample = synthetic_sample(seed=seed)
            flat = {**sample["conversation"], "qa": sample["qa"]}
            archive.writestr(f"data/multimodal_dialog/locomo10_v2/{stem}.json", json.dumps(flat))
    out = tmp_path / "out"
    argv = ["--locomo", str(tmp_path), "--systems", "trimming_retrieval", "--budgets", "1500"]
    assert _main([*argv, "--out", str(out)]) == 0
    data = json.loads((out / "locomo_results.json").read_text(encoding="utf-8"))
    runs = data["results"]
    assert sorted((r["conv"], r["slice"]) for r in runs if r["conv"] == "conv-26") == [
        ("conv-26", s) for s in sorted(SLICES)
    ]
    chosen = next(r["slice"] for r in runs if r["conv"] == "conv-26" and not r["tuning_only"])
    others = [r for r in runs if r["conv"] == "conv-7"]
    assert [(r["slice"], r["tuning"], r["tuning_only"]) for r in others] == [(chosen, False, False)]
    assert {row["conv"] for row in data["meta"]["slice_tuning"]} == {"conv-26"}
    report = (out / "LOCOMO.md").read_text(encoding="utf-8")
    assert "### trimming_retrieval: the slice, tuned on conv-26" in report
    assert f"1.5k {chosen:.0%}; tuned on conv-26" in report
    tuning = report.split("### trimming_retrieval: the slice", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in tuning.splitlines() if line.startswith("| 1.5k")]
    assert len(rows) == len(SLICES)
    assert all(" | 5 | " in row for row in rows)  # conv-26's five questions, not conv-7's too
