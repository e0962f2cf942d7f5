"""The committed benchmark results were measured on the code of this tree.

Every results file in bench/ records the fingerprint of the code it measured
(bench/provenance.py). RESULTS.md and TIMINGS.md are what ``python -m bench`` writes: after any
change to the package, its prompts or the benchmark, they must be regenerated before the
change lands, and these tests fail until they are. LOCOMO.md (and its LOCOMO_TIMINGS.md) needs
the LoCoMo dataset, which is never committed, and REALMODEL.md a model server: no test run can
regenerate them, so for those a different fingerprint is reported as a skip naming the command,
not a failure. No figure is compared here, and no time.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
if not (BENCH / "provenance.py").exists():
    pytest.skip("bench/ is not in this checkout", allow_module_level=True)
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # after site-packages: the installed wm_langgraph stays first

from bench.locomo.report import RESULTS_BEGIN, RESULTS_END, results_section  # noqa: E402
from bench.provenance import code_fingerprint, fingerprinted_files, read_stamp  # noqa: E402

FULL_RUN = "python -m bench"
REGENERATED = ("RESULTS.md", "TIMINGS.md")
"""Written by the full run, which needs nothing but this repository."""

MEASURED_ELSEWHERE = {
    "LOCOMO.md": ("the LoCoMo dataset", "python -m bench --locomo DIR --jobs 2"),
    "LOCOMO_TIMINGS.md": ("the LoCoMo dataset", "python -m bench --locomo DIR --jobs 2"),
    "REALMODEL.md": (
        "a model server",
        "python scripts/realmodel_server.py run -- python -m bench --real-model",
    ),
    "LOAD.md": ("a PostgreSQL server", "source .ci/postgres.sh && python -m bench --load"),
}
"""Results that need what the repository does not hold: (what, the command)."""


@pytest.fixture(scope="module")
def fingerprint() -> str:
    return code_fingerprint(ROOT)


def _stamp(name: str) -> dict[str, str]:
    path = BENCH / name
    if not path.exists():
        pytest.fail(f"bench/{name} is missing", pytrace=False)
    return read_stamp(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", REGENERATED)
def test_results_were_measured_on_this_code(name, fingerprint):
    stamp = _stamp(name)
    recorded = stamp.get("fingerprint")
    if recorded != fingerprint:
        pytest.fail(
            f"bench/{name} is older than the code it claims to measure: it records code "
            f"fingerprint {recorded or stamp.get('Code fingerprint', '(none)')} (commit "
            f"{stamp.get('Commit', 'unknown')}), this tree's is {fingerprint}. Regenerate it "
            f"with `{FULL_RUN}` from the repository root (run time: bench/README.md) and commit "
            "RESULTS.md, TIMINGS.md and survival.png.",
            pytrace=False,
        )
    assert stamp.get("command") == FULL_RUN, (
        f"bench/{name} was written by `{stamp.get('command')}`; the committed results are the "
        f"full run's: `{FULL_RUN}`"
    )


def test_results_and_timings_come_from_one_run():
    results, timings = (_stamp(name) for name in REGENERATED)
    for label in ("Code fingerprint", "Commit", "Seeds", "Generated"):
        assert results.get(label) == timings.get(label), label
    assert "Machine" in timings


def test_results_carry_locomo_md_summary_as_it_stands():
    """RESULTS.md's LoCoMo section is LOCOMO.md's summary table and stamp, not an old copy."""
    text = (BENCH / "RESULTS.md").read_text(encoding="utf-8")
    assert RESULTS_BEGIN in text
    assert RESULTS_END in text
    expected = "\n".join(results_section(BENCH / "LOCOMO.md", _stamp("RESULTS.md")["fingerprint"]))
    shown = text.split(RESULTS_BEGIN, 1)[1].split(RESULTS_END, 1)[0]
    assert shown == expected.split(RESULTS_BEGIN, 1)[1].split(RESULTS_END, 1)[0], (
        "the LoCoMo section of bench/RESULTS.md differs from bench/LOCOMO.md: rerun "
        f"`{FULL_RUN}`, or `python -m bench --locomo DIR` (it refreshes that section)"
    )


@pytest.mark.parametrize("name", sorted(MEASURED_ELSEWHERE))
def test_results_measured_outside_the_suite_name_their_code(name, fingerprint):
    needs, command = MEASURED_ELSEWHERE[name]
    stamp = _stamp(name)
    assert stamp.get("Code fingerprint"), f"bench/{name} does not say what code it measured"
    assert stamp.get("Command"), f"bench/{name} does not say what command wrote it"
    if stamp.get("fingerprint") != fingerprint:
        pytest.skip(
            f"bench/{name} was measured on other code (fingerprint "
            f"{stamp.get('fingerprint', stamp['Code fingerprint'])}, commit "
            f"{stamp.get('Commit', 'unknown')}); it needs {needs}: `{command}`"
        )


# ------------------------------------------------------------------------------ the fingerprint


def _tree(root: Path) -> None:
    for name, text in {
        "wm_langgraph/__init__.py": "x = 1\n",
        "wm_langgraph/document/ops.py": "y = 2\n",
        "prompts/update.md": "Update the memory.\n",
        "bench/run.py": "z = 3\n",
        "bench/locomo/run.py": "w = 4\n",
        "bench/RESULTS.md": "figures\n",
        "bench/survival.png": "png\n",
        "bench/locomo_results.json": "{}\n",
        "tests/test_x.py": "def test(): pass\n",
        "README.md": "readme\n",
        "scripts/tool.py": "t = 5\n",
        "wm_langgraph/__pycache__/ops.cpython-311.py": "cached\n",
    }.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())


def test_the_fingerprint_covers_the_package_its_prompts_and_the_bench_code(tmp_path):
    _tree(tmp_path)
    files = [p.relative_to(tmp_path).as_posix() for p in fingerprinted_files(tmp_path)]
    assert files == [
        "bench/locomo/run.py",
        "bench/run.py",
        "prompts/update.md",
        "wm_langgraph/__init__.py",
        "wm_langgraph/document/ops.py",
    ]
    before = code_fingerprint(tmp_path)
    assert len(before) == 64
    for name in ("bench/RESULTS.md", "bench/survival.png", "tests/test_x.py", "README.md"):
        (tmp_path / name).write_text("changed\n", encoding="utf-8")
    assert code_fingerprint(tmp_path) == before  # results, tests and docs are not code measured
    for name in ("wm_langgraph/document/ops.py", "prompts/update.md", "bench/locomo/run.py"):
        path = tmp_path / name
        original = path.read_bytes()
        path.write_bytes(original + b"# edit\n")
        assert code_fingerprint(tmp_path) != before, name
        path.write_bytes(original)
    assert code_fingerprint(tmp_path) == before
    (tmp_path / "bench/run.py").rename(tmp_path / "bench/runner.py")  # same bytes, new name
    assert code_fingerprint(tmp_path) != before


def test_the_fingerprint_ignores_line_endings(tmp_path):
    _tree(tmp_path)
    before = code_fingerprint(tmp_path)
    path = tmp_path / "bench/run.py"
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert code_fingerprint(tmp_path) == before


def test_this_tree_fingerprints_its_package_and_bench():
    files = {p.relative_to(ROOT).as_posix() for p in fingerprinted_files(ROOT)}
    assert {"wm_langgraph/__init__.py", "bench/provenance.py", "bench/run.py"} <= files
    assert not any(f.startswith("tests/") for f in files)
