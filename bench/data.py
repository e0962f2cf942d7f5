"""Seeded generator of long sessions with typed needles and ground truth.

Two kinds of session:

* ``coding`` — a coding agent working on a billing service: file reads and edits through tool
  calls, failing tests with exact error strings and their fixes, user corrections, decisions with
  reasons, constraints ("never push directly to main"), numbers, TODOs, and facts that are later
  corrected.
* ``chat`` — a two-person chat over many dated sessions (LoCoMo-style): people, places, dates,
  numbers, preferences, decisions, plans, and facts that change (a move, a new job).

Every session carries:

* ``items`` — what a careful note-taker would write down, each with the section of the Working
  Memory it belongs to, the bullet text, and the verbatim ``source`` text that reveals it in the
  messages. The scripted summarisers (bench/models.py) read this catalogue: an item is "seen"
  when its source text occurs in the messages a summariser is asked to fold in.
* ``needles`` — the ground truth the benchmark checks in the model's assembled context: a typed
  ``check`` string that must be present; for updated facts also a ``stale`` string that must not
  stay current; ``retired`` marks needles that a later turn made obsolete.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

from bench._vocab import (
    ATTRIBUTES,
    CHAT_DECISIONS,
    CHAT_NUMBERS,
    CHAT_TODOS,
    CITIES,
    CONSTRAINTS,
    CORRECTIONS,
    DECISIONS,
    DIRS,
    ERROR_TEMPLATES,
    EVENTS,
    FEATURES,
    FILLER,
    FIXES,
    JOBS,
    NAMES,
    NOISE,
    NUMBERS,
    PEOPLE,
    PREFS,
    RELATIONS,
    STEMS,
    TODOS,
)

__all__ = [
    "NEEDLE_KINDS",
    "SHAPES",
    "Item",
    "Needle",
    "Session",
    "Shape",
    "ToolStep",
    "Turn",
    "generate_chat_session",
    "generate_coding_session",
    "generate_session",
    "generate_shaped_session",
]

SessionKind = Literal["coding", "chat"]

NEEDLE_KINDS: tuple[str, ...] = (
    "path",
    "error",
    "number",
    "constraint",
    "decision",
    "todo",
    "updated",
    "correction",
    "person",
    "place",
    "date",
)

TITLE = "Session Title"
STATE = "Current State"
GOALS = "Task & Goals"
FACTS = "Key Facts & Decisions"
FILES = "Files & Context"
ERRORS = "Errors & Corrections"
OPEN = "Open Issues"


@dataclass(frozen=True)
class Needle:
    """A fact the assembled context must still carry.

    Attributes:
        id: Unique id within the session.
        kind: One of NEEDLE_KINDS.
        check: Text that must be present (case-insensitive) in the model's context.
        turn: Index of the turn that introduces it.
        stale: For updated facts: the old value, which must not stay current in the summary.
        retired: Turn from which the needle is no longer expected (superseded or resolved).
    """

    id: str
    kind: str
    check: str
    turn: int
    stale: str | None = None
    retired: int | None = None


@dataclass(frozen=True)
class Item:
    """What a note-taker writes down, and where it comes from.

    Attributes:
        id: Unique id within the session.
        section: The Working Memory section it belongs to.
        text: The bullet as a summariser writes it.
        source: Verbatim text in the messages that reveals it.
        replaces: Id of an item this one supersedes (a corrected fact, a resolved TODO).
        superseded_note: For corrected facts, the line a careful note-taker records under
            Errors & Corrections (the old value, marked superseded).
    """

    id: str
    section: str
    text: str
    source: str
    replaces: str | None = None
    superseded_note: str | None = None


@dataclass(frozen=True)
class ToolStep:
    """One tool call and the result the (scripted) tool returns."""

    call_id: str
    name: str
    args: dict[str, str]
    result: str


@dataclass(frozen=True)
class Turn:
    """One user turn: the request, the agent's tool-calling steps, the final answer."""

    index: int
    user: str
    steps: tuple[tuple[ToolStep, ...], ...]
    answer: str
    items: tuple[Item, ...]


@dataclass
class Session:
    """A generated session with its catalogue and ground truth."""

    kind: str
    seed: int
    title: str
    turns: list[Turn] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    needles: list[Needle] = field(default_factory=list)

    def needles_due(self, turn: int) -> list[Needle]:
        """Needles introduced at or before ``turn`` and not retired by then."""
        return [
            n for n in self.needles if n.turn <= turn and (n.retired is None or n.retired > turn)
        ]


# --------------------------------------------------------------------------------------------
# shared helpers


class _Builder:
    def __init__(self, kind: str, seed: int, title: str) -> None:
        self.rng = random.Random(seed)
        self.session = Session(kind=kind, seed=seed, title=title)
        self._ids = 0
        self._calls = 0

    def new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}{self._ids:04d}"

    def call(self, name: str, args: dict[str, str], result: str) -> ToolStep:
        self._calls += 1
        return ToolStep(f"call_{self.session.seed}_{self._calls:05d}", name, args, result)

    def item(
        self,
        section: str,
        text: str,
        source: str,
        *,
        replaces: str | None = None,
        superseded_note: str | None = None,
    ) -> Item:
        it = Item(self.new_id("i"), section, text, source, replaces, superseded_note)
        self.session.items.append(it)
        return it

    def needle(self, kind: str, check: str, turn: int, stale: str | None = None) -> Needle:
        nd = Needle(self.new_id("n"), kind, check, turn, stale)
        self.session.needles.append(nd)
        return nd

    def retire(self, needle: Needle, turn: int) -> None:
        needles = self.session.needles
        idx = needles.index(needle)
        needles[idx] = Needle(
            needle.id, needle.kind, needle.check, needle.turn, needle.stale, retired=turn
        )


# --------------------------------------------------------------------------------------------
# coding sessions


def _code_body(rng: random.Random, stem: str, lines: int) -> str:
    words = ("total", "items", "row", "tenant", "amount", "cursor", "batch", "payload", "limit")
    out = [f'"""{stem.replace("_", " ")} module."""', "", "import logging", ""]
    for i in range(lines):
        w1, w2 = rng.choice(words), rng.choice(words)
        kind = i % 6
        if kind == 0:
            out.append(f"def {stem}_{w1}_{i}({w2}, *, strict=False):")
        elif kind == 1:
            out.append(f"    {w1} = {w2} or []  # normalise input")
        elif kind == 2:
            out.append(f"    for {w2}_item in {w1}:")
        elif kind == 3:
            out.append(f"        logging.debug('{w1} step %s', {w2}_item)")
        elif kind == 4:
            out.append(f"    return {w1}")
        else:
            out.append("")
    return "\n".join(out)


_EPISODE_WEIGHTS: tuple[tuple[str, float], ...] = (
    ("explore", 0.20),
    ("bugfix", 0.17),
    ("number", 0.11),
    ("decision", 0.09),
    ("constraint", 0.05),
    ("todo", 0.09),
    ("update", 0.06),
    ("resolve", 0.04),
    ("correction", 0.05),
    ("noise", 0.14),
)


class _Coding(_Builder):
    def __init__(
        self,
        seed: int,
        weights: tuple[tuple[str, float], ...] = _EPISODE_WEIGHTS,
        read_lines: tuple[int, int] = (14, 34),
    ) -> None:
        rng = random.Random(seed)
        self.weights = weights
        self.read_lines = read_lines
        feature = rng.choice(FEATURES)
        super().__init__("coding", seed, f"Billing service: {feature} fixes and hardening")
        self.feature = feature
        self.paths: list[str] = []
        self.seen_paths: set[str] = set()
        self.numbers = list(NUMBERS)
        self.rng.shuffle(self.numbers)
        self.live_numbers: list[tuple[Item, Needle, str, str, int]] = []
        self.constraints = list(CONSTRAINTS)
        self.decisions = list(DECISIONS)
        self.todos = list(TODOS)
        self.corrections = list(CORRECTIONS)
        self.errors_used = 0
        self.open_todos: list[tuple[Item, Needle, str]] = []
        for pool in (self.constraints, self.decisions, self.todos, self.corrections):
            self.rng.shuffle(pool)
        self._make_paths()

    def _make_paths(self) -> None:
        stems = list(STEMS)
        self.rng.shuffle(stems)
        for stem in stems:
            for ext in self.rng.sample(list(DIRS), 2):
                directory = self.rng.choice(DIRS[ext])
                name = f"test_{stem}" if directory.startswith("tests") else stem
                self.paths.append(f"{directory}/{name}{ext}")

    def _path(self, *, fresh: bool = True) -> str:
        unseen = [p for p in self.paths if p not in self.seen_paths]
        if fresh and unseen:
            return unseen[0]
        pool = sorted(self.seen_paths) or self.paths
        return self.rng.choice(pool)

    def _touch(self, path: str, turn: int, why: str, items: list[Item]) -> None:
        if path in self.seen_paths:
            return
        self.seen_paths.add(path)
        items.append(self.item(FILES, f"{path} — {why}", path))
        self.needle("path", path, turn)

    def _read(self, path: str) -> str:
        stem = path.rsplit("/", 1)[-1].split(".", maxsplit=1)[0]
        return _code_body(self.rng, stem, self.rng.randint(*self.read_lines))

    # each episode returns (user, steps, answer, items)
    def episode(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        r = self.rng.random()
        if turn == 0:
            return self._opening(turn)
        acc = 0.0
        for kind, weight in self.weights:
            acc += weight
            if r < acc:
                return getattr(self, f"_{kind}")(turn)
        return self._noise(turn)

    def _opening(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        items = [
            self.item(TITLE, self.session.title, f"the {self.feature} work"),
            self.item(
                GOALS,
                f"Goal: fix the {self.feature} bugs and harden the billing service",
                f"fix the {self.feature} bugs",
            ),
        ]
        user = (
            f"Hi! Today we continue the {self.feature} work on the billing service. The goal: "
            f"fix the {self.feature} bugs and harden the billing service before the release."
        )
        path = self._path()
        step = (self.call("read_file", {"path": path}, self._read(path)),)
        self._touch(path, turn, "entry point of the billing service", items)
        return user, [step], f"I read {path}; it is the entry point. Where shall I start?", items

    def _explore(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        p1 = self._path()
        p2 = p1
        while p2 == p1:
            p2 = self._path(fresh=self.rng.random() < 0.6)
        items: list[Item] = []
        feat = self.rng.choice(FEATURES)
        user = f"Can you look at how {feat} is implemented and summarise it?"
        step = (
            self.call("read_file", {"path": p1}, self._read(p1)),
            self.call("read_file", {"path": p2}, self._read(p2)),
        )
        self._touch(p1, turn, f"implements {feat}", items)
        self._touch(p2, turn, f"used by {feat}", items)
        answer = (
            f"{feat.capitalize()} lives mostly in {p1}; {p2} holds the helpers. The main loop "
            "normalises the input, walks the rows and logs each step. Nothing looks broken yet."
        )
        return user, [step], answer, items

    def _bugfix(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        items: list[Item] = []
        src = self._path()
        stem = src.rsplit("/", 1)[-1].split(".", maxsplit=1)[0].removeprefix("test_")
        test = f"tests/unit/test_{stem}_{turn}.py"
        k = self.errors_used % len(ERROR_TEMPLATES)
        self.errors_used += 1
        a = self.rng.randint(10, 999)
        b, c = self.rng.sample(range(100), 2)
        error = ERROR_TEMPLATES[k].format(a=a, b=b, c=c, stem=stem)
        fix = FIXES[k]
        log = (
            f"============ FAILURES ============\n___ test_{stem}_case_{a} ___\n"
            f"    def test_{stem}_case_{a}():\n>       assert run()\nE       {error}\n"
            f"{test}:{self.rng.randint(10, 200)}: failed\n1 failed, "
            f"{self.rng.randint(20, 300)} passed"
        )
        steps = [
            (self.call("run_tests", {"target": test}, log),),
            (self.call("read_file", {"path": src}, self._read(src)),),
            (
                self.call(
                    "edit_file",
                    {"path": src, "change": fix},
                    f"Applied edit to {src} (+{a % 17 + 2} -{a % 5 + 1})",
                ),
            ),
            (self.call("run_tests", {"target": test}, f"{self.rng.randint(20, 300)} passed"),),
        ]
        self._touch(test, turn, "regression test", items)
        self._touch(src, turn, "fixed here", items)
        items.append(self.item(ERRORS, f"{error} ({test}) — fixed by {fix}", error))
        self.needle("error", error, turn)
        user = f"The tests in {test} are failing on CI. Please fix them."
        answer = f"Fixed: the failure was `{error}`. I fixed it by {fix}; the suite passes now."
        return user, steps, answer, items

    def _number(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        if not self.numbers:
            return self._noise(turn)
        key, unit, (lo, hi) = self.numbers.pop()
        value = unit.format(n=self.rng.randint(lo, hi))
        user = f"FYI for the {key}: we use {value}. Keep that in mind."
        it = self.item(FACTS, f"{key}: {value}", value)
        nd = self.needle("number", value, turn)
        self.live_numbers.append((it, nd, key, unit, hi))
        return user, [], f"Noted: {value}.", [it]

    def _update(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        if not self.live_numbers:
            return self._number(turn)
        old_item, old_needle, key, unit, hi = self.live_numbers.pop(0)
        old_value = old_item.source
        new_value = old_value
        while new_value == old_value:
            new_value = unit.format(n=self.rng.randint(1, hi))
        user = f"Correction: the {key} changed. It is now {new_value}, no longer {old_value}."
        it = self.item(
            FACTS,
            f"{key}: {new_value}",
            new_value,
            replaces=old_item.id,
            superseded_note=f"Superseded: {key} was {old_value} (now {new_value})",
        )
        self.retire(old_needle, turn)
        self.needle("updated", new_value, turn, stale=old_value)
        return user, [], f"Understood: {new_value} from now on.", [it]

    def _decision(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        if not self.decisions:
            return self._noise(turn)
        choice, alt, reason = self.decisions.pop()
        phrase = f"{choice} instead of {alt} because {reason}"
        user = f"For the next part, should we go with {choice} or {alt}?"
        answer = f"Decision: we use {phrase}. I will build it that way."
        it = self.item(FACTS, f"Decision: {phrase}", phrase)
        self.needle("decision", phrase, turn)
        return user, [], answer, [it]

    def _constraint(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        if not self.constraints:
            return self._noise(turn)
        rule = self.constraints.pop()
        user = f"Important rule for this repo: {rule}."
        it = self.item(FACTS, f"Constraint (user): {rule}", rule)
        self.needle("constraint", rule, turn)
        return user, [], "Understood, I will follow that rule.", [it]

    def _todo(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        if not self.todos:
            return self._noise(turn)
        task = self.todos.pop()
        user = f"Not now, but we must {task} before the release."
        it = self.item(OPEN, f"TODO: {task}", task)
        nd = self.needle("todo", task, turn)
        self.open_todos.append((it, nd, task))
        return user, [], f"Added to the open items: {task}.", [it]

    def _resolve(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        if len(self.open_todos) < 3:
            return self._todo(turn)
        old, nd, task = self.open_todos.pop(self.rng.randrange(len(self.open_todos)))
        user = f"Good news: done, we did {task} this morning."
        it = self.item(OPEN, f"[resolved] TODO: {task}", f"we did {task}", replaces=old.id)
        self.retire(nd, turn)
        return user, [], "Great, I marked it resolved.", [it]

    def _correction(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        if not self.corrections:
            return self._noise(turn)
        wrong, right = self.corrections.pop()
        user = f"No, do not {wrong}. That is wrong: {right}."
        it = self.item(ERRORS, f"User correction: {right} (not: {wrong})", right)
        self.needle("correction", right, turn)
        return user, [], f"Sorry, corrected: {right}.", [it]

    def _noise(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        ask, tool, cmd, out = self.rng.choice(NOISE)
        result = out.format(n=self.rng.randint(20, 400))
        step = (self.call(tool, {"command": cmd}, result),)
        return f"Please {ask}.", [step], f"Done: {result.splitlines()[0]}", []


def generate_coding_session(
    seed: int,
    turns: int,
    *,
    weights: tuple[tuple[str, float], ...] = _EPISODE_WEIGHTS,
    episodes_per_turn: int = 1,
    read_lines: tuple[int, int] = (14, 34),
    chat_rate: float = 0.0,
) -> Session:
    """A coding-agent session of ``turns`` turns, deterministic for a seed (``weights``: how
    often each kind of episode comes; ``episodes_per_turn``: episodes folded into one user
    turn; ``read_lines``: the length range of a file read; ``chat_rate``: the chance that the
    user also tells a personal fact, as in a chat)."""
    b = _Coding(seed, weights, read_lines)
    chat = _Chat(seed + 1, fact_rate=chat_rate) if chat_rate else None
    if chat is not None:
        chat.session, chat._ids = b.session, 500_000  # one session, one catalogue
    for t in range(turns):
        users, steps, answers, items = [], [], [], []
        for _ in range(episodes_per_turn if t else 1):
            user, more, answer, got = b.episode(t)
            users.append(user)
            steps += more
            answers.append(answer)
            items += got
        if chat is not None:
            said, got = chat.fact(chat.a, t)
            if said:
                users.append(said)
                items += got
        user, answer = " ".join(users), " ".join(answers)
        state = b.item(STATE, f"Latest request (turn {t}): {user[:60]}", user)
        b.session.turns.append(Turn(t, user, tuple(steps), answer, (*items, state)))
    return b.session


# --------------------------------------------------------------------------------------------
# chat sessions (two people, many dated sessions)


class _Chat(_Builder):
    def __init__(self, seed: int, fact_rate: float = 0.5) -> None:
        rng = random.Random(seed)
        self.fact_rate = fact_rate
        a, b = rng.sample(PEOPLE, 2)
        super().__init__("chat", seed, f"Catch-up chats between {a} and {b}")
        self.a, self.b = a, b
        self.day = 0
        self.names = list(NAMES)
        self.rng.shuffle(self.names)
        self.events = [(e, who) for e in EVENTS for who in (a, b)]
        self.rng.shuffle(self.events)
        self.per_person: dict[str, dict[str, list[object]]] = {}
        for who in (a, b):
            pools: dict[str, list[object]] = {
                "number": list(CHAT_NUMBERS),
                "pref": list(PREFS),
                "decision": list(CHAT_DECISIONS),
                "todo": list(CHAT_TODOS),
                "city": list(CITIES),
                "attr": list(ATTRIBUTES),
            }
            for pool in pools.values():
                self.rng.shuffle(pool)
            self.per_person[who] = pools
        # (who, template, current value, item, needle, values)
        self.current: list[tuple[str, str, str, Item, Needle, tuple[str, ...]]] = []

    def date(self) -> str:
        month = 1 + (self.day // 28) % 12
        return f"2024-{month:02d}-{1 + self.day % 28:02d}"

    def fact(self, who: str, turn: int) -> tuple[str, list[Item]]:
        if self.rng.random() > self.fact_rate:
            return "", []
        p = self.per_person[who]
        r = self.rng.random()
        if r < 0.12 and self.names and p["city"]:
            rel, name = self.rng.choice(RELATIONS), self.names.pop()
            job, city = self.rng.choice(JOBS), str(p["city"].pop())
            check = f"{rel} {name}"
            it = self.item(FACTS, f"{who}'s {check} works as a {job} in {city}", check)
            self.needle("person", check, turn)
            return f"Did I tell you? My {check} works as a {job} in {city}.", [it]
        if r < 0.20 and p["city"]:
            check = f"{who} grew up in {p['city'].pop()}"
            it = self.item(FACTS, check, check)
            self.needle("place", check, turn)
            return f"Funny thing: {check}, did you know?", [it]
        mine = [e for e in self.events if e[1] == who]
        if r < 0.32 and mine:
            self.events.remove(mine[0])
            event = mine[0][0]
            check = f"{who}'s {event} on {self.date()}"
            it = self.item(FACTS, check, check)
            self.needle("date", check, turn)
            return f"Big news: {check} went really well!", [it]
        if r < 0.44 and p["number"]:
            tmpl, (lo, hi) = p["number"].pop()  # type: ignore[misc]
            text = str(tmpl).format(who=who, n=self.rng.randint(lo, hi))
            it = self.item(FACTS, text, text)
            self.needle("number", text, turn)
            return f"Random fact of the day: {text}.", [it]
        if r < 0.52 and p["pref"]:
            text = str(p["pref"].pop()).format(who=who)
            it = self.item(FACTS, f"Constraint: {text}", text)
            self.needle("constraint", text, turn)
            return f"Please remember: {text}.", [it]
        if r < 0.59 and p["decision"]:
            choice, reason = p["decision"].pop()  # type: ignore[misc]
            text = f"{who} decided to {choice} because {reason}"
            it = self.item(FACTS, f"Decision: {text}", text)
            self.needle("decision", text, turn)
            return f"So, {text}.", [it]
        if r < 0.68 and p["todo"]:
            task = f"{who} still has to {p['todo'].pop()}"
            it = self.item(OPEN, f"TODO: {task}", task)
            self.needle("todo", task, turn)
            return f"Remind me: {task}.", [it]
        return self._attribute(who, turn)

    def _attribute(self, who: str, turn: int) -> tuple[str, list[Item]]:
        p = self.per_person[who]
        mine = [c for c in self.current if c[0] == who]
        if mine and (self.rng.random() < 0.4 or not p["attr"]):
            entry = self.rng.choice(mine)
            _, tmpl, old, old_item, old_needle, values = entry
            self.current.remove(entry)  # each attribute changes at most once
            new = self.rng.choice([v for v in values if v != old])
            old_text, new_text = tmpl.format(who=who, v=old), tmpl.format(who=who, v=new)
            it = self.item(
                FACTS,
                new_text,
                new_text,
                replaces=old_item.id,
                superseded_note=f"Superseded: {old_text} (changed to {new})",
            )
            self.retire(old_needle, turn)
            self.needle("updated", new_text, turn, stale=old_text)
            return f"An update: {new_text} now, no longer {old}.", [it]
        if not p["attr"]:
            return "", []
        tmpl, values = p["attr"].pop()  # type: ignore[misc]
        value = self.rng.choice(values)
        text = str(tmpl).format(who=who, v=value)
        it = self.item(FACTS, text, text)
        nd = self.needle("place" if "lives in" in text else "number", text, turn)
        self.current.append((who, str(tmpl), value, it, nd, tuple(values)))
        return f"By the way, {text}.", [it]

    def filler(self, n: int) -> str:
        words: list[str] = []
        while len(words) < n:  # a long turn repeats the small talk
            words += self.rng.sample(FILLER, min(n - len(words), len(FILLER)))
        return " ".join(words)


def generate_chat_session(
    seed: int,
    turns: int,
    *,
    fact_rate: float = 0.5,
    facts_per_turn: int = 1,
    filler: tuple[int, int] = (3, 2),
) -> Session:
    """A LoCoMo-style two-person chat of ``turns`` exchanges over dated sessions (``fact_rate``:
    the chance that a speaker states a fact, tried ``facts_per_turn`` times per message;
    ``filler``: the small-talk words before and after it)."""
    c = _Chat(seed, fact_rate)
    for t in range(turns):
        if t % 10 == 0:
            c.day += c.rng.randint(2, 9)
        items: list[Item] = []
        if t == 0:
            items.append(c.item(TITLE, c.session.title, f"Hi {c.b}"))
        said: dict[str, list[str]] = {c.a: [], c.b: []}
        for who in (c.a, c.b):
            for _ in range(facts_per_turn):
                text, got = c.fact(who, t)
                said[who].append(text)
                items += got
        prefix = f"[session {t // 10 + 1}, {c.date()}] " if t % 10 == 0 else ""
        greet = f"Hi {c.b}! " if t == 0 else ""
        before, after = filler
        said_a, said_b = " ".join(said[c.a]), " ".join(said[c.b])
        user = f"{prefix}{greet}{c.a}: {c.filler(before)} {said_a} {c.filler(after)}"
        answer = f"{c.b}: {c.filler(before)} {said_b} {c.filler(after)}"
        user, answer = (" ".join(x.split()) for x in (user, answer))
        items.append(c.item(STATE, f"Latest chat (turn {t}): {c.a} and {c.b} catching up", user))
        c.session.turns.append(Turn(t, user, (), answer, tuple(items)))
    return c.session


@dataclass(frozen=True)
class Shape:
    """A session shape of the capture runs: a generator and its settings.

    Attributes:
        name: Label used in the results.
        kind: ``coding`` or ``chat`` (the generator).
        settings: Keyword arguments of the generator (see ``generate_coding_session`` and
            ``generate_chat_session``).
    """

    name: str
    kind: str
    settings: tuple[tuple[str, object], ...] = ()


_FACTS_HEAVY = (
    ("explore", 0.05),
    ("bugfix", 0.08),
    ("number", 0.20),
    ("decision", 0.16),
    ("constraint", 0.12),
    ("todo", 0.14),
    ("update", 0.10),
    ("resolve", 0.04),
    ("correction", 0.08),
    ("noise", 0.03),
)
_TOOLS_HEAVY = (
    ("explore", 0.35),
    ("bugfix", 0.25),
    ("number", 0.08),
    ("decision", 0.06),
    ("constraint", 0.03),
    ("todo", 0.05),
    ("update", 0.04),
    ("resolve", 0.02),
    ("correction", 0.02),
    ("noise", 0.10),
)
SHAPES: tuple[Shape, ...] = (
    Shape("coding", "coding"),
    Shape("chat", "chat"),
    Shape("chat, dense", "chat", (("fact_rate", 1.0), ("facts_per_turn", 2), ("filler", (1, 1)))),
    Shape("chat, long turns", "chat", (("filler", (9, 6)),)),
    Shape("chat, sparse", "chat", (("fact_rate", 0.2), ("filler", (4, 3)))),
    Shape("coding, dense", "coding", (("weights", _FACTS_HEAVY), ("episodes_per_turn", 3))),
    Shape("coding, tool-heavy", "coding", (("weights", _TOOLS_HEAVY), ("read_lines", (60, 140)))),
    Shape("coding and chat", "coding", (("chat_rate", 0.6), ("episodes_per_turn", 2))),
)
"""The session shapes the capture runs replay (the bench's two shapes first)."""


def generate_shaped_session(shape: Shape, seed: int, turns: int) -> Session:
    """A session of ``shape`` (see :data:`SHAPES`)."""
    settings: dict[str, Any] = dict(shape.settings)
    if shape.kind == "coding":
        return generate_coding_session(seed, turns, **settings)
    if shape.kind == "chat":
        return generate_chat_session(seed, turns, **settings)
    raise ValueError(f"unknown session kind {shape.kind!r}; expected 'coding' or 'chat'")


def generate_session(kind: str, seed: int, turns: int) -> Session:
    """Dispatch on ``kind`` ("coding" or "chat")."""
    if kind == "coding":
        return generate_coding_session(seed, turns)
    if kind == "chat":
        return generate_chat_session(seed, turns)
    raise ValueError(f"unknown session kind {kind!r}; expected 'coding' or 'chat'")
