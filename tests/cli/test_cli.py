"""The wm-langgraph command line end to end: demo, replay (with bad lines), inspect."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from wm_langgraph.cli.main import main
from wm_langgraph.document.sections import SECTIONS, parse_working_memory, section_items


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def _transcript_lines() -> list[str]:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": json.dumps({"path": "app/billing.py"})},
    }
    bad_args = {"id": "call_x", "function": {"name": "run", "arguments": "{not json"}}
    records: list[object] = [
        {"role": "system", "content": "You are a coding assistant."},
        {"role": "user", "content": "Please add VAT to invoices in app/billing.py."},
        "{this is not json",
        {"role": "assistant", "content": "Reading it.", "tool_calls": [call]},
        {"role": "wizard", "content": "???"},
        {"role": "tool", "tool_call_id": "call_1", "content": "def total(lines): ..."},
        {"role": "tool", "tool_call_id": "call_404", "content": "orphan"},
        {"role": "assistant", "content": "", "tool_calls": [bad_args]},
        {"role": "assistant", "content": "VAT is 19% because the client is in Germany."},
        {"role": "user", "content": "We decided to round VAT per line, never per invoice."},
        {"role": "assistant", "content": "Done. TODO: add a test for zero-rated items."},
    ]
    return [r if isinstance(r, str) else json.dumps(r) for r in records]


def test_demo_plays_the_session_and_ends_with_a_full_working_memory():
    status, out, _ = _run(["demo", "--brief"])
    assert status == 0
    assert out.count("  commit archive_") >= 4
    assert "[########################] turn 13/13" in out
    assert "guard interventions:" in out
    final = out.split("== final Working Memory ==", 1)[1]
    wm = parse_working_memory(final)
    assert wm["Session Title"] == "Add rate limiting to the orders API in src/orders/api.py"
    facts = wm["Key Facts & Decisions"]
    assert "because all replicas must see the same counters" in facts
    assert "Python 3.11" in facts
    assert "per API key" in wm["Errors & Corrections"]
    assert "NameError" in wm["Errors & Corrections"]
    for path in ("src/orders/ratelimit.py", "src/orders/ratelimit.lua", "docs/ratelimit.md"):
        assert path in wm["Files & Context"]
    issues = section_items(wm["Open Issues"])
    assert any(i.startswith("[resolved]") and "wire the middleware" in i for i in issues)
    assert any("load test" in i and not i.startswith("[resolved]") for i in issues)
    saved = [line for line in out.splitlines() if "saved" in line]
    last = saved[-1]
    prompt = int(last.split("prompt ")[1].split(" tokens")[0].replace(",", ""))
    full = int(last.split("full history ")[1].split(" ")[0].replace(",", ""))
    assert prompt < full


def test_demo_shows_the_wm_after_each_commit_unless_brief():
    _, full_out, _ = _run(["demo"])
    _, brief_out, _ = _run(["demo", "--brief"])
    assert full_out.count("Working Memory after archive_") == full_out.count("  commit archive_")
    assert "Working Memory after archive_" not in brief_out


def test_demo_in_sqlite_then_inspect(tmp_path: Path):
    db = str(tmp_path / "demo.sqlite")
    status, out, _ = _run(["demo", "--brief", "--db", db])
    assert status == 0
    assert f"wm-langgraph inspect --db {db} --thread demo" in out
    status, again, _ = _run(["demo", "--brief", "--db", db, "--no-compact"])
    assert status == 0
    assert "thread: demo-2" in again

    status, summary, _ = _run(["inspect", "--db", db])
    assert status == 0
    assert "2 thread(s)" in summary
    assert "demo: 0 live messages" in summary
    assert "demo-2: " in summary

    status, detail, _ = _run(["inspect", "--db", db, "--thread", "demo"])
    assert status == 0
    assert "archive_001" in detail
    assert " done " in detail
    assert "## Key Facts & Decisions" in detail

    status, raw, _ = _run(["inspect", "--db", db, "--thread", "demo-2", "--json"])
    assert status == 0
    report = json.loads(raw)["threads"][0]
    assert report["thread_id"] == "demo-2"
    assert report["live_messages"] > 0  # --no-compact left the newest messages live
    assert all(a["status"] == "done" for a in report["archives"])
    assert report["working_memory"].startswith("# Working Memory")


def test_replay_reports_bad_lines_and_processes_the_valid_ones(tmp_path: Path):
    source = tmp_path / "chat.jsonl"
    source.write_text("\n".join(_transcript_lines()) + "\n", encoding="utf-8")
    target = tmp_path / "wm.md"
    status, out, err = _run(
        ["replay", str(source), "--out", str(target), "--model", "offline", "--budget", "1000"]
    )
    assert status == 1, "bad lines were skipped"
    assert "line 3: invalid JSON" in err
    assert "line 5: unknown role 'wizard'" in err
    assert "line 7: tool result for unknown tool_call_id 'call_404'" in err
    assert "line 8: tool_calls[0].function.arguments is not valid JSON" in err
    assert out == ""
    wm = parse_working_memory(target.read_text(encoding="utf-8"))
    assert set(wm) == set(SECTIONS)
    assert wm["Session Title"] == "Add VAT to invoices in app/billing.py"
    assert "19% because the client is in Germany" in wm["Key Facts & Decisions"]
    assert "never per invoice" in wm["Key Facts & Decisions"]
    assert "app/billing.py" in wm["Files & Context"]
    assert "TODO: add a test for zero-rated items" in wm["Open Issues"]


def test_replay_prints_the_wm_and_persists_with_the_given_settings(tmp_path: Path):
    source = tmp_path / "chat.jsonl"
    good = [line for line in _transcript_lines() if "wizard" not in line]
    good = [line for line in good if not line.startswith("{this")]
    good = [line for line in good if "call_404" not in line and "not json" not in line]
    source.write_text("\n".join(good), encoding="utf-8")
    db = str(tmp_path / "replay.sqlite")
    argv = ["replay", str(source), "--db", db, "--thread", "t-1", "--model", "offline"]
    status, out, err = _run([*argv, "--budget", "500", "--threshold", "0", "--keep", "0"])
    assert status == 0
    assert out.startswith("# Working Memory")
    assert "skipped" not in err
    status, detail, _ = _run(["inspect", "--db", db, "--thread", "t-1"])
    assert status == 0
    assert "archive_002" in detail  # threshold 0: a commit every turn


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["replay", "{missing}"], "cannot read"),
        (["inspect", "--db", "{missing}"], "no such database file"),
    ],
)
def test_unreadable_input_is_a_clear_error(tmp_path: Path, argv, message):
    argv = [a.replace("{missing}", str(tmp_path / "nope")) for a in argv]
    status, _, err = _run(argv)
    assert status == 2
    assert message in err


def test_replay_of_a_file_without_valid_lines_fails(tmp_path: Path):
    source = tmp_path / "bad.jsonl"
    source.write_text("nope\n[]\n", encoding="utf-8")
    status, _, err = _run(["replay", str(source)])
    assert status == 2
    assert "line 1: invalid JSON" in err
    assert "no valid message" in err


def test_bad_option_values_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["replay", "x.jsonl", "--threshold", "1.5"])
    assert exc.value.code == 2
    assert "must be between 0 and 1" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["demo", "replay", "inspect", "report"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert f"usage: wm-langgraph {command}" in capsys.readouterr().out


def test_python_dash_m_help():
    done = subprocess.run(
        [sys.executable, "-m", "wm_langgraph", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for command in ("demo", "replay", "inspect", "report"):
        assert command in done.stdout
    assert "heuristic extractive summariser" in done.stdout


def test_replay_into_the_same_database_starts_a_new_thread_unless_one_is_named(tmp_path: Path):
    source = tmp_path / "chat.jsonl"
    source.write_text(
        "\n".join(
            json.dumps(m)
            for m in (
                {"role": "user", "content": "Please rename the CLI flag --db to --database."},
                {"role": "assistant", "content": "Renamed because the docs use --database."},
            )
        ),
        encoding="utf-8",
    )
    db = str(tmp_path / "r.sqlite")
    base = ["replay", str(source), "--db", db, "--model", "offline"]
    assert _run(base)[0] == 0
    assert _run(base)[0] == 0
    assert _run([*base, "--thread", "replay"])[0] == 0
    report = json.loads(_run(["inspect", "--db", db, "--json"])[1])
    threads = {t["thread_id"]: t for t in report["threads"]}
    assert set(threads) == {"replay", "replay-2"}
    assert len(threads["replay"]["archives"]) == 2  # continued by the explicit --thread
    assert len(threads["replay-2"]["archives"]) == 1


@pytest.mark.filterwarnings("ignore:A test tried to use socket")
def test_demo_model_auto_uses_the_configured_server(monkeypatch: pytest.MonkeyPatch):
    # With OPENAI_BASE_URL set, `demo --model auto` still ran the offline model. Now it
    # writes through ChatOpenAI at that server (here nothing listens: every WM call fails, the
    # demo still finishes, the thread's Phase 2 pauses after the failures, and the exit
    # status and the last lines say that every commit failed).
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "WM_LANGGRAPH_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("WM_LANGGRAPH_MODEL", "qwen2.5-coder-0.5b-instruct")
    status, out, _ = _run(["demo", "--model", "auto", "--timeout", "5", "--brief"])
    assert status == 3
    assert (
        "working-memory model: ChatOpenAI (model qwen2.5-coder-0.5b-instruct at "
        "http://127.0.0.1:9/v1)" in out
    )
    assert "(none: every commit failed" in out
    assert ", 0 folded into the Working Memory" in out
    assert "wm-langgraph demo: every commit failed" in out


def test_timeout_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        main(["demo", "--timeout", "0"])
    assert "positive number of seconds" in capsys.readouterr().err
