"""``wm-langgraph demo --careless``: a fault-injecting WM writer, and the guards repairing it.

Expected values come from the recorded session file itself (tool-call paths, failure lines of
tool results), never from copies of the demo's output.
"""

from __future__ import annotations

import io
import json
import re
from importlib import resources

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import ValidationError

from wm_langgraph.cli._careless import CarelessWorkingMemoryModel
from wm_langgraph.cli._session_facts import (
    check_retention,
    retention_lines,
    session_facts,
)
from wm_langgraph.cli.demo import load_demo_session
from wm_langgraph.cli.main import main
from wm_langgraph.document.sections import (
    parse_working_memory,
    render_working_memory,
    section_items,
)
from wm_langgraph.writer.binding import bind_update_tool
from wm_langgraph.writer.generate import generate_create, generate_update
from wm_langgraph.writer.offline.model import OfflineWorkingMemoryModel
from wm_langgraph.writer.prompts import render_update_prompt

GUARDED = ("Session Title", "Files & Context", "Errors & Corrections", "Open Issues")


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _run(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    status = main(argv, out=out, err=io.StringIO())
    return status, out.getvalue()


def _session_records() -> list[dict]:
    text = resources.files("wm_langgraph.cli").joinpath("demo_session.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _recorded_paths() -> list[str]:
    paths: list[str] = []
    for record in _session_records():
        for call in record.get("tool_calls") or []:
            path = json.loads(call["function"]["arguments"]).get("path")
            if path and path not in paths:
                paths.append(path)
    return paths


def _recorded_errors() -> list[str]:
    """The failure message of every failing tool result (pytest summary lines, ``E`` lines)."""
    errors: list[str] = []
    for record in _session_records():
        if record["role"] != "tool":
            continue
        for line in record["content"].splitlines():
            if line.startswith("FAILED ") and " - " in line:
                message = line.split(" - ", 1)[1]
            elif line.startswith("E ") and "Error:" in line:
                message = line[1:].strip()
            else:
                continue
            if message not in errors:
                errors.append(message)
    return errors


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


@pytest.fixture(scope="module")
def careless_run() -> tuple[int, str]:
    return _run(["demo", "--careless", "--brief"])


def _intervened_sections(out: str) -> set[str]:
    sections: set[str] = set()
    for line in out.splitlines():
        match = re.match(r"\s+(?:- |guard interventions: )([A-Z][A-Za-z &]+): ", line)
        if match:
            sections.add(match.group(1))
    return sections


def test_careless_demo_shows_the_guards_repairing_the_damage(careless_run):
    status, out = careless_run
    assert status == 0
    assert "fault-injecting wrapper for demonstration" in out
    assert "careless writer: title rewritten" in out
    assert set(GUARDED) <= _intervened_sections(out)
    assert re.search(r"Files & Context: UPDATE -> (APPEND|KEEP) \(rejected UPDATE", out)
    assert "Errors & Corrections: UPDATE -> " in out
    done = re.search(
        r"done: \d+ commits, \d+ folded into the Working Memory, (\d+) guard interventions", out
    )
    assert done is not None
    assert int(done.group(1)) >= len(GUARDED)


def test_careless_demo_keeps_every_recorded_path_and_error(careless_run):
    _, out = careless_run
    final = out.split("== final Working Memory ==", 1)[1].split("\ndone: ", 1)[0]
    wm = parse_working_memory(final)
    assert wm["Session Title"] == "Add rate limiting to the orders API in src/orders/api.py"
    paths, errors = _recorded_paths(), _recorded_errors()
    assert len(paths) >= 8
    assert len(errors) >= 3
    for path in paths:
        assert path in wm["Files & Context"], path
    for error in errors:
        assert _squash(error) in _squash(wm["Errors & Corrections"]), error
    # The closing summary counts the same ground truth, computed from the final WM.
    assert f"file paths (Files & Context): {len(paths)}/{len(paths)}" in out
    assert f"errors (Errors & Corrections): {len(errors)}/{len(errors)}" in out
    assert "guard interventions by section: Session Title " in out
    todos = {
        m.group(0)
        for r in _session_records()
        if r["role"] in ("user", "assistant")
        for m in re.finditer(r"(?:TODO|Still open):.*?\.(?=\s|$)", r.get("content") or "")
    }
    found = re.search(r"open issues \(Open Issues\): (\d+)/(\d+)", out)
    assert found is not None
    assert int(found.group(2)) == len(todos) >= 2
    # A truncated reply no longer loses an open issue: its unreadable sections get a targeted
    # retry.
    missing = [line for line in out.splitlines() if line.strip().startswith("missing: '")]
    assert len(missing) == len(todos) - int(found.group(1))
    assert not any("truncated JSON" in line for line in missing)


def test_careless_demo_is_deterministic_and_the_seed_matters(careless_run):
    _, first = careless_run
    status, again = _run(["demo", "--careless", "--brief"])
    assert status == 0
    assert again == first
    _, other = _run(["demo", "--careless", "--brief", "--seed", "3"])
    damage = [line for line in first.splitlines() if "careless writer:" in line]
    assert damage != [line for line in other.splitlines() if "careless writer:" in line]


def test_default_demo_is_not_careless():
    status, out = _run(["demo", "--brief"])
    assert status == 0
    assert "careless" not in out
    assert "0 guard interventions" in out


def test_retention_check_reports_what_a_working_memory_lost():
    facts = session_facts(load_demo_session())
    _, out = _run(["demo", "--brief"])
    careful = out.split("== final Working Memory ==", 1)[1].split("\ndone: ", 1)[0]
    full = check_retention(facts, careful)
    assert all(not r.missing for r in full)
    assert "every file path, error and open issue" in retention_lines(full)[-1]

    sections = parse_working_memory(careful)
    gone_path, gone_error = _recorded_paths()[-1], _recorded_errors()[0]
    sections["Files & Context"] = "\n".join(
        line for line in sections["Files & Context"].splitlines() if gone_path not in line
    )
    sections["Errors & Corrections"] = "\n".join(
        line
        for line in sections["Errors & Corrections"].splitlines()
        if _squash(gone_error) not in _squash(line)
    )
    damaged = check_retention(facts, render_working_memory(sections))
    by_kind = {r.kind: r for r in damaged}
    assert gone_path in by_kind["file paths"].missing
    assert gone_error in by_kind["errors"].missing
    verdict = retention_lines(damaged)[-1]
    assert "every file path" not in verdict
    assert "missing: " in verdict


_OLD_WM = render_working_memory(
    {
        "Session Title": "Fix the CSV export in app/export.py",
        "Current State": "Tests are green.",
        "Task & Goals": "- Fix the CSV export",
        "Key Facts & Decisions": "\n".join(
            f"- Decision {n}: keep column {n} as text" for n in range(6)
        ),
        "Files & Context": "\n".join(f"- `app/mod{n}.py` — edited" for n in range(6)),
        "Errors & Corrections": "\n".join(
            f"- ValueError {n} in app/mod{n}.py — fixed" for n in range(4)
        ),
        "Open Issues": "\n".join(f"- TODO: check encoding case {n}" for n in range(4)),
    }
)
_NEW_MESSAGES = (
    "[user]\nAlso handle semicolons in app/csv_dialect.py.\n\n"
    "[assistant]\nDone: edited app/csv_dialect.py. TODO: document the dialect option."
)


def test_careless_model_damages_the_update_call_of_the_careful_model():
    careful = generate_update(
        OfflineWorkingMemoryModel(), working_memory=_OLD_WM, messages_text=_NEW_MESSAGES
    )
    model = CarelessWorkingMemoryModel(seed=1, title_drift_rate=1.0, truncate_every=0)
    careless = generate_update(model, working_memory=_OLD_WM, messages_text=_NEW_MESSAGES)
    assert careful is not None
    assert careless is not None
    assert careless["Session Title"]["op"] == "UPDATE"
    assert careless["Session Title"] != careful.get("Session Title")
    old = parse_working_memory(_OLD_WM)
    for name in ("Files & Context", "Errors & Corrections"):
        assert careless[name]["op"] == "UPDATE"
        kept = section_items(careless[name]["content"])
        assert len([i for i in section_items(old[name]) if i in kept]) < len(
            section_items(old[name])
        )
    assert model.update_calls == 1
    assert model.pop_damage()  # what it broke is recorded for the report
    assert model.pop_damage() == []


def test_careless_model_truncates_json_every_nth_update_call():
    model = CarelessWorkingMemoryModel(truncate_every=1)
    prompt = render_update_prompt(working_memory=_OLD_WM, messages=_NEW_MESSAGES)
    reply = bind_update_tool(model).invoke([HumanMessage(content=prompt)])
    assert isinstance(reply, AIMessage)
    assert reply.tool_calls == []
    (bad,) = reply.invalid_tool_calls
    with pytest.raises(json.JSONDecodeError):
        json.loads(bad["args"])
    assert len(model.cut_off) == 1


def test_careless_model_passes_create_calls_through_and_validates_its_settings():
    careless = generate_create(
        CarelessWorkingMemoryModel(), prior="(none)", messages_text=_NEW_MESSAGES
    )
    careful = generate_create(
        OfflineWorkingMemoryModel(), prior="(none)", messages_text=_NEW_MESSAGES
    )
    assert careless == careful
    with pytest.raises(ValidationError):
        CarelessWorkingMemoryModel(drop_ratio=1.5)
    with pytest.raises(ValidationError):
        CarelessWorkingMemoryModel(truncate_every=-1)
    with pytest.raises(ValidationError):
        CarelessWorkingMemoryModel(temperature=0.2)
