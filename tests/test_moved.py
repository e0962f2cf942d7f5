"""The module paths of the earlier layout keep importing for this release: the same module
object as the new home, with a deprecation warning that names it (wm_langgraph/_moved.py)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import wm_langgraph
from wm_langgraph._moved import MOVED_MODULES
from wm_langgraph.errors import WorkingMemoryDeprecationWarning

# Old packages whose home is not a package: engine and adapters (their modules moved one by
# one) and models (its contents are writer.binding now) are stand-in packages.
STAND_INS = ["wm_langgraph.adapters", "wm_langgraph.engine", "wm_langgraph.models"]
MODULES = sorted(
    (old, new) for old, new in MOVED_MODULES.items() if new is not None and old not in STAND_INS
)


def _forget(old: str) -> None:
    """Drop ``old`` (and the old paths under it) from ``sys.modules`` and from its parent
    package, so that it is imported anew."""
    for name in [n for n in sys.modules if n == old or n.startswith(f"{old}.")]:
        if name in MOVED_MODULES:
            del sys.modules[name]
    parent, _, child = old.rpartition(".")
    holder = sys.modules.get(parent)
    # (a parent that is an alias of a real module, such as core for document, keeps its own)
    if holder is not None and holder.__name__ == parent and child in vars(holder):
        delattr(holder, child)


@pytest.mark.parametrize(("old", "new"), MODULES)
def test_an_old_module_path_is_the_new_module_with_a_warning(old, new):
    expected = importlib.import_module(new)
    _forget(old)
    with pytest.warns(WorkingMemoryDeprecationWarning) as caught:
        module = importlib.import_module(old)
    assert module is expected
    messages = [str(w.message) for w in caught]
    assert f"{old} moved to {new}: import it from there" in " ".join(messages)
    assert all(w.filename == __file__ for w in caught)  # pointed at the importing line
    assert module.__spec__.name == new  # the module keeps its own spec
    assert sys.modules[old] is expected


def test_from_import_of_an_old_path_works():
    _forget("wm_langgraph.core")
    with pytest.warns(WorkingMemoryDeprecationWarning, match=r"moved to wm_langgraph\.document"):
        from wm_langgraph.core.text import extract_anchors
    from wm_langgraph.document.text import extract_anchors as current

    assert extract_anchors is current


def test_a_documented_constant_through_an_old_path():
    from wm_langgraph.document import protocol

    with pytest.warns(WorkingMemoryDeprecationWarning):
        old = importlib.import_module("wm_langgraph.core.protocol")
    assert old.TARGET_WARN_SHARE is protocol.TARGET_WARN_SHARE


@pytest.mark.parametrize("old", STAND_INS)
def test_an_old_package_without_a_package_home_is_a_stand_in(old):
    module = importlib.import_module(old)
    assert module.__name__ == old
    assert module.__path__ == []
    children = sorted(n.rpartition(".")[2] for n in MOVED_MODULES if n.startswith(f"{old}."))
    for child in children:
        new = MOVED_MODULES[f"{old}.{child}"]
        assert new is not None
        _forget(f"{old}.{child}")
        with pytest.warns(WorkingMemoryDeprecationWarning, match=f"moved to {new}"):
            assert getattr(module, child) is importlib.import_module(new)


def test_old_models_names_are_read_from_writer_binding():
    from wm_langgraph.writer import binding

    models = importlib.import_module("wm_langgraph.models")
    with pytest.warns(WorkingMemoryDeprecationWarning, match="wm_langgraph.writer.binding"):
        assert models.bind_update_tool is binding.bind_update_tool
    with pytest.warns(WorkingMemoryDeprecationWarning) as caught:
        from wm_langgraph.models import resolve_default_model
    assert resolve_default_model is binding.resolve_default_model
    assert len(caught) == 1


def test_a_stand_in_has_no_other_names():
    engine = importlib.import_module("wm_langgraph.engine")
    with pytest.raises(AttributeError, match=r"engine\.memory -> wm_langgraph\.memory"):
        _ = engine.no_such_module


def test_old_private_modules_are_not_kept():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("wm_langgraph.engine._binding")
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("wm_langgraph.core._anchors")


def test_an_old_package_is_an_attribute_of_the_package_too():
    _forget("wm_langgraph.core")
    with pytest.warns(WorkingMemoryDeprecationWarning, match="wm_langgraph.document"):
        core = wm_langgraph.core  # type: ignore[attr-defined]
    assert core is importlib.import_module("wm_langgraph.document")


def test_every_old_public_path_of_the_earlier_layout_is_kept():
    """The old layout's public (non-underscore) modules, from the last commit before the move."""
    root = Path(__file__).resolve().parents[1]
    listed = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", "7d28274^", "wm_langgraph"],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
    )
    if listed.returncode != 0:
        pytest.skip("no git history here (an sdist)")
    old = set()
    for path in listed.stdout.split():
        parts = path.removesuffix(".py").split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if (
            path.endswith(".py")
            and len(parts) > 1
            and parts[1] in {"core", "engine", "models", "adapters"}
            and not any(p.startswith("_") for p in parts[1:])
        ):
            old.add(".".join(parts))
    assert old == set(MOVED_MODULES)


def test_a_fresh_interpreter_imports_old_paths():
    code = (
        "import warnings; warnings.filterwarnings('error', message=r'wm_langgraph\\..* moved to');"
        "import wm_langgraph.document.text as new\n"
        "try:\n    import wm_langgraph.core.text\n"
        "except DeprecationWarning as w:\n    print(w)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "wm_langgraph.core moved to wm_langgraph.document" in out.stdout
