"""The load run's short version as a correctness check (marker ``postgres``): a few threads at
once in one process on PostgreSQL with background Phase 2 lose nothing, every turn succeeds,
the backlog drains, and the report says so. No figure and no time is asserted."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if not (ROOT / "bench" / "__init__.py").exists():
    pytest.skip("bench/ is not in this checkout", allow_module_level=True)
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))

from bench.load import URL_VARIABLE, load_main, quick_options, run_load  # noqa: E402
from bench.run import main  # noqa: E402


@pytest.fixture
def url() -> str:
    found = os.environ.get(URL_VARIABLE, "")
    if not found:
        pytest.skip(f"{URL_VARIABLE} is not set: start a server with `source .ci/postgres.sh`")
    return found


@pytest.mark.postgres
def test_a_short_load_loses_nothing_and_drains(url: str) -> None:
    opts = quick_options(url)
    result = run_load(opts)
    assert result.failed_turns == []
    assert result.lost == []
    assert result.turns == opts.threads * opts.turns
    assert result.messages == 4 * opts.threads * opts.turns
    assert result.archives > 0  # the budget is small: Phase 2 had work
    assert result.folded + len(result.failed) == result.archives
    assert result.drain_s is not None
    assert len(result.after_turn_ms) == result.turns
    assert len(result.assemble_ms) == 2 * result.turns  # a tool turn calls the model twice
    assert result.samples


@pytest.mark.postgres
def test_the_command_writes_load_md_with_its_provenance(url: str, tmp_path: Path) -> None:
    assert load_main(quick_options(url), tmp_path) == 0
    text = (tmp_path / "LOAD.md").read_text(encoding="utf-8")
    assert "- Code fingerprint: `" in text
    assert "turns per second" in text
    assert "lost or unexplained: nothing" in text


def test_without_a_server_the_command_says_how_to_start_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(URL_VARIABLE, raising=False)
    with pytest.raises(SystemExit):
        main(["--load", "--quick"])
    assert "source .ci/postgres.sh" in capsys.readouterr().err
