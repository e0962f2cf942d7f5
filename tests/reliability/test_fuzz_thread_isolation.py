"""Fuzzing thread isolation in the store: every thread id gets its own namespace.

Archives and WM versions live under ``("wm_langgraph", <label>, kind)``. If two thread ids could
map to one label, one conversation would read (and archive tools expand) another's messages.
Properties: the label is injective, always a valid store namespace label (non-empty, no
``.``), and a record written for one thread is invisible from every other.
"""

from __future__ import annotations

import pytest
from _rel_stats import count, fuzz_settings
from hypothesis import given
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from wm_langgraph.storage.archives import ArchiveStore, thread_label

pytestmark = pytest.mark.fuzz

_tricky = st.sampled_from(
    [
        "a",
        "A",
        "a.b",
        "a/b",
        "../a",
        "~ME",
        "~" + "ME",
        "a b",
        "a\x00",
        "x" * 128,
        "x" * 129,
        "archives",
        "wm_langgraph",
        "東京",
        "🙂",
        " a",
        "a ",
        "-",
        "_",
    ]
)
thread_ids = st.one_of(_tricky, st.text(min_size=1, max_size=140), st.integers().map(str))


@fuzz_settings
@given(first=thread_ids, second=thread_ids)
def test_thread_label_is_injective_and_a_valid_namespace_label(first, second):
    count("isolation: thread labels")
    for label in (thread_label(first), thread_label(second)):
        assert isinstance(label, str)
        assert label
        assert "." not in label
    assert (thread_label(first) == thread_label(second)) == (first == second)


@fuzz_settings
@given(ids=st.lists(thread_ids, min_size=2, max_size=5, unique=True))
def test_a_record_of_one_thread_is_invisible_from_the_others(ids):
    count("isolation: store namespaces")
    archives = ArchiveStore(InMemoryStore())
    for index, thread_id in enumerate(ids):
        archives.put_meta(thread_id, "timeline", {"archives": [f"archive_{index:03d}"]})
    for index, thread_id in enumerate(ids):
        assert archives.timeline(thread_id) == [f"archive_{index:03d}"]
