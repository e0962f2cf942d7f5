"""Text analysis: title words, path-like tokens, lexical anchors (CJK-aware)."""

from __future__ import annotations

import pytest

from wm_langgraph.document.text import (
    anchor_in_text,
    contains_cjk,
    extract_anchors,
    extract_paths,
    is_path_like,
    meaningful_words,
    missing_anchors,
    normalise_path,
    shares_meaningful_word,
)

# ---------------------------------------------------------------------------------------------
# Titles
# ---------------------------------------------------------------------------------------------


def test_meaningful_words_drop_spec_stopwords_and_stem():
    assert meaningful_words("The Plan for the Working Memory session notes") == set()
    assert meaningful_words("Migrating payments to PostgreSQL") == {
        "migrat",
        "payment",
        "postgresql",
    }


def test_meaningful_words_give_cjk_bigrams():
    assert meaningful_words("数据库迁移") == {"数据", "据库", "库迁", "迁移"}
    # function characters split runs; the "plan" bigram is a stopword
    assert meaningful_words("数据库的计划") == {"数据", "据库"}


@pytest.mark.parametrize(
    ("old", "new", "related"),
    [
        ("Payments DB migration to PostgreSQL", "PostgreSQL cut-over for payments", True),
        ("Payments DB migration", "Migrating the payments database", True),
        ("Payments DB migration", "Weekend trip to Lisbon", False),
        ("Session notes", "Anything at all", True),  # old title has no meaningful word
        ("北京周末旅行安排", "北京旅行预算", True),
        ("北京周末旅行安排", "数据库性能优化", False),
        ("データベース移行", "データベース設計", True),
        ("데이터베이스 마이그레이션", "주말 여행 계획", False),
        ("PostgreSQL 迁移", "PostgreSQL upgrade", True),
    ],
)
def test_shares_meaningful_word(old, new, related):
    assert shares_meaningful_word(old, new) is related


def test_contains_cjk():
    assert contains_cjk("预算 200")
    assert contains_cjk("カタカナ")
    assert not contains_cjk("plain ascii, café")


# ---------------------------------------------------------------------------------------------
# Paths
# ---------------------------------------------------------------------------------------------

PATHS = [
    "src/main.py",
    "main.py",
    "README.md",
    "web/App.tsx",
    "Foo.java",
    "lib/x.c",
    "engine.cpp",
    "include/api.h",
    "types.hpp",
    "index.html",
    "style.css",
    "theme.scss",
    "schema.sql",
    "data.csv",
    "logo.png",
    "photo.jpg",
    "icon.svg",
    "notes.txt",
    "poetry.lock",
    "pom.xml",
    "api.proto",
    "Main.kt",
    "App.swift",
    "app.rb",
    "index.php",
    "Comp.vue",
    "Dockerfile",
    "Makefile",
    ".env",
    ".gitignore",
    "~/.bashrc",
    "/etc/hosts",
    "./run",
    "../shared/notes.md",
    "docs/guide/",
    "src/utils",
    "tests/core",
    "app/models/user",
    "api/v2",
    "my_pkg/module",
    "https://example.com/a/b?x=1",
    "C:\\Users\\me\\report.docx",
]
NOT_PATHS = [
    "and/or",
    "either/or",
    "input/output",
    "true/false",
    "yes/no",
    "read/write",
    "client/server",
    "TCP/IP",
    "I/O",
    "media/search",
    "HTTP/2",
    "3/15/2024",
    "50/50",
    "24/7",
    "e.g.",
    "v2.3.1",
    "example.com",
    "word",
    "/",
    "docs/",  # a bare directory mentioned in passing is not a file
    "/healthz",  # an API route is not a file
    "/orders/1",
]


@pytest.mark.parametrize("token", PATHS)
def test_real_paths_are_paths(token):
    assert is_path_like(token)
    assert extract_paths(f"see {token} please") == [token]


@pytest.mark.parametrize("token", NOT_PATHS)
def test_prose_slashes_are_not_paths(token):
    assert not is_path_like(token)
    assert extract_paths(f"we use {token} here") == []


def test_extract_paths_order_unique_and_punctuation():
    text = "Edit src/app.py, then src/app.py again; see `docs/guide.md`. Logs: https://x.io/l."
    assert extract_paths(text) == ["src/app.py", "docs/guide.md", "https://x.io/l"]


def test_extract_paths_line_numbers_and_cjk_neighbours():
    assert extract_paths("error at src/db.py:42") == ["src/db.py"]
    assert extract_paths("修改了src/main.py文件，访问https://x.com/a页面。") == [
        "src/main.py",
        "https://x.com/a",
    ]


def test_code_shapes_in_tool_output_are_not_paths():
    assert extract_paths("datetime.strptime(s, '%d/%m/%Y')") == []
    assert extract_paths("<Response [429]>.status_code == 429") == []
    assert extract_paths("from orders.db import session\nimport orders.db") == []
    assert extract_paths("touched a.py, b.py") == ["a.py", "b.py"]
    assert extract_paths("from pkg import x  # see orders.db") == ["orders.db"]
    assert extract_paths("cat /var/log/app.log") == ["/var/log/app.log"]


def test_normalise_path():
    assert normalise_path("./src/a.py,") == "src/a.py"
    assert normalise_path("docs/") == "docs"


# ---------------------------------------------------------------------------------------------
# Anchors
# ---------------------------------------------------------------------------------------------


def test_spec_anchor_kinds():
    text = (
        "Decided on 15 March 2024 because Alice chose PostgreSQL; trial lasts 3 months, "
        "costs $200, 2 kids, standup at 10 AM, due 2024-04-01."
    )
    assert extract_anchors(text, include_phrases=False) == {
        "decided",
        "2024-03-15",
        "because",
        "alice",
        "chose",
        "postgresql",
        "3 months",
        "$200",
        "2 kids",
        "10 am",
        "2024-04-01",
    }


def test_technical_anchors():
    text = (
        "FACT-017: bump to v2.3.1, retry on HTTP 429, Postgres on port 5432, "
        "config in src/settings.toml, env DATABASE_URL, call parse_config(), see #42."
    )
    anchors = extract_anchors(text)
    assert {
        "fact-017",
        "v2.3.1",
        "http 429",
        "port 5432",
        "src/settings.toml",
        "database_url",
        "parse_config",
        "#42",
        "postgres",
    } <= anchors
    assert "5432" not in anchors  # one anchor per piece of text


def test_cjk_anchors():
    text = "2024年3月15日签约，预算200元，试用3个月，三个月后复盘，第3阶段，3月20日开会，押金3000"
    assert extract_anchors(text) == {
        "2024-03-15",
        "200元",
        "3个月",
        "三个月",
        "第3",
        "--03-20",
        "3000",
    }


def test_dates_are_canonical_across_formats():
    assert extract_anchors("15 March 2024") == extract_anchors("2024-03-15")
    assert extract_anchors("March 15, 2024") == {"2024-03-15"}
    assert extract_anchors("2024年3月15日") == {"2024-03-15"}


def test_stopwords_and_markers():
    assert extract_anchors("The user prefers tea. Use it.") == set()
    assert extract_anchors("Decided because agreed", include_markers=False) == set()
    assert extract_anchors("决定采用", include_markers=False) == set()


def test_anchor_presence_literal_and_canonical():
    assert anchor_in_text("2024-03-15", "signed 15 Mar 2024")
    assert anchor_in_text("port 5432", "the db listens on Port 5432.")
    assert not anchor_in_text("v2.3.1", "we run v2.3.10 now")
    assert missing_anchors({"alice", "fact-017", "$200"}, "Alice paid $200") == {"fact-017"}


def test_sentence_initial_verbs_and_common_nouns_are_not_proper_nouns():
    text = "- Switched to Rust. Using uv now\n- [new] Deployed on Heroku\n- Budget: Alice pays"
    assert extract_anchors(text) == {"rust", "heroku", "alice"}
    # the same word mid-sentence, or with inner capitals, is a name
    assert extract_anchors("Reading is near London. We visited Reading") == {"reading", "london"}
    assert extract_anchors("LangGraph rocks") == {"langgraph"}
    assert extract_anchors("Runs 3 times a week") == {"3 times"}


def test_attribute_chains_are_not_dotfiles():
    text = "r = client.get('/orders/1').status_code; ', '.join(x).strip(); p.read_text()"
    assert extract_paths(text) == []  # "/orders/1" is an API route, not a file
    assert extract_paths("call .join(parts)") == []
    assert extract_paths("copy .env.example to .env") == [".env.example", ".env"]


# ---------------------------------------------------------------------------------------------
# Constraint anchors: a negation / obligation marker and the word it governs
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "anchor"),
    [
        ("Never push directly to main; always open a pull request.", "never push"),
        ("Never push directly to main; always open a pull request.", "always open"),
        ("Don't push to main, ever.", "never push"),
        ("We do not push to the main branch directly", "never push"),
        ("Tests must never call the real payment gateway", "never call"),
        ("Use httpx for HTTP calls, never requests", "never request"),
        ("Every migration must be reversible", "always reversible"),
        ("Owen cannot drive", "never drive"),
        ("Mei doesn’t eat meat", "never eat"),
        ("Aiko only reads paper books", "only read"),
        ("Owen is allergic to peanuts", "allergic peanut"),
        ("Priya avoids crowded places", "avoid crowded"),
        ("不要直接推送到主分支", "不要推送"),
        ("千万别推送到主分支", "不要推送"),
        ("禁止在周末部署", "不要周末"),
        ("必须使用uv管理依赖", "必须uv"),
        ("只能用公司的电脑处理客户数据", "只能公司"),
        ("发布前一定要跑完整测试", "必须跑完"),
    ],
)
def test_constraint_phrase_anchors(text, anchor):
    assert anchor in extract_anchors(text)


def test_constraint_anchors_survive_rewording_but_not_loss():
    rule = "Never push directly to main; always open a pull request."
    anchors = extract_anchors(rule)
    assert missing_anchors(anchors, "Don't push to main — always open a PR first.") == set()
    assert missing_anchors(anchors, "Pull requests are reviewed on Mondays.") == {
        "never push",
        "always open",
    }
    assert missing_anchors(extract_anchors("不要直接推送到主分支"), "千万不要推送主分支") == set()


def test_ordinary_words_are_not_constraints():
    assert extract_anchors("The only option left is the late train") == set()
    assert extract_anchors("Not only fast but cheap, if only it shipped") == set()
    assert extract_anchors("The user prefers tea. Use it.") == set()
    # a contraction is not a name, and a marker does not reach across a line or a clause
    assert extract_anchors("Don't know yet") == {"never know"}
    assert extract_anchors("只可以\nAlice") == {"alice"}
    assert "always deploy" not in extract_anchors("We must.\nDeploy tonight")


def test_decision_phrase_anchors_name_the_decision():
    text = "Alice chose PostgreSQL because ops already runs it"
    assert {"decided postgresql", "because ops"} <= extract_anchors(text)
    assert {"decided postgresql", "because ops"} <= extract_anchors(text, include_markers=False)
    assert "decided take" in extract_anchors("Owen decided to take the remote job offer")
    bucket = "For rate limiting: a token bucket, not a fixed window, because it smooths bursts"
    assert "because smooth" in extract_anchors(bucket)
    # the layer-2 coverage check leaves the phrase anchors out (behaviour §4.3)
    assert extract_anchors(bucket, include_phrases=False) == {"because"}


def test_identifiers_next_to_cjk_characters():
    # Chinese has no spaces: an id, a version or an issue number touches the characters
    assert extract_anchors("张伟负责FACT-017，修复了#42号问题，升级到v2.3.1版本") == {
        "张伟",  # a name (document.text.cjk)
        "fact-017",
        "#42",
        "v2.3.1",
    }
    assert extract_anchors("数据库端口是5433，预算200元") == {"5433", "200元"}
