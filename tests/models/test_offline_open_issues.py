"""The offline model's open-issue extraction (labelled lists, "still need …" and promised
follow-ups were missed) and title (an injected header line must never become the title):
open issues phrased "Left: (1) …, (2) …", "Open: …", "still need …", "tomorrow" (EN + ZH)
are found; an injected header line never becomes the title."""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from wm_langgraph import OfflineWorkingMemoryModel
from wm_langgraph.document.sections import parse_working_memory, section_items
from wm_langgraph.messages import render_messages
from wm_langgraph.writer.generate import generate_create

BILLING: list[BaseMessage] = [
    HumanMessage("Help me finish the billing service: invoices, proration and refunds."),
    AIMessage("I added the invoice PDF export and the proration for upgrades."),
    HumanMessage("Nice. What is left?"),
    AIMessage(
        "Left: (1) webhook retries for failed Stripe events, (2) the refund flow for "
        "partial refunds. Open: whether downgrades are prorated or take effect next cycle."
    ),
    HumanMessage(
        "We still need tax rounding for EU invoices. I'll review the dunning emails tomorrow."
    ),
    AIMessage("Noted. I'll wait for your review."),
]
BILLING_ZH: list[BaseMessage] = [
    HumanMessage("帮我完成账单服务：发票、按比例计费和退款。"),
    AIMessage("我已经添加了发票PDF导出和升级的按比例计费。"),
    HumanMessage("还剩什么？"),
    AIMessage(
        "剩下：(1) Stripe 失败事件的 webhook 重试，(2) 部分退款的流程。未决：降级是否按比例计费。"
    ),
    HumanMessage("欧盟发票的税额舍入还没做。催款邮件我明天再看。"),
    AIMessage("好的，等你看完。"),
]


def _open_issues(messages: list[BaseMessage]) -> list[str]:
    wm = generate_create(
        OfflineWorkingMemoryModel(), prior="", messages_text=render_messages(messages)
    )
    return section_items(parse_working_memory(wm)["Open Issues"])


def _has(items: list[str], *words: str) -> bool:
    return any(all(w.casefold() in item.casefold() for w in words) for item in items)


def test_every_open_issue_of_a_billing_session_is_found_in_english():
    items = _open_issues(BILLING)
    assert _has(items, "webhook retries")
    assert _has(items, "refund flow", "partial refunds")
    assert _has(items, "downgrades", "prorated")
    assert _has(items, "tax rounding")
    assert _has(items, "dunning emails")
    assert not _has(items, "invoice PDF export")  # done, not open


def test_every_open_issue_of_a_billing_session_is_found_in_chinese():
    items = _open_issues(BILLING_ZH)
    assert _has(items, "webhook 重试")
    assert _has(items, "部分退款")
    assert _has(items, "降级")
    assert _has(items, "税额舍入")
    assert _has(items, "催款邮件")


def test_an_injected_header_line_is_never_the_title():
    for injected in (
        "### Working Memory",
        "   ## Open Issues",
        "# Working Memory",
        "## Session Title",
    ):
        messages = [
            HumanMessage(f"{injected}\nPlease migrate the orders table to Postgres."),
            AIMessage("Starting with the schema."),
        ]
        wm = generate_create(
            OfflineWorkingMemoryModel(), prior="", messages_text=render_messages(messages)
        )
        title = parse_working_memory(wm)["Session Title"]
        assert "Working Memory" not in title, (injected, title)
        assert "Open Issues" not in title, (injected, title)
        assert "#" not in title
        assert "orders table" in title or "Postgres" in title, title
