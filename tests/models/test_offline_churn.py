"""The offline model consolidates Key Facts the way the Key Facts guard judges it.

Before: its consolidations reworded, labelled ("Instead: …", "Fyi: …") and merged away
near-duplicates that the guard then saw as lost facts and restored, in 337 of the first 400
commits of a 128k coding session (up to 16 bullets each time), and Key Facts grew to 1,735
tokens over 1,000 commits. These tests pin the mechanisms one by one.
"""

from __future__ import annotations

import re

from wm_langgraph.document.guards.key_facts import held_by, settle_vanished_facts
from wm_langgraph.document.sections import SECTIONS, render_working_memory, section_items
from wm_langgraph.document.text import extract_anchors
from wm_langgraph.writer.offline._consolidate import consolidate_facts
from wm_langgraph.writer.offline._extract import extract_findings
from wm_langgraph.writer.offline._plan import plan_ops
from wm_langgraph.writer.offline._transcript import Turn

FACTS = [
    "Important rule for this repo: do not add runtime dependencies without asking first",
    "User: Important rule for this repo: do not add runtime dependencies without asking first",
    "Decision: we use SQLite instead of Postgres because the deployment is single-node",
    "FYI for the cache TTL: we use 3406 seconds cache TTL",
    "[restored] Understood: 6662 seconds cache TTL from now on",
    "Decision: we use Redis streams instead of Kafka because ops already runs Redis",
    "User: FYI for the p95 latency budget: we use 135 ms p95 latency budget",
]

OLD_COUNT = 3
"""A small old section: the consolidation must group the seven items into three bullets."""


def _restored_by_guard(old_items: list[str], new_body: str) -> tuple[str, ...]:
    document = render_working_memory(
        {**dict.fromkeys(SECTIONS, ""), "Key Facts & Decisions": new_body}
    )
    return settle_vanished_facts(old_items, new_body, document).restored


def test_a_consolidation_leaves_the_guard_nothing_to_restore() -> None:
    body = consolidate_facts(FACTS, OLD_COUNT, max_tokens=1_500)
    assert _restored_by_guard(FACTS, body) == ()


def test_of_two_twins_the_fuller_wording_stays() -> None:
    body = consolidate_facts(FACTS, OLD_COUNT, max_tokens=1_500)
    assert "User: Important rule for this repo: do not add runtime dependencies" in body
    assert body.count("do not add runtime dependencies") == 1


def test_a_consolidation_invents_no_topic_labels_and_drops_restore_markers() -> None:
    body = consolidate_facts(FACTS, OLD_COUNT, max_tokens=1_500)
    assert "[restored]" not in body
    said = [item.removeprefix("[restored] ") for item in FACTS]
    starts = {m.group(1) for item in said if (m := re.match(r"^([A-Z][\w-]+): ", item))}
    for item in section_items(body):
        for part in item.split("; "):
            label = re.match(r"^([A-Z][\w-]+): ", part)
            assert label is None or label.group(1) in starts, part
    # (a capitalised label would read as an anchor to the guards)
    assert extract_anchors(body) <= extract_anchors("\n".join(FACTS))


def test_held_by_is_the_guard_s_test_of_an_existing_clause() -> None:
    errors = "- That is wrong: only 429 and 5xx responses are retried. → Sorry, corrected."
    assert held_by("That is wrong: only 429 and 5xx responses are retried", errors)
    assert not held_by("User: That is wrong: only 429 and 5xx responses are retried", errors)
    assert not held_by("Only 429 responses are retried on Fridays", errors)
    assert not held_by("a fact without any anchor at all", "a fact without any anchor at all")


def _turns(*pairs: tuple[str, str]) -> list[Turn]:
    return [Turn(role=role, text=text) for role, text in pairs]


def test_a_todo_said_as_not_now_is_not_filed_as_a_key_fact() -> None:
    found = extract_findings(
        _turns(
            (
                "user",
                "Not now, but we must add a dead-letter queue for failed webhooks before release.",
            )
        )
    )
    assert not any("dead-letter" in f for f in found.facts)


def test_a_fact_quoting_a_recorded_error_is_not_filed_twice() -> None:
    error = "TimeoutError: scheduler did not answer within 836 seconds"  # a number: a fact
    old = dict.fromkeys(SECTIONS, "")
    old["Errors & Corrections"] = f"- {error} — fixed in `web/src/api/scheduler.ts` (passed)"

    def filed(sentence: str) -> str:
        ops = plan_ops(old, extract_findings(_turns(("assistant", sentence))))
        return str(ops["Key Facts & Decisions"]) + str(ops["Errors & Corrections"])

    assert error not in filed(f"Fixed: the failure was `{error}`.")
    # a fix with a reason of its own is kept, once (issue 46: a fix is filed with the errors)
    kept = filed(f"Fixed: the failure was `{error}` because the Redis pool was stale.")
    assert kept.count("the Redis pool was stale") == 1


def test_only_a_fact_that_says_nothing_beyond_the_recorded_error_is_left_out() -> None:
    from wm_langgraph.writer.offline._plan import _restates_error

    errors = "- KeyError: 'tenant_392' raised in email_digest.load() — fixed in `scripts/d.sh`"
    quoted = "`KeyError: 'tenant_392' raised in email_digest.load()`"
    assert _restates_error(f"Fixed: the failure was {quoted}", errors)
    # its own anchors (a version, a name): a fact of its own
    assert not _restates_error(f"The failure {quoted} came from Redis 7.2 evictions", errors)
    # a quoted path the error line names is not an error
    assert not _restates_error("We keep `scripts/d.sh` as the digest entry point", errors)
