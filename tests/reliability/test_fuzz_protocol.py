"""Fuzzing parse_update_arguments: anything a provider could send as tool arguments.

Properties (behaviour §3.3, §5.4 fallback chain):
- never raises, whatever the type or content (random text, JSON of any shape, truncated or
  curly-quoted JSON, raw newlines, header-like lines), and returns only canonical ops for
  known sections;
- its result always merges into a seven-section document;
- a well-formed call is read exactly, the same through every accepted wrapping (dict, JSON
  string, missing ``sections`` wrapper, ``{"raw": ...}``);
- a truncated call keeps only what was written completely (behaviour §3.4, owner decision): a cut
  UPDATE body is a prefix of the whole body, APPEND items a prefix of the whole list, and the
  reading names the cut section.
"""

from __future__ import annotations

import json

import pytest
from _rel_checks import assert_seven_sections
from _rel_stats import count, fuzz_settings
from _rel_strategies import json_values, old_document, raw_arguments, valid_ops
from hypothesis import given
from hypothesis import strategies as st

from wm_langgraph.document import SECTIONS, merge_working_memory, parse_update_arguments
from wm_langgraph.document.protocol import read_update_arguments

pytestmark = pytest.mark.fuzz


def _assert_canonical_ops(parsed: object) -> None:
    assert isinstance(parsed, dict)
    assert set(parsed) <= set(SECTIONS)
    assert list(parsed) == [name for name in SECTIONS if name in parsed]  # section order
    for op in parsed.values():
        assert isinstance(op, dict)
        assert op["op"] in {"KEEP", "UPDATE", "APPEND"}
        if op["op"] == "UPDATE":
            assert isinstance(op["content"], str)
        if op["op"] == "APPEND":
            assert isinstance(op["items"], list)
            assert all(isinstance(item, str) and item.strip() for item in op["items"])


@fuzz_settings
@given(raw=raw_arguments)
def test_never_raises_and_returns_canonical_ops(raw):
    count("parse: canonical ops")
    _assert_canonical_ops(parse_update_arguments(raw))


@fuzz_settings
@given(raw=st.one_of(st.binary(max_size=200), st.integers(), json_values.map(lambda v: [v])))
def test_wrong_types_do_not_raise(raw):
    count("parse: wrong types")
    _assert_canonical_ops(parse_update_arguments(raw))


@fuzz_settings
@given(old=old_document, raw=raw_arguments)
def test_parsed_arguments_always_merge_into_seven_sections(old, raw):
    count("parse+merge: seven sections")
    result = merge_working_memory(old, parse_update_arguments(raw))
    assert_seven_sections(result.text)


@fuzz_settings
@given(ops=valid_ops, ascii_only=st.booleans())
def test_well_formed_calls_are_read_exactly_through_every_wrapping(ops, ascii_only):
    count("parse: exact reading")
    as_dict = parse_update_arguments({"sections": ops})
    text = json.dumps({"sections": ops}, ensure_ascii=ascii_only)
    assert parse_update_arguments(text) == as_dict
    assert parse_update_arguments({"raw": text}) == as_dict
    assert parse_update_arguments(json.dumps(ops, ensure_ascii=ascii_only)) == as_dict
    for name, op in ops.items():
        if op["op"] == "UPDATE":
            assert as_dict[name] == op  # the body exactly as sent
        elif op["op"] == "KEEP":
            assert as_dict[name] == {"op": "KEEP"}
        elif name in as_dict:
            assert as_dict[name]["op"] == "APPEND"
            assert all(any(got in item for item in op["items"]) for got in as_dict[name]["items"])


@fuzz_settings
@given(ops=valid_ops, cut=st.floats(0, 1))
def test_truncated_calls_keep_only_what_was_written_completely(ops, cut):
    count("parse: truncation")
    text = json.dumps({"sections": ops}, ensure_ascii=False)
    truncated = text[: int(len(text) * cut)]
    reading = read_update_arguments(truncated)
    parsed = reading.ops
    _assert_canonical_ops(parsed)
    assert parsed == parse_update_arguments(truncated)
    full = parse_update_arguments(text)
    for name, op in parsed.items():
        if op["op"] == "UPDATE":
            assert name in full
            if op != full[name]:
                assert reading.cut == name, f"{name}: a cut-off body was taken as whole"
                assert full[name]["content"].startswith(op["content"]), name
        if op["op"] == "APPEND" and full.get(name, {}).get("op") == "APPEND":
            # A cut-off reading keeps complete items in order, never an invented one; a repeated
            # item (a model looping to its output limit) may be kept once: a subsequence.
            got, whole = op["items"], iter(full[name]["items"])
            assert all(item in whole for item in got), f"{name}: APPEND items out of order"

    if len(truncated) < len(text):
        assert not reading.complete or parsed == full
        assert set(reading.unreadable) | set(parsed) >= set(full)  # nothing silently KEEP
