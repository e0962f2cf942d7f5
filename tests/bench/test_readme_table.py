"""The README's measured figures are the results files' (``python -m bench.readme``): the block
between its markers is exactly what the committed bench/*.md give, and it follows them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench.readme import BEGIN, END, block, main, refresh

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def _bench_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "bench"
    copy.mkdir()
    for name in ("LOCOMO.md", "RESULTS.md", "REALMODEL.md"):
        shutil.copy(BENCH / name, copy / name)
    return copy


def test_the_readme_shows_what_the_results_files_hold() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert BEGIN in readme
    assert END in readme
    shown = readme.split(BEGIN, 1)[1].split(END, 1)[0]
    expected = "\n".join(block(BENCH)).split(BEGIN, 1)[1].split(END, 1)[0]
    assert shown == expected, "README.md's figures are stale: run python -m bench.readme"
    assert main(["--check"]) == 0


def test_every_system_and_budget_of_locomo_is_in_the_table() -> None:
    text = "\n".join(block(BENCH))
    locomo = (BENCH / "LOCOMO.md").read_text(encoding="utf-8")
    summary = locomo.split("<!-- summary: copied into RESULTS.md -->")[1].split("<!-- /summary")[0]
    for line in summary.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 1 and cells[0].split(" @ ")[0] in {"full", "trimming", "wm_langgraph"}:
            assert cells[1] in text  # the covered share


def test_a_changed_result_changes_the_table_and_what_it_says_we_lose(tmp_path: Path) -> None:
    bench = _bench_copy(tmp_path)
    before = "\n".join(block(bench))
    locomo = bench / "LOCOMO.md"
    text = locomo.read_text(encoding="utf-8")
    # the final input's table (the summary block), not the question-time one above it
    head, summary = text.split("<!-- summary", 1)
    row = next(ln for ln in summary.splitlines() if ln.startswith("| wm_langgraph @ 8k |"))
    cells = row.split(" | ")
    cells[1] = "99.9%"
    text = head + "<!-- summary" + summary.replace(row, " | ".join(cells), 1)
    locomo.write_text(text, encoding="utf-8")
    after = "\n".join(block(bench))
    assert after != before
    assert "99.9%" in after
    assert "at 8k SummarizationMiddleware covers" not in after.replace("\n", " ")


def test_refresh_writes_between_the_markers_and_needs_them(tmp_path: Path) -> None:
    bench = _bench_copy(tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\nintro\n\n{BEGIN}\nold\n{END}\n\n## next\n", encoding="utf-8")
    assert refresh(readme, bench)
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("# title\n\nintro\n\n")
    assert text.endswith("\n\n## next\n")
    assert "old" not in text.split(BEGIN, 1)[1]
    assert not refresh(readme, bench)  # already current
    readme.write_text("# no markers\n", encoding="utf-8")
    with pytest.raises(ValueError, match="block"):
        refresh(readme, bench)
