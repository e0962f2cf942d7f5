"""Word pools of the session generator (bench/data.py): names, paths, facts, filler."""

from __future__ import annotations

FEATURES = (
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
DIRS = {
    ".py": ("src/billing", "src/api", "src/auth", "src/workers", "src/db", "tests/unit"),
    ".ts": ("web/src/components", "web/src/api"),
    ".yaml": ("config", "deploy/k8s"),
    ".sql": ("migrations",),
    ".md": ("docs",),
    ".toml": ("config",),
    ".sh": ("scripts",),
    ".json": ("web", "config"),
}
STEMS = (
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
NUMBERS = (
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
CONSTRAINTS = (
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
DECISIONS = (
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
TODOS = (
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
CORRECTIONS = (
    ("call the v1 invoices endpoint", "the v2 invoices endpoint is the one in production"),
    ("round half up", "invoices round half to even"),
    ("put the flag in the database", "feature flags live in the YAML config"),
    ("retry on every 4xx", "only 429 and 5xx responses are retried"),
    ("send the digest daily", "the email digest is weekly, on Mondays"),
    ("use the admin token in tests", "tests use the read-only fixture token"),
    ("store timestamps in local time", "all timestamps are stored in UTC"),
    ("bump the major version", "this release is a patch release"),
)
ERROR_TEMPLATES = (
    "AssertionError: expected {a}.{b:02d} but got {a}.{c:02d} in test_{stem}",
    "KeyError: 'tenant_{a}' raised in {stem}.load()",
    "TypeError: {stem}() missing 1 required positional argument: 'cursor_{a}'",
    "sqlite3.OperationalError: no such column: {stem}.amount_{a}",
    "TimeoutError: {stem} did not answer within {a} seconds",
    "ValueError: invalid currency code X{a}Q in {stem}",
    "IntegrityError: UNIQUE constraint failed: {stem}.ref_{a}",
    "RecursionError: maximum recursion depth exceeded in {stem}.walk (depth {a})",
)
FIXES = (
    "switching the comparison to Decimal",
    "loading the tenant map before the first request",
    "passing the cursor through explicitly",
    "adding the missing migration",
    "raising the client timeout and retrying once",
    "validating the code against the ISO list",
    "deduplicating refs before the insert",
    "replacing the recursion with an explicit stack",
)
NOISE = (
    ("run the linter", "run_command", "ruff check src", "All checks passed!"),
    ("show me git status", "run_command", "git status --short", " M pyproject.toml\n?? .env.local"),
    ("how long does the unit suite take?", "run_command", "pytest -q --durations=3", "{n} passed"),
    ("check the branch", "run_command", "git branch --show-current", "feature/billing-{n}"),
)

PEOPLE = ("Mara", "Jonas", "Aiko", "Tomas", "Leila", "Owen", "Sofia", "Ravi", "Greta", "Emeka")
RELATIONS = ("sister", "brother", "cousin", "neighbour", "colleague", "aunt", "mentor", "friend")
NAMES = (
    "Ines", "Pavel", "Yuki", "Dario", "Nadia", "Felix", "Hanna", "Omar", "Lucia", "Bruno",
    "Keiko", "Anders", "Priya", "Mateus", "Zofia", "Idris", "Carmen", "Viktor", "Noor", "Elias",
)  # fmt: skip
JOBS = ("nurse", "architect", "baker", "pilot", "teacher", "welder", "vet", "chemist")
CITIES = (
    "Coimbra", "Tromsø", "Leeds", "Kraków", "Osaka", "Valencia", "Graz", "Tartu", "Porto",
    "Bergen", "Lyon", "Gdańsk", "Bilbao", "Turku", "Ghent", "Brno", "Aarhus", "Genoa",
)  # fmt: skip
EVENTS = (
    "half marathon", "pottery exhibition", "chess tournament", "choir concert",
    "charity bike ride", "first driving lesson", "job interview", "cousin's wedding",
    "dentist appointment", "climbing course", "book club launch", "flat viewing",
)  # fmt: skip
CHAT_NUMBERS = (
    ("{who} pays {n} euros rent a month", (450, 2400)),
    ("{who} has read {n} books this year", (3, 80)),
    ("{who} trains {n} hours a week", (2, 20)),
    ("{who} saved {n} euros for the trip", (300, 9000)),
    ("{who} grows {n} tomato plants", (2, 60)),
    ("{who} commutes {n} km each way", (2, 90)),
    ("{who} has {n} houseplants", (3, 70)),
    ("{who} ran {n} km last weekend", (5, 42)),
)
PREFS = (
    "{who} is allergic to peanuts",
    "{who} does not eat meat",
    "{who} never flies overnight",
    "{who} cannot drive",
    "{who} does not drink coffee after noon",
    "{who} avoids crowded places",
    "{who} only reads paper books",
)
CHAT_DECISIONS = (
    ("take the remote job offer", "it saves two hours of commuting"),
    ("adopt a rescue dog", "the flat finally allows pets"),
    ("learn Norwegian", "the family reunion is in Bergen"),
    ("sell the old car", "the tram now stops outside"),
    ("start a pottery class", "the doctor suggested a calm hobby"),
    ("postpone the master's degree", "the new team needs help this year"),
)
CHAT_TODOS = (
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
ATTRIBUTES = (
    ("{who} lives in {v}", CITIES),
    ("{who} works at {v}", ("Lumen Labs", "Fernwood", "Northwind", "Brightpath", "Kestrel Co")),
    ("{who}'s favourite band is {v}", ("The Tide", "Glass Owls", "Nordlys", "Paper Kites")),
    ("{who}'s gym costs {v} euros a month", ("29", "35", "42", "55", "61")),
    ("{who} plays {v} in a band", ("bass", "drums", "violin", "keyboards")),
    ("{who}'s dog is called {v}", ("Pixel", "Biscuit", "Mango", "Pepper", "Rusty")),
)
FILLER = (
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
