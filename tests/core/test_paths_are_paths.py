"""Paths are paths, and data (digests, base64, keys), API routes and markup fragments are not
(behaviour §4.4)."""

from __future__ import annotations

import pytest

from wm_langgraph.document import merge_working_memory, parse_working_memory, render_working_memory
from wm_langgraph.document.guards import SectionOp, guard_files_context
from wm_langgraph.document.text import MAX_PATH_CHARS, extract_paths, is_path_like, path_listed

BLOB = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5E"
JUNK = [
    f"data:image/png;base64,{BLOB}",
    f"{BLOB[:40]}/{BLOB[40:]}",
    BLOB * 3,
    "sha256/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "sha1:2fd4e1c67a2d28fced849ee1bb76e7391b93eb12/x.py",
    "objects/9f/86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    "blob:https://example.com/550e8400-e29b-41d4-a716-446655440000",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "sk-proj-AbCdEf0123456789GhIjKlMnOpQrStUvWxYz/QWERTY12345678asdfgh",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
]
ROUTES = ["/healthz", "/orders/1", "/api/v2/users", "/users/42/orders", "/td", "/v1/charges"]
FRAGMENTS = ["</td>", "<br/>", "</div></td>", "tests/", "src/", "docs/"]
STILL_PATHS = [
    "/etc/hosts",
    "/var/log/app.log",
    "/tmp",
    "/home/me/project/main.py",
    "/static/app.js",
    "./tests/",
    "tests/core/",
    "src/utils",
    "api/v2",
    "assets/logo.png",
    "https://example.com/a/b?x=1",
    "https://github.com/org/repo/blob/main/src/app.py",
    "packages/9f86d08/index.js",
]


@pytest.mark.parametrize("token", JUNK)
def test_junk_is_not_a_path(token):
    assert extract_paths(f"got {token} here") == []


@pytest.mark.parametrize("token", ROUTES + FRAGMENTS)
def test_routes_markup_and_bare_directories_are_not_paths(token):
    assert extract_paths(f"see {token} here") == []


@pytest.mark.parametrize("token", STILL_PATHS)
def test_real_paths_are_still_paths(token):
    assert extract_paths(f"see {token} here") == [token]


def test_a_routes_file_is_a_path_but_not_the_route():
    text = "GET /orders/1 is served by src/routes/orders.py"
    assert extract_paths(text) == ["src/routes/orders.py"]


def test_a_path_longer_than_the_cap_is_not_a_path():
    deep = "/".join(["dir"] * 200) + "/file.py"
    assert len(deep) > MAX_PATH_CHARS
    assert not is_path_like(deep)
    assert extract_paths(deep) == []


def test_a_long_url_is_kept_whole_up_to_the_cap():
    url = "https://example.com/blog/2024/03/" + "-".join(["long", "article", "title"] * 12)
    assert extract_paths(url) == [url]
    too_long = url + "-and-more" * (MAX_PATH_CHARS // 9)
    assert extract_paths(too_long) == []
    assert extract_paths("https://example.com/?q=" + "y" * 80) == []  # a payload, not a link


def test_path_listed_is_path_boundary_matching():
    assert path_listed("a.py", "- src/a.py: entry")
    assert not path_listed("a.py", "- src/data.py: data")
    assert not path_listed("config.yaml", "- config.yaml.bak")
    assert path_listed("./src/a.py", "src/a.py")
    assert not path_listed("src/a.py", "a.py")


def test_the_files_guard_never_protects_an_entry_that_is_not_a_path():
    old = f"- src/app.py: entry\n- logo: {BLOB * 20}\n- /healthz returns 200"
    op = SectionOp("UPDATE", content="- src/app.py: entry point\n- logo.png: the logo")
    assert guard_files_context(old, op).op == op


def test_a_junk_entry_can_be_replaced_through_the_merge():
    old = render_working_memory({"Files & Context": f"- src/app.py\n- raw {BLOB[:40]}/{BLOB[40:]}"})
    ops = {"Files & Context": {"op": "UPDATE", "content": "- src/app.py: entry"}}
    text = merge_working_memory(old, ops).text
    assert parse_working_memory(text)["Files & Context"] == "- src/app.py: entry"


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ("wrote $HOME/.config/app.toml", "$HOME/.config/app.toml"),
        ("see ${XDG_CONFIG_HOME}/wm/settings.toml.", "${XDG_CONFIG_HOME}/wm/settings.toml"),
        ("cd $PROJECT_ROOT/src/app/ and rerun", "$PROJECT_ROOT/src/app/"),
    ],
)
def test_a_path_under_an_environment_variable_keeps_the_variable(text, path):
    # Without the variable the entry names a different file ("HOME/.config/app.toml").
    assert extract_paths(text) == [path]


@pytest.mark.parametrize("text", ["costs $5/month", "$x/y", "echo $HOME"])
def test_a_dollar_sign_alone_does_not_make_a_path(text):
    assert extract_paths(text) == []
