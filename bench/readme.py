"""``python -m bench.readme``: the README's table of measured figures, from the results files.

The README opens with what the benchmark measured (LoCoMo coverage at 4k / 8k / 16k for every
system, the cost per call, the real small writer's rows, the generated sessions' survival),
written between two markers by this module from ``bench/LOCOMO.md``, ``bench/RESULTS.md`` and
``bench/REALMODEL.md``; ``tests/bench/test_readme_table.py`` fails when the README's block is
not what the results files give. After regenerating the results, run ``python -m bench.readme``
(``--check`` only says whether the README is current).
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

__all__ = ["BEGIN", "END", "block", "main", "refresh"]

BENCH = Path(__file__).resolve().parent
README = BENCH.parent / "README.md"
BEGIN = "<!-- measured: written by python -m bench.readme from bench/*.md; do not edit -->"
END = "<!-- /measured -->"

BUDGETS = (4_000, 8_000, 16_000)
PEERS = (
    ("trimming", "trimming"),
    ("trimming_retrieval", "trimming + retrieval"),
    ("summarization", "SummarizationMiddleware"),
    ("langmem", "LangMem"),
)
SYSTEMS = (
    ("trimming", "trimming"),
    ("trimming_retrieval", "trimming + retrieval (BM25 over what trimming dropped{slice})"),
    ("summarization", "LangChain `SummarizationMiddleware`"),
    ("langmem", "LangMem `SummarizationNode`"),
    ("wm_langgraph", "**wm_langgraph** (offline writer)"),
)
OURS = "wm_langgraph"


def _rows(text: str, first: str) -> list[list[str]]:
    """The body rows of the first Markdown table whose header's first cell is ``first``."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        cells = _cells(line)
        if cells and cells[0] == first and i + 1 < len(lines) and "---" in lines[i + 1]:
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append(_cells(row))
            return rows
    return []


def _header(text: str, first: str) -> list[str]:
    for line in text.splitlines():
        cells = _cells(line)
        if cells and cells[0] == first:
            return cells
    return []


def _cells(line: str) -> list[str]:
    line = line.strip()
    if not line.startswith("|"):
        return []
    return [c.strip() for c in line.strip("|").split("|")]


def _between(text: str, begin: str, end: str) -> str:
    if begin not in text or end not in text:
        return ""
    return text.split(begin, 1)[1].split(end, 1)[0]


def _label(system: str, budget: int | None) -> str:
    return system if budget is None else f"{system} @ {budget // 1000}k"


def _number(cell: str) -> float:
    return float(cell.replace(",", "").replace("%", "").strip())


class _LoCoMo:
    """The figures of LOCOMO.md the README shows."""

    def __init__(self, text: str) -> None:
        summary = _between(text, "<!-- summary: copied into RESULTS.md -->", "<!-- /summary -->")
        self.covered = {row[0]: row[1] for row in _rows(summary, "system")}
        asked = _between(text, "<!-- asked: copied into RESULTS.md -->", "<!-- /asked -->")
        self.asked = {row[0]: row[1] for row in _rows(asked, "system")}
        match = re.search(r"Conversations: (.*?) \((\d+) scored questions", text)
        self.conversations = len(match.group(1).split(",")) if match else 0
        self.questions = int(match.group(2)) if match else 0
        cost = _between(text, "<!-- cost: copied into RESULTS.md -->", "<!-- /cost -->")
        header = _header(cost, "system")
        self.per_call: dict[str, str] = {}
        if "mean input / call" in header:
            at = header.index("mean input / call")
            self.per_call = {row[0]: row[at] for row in _rows(cost, "system")}
        else:  # results written before the cost table: the fill table's mean fill x usable
            fill = _fill_part(text)
            header = _header(fill, "system")
            at = header.index("mean fill") if "mean fill" in header else None
            for row in _rows(fill, "system") if at is not None else []:
                mean = _number(row[at]) * _number(row[1])
                # ``full`` is shown against every budget: its largest room rounds least
                label = "full" if row[0].startswith("full (vs") else row[0]
                self.per_call[label] = f"≈{mean:,.0f}"
        slices = re.search(r"trimming_retrieval's slice \(.*?\): (.*?); ", text)
        self.slice = f"; slice {slices.group(1)}" if slices else ""
        self.behind = _behind(self.covered)
        self.behind_asked = _behind(self.asked)


def _behind(shares: dict[str, str]) -> list[tuple[int, str, str, str]]:
    """(budget, peer, theirs, ours) wherever a peer's share is above ours."""
    return [
        (budget, peer, shares[_label(peer, budget)], shares[_label(OURS, budget)])
        for budget in BUDGETS
        for peer, _ in PEERS
        if _label(peer, budget) in shares
        and _label(OURS, budget) in shares
        and _number(shares[_label(peer, budget)]) > _number(shares[_label(OURS, budget)])
    ]


def _fill_part(text: str) -> str:
    part = text.split("## Fill", 1)[1] if "## Fill" in text else ""
    return part.split("\n## ", 1)[0].split("\n### ", 1)[0]


def _survival(text: str) -> dict[tuple[str, str, str], str]:
    """(session, summariser, system) -> overall survival after 20 compactions (RESULTS.md)."""
    table = text.split("## Needle survival", 1)[1] if "## Needle survival" in text else ""
    return {(r[0], r[1], r[2]): r[4] for r in _rows(table, "session") if len(r) > 4}


def _real(text: str) -> tuple[str, str, str] | None:
    """(model, compactions, overall survival) of REALMODEL.md's real-model row."""
    for row in _rows(text, "session"):
        if len(row) > 4 and row[1].startswith("real small model"):
            model = re.search(r"\((.*)\)", row[1])
            return (model.group(1) if model else row[1], row[3], row[4])
    return None


def block(bench: Path = BENCH) -> list[str]:
    """The README's block (markers included) from the results files under ``bench``."""
    locomo_text = (bench / "LOCOMO.md").read_text(encoding="utf-8")
    results_text = (bench / "RESULTS.md").read_text(encoding="utf-8")
    real_path = bench / "REALMODEL.md"
    real = _real(real_path.read_text(encoding="utf-8")) if real_path.exists() else None
    locomo = _LoCoMo(locomo_text)
    approximate = any(v.startswith("≈") for v in locomo.per_call.values())
    full_cell = locomo.covered.get("full", "n/a")
    full_asked = locomo.asked.get("full", "n/a")
    rows = [
        "| system | answerable when asked (4k / 8k / 16k) | in the final input (4k / 8k / 16k) "
        "| input tokens per call (4k / 8k / 16k) |",
        "| --- | --- | --- | --- |",
        f"| no memory (the whole history, over every budget) | {full_asked} | {full_cell} | "
        f"{locomo.per_call.get('full', 'n/a')} |",
    ]
    for system, label in SYSTEMS:
        name = label.format(slice=locomo.slice)
        asked = " / ".join(locomo.asked.get(_label(system, b), "n/a") for b in BUDGETS)
        covered = " / ".join(locomo.covered.get(_label(system, b), "n/a") for b in BUDGETS)
        cost = " / ".join(locomo.per_call.get(_label(system, b), "n/a") for b in BUDGETS)
        rows.append(f"| {name} | {asked} | {covered} | {cost} |")
    behind = "; ".join(
        [
            f"when asked at {budget // 1000}k, {dict(PEERS)[peer]} has the answer in its input "
            f"for {theirs} against our {ours}"
            for budget, peer, theirs, ours in locomo.behind_asked
        ]
        + [
            f"at {budget // 1000}k {dict(PEERS)[peer]} covers {theirs} against our {ours} in the "
            "final input"
            for budget, peer, theirs, ours in locomo.behind
        ]
        + [
            f"at {budget // 1000}k our input per call ({mine}) is larger than trimming's ({theirs})"
            for budget in BUDGETS
            if (mine := locomo.per_call.get(_label(OURS, budget)))
            and (theirs := locomo.per_call.get(_label("trimming", budget)))
            and _number(mine.lstrip("≈")) > _number(theirs.lstrip("≈"))
        ]
    )
    survival = _survival(results_text)

    def cell(session: str, writer: str, system: str) -> str:
        return survival.get((session, writer, system), "n/a")

    lines = [
        BEGIN,
        f"**Measured on LoCoMo** ({locomo.conversations} real long conversations, "
        f"{locomo.questions:,} questions), at three token budgets, every summariser driven by "
        "the same offline writing rules: the share of questions whose answer is in the model "
        "input each system builds when the question is the user's turn (*answerable when "
        "asked*), the same share in the agent model's final input after the whole "
        "conversation, and the mean input tokens per agent call, counted alike for every "
        "system ([bench/LOCOMO.md](bench/LOCOMO.md)).",
        "",
        *rows,
        "",
    ]
    if approximate:
        lines += [
            "(≈: the mean fill over every call times the usable room, from LOCOMO.md's fill "
            "table; its cost table, once regenerated, gives the exact figure.)",
            "",
        ]
    lines += [
        (
            f"**Where we are behind:** {behind}."
            if behind
            else "**Where we are behind:** nowhere on these figures among the peers "
            "(no memory at all keeps more, at the cost of an unbounded input)."
        ),
        (
            f"No memory keeps {full_asked} when asked ({full_cell} in the final input) by "
            "sending the whole history every call."
            if locomo.asked
            else f"No memory keeps {full_cell} by sending the whole history every call. (n/a: "
            "LOCOMO.md predates the question-time measure; `python -m bench --locomo DIR` "
            "adds it.)"
        ),
        "",
    ]
    if real is not None:
        model, compactions, overall = real
        lines += [
            f"**A real small writer** ({model}, [bench/REALMODEL.md](bench/REALMODEL.md)): on a "
            f"short coding session ({compactions} compactions) {overall} of the needles stay in "
            "the input. Its LoCoMo figures are not in the committed results.",
            "",
        ]
    lines += [
        "**Generated sessions** ([bench/RESULTS.md](bench/RESULTS.md), 240 turns, scripted "
        "writers): needles still in the input after 20 compactions, coding / chat. With a "
        f"drifting writer (drops 30% of what it carries per rewrite): wm_langgraph "
        f"{cell('coding', 'drifting', 'wm_langgraph')} / {cell('chat', 'drifting', 'wm_langgraph')}"
        f", SummarizationMiddleware {cell('coding', 'drifting', 'langchain')} / "
        f"{cell('chat', 'drifting', 'langchain')}, LangMem "
        f"{cell('coding', 'drifting', 'langmem')} / {cell('chat', 'drifting', 'langmem')}; "
        "with a sloppy one (also misses 20% of new facts): wm_langgraph "
        f"{cell('coding', 'sloppy', 'wm_langgraph')} / {cell('chat', 'sloppy', 'wm_langgraph')}"
        f", SummarizationMiddleware {cell('coding', 'sloppy', 'langchain')} / "
        f"{cell('chat', 'sloppy', 'langchain')}, LangMem {cell('coding', 'sloppy', 'langmem')} "
        f"/ {cell('chat', 'sloppy', 'langmem')}.",
        END,
    ]
    return [_wrapped(line) for line in lines]


def _wrapped(line: str) -> str:
    """A prose line wrapped at 100 characters as the README is (tables and markers as they
    are)."""
    if line.startswith(("|", "<!--")) or len(line) <= 100:
        return line
    return textwrap.fill(line, width=100, break_long_words=False, break_on_hyphens=False)


def refresh(readme: Path = README, bench: Path = BENCH) -> bool:
    """Write the block into ``readme`` between the markers; True when it changed.

    Raises:
        ValueError: The README has no markers.
    """
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise ValueError(f"{readme} has no {BEGIN!r} … {END!r} block")
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    new = before + "\n".join(block(bench)) + after
    if new == text:
        return False
    readme.write_text(new, encoding="utf-8")
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(prog="python -m bench.readme", description=__doc__)
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when stale")
    args = parser.parse_args(argv)
    if args.check:
        text = README.read_text(encoding="utf-8")
        current = "\n".join(block()) in text
        print("README.md is current" if current else "README.md is stale: python -m bench.readme")
        return 0 if current else 1
    changed = refresh()
    print("README.md updated" if changed else "README.md already current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
