"""LoCoMo conversations: read the public dataset, or invent a small one of the same shape.

Two layouts of the dataset are read (both from snap-research/locomo, never committed here):

* ``locomo10.json``: a list of samples ``{"sample_id": "conv-26", "conversation": {...},
  "qa": [...]}``;
* ``data/locomo10.zip`` as the repository holds it today: one file per conversation
  (``.../locomo10_v2/26.json``), each a flat object with the same fields (``speaker_a``,
  ``session_N``, ``session_N_date_time``, ``qa``, …); its id is ``conv-<file stem>``.

``--locomo DIR`` accepts a directory holding either file (also under ``data/``), the zip or the
JSON file itself, or a directory of ``<id>.json`` files.

How a conversation is replayed (see :class:`Exchange`): speaker A's messages are the user's,
speaker B's are the agent's replies; consecutive messages of one speaker (also across a session
boundary) are one turn. Every message of B that comes before A's first message is passed as an
``AIMessage`` in the first input, so no text is invented. The first message of every session
starts with its date-time in brackets (``[1:56 pm on 8 May, 2023] Hey Mel! …``) and a message
with an image ends with its BLIP caption (`` [image: a photo of …]``); the messages of one turn
are joined by newlines.
"""

from __future__ import annotations

import hashlib
import io
import json
import random
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "Conversation",
    "Exchange",
    "Line",
    "Question",
    "load_locomo",
    "parse_sample",
    "synthetic_sample",
]

CATEGORIES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo's category numbers as its own evaluation code treats them (task_eval/evaluation.py
and evaluate_gpts.py: 1 is scored with a multi-answer F1, 2 gets "use the DATE of the
CONVERSATION", 3's answers are split on ';', 5 expects "not mentioned"); 5 is not scored."""

_SESSION_RE = re.compile(r"^session_(\d+)$")
_DIA_RE = re.compile(r"D(\d+):(\d+)")


@dataclass(frozen=True)
class Line:
    """One dialog message of the dataset."""

    dia_id: str
    speaker: str
    user: bool
    session: int
    position: int
    text: str
    shown: str


@dataclass(frozen=True)
class Exchange:
    """One call of the agent: the user's turn, then the agent's scripted reply.

    ``opening`` holds the agent's messages that come before the user's first one (the first
    exchange only); ``reply`` is empty when the conversation ends on the user's turn.
    """

    index: int
    opening: tuple[Line, ...]
    user: tuple[Line, ...]
    reply: tuple[Line, ...]

    @staticmethod
    def text(lines: tuple[Line, ...]) -> str:
        """What the lines look like as one message."""
        return "\n".join(line.shown for line in lines)


@dataclass(frozen=True)
class Question:
    """One scored question (categories 1-4)."""

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    position: int | None
    """Position (message index in the conversation) of the oldest evidence message found."""


@dataclass(frozen=True)
class Conversation:
    """A parsed conversation ready to replay."""

    conv_id: str
    speaker_a: str
    speaker_b: str
    lines: tuple[Line, ...]
    exchanges: tuple[Exchange, ...]
    questions: tuple[Question, ...]
    adversarial: int

    def age_of(self, question: Question) -> str:
        """``first`` / ``middle`` / ``last`` third of the conversation by message index of the
        oldest evidence message, or ``unknown`` when no evidence id resolves."""
        if question.position is None:
            return "unknown"
        third = question.position * 3 // len(self.lines)
        return ("first", "middle", "last")[min(third, 2)]

    def evidence_texts(self, question: Question) -> list[str]:
        """The raw text of every evidence message that resolves."""
        by_id = {line.dia_id: line.text for line in self.lines}
        return [by_id[e] for e in question.evidence if e in by_id]


def _render(turn: dict[str, Any], date_time: str | None) -> str:
    text = str(turn.get("text") or "").strip()
    if date_time:
        text = f"[{date_time}] {text}"
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [image: {str(caption).strip()}]"
    return text


def _norm_id(raw: str) -> str | None:
    match = _DIA_RE.search(raw)
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def parse_sample(sample: dict[str, Any], conv_id: str | None = None) -> Conversation:
    """A conversation from one sample of either layout (see the module docstring)."""
    conv = sample.get("conversation", sample)
    cid = str(sample.get("sample_id") or conv_id or "conv")
    a, b = str(conv["speaker_a"]), str(conv["speaker_b"])
    sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION_RE.match(k)) and conv[k])
    lines: list[Line] = []
    for n in sessions:
        date_time = conv.get(f"session_{n}_date_time")
        for i, turn in enumerate(conv[f"session_{n}"]):
            dia = _norm_id(str(turn.get("dia_id", ""))) or f"D{n}:{i + 1}"
            shown = _render(turn, str(date_time) if (i == 0 and date_time) else None)
            lines.append(
                Line(
                    dia_id=dia,
                    speaker=str(turn.get("speaker", "")),
                    user=str(turn.get("speaker", "")) == a,
                    session=n,
                    position=len(lines),
                    text=str(turn.get("text") or "").strip(),
                    shown=shown,
                )
            )
    # group consecutive messages of one speaker into turns
    groups: list[list[Line]] = []
    for line in lines:
        if groups and groups[-1][0].user == line.user:
            groups[-1].append(line)
        else:
            groups.append([line])
    opening: tuple[Line, ...] = ()
    if groups and not groups[0][0].user:
        opening = tuple(groups.pop(0))
    exchanges: list[Exchange] = []
    i = 0
    while i < len(groups):
        user = tuple(groups[i])
        reply = tuple(groups[i + 1]) if i + 1 < len(groups) else ()
        exchanges.append(Exchange(len(exchanges), opening if not exchanges else (), user, reply))
        i += 2
    position = {line.dia_id: line.position for line in lines}
    questions: list[Question] = []
    adversarial = 0
    for qa in sample.get("qa", []):
        category = int(qa.get("category", 0))
        if category == 5 or "answer" not in qa:
            adversarial += 1
            continue
        ids: list[str] = []
        for raw in qa.get("evidence") or []:
            ids += [f"D{int(s)}:{int(t)}" for s, t in _DIA_RE.findall(str(raw))]
        found = [position[e] for e in ids if e in position]
        questions.append(
            Question(
                question=str(qa["question"]),
                answer=str(qa["answer"]),
                category=category,
                evidence=tuple(ids),
                position=min(found) if found else None,
            )
        )
    return Conversation(cid, a, b, tuple(lines), tuple(exchanges), tuple(questions), adversarial)


def _samples_from_json(raw: bytes, stem: str) -> list[tuple[dict[str, Any], str]]:
    data = json.loads(raw)
    if isinstance(data, list):
        return [(s, str(s.get("sample_id") or f"conv-{i}")) for i, s in enumerate(data)]
    return [(data, str(data.get("sample_id") or f"conv-{stem}"))]


def _numeric(cid: str) -> tuple[int, str]:
    digits = re.sub(r"\D", "", cid)
    return (int(digits) if digits else 0, cid)


def _from_zip(path: Path) -> list[tuple[dict[str, Any], str]]:
    out: list[tuple[dict[str, Any], str]] = []
    with zipfile.ZipFile(path) as archive:
        names = [n for n in archive.namelist() if n.endswith(".json")]
        whole = [n for n in names if Path(n).name == "locomo10.json"]
        for name in whole or names:
            out += _samples_from_json(archive.read(name), Path(name).stem)
    return out


def _locate(path: Path) -> Path:
    if path.is_file():
        return path
    for candidate in (
        path / "locomo10.json",
        path / "data" / "locomo10.json",
        path / "locomo10.zip",
        path / "data" / "locomo10.zip",
    ):
        if candidate.exists():
            return candidate
    return path


def load_locomo(path: Path) -> tuple[list[Conversation], str, str]:
    """Every conversation under ``path``, sorted by id number.

    Returns:
        (conversations, the file read (relative name), its sha256 — for a directory of JSON
        files, the sha256 of their sorted names and contents).

    Raises:
        FileNotFoundError: Nothing LoCoMo-shaped is there.
    """
    source = _locate(Path(path))
    digest = hashlib.sha256()
    if source.is_file() and source.suffix == ".zip":
        digest.update(source.read_bytes())
        samples = _from_zip(source)
    elif source.is_file():
        raw = source.read_bytes()
        digest.update(raw)
        samples = _samples_from_json(raw, source.stem)
    elif source.is_dir():
        files = sorted(source.rglob("*.json"))
        samples = []
        for file in files:
            raw = file.read_bytes()
            digest.update(file.name.encode() + b"\0" + raw)
            samples += _samples_from_json(raw, file.stem)
    else:
        samples = []
    if not samples:
        raise FileNotFoundError(
            f"no LoCoMo data under {path}: expected locomo10.json or locomo10.zip "
            "(snap-research/locomo, data/)"
        )
    conversations = [parse_sample(s, cid) for s, cid in samples]
    conversations.sort(key=lambda c: _numeric(c.conv_id))
    return conversations, source.name, digest.hexdigest()


def select(conversations: list[Conversation], wanted: list[str] | None) -> list[Conversation]:
    """Conversations by id (``26`` or ``conv-26``); all when ``wanted`` is empty."""
    if not wanted:
        return conversations
    keys = {w if w.startswith("conv") else f"conv-{w}" for w in wanted}
    chosen = [c for c in conversations if c.conv_id in keys]
    missing = keys - {c.conv_id for c in chosen}
    if missing:
        raise ValueError(f"conversations not in the dataset: {sorted(missing)}")
    return chosen


# ------------------------------------------------------------------------------------------
# a synthetic conversation of the same shape (invented text; nothing from the dataset)

_FILLER_A = (
    "Work has been busy, lots of meetings about the new {thing} this week.",
    "I tried a new recipe with {food} last night, it turned out fine I think.",
    "The weather here keeps changing, sunny in the morning and rain by noon.",
    "I have been reading a bit before bed, it helps me switch off.",
    "My neighbour is renovating again, so the mornings are noisy.",
    "I walked along the river after work, it was quiet and calm.",
)
_FILLER_B = (
    "That sounds like a lot, I hope you get a calmer week soon.",
    "Nice, I like trying new things in the kitchen too, even when they fail.",
    "Same here, I never know what to wear these days.",
    "Reading before bed is a good habit, I should do it more.",
    "Noise like that would drive me mad, hang in there.",
    "Walks like that are the best way to end a day.",
)
_THINGS = ("dashboard", "budget plan", "office layout", "training course")
_FOODS = ("lentils", "aubergine", "chickpeas", "mushrooms")


def synthetic_sample(seed: int = 0, sessions: int = 6, filler: int = 12) -> dict[str, Any]:
    """A small LoCoMo-shaped sample (``locomo10.json`` layout) with invented text.

    Avery (speaker A) and Bram (speaker B) meet over ``sessions`` dated sessions; facts are
    planted in the first, a middle and the last session, between ``filler`` pairs of
    chit-chat each; five scored questions (one per category 1-4, one more single-hop) and one
    adversarial question refer to them by dialog id. Every answer's words are in the text.
    """
    rng = random.Random(seed)
    a, b = "Avery", "Bram"
    dates = [
        "2:10 pm on 8 March, 2024",
        "6:45 pm on 19 March, 2024",
        "11:20 am on 2 April, 2024",
        "8:05 pm on 17 April, 2024",
        "4:30 pm on 6 May, 2024",
        "9:15 am on 28 May, 2024",
    ]
    planted: dict[int, list[tuple[str, str]]] = {
        1: [
            (a, "I adopted a greyhound yesterday, we named him Pixel."),
            (b, "Congratulations! My sister just moved to Tromso, so I will visit her soon."),
            (a, "I also started cello lessons, the teacher is very patient."),
        ],
        max(2, sessions // 2): [
            (b, "I came back from Tromso, the northern lights were unreal."),
            (a, "Pixel already knows how to sit, and the cello is getting easier."),
        ],
        sessions: [
            (b, "Next month I am flying to Porto for a food festival."),
            (a, "I will play the cello at a small chamber concert in June, likely my first."),
        ],
    }
    conv: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    dia: dict[str, str] = {}
    for n in range(1, sessions + 1):
        turns: list[dict[str, Any]] = []
        pairs = filler
        facts = planted.get(n, [])
        speaker_first = b if n % 3 == 0 else a  # some sessions open with B, as in the dataset
        for k in range(pairs):
            if k == 1:
                for who, text in facts:
                    turns.append({"speaker": who, "text": text})
            first = rng.choice(_FILLER_A).format(thing=rng.choice(_THINGS), food=rng.choice(_FOODS))
            second = rng.choice(_FILLER_B)
            other = b if speaker_first == a else a
            turns.append({"speaker": speaker_first, "text": first})
            turns.append({"speaker": other, "text": second})
        if n == 2:
            turns[3]["blip_caption"] = "a photo of a grey dog lying on a blue sofa"
            turns[3]["img_url"] = ["https://example.invalid/dog.jpg"]
        for i, turn in enumerate(turns):
            turn["dia_id"] = f"D{n}:{i + 1}"
            dia.setdefault(turn["text"], turn["dia_id"])
        conv[f"session_{n}_date_time"] = dates[(n - 1) % len(dates)]
        conv[f"session_{n}"] = turns

    def where(text: str) -> str:
        return dia[text]

    s1 = planted[1]
    mid = planted[max(2, sessions // 2)]
    last = planted[sessions]
    qa = [
        {
            "question": "What is the name of Avery's dog?",
            "answer": "Pixel",
            "evidence": [where(s1[0][1])],
            "category": 4,
        },
        {
            "question": "When did Avery adopt the greyhound?",
            "answer": "March 2024",
            "evidence": [where(s1[0][1])],
            "category": 2,
        },
        {
            "question": "Which cities does Bram travel to?",
            "answer": "Tromso, Porto",
            "evidence": [where(mid[0][1]), where(last[0][1])],
            "category": 1,
        },
        {
            "question": "Would Avery enjoy a chamber concert?",
            "answer": "Likely, she plays the cello",
            "evidence": [where(s1[2][1]), where(last[1][1])],
            "category": 3,
        },
        {
            "question": "What event is Bram going to in Porto?",
            "answer": "A food festival",
            "evidence": [where(last[0][1])],
            "category": 4,
        },
        {
            "question": "What is the name of Bram's dog?",
            "evidence": [where(s1[0][1])],
            "category": 5,
            "adversarial_answer": "Pixel",
        },
    ]
    return {"sample_id": "conv-synthetic", "conversation": conv, "qa": qa}


def write_synthetic(directory: Path, seed: int = 0) -> Path:
    """Write :func:`synthetic_sample` as ``locomo10.json`` (a one-sample list) into
    ``directory``; returns the file."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "locomo10.json"
    buffer = io.StringIO()
    json.dump([synthetic_sample(seed)], buffer, indent=1)
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path
