"""``wm-langgraph report THREAD --db FILE``: one thread of a database as an HTML file, on any
store the CLI opens (a SQLite file here; a PostgreSQL URL with the ``postgres`` marker)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from tests.display._inert import assert_inert
from wm_langgraph.cli._html_report import default_output
from wm_langgraph.cli._runtime import database_label
from wm_langgraph.cli.demo import DEMO_CONFIG, DemoResult, run_demo
from wm_langgraph.cli.main import main


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def careless(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, DemoResult]:
    """The demo played with the careless writer into a SQLite file (guards at work)."""
    db = str(tmp_path_factory.mktemp("report") / "careless.sqlite")
    result = run_demo(out=io.StringIO(), db=db, careless=True)
    return db, result


def test_report_writes_the_thread_with_what_the_demo_measured(careless, tmp_path: Path):
    db, result = careless
    target = tmp_path / "out.html"
    budget = str(DEMO_CONFIG.tokens)
    status, out, err = _run(["report", "demo", "--db", db, "--budget", budget, "-o", str(target)])
    assert status == 0, err
    assert out.startswith(f"wrote {target}: thread demo, {len(result.archive_ids)} archives")
    text = assert_inert(target.read_text(encoding="utf-8")).text
    assert f"guard interventions{result.guard_interventions}" in text
    assert f"last input{result.last_prompt_tokens:,} tokens" in text
    assert "writer's op → guard's decision" in text
    assert "Thread demo" in text
    assert "SQLite careless.sqlite" in text


def test_report_names_its_file_after_the_thread_by_default(careless, tmp_path: Path, monkeypatch):
    db, _ = careless
    monkeypatch.chdir(tmp_path)
    status, out, _ = _run(["report", "demo", "--db", db])
    assert status == 0
    assert (tmp_path / "wm-report-demo.html").is_file()
    assert "wrote wm-report-demo.html" in out
    assert default_output("../a b/<c>") == Path("wm-report-a_b_c.html")
    assert default_output("..") == Path("wm-report-thread.html")


def test_report_of_an_unknown_thread_or_file_or_budget_is_a_clear_error(careless, tmp_path: Path):
    db, _ = careless
    status, _, err = _run(["report", "nope", "--db", db, "-o", str(tmp_path / "x.html")])
    assert status == 2
    assert "no thread 'nope'" in err
    assert "(threads: demo)" in err
    status, _, err = _run(["report", "demo", "--db", str(tmp_path / "missing.sqlite")])
    assert status == 2
    assert "no such database file" in err
    status, _, err = _run(["report", "demo", "--db", db, "--budget", "1000", "--wm-tokens", "5000"])
    assert status == 2
    assert "archive_memory_tokens" in err
    assert not (tmp_path / "x.html").exists()


def test_a_database_url_is_printed_without_its_password():
    assert database_label("postgresql://me:s3cret@db.internal:5432/wm") == (
        "postgresql://me:***@db.internal:5432/wm"
    )
    assert database_label("postgresql://me@db/wm") == "postgresql://me@db/wm"
    assert database_label("demo.sqlite") == "demo.sqlite"


def test_an_unreachable_postgres_database_is_a_clear_error(tmp_path: Path):
    pytest.importorskip("psycopg", reason="needs the [postgres] extra (psycopg)")
    url = f"postgresql://me:s3cret@/wm?host={tmp_path}&connect_timeout=2"
    for command in (["report", "demo"], ["inspect"]):
        status, _, err = _run([*command, "--db", url])
        assert status == 2
        assert "cannot connect to the PostgreSQL database" in err
        assert "s3cret" not in err


@pytest.mark.postgres
def test_report_and_inspect_read_a_postgres_database(tmp_path: Path):
    base = os.environ.get("WM_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("WM_TEST_POSTGRES_URL is not set (source .ci/postgres.sh)")
    from tests.deploy._pg import Schemas

    schemas = Schemas(base)
    schema = schemas.new()
    try:
        joiner = "&" if "?" in base else "?"
        url = f"{base}{joiner}options=-c%20search_path%3D{schema.name}"
        result = run_demo(out=io.StringIO(), db=url)
        target = tmp_path / "pg.html"
        status, out, err = _run(["report", "demo", "--db", url, "-o", str(target)])
        assert status == 0, err
        assert f"{len(result.archive_ids)} archives" in out
        text = assert_inert(target.read_text(encoding="utf-8")).text
        assert "PostgreSQL" in text
        status, summary, err = _run(["inspect", "--db", url])
        assert status == 0, err
        assert "demo: 0 live messages" in summary
    finally:
        schemas.drop_all()
