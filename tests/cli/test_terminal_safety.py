"""The command line prints stored text (archived messages, Working Memory documents, thread ids)
that came from users, tools and models: no escape or control sequence in it may reach the
terminal (clear the screen, set the window title, write the clipboard, reorder a line)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wm_langgraph.cli._terminal import json_safe, line_safe, terminal_safe
from wm_langgraph.cli.main import main

HOSTILE = (
    "\x1b[2J\x1b[H"  # clear the screen
    "\x1b]0;pwned\x07"  # set the window title
    "\x1b]52;c;cm0gLXJmIC8=\x07"  # write the clipboard
    "\x9b31m\x9d0;title\x9c"  # C1 CSI / OSC / ST
    "\u202etxt.exe\u202c\u2066iso\u2069"  # bidi override and isolate
    "\r\x08\x7f"
)
FORBIDDEN = set("\x1b\x07\x9b\x9d\x9c\u202e\u202c\u2066\u2069\r\x08\x7f")


@pytest.fixture(autouse=True)
def _no_api_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(argv, out=out, err=err)
    return status, out.getvalue(), err.getvalue()


def _db_with_hostile_text(tmp_path: Path) -> str:
    source = tmp_path / "chat.jsonl"
    lines = [
        {"role": "user", "content": f"Please fix app/billing.py {HOSTILE} now."},
        {"role": "assistant", "content": f"Done {HOSTILE}."},
        {"role": "user", "content": "We decided to round VAT per line."},
        {"role": "assistant", "content": "Noted."},
    ]
    source.write_text("\n".join(json.dumps(r) for r in lines), encoding="utf-8")
    db = str(tmp_path / "hostile.sqlite")
    argv = ["replay", str(source), "--db", db, "--thread", "t\x1b]0;x\x07", "--model", "offline"]
    status, out, err = _run([*argv, "--budget", "500", "--threshold", "0", "--keep", "0"])
    assert status == 0, err
    assert not FORBIDDEN & set(out + err)
    return db


def test_inspect_and_replay_never_print_escape_or_control_characters(tmp_path: Path):
    db = _db_with_hostile_text(tmp_path)
    for argv in (["inspect", "--db", db], ["inspect", "--db", db, "--thread", "t\x1b]0;x\x07"]):
        status, out, err = _run(argv)
        assert status == 0, err
        assert not FORBIDDEN & set(out + err), argv
        assert "\\x1b" in out  # shown, visibly


def test_inspect_json_stays_valid_and_decodes_to_the_stored_text(tmp_path: Path):
    db = _db_with_hostile_text(tmp_path)
    status, raw, _ = _run(["inspect", "--db", db, "--json"])
    assert status == 0
    assert not FORBIDDEN & set(raw)
    json.loads(raw)


@given(st.text())
def test_terminal_safe_leaves_no_control_character_but_newline_and_tab(text: str):
    safe = terminal_safe(text)
    assert all(c in "\n\t" or not (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F) for c in safe)
    assert not FORBIDDEN & set(safe)
    if all(c in "\n\t" or 0x20 <= ord(c) < 0x7F for c in text):
        assert safe == text  # plain text is printed as it is


@given(st.text())
def test_json_safe_round_trips(text: str):
    encoded = json_safe(json.dumps({"t": text}, ensure_ascii=False))
    assert json.loads(encoded) == {"t": text}
    assert not FORBIDDEN & set(encoded)


HIDDEN = "t\u200b\u2028" + "".join(chr(0xE0000 + ord(c)) for c in "obey me")
"""A thread id with a zero-width space, a line separator and an instruction in tag characters."""


def test_inspect_shows_hidden_characters_as_their_code_points(tmp_path: Path):
    source = tmp_path / "chat.jsonl"
    lines = [{"role": "user", "content": "Hello."}, {"role": "assistant", "content": "Hi."}]
    source.write_text("\n".join(json.dumps(r) for r in lines), encoding="utf-8")
    db = str(tmp_path / "hidden.sqlite")
    argv = ["replay", str(source), "--db", db, "--thread", HIDDEN, "--model", "offline"]
    status, _, err = _run(argv)
    assert status == 0, err
    for argv in (["inspect", "--db", db], ["inspect", "--db", db, "--thread", HIDDEN]):
        status, out, err = _run(argv)
        assert status == 0, err
        assert "t\\u200b\\u2028\\U000e006f\\U000e0062" in out, out
        assert not any(0xE0000 <= ord(c) <= 0xE007F or c in "\u200b\u2028" for c in out)
    status, raw, _ = _run(["inspect", "--db", db, "--json"])
    assert json.loads(raw)["threads"][0]["thread_id"] == HIDDEN  # JSON keeps the stored id
    assert not any(0xE0000 <= ord(c) <= 0xE007F for c in raw)


@given(st.text())
def test_line_safe_keeps_a_stored_string_on_its_line(text: str):
    safe = line_safe(text)
    assert "\n" not in safe
    assert "\r" not in safe
    assert len(safe.splitlines()) <= 1
