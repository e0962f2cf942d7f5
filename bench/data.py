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
from typing import Literal

__all__ = [
    "NEEDLE_KINDS",
    "Item",
    "Needle",
    "Session",
    "ToolStep",
    "Turn",
    "generate_chat_session",
    "generate_coding_session",
    "generate_session",
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

_FEATURES = (
    "invoice rounding",
    "webhook retries",
    "rate limiting",
    "CSV export",
    "tax rules",
    "session expiry",
    "audit logging",
    "currency conversion",
    "email digests",
    "feature flags",
    "refund handling",
    "ledger reconciliation",
)
_DIRS = {
    ".py": ("src/billing", "src/api", "src/auth", "src/workers", "src/db", "tests/unit"),
    ".ts": ("web/src/components", "web/src/api"),
    ".yaml": ("config", "deploy/k8s"),
    ".sql": ("migrations",),
    ".md": ("docs",),
    ".toml": ("config",),
    ".sh": ("scripts",),
    ".json": ("web", "config"),
}
_STEMS = (
    "invoice_service",
    "rate_limiter",
    "webhook_sender",
    "session_store",
    "tax_rules",
    "ledger",
    "retry_policy",
    "csv_export",
    "user_profile",
    "audit_log",
    "currency",
    "payment_gateway",
    "email_digest",
    "feature_flags",
    "cache_keys",
    "refunds",
    "reconcile",
    "pricing",
    "quota",
    "scheduler",
    "notifications",
    "exports",
    "accounts",
    "discounts",
)
_NUMBERS = (
    ("API rate limit", "{n} requests per minute per key", (60, 600)),
    ("invoice retention", "{n} days of invoice retention", (30, 3650)),
    ("worker pool size", "{n} concurrent export jobs", (2, 64)),
    ("payment gateway timeout", "{n} seconds gateway timeout", (5, 90)),
    ("max upload size", "{n} MB upload limit", (5, 500)),
    ("cache TTL", "{n} seconds cache TTL", (30, 7200)),
    ("p95 latency budget", "{n} ms p95 latency budget", (80, 900)),
    ("supported currencies", "{n} supported currencies", (3, 40)),
    ("webhook retry cap", "{n} webhook delivery attempts", (3, 25)),
    ("staging database port", "port {n} for the staging database", (5400, 5499)),
    ("session lifetime", "{n} minutes session lifetime", (15, 720)),
    ("batch size", "{n} rows per export batch", (100, 9000)),
    ("refund window", "{n} days refund window", (7, 120)),
    ("coverage floor", "{n} percent coverage floor", (60, 95)),
)
_CONSTRAINTS = (
    "never push directly to main; always open a pull request",
    "do not add runtime dependencies without asking first",
    "store every money amount as integer cents",
    "keep the code compatible with Python 3.11",
    "never log customer email addresses",
    "every migration must be reversible",
    "do not touch anything under the legacy folder",
    "tests must never call the real payment gateway",
    "use httpx for HTTP calls, never requests",
    "every public function needs a docstring",
)
_DECISIONS = (
    ("Redis streams", "Kafka", "ops already runs Redis"),
    ("SQLite", "Postgres", "the deployment is single-node"),
    ("pydantic models", "plain dataclasses", "we validate at the API boundary"),
    ("a token bucket", "a fixed window counter", "it smooths bursts"),
    ("exponential backoff with jitter", "fixed retries", "it avoids thundering herds"),
    ("Jinja2 templates", "f-strings", "designers edit the email copy"),
    ("UUIDv7 ids", "autoincrement ids", "they sort by time and hide volume"),
    ("structlog", "the stdlib formatter", "we want JSON logs"),
    ("a nightly cron job", "a long-running scheduler", "it is simpler to operate"),
    ("Decimal arithmetic", "floats", "float rounding broke invoices"),
    ("Alembic", "hand-written SQL migrations", "it autogenerates the diffs"),
    ("streaming CSV writes", "building exports in memory", "exports reach 2 GB"),
    ("one queue per tenant", "a shared queue", "one noisy tenant stalled everyone"),
    ("server-side sessions", "JWT sessions", "we must revoke sessions instantly"),
)
_TODOS = (
    "add a dead-letter queue for failed webhooks",
    "write a migration that drops the unused discount_code column",
    "document the rate limiter settings for the ops team",
    "add a property test for currency rounding",
    "benchmark the CSV export with a 1M row fixture",
    "rotate the staging API keys",
    "split the ledger module into read and write paths",
    "add tracing spans around the payment gateway calls",
    "remove the deprecated v1 invoices endpoint",
    "add an alert when the export queue backs up",
    "check the tax rules for Norway",
    "make the refund job idempotent",
    "cache exchange rates for one hour",
    "add pagination to the audit log API",
    "review the session cookie flags",
)
_CORRECTIONS = (
    ("call the v1 invoices endpoint", "the v2 invoices endpoint is the one in production"),
    ("round half up", "invoices round half to even"),
    ("put the flag in the database", "feature flags live in the YAML config"),
    ("retry on every 4xx", "only 429 and 5xx responses are retried"),
    ("send the digest daily", "the email digest is weekly, on Mondays"),
    ("use the admin token in tests", "tests use the read-only fixture token"),
    ("store timestamps in local time", "all timestamps are stored in UTC"),
    ("bump the major version", "this release is a patch release"),
)
_ERRORS = (
    "AssertionError: expected {a}.{b:02d} but got {a}.{c:02d} in test_{stem}",
    "KeyError: 'tenant_{a}' raised in {stem}.load()",
    "TypeError: {stem}() missing 1 required positional argument: 'cursor_{a}'",
    "sqlite3.OperationalError: no such column: {stem}.amount_{a}",
    "TimeoutError: {stem} did not answer within {a} seconds",
    "ValueError: invalid currency code X{a}Q in {stem}",
    "IntegrityError: UNIQUE constraint failed: {stem}.ref_{a}",
    "RecursionError: maximum recursion depth exceeded in {stem}.walk (depth {a})",
)
_FIXES = (
    "switching the comparison to Decimal",
    "loading the tenant map before the first request",
    "passing the cursor through explicitly",
    "adding the missing migration",
    "raising the client timeout and retrying once",
    "validating the code against the ISO list",
    "deduplicating refs before the insert",
    "replacing the recursion with an explicit stack",
)
_NOISE = (
    ("run the linter", "run_command", "ruff check src", "All checks passed!"),
    ("show me git status", "run_command", "git status --short", " M pyproject.toml\n?? .env.local"),
    ("how long does the unit suite take?", "run_command", "pytest -q --durations=3", "{n} passed"),
    ("check the branch", "run_command", "git branch --show-current", "feature/billing-{n}"),
)


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


class _Coding(_Builder):
    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        feature = rng.choice(_FEATURES)
        super().__init__("coding", seed, f"Billing service: {feature} fixes and hardening")
        self.feature = feature
        self.paths: list[str] = []
        self.seen_paths: set[str] = set()
        self.numbers = list(_NUMBERS)
        self.rng.shuffle(self.numbers)
        self.live_numbers: list[tuple[Item, Needle, str, str, int]] = []
        self.constraints = list(_CONSTRAINTS)
        self.decisions = list(_DECISIONS)
        self.todos = list(_TODOS)
        self.corrections = list(_CORRECTIONS)
        self.errors_used = 0
        self.open_todos: list[tuple[Item, Needle, str]] = []
        for pool in (self.constraints, self.decisions, self.todos, self.corrections):
            self.rng.shuffle(pool)
        self._make_paths()

    def _make_paths(self) -> None:
        stems = list(_STEMS)
        self.rng.shuffle(stems)
        for stem in stems:
            for ext in self.rng.sample(list(_DIRS), 2):
                directory = self.rng.choice(_DIRS[ext])
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
        return _code_body(self.rng, stem, self.rng.randint(14, 34))

    # each episode returns (user, steps, answer, items)
    def episode(self, turn: int) -> tuple[str, list[tuple[ToolStep, ...]], str, list[Item]]:
        r = self.rng.random()
        if turn == 0:
            return self._opening(turn)
        kinds = [
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
        ]
        acc = 0.0
        for kind, weight in kinds:
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
        feat = self.rng.choice(_FEATURES)
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
        k = self.errors_used % len(_ERRORS)
        self.errors_used += 1
        a = self.rng.randint(10, 999)
        b, c = self.rng.sample(range(100), 2)
        error = _ERRORS[k].format(a=a, b=b, c=c, stem=stem)
        fix = _FIXES[k]
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
        ask, tool, cmd, out = self.rng.choice(_NOISE)
        result = out.format(n=self.rng.randint(20, 400))
        step = (self.call(tool, {"command": cmd}, result),)
        return f"Please {ask}.", [step], f"Done: {result.splitlines()[0]}", []


def generate_coding_session(seed: int, turns: int) -> Session:
    """A coding-agent session of ``turns`` turns, deterministic for a seed."""
    b = _Coding(seed)
    for t in range(turns):
        user, steps, answer, items = b.episode(t)
        state = b.item(STATE, f"Latest request (turn {t}): {user[:60]}", user)
        b.session.turns.append(Turn(t, user, tuple(steps), answer, (*items, state)))
    return b.session


# --------------------------------------------------------------------------------------------
# chat sessions (two people, many dated sessions)

_PEOPLE = ("Mara", "Jonas", "Aiko", "Tomas", "Leila", "Owen", "Sofia", "Ravi", "Greta", "Emeka")
_RELATIONS = ("sister", "brother", "cousin", "neighbour", "colleague", "aunt", "mentor", "friend")
_NAMES = (
    "Ines", "Pavel", "Yuki", "Dario", "Nadia", "Felix", "Hanna", "Omar", "Lucia", "Bruno",
    "Keiko", "Anders", "Priya", "Mateus", "Zofia", "Idris", "Carmen", "Viktor", "Noor", "Elias",
)  # fmt: skip
_JOBS = ("nurse", "architect", "baker", "pilot", "teacher", "welder", "vet", "chemist")
_CITIES = (
    "Coimbra", "Tromsø", "Leeds", "Kraków", "Osaka", "Valencia", "Graz", "Tartu", "Porto",
    "Bergen", "Lyon", "Gdańsk", "Bilbao", "Turku", "Ghent", "Brno", "Aarhus", "Genoa",
)  # fmt: skip
_EVENTS = (
    "half marathon", "pottery exhibition", "chess tournament", "choir concert",
    "charity bike ride", "first driving lesson", "job interview", "cousin's wedding",
    "dentist appointment", "climbing course", "book club launch", "flat viewing",
)  # fmt: skip
_CHAT_NUMBERS = (
    ("{who} pays {n} euros rent a month", (450, 2400)),
    ("{who} has read {n} books this year", (3, 80)),
    ("{who} trains {n} hours a week", (2, 20)),
    ("{who} saved {n} euros for the trip", (300, 9000)),
    ("{who} grows {n} tomato plants", (2, 60)),
    ("{who} commutes {n} km each way", (2, 90)),
    ("{who} has {n} houseplants", (3, 70)),
    ("{who} ran {n} km last weekend", (5, 42)),
)
_PREFS = (
    "{who} is allergic to peanuts",
    "{who} does not eat meat",
    "{who} never flies overnight",
    "{who} cannot drive",
    "{who} does not drink coffee after noon",
    "{who} avoids crowded places",
    "{who} only reads paper books",
)
_CHAT_DECISIONS = (
    ("take the remote job offer", "it saves two hours of commuting"),
    ("adopt a rescue dog", "the flat finally allows pets"),
    ("learn Norwegian", "the family reunion is in Bergen"),
    ("sell the old car", "the tram now stops outside"),
    ("start a pottery class", "the doctor suggested a calm hobby"),
    ("postpone the master's degree", "the new team needs help this year"),
)
_CHAT_TODOS = (
    "renew the passport before June",
    "book the train to Graz",
    "send the photos from the wedding",
    "call the landlord about the heating",
    "buy a present for the neighbour's baby",
    "finish the tax return",
    "return the borrowed tent",
    "plan the birthday dinner",
)
# attributes that change later: (template with {who} and {v}, values)
_ATTRIBUTES = (
    ("{who} lives in {v}", _CITIES),
    ("{who} works at {v}", ("Lumen Labs", "Fernwood", "Northwind", "Brightpath", "Kestrel Co")),
    ("{who}'s favourite band is {v}", ("The Tide", "Glass Owls", "Nordlys", "Paper Kites")),
    ("{who}'s gym costs {v} euros a month", ("29", "35", "42", "55", "61")),
    ("{who} plays {v} in a band", ("bass", "drums", "violin", "keyboards")),
    ("{who}'s dog is called {v}", ("Pixel", "Biscuit", "Mango", "Pepper", "Rusty")),
)
_FILLER = (
    "The weather was grey all week, but we still went for long walks.",
    "I finally watched that documentary you mentioned, it was slow but beautiful.",
    "Work has been busy; lots of meetings and not much done.",
    "We cooked a huge pot of soup on Sunday and froze half of it.",
    "My phone screen cracked again, I need a better case.",
    "Honestly I just want a quiet weekend with a good book.",
    "The new café near the station makes excellent bread.",
    "I have been sleeping better since I stopped checking email at night.",
    "The neighbours are renovating again, so mornings are loud.",
    "I tried a new running route along the canal, much nicer than the road.",
    "My plants are struggling with the dry air from the heating.",
    "We played board games until midnight, I lost every round.",
    "The train was late twice this week, which made me miss a meeting.",
    "I keep meaning to learn to cook properly, but takeaway is too easy.",
    "There was a street market downtown with amazing cheese.",
    "My laptop fan sounds like a jet engine lately.",
)


class _Chat(_Builder):
    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        a, b = rng.sample(_PEOPLE, 2)
        super().__init__("chat", seed, f"Catch-up chats between {a} and {b}")
        self.a, self.b = a, b
        self.day = 0
        self.names = list(_NAMES)
        self.rng.shuffle(self.names)
        self.events = [(e, who) for e in _EVENTS for who in (a, b)]
        self.rng.shuffle(self.events)
        self.per_person: dict[str, dict[str, list[object]]] = {}
        for who in (a, b):
            pools: dict[str, list[object]] = {
                "number": list(_CHAT_NUMBERS),
                "pref": list(_PREFS),
                "decision": list(_CHAT_DECISIONS),
                "todo": list(_CHAT_TODOS),
                "city": list(_CITIES),
                "attr": list(_ATTRIBUTES),
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
        if self.rng.random() > 0.5:
            return "", []
        p = self.per_person[who]
        r = self.rng.random()
        if r < 0.12 and self.names and p["city"]:
            rel, name = self.rng.choice(_RELATIONS), self.names.pop()
            job, city = self.rng.choice(_JOBS), str(p["city"].pop())
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
        return " ".join(self.rng.sample(_FILLER, n))


def generate_chat_session(seed: int, turns: int) -> Session:
    """A LoCoMo-style two-person chat of ``turns`` exchanges over dated sessions."""
    c = _Chat(seed)
    for t in range(turns):
        if t % 10 == 0:
            c.day += c.rng.randint(2, 9)
        items: list[Item] = []
        if t == 0:
            items.append(c.item(TITLE, c.session.title, f"Hi {c.b}"))
        said_a, got_a = c.fact(c.a, t)
        said_b, got_b = c.fact(c.b, t)
        items += got_a + got_b
        prefix = f"[session {t // 10 + 1}, {c.date()}] " if t % 10 == 0 else ""
        greet = f"Hi {c.b}! " if t == 0 else ""
        user = f"{prefix}{greet}{c.a}: {c.filler(3)} {said_a} {c.filler(2)}".replace("  ", " ")
        answer = f"{c.b}: {c.filler(3)} {said_b} {c.filler(2)}".replace("  ", " ")
        items.append(c.item(STATE, f"Latest chat (turn {t}): {c.a} and {c.b} catching up", user))
        c.session.turns.append(Turn(t, user, (), answer, tuple(items)))
    return c.session


def generate_session(kind: str, seed: int, turns: int) -> Session:
    """Dispatch on ``kind`` ("coding" or "chat")."""
    if kind == "coding":
        return generate_coding_session(seed, turns)
    if kind == "chat":
        return generate_chat_session(seed, turns)
    raise ValueError(f"unknown session kind {kind!r}; expected 'coding' or 'chat'")
