"""WorkingMemoryConfig validation and the meta helpers of the state."""

import dataclasses

import pytest

from wm_langgraph.config import WorkingMemoryConfig
from wm_langgraph.state import clamp_meta, empty_meta, validate_keep_recent_count


def test_defaults_match_the_spec():
    cfg = WorkingMemoryConfig()
    assert cfg.token_budget == 128_000
    assert cfg.commit_token_threshold_ratio == 0.5
    assert cfg.commit_keep_recent_count == 10
    assert cfg.archive_memory_tokens == 8_000
    assert cfg.reserve_tokens == 20_000
    assert cfg.background is True
    assert cfg.max_consecutive_failures == 3
    assert cfg.long_term_memory is False
    assert cfg.guards is True
    assert cfg.commit_threshold_tokens == 64_000


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("commit_keep_recent_count", -1, "commit_keep_recent_count must be between 0 and 10000"),
        ("commit_keep_recent_count", 10_001, "between 0 and 10000, got 10001"),
        ("commit_token_threshold_ratio", 1.5, "commit_token_threshold_ratio must be between"),
        ("commit_token_threshold_ratio", float("nan"), "commit_token_threshold_ratio"),
        ("token_budget", 0, "token_budget must be between"),
        ("max_consecutive_failures", 0, "max_consecutive_failures must be between 1"),
        ("reserve_tokens", -5, "reserve_tokens"),
        ("failure_cooldown_seconds", -1, "failure_cooldown_seconds"),
        ("long_term_namespace", ("a.b",), "long_term_namespace"),
    ],
)
def test_bad_values_name_the_field_and_range(field, value, message):
    with pytest.raises(ValueError, match=message):
        WorkingMemoryConfig(**{field: value})


def test_wrong_types_and_unknown_or_positional_arguments_raise():
    with pytest.raises(TypeError, match="background must be a bool"):
        WorkingMemoryConfig(background="yes")
    with pytest.raises(TypeError, match="guards must be a bool"):
        WorkingMemoryConfig(guards=0)
    with pytest.raises(TypeError, match="token_budget must be an int"):
        WorkingMemoryConfig(token_budget=True)
    with pytest.raises(TypeError):
        WorkingMemoryConfig(token_budgett=1000)
    with pytest.raises(TypeError):
        WorkingMemoryConfig(1000)


def test_config_is_frozen_and_replace_validates():
    cfg = WorkingMemoryConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.token_budget = 5  # type: ignore[misc]
    assert cfg.replace(token_budget=4000).token_budget == 4000
    assert cfg.replace(commit_token_threshold_ratio=0).commit_threshold_tokens == 0
    with pytest.raises(ValueError, match="token_budget"):
        cfg.replace(token_budget=1)
    with pytest.raises(TypeError, match="unknown"):
        cfg.replace(nope=1)


def test_keep_recent_count_validation():
    assert validate_keep_recent_count(0) == 0
    assert validate_keep_recent_count(10_000) == 10_000
    with pytest.raises(ValueError, match="keep_recent_count must be between 0 and 10000, got -1"):
        validate_keep_recent_count(-1)
    with pytest.raises(TypeError):
        validate_keep_recent_count("3")


def test_clamp_meta_clamps_and_never_mutates_its_input():
    raw = {
        "pending_tokens": -40,
        "keep_recent_count": 20_000,
        "window": [["a", -3], ["b", 7], "junk", [None, 1]],
        "last_counted_id": "b",
        "last_counted_index": -9,
        "archives": ["archive_001", 5],
    }
    before = repr(raw)
    meta = clamp_meta(raw, 10)
    assert meta["pending_tokens"] == 0
    assert meta["keep_recent_count"] == 10_000
    assert meta["window"] == [["a", 0], ["b", 7]]
    assert meta["last_counted_index"] == -1
    assert meta["archives"] == ["archive_001"]
    assert repr(raw) == before
    assert clamp_meta(None, 3) == empty_meta(3)
    assert clamp_meta({"keep_recent_count": -2}, 3)["keep_recent_count"] == 0
