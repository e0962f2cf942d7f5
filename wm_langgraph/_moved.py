"""The package's old module paths, importable for one more release, with a warning.

The package was laid out anew by concern (``core`` became ``document``, ``engine`` was split
into ``storage``, ``context``, ``writer``, ``phase1``, ``phase2``, ``recall`` and the facades,
``models`` went to ``writer``, ``adapters`` to ``cli`` and ``middleware``). Every old public
module path in :data:`MOVED_MODULES` still imports, through one import hook
(:class:`MovedModuleFinder`, installed by ``wm_langgraph/__init__.py``):

- an old module path gives **the same module object** as its new home
  (``wm_langgraph.core.text is wm_langgraph.document.text``), with a
  :class:`~wm_langgraph.errors.WorkingMemoryDeprecationWarning` naming the new home;
- an old package whose home is not a package (``engine``, ``adapters``: their modules moved
  one by one; ``models``: its contents are ``writer.binding`` now) is a small stand-in package:
  its old submodules import as above, and a name read from it is read from its home, with the
  warning.

Underscore (private) modules of the old layout are not kept.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from wm_langgraph.errors import WorkingMemoryDeprecationWarning

__all__ = ["MOVED_MODULES", "MovedModuleFinder", "install", "warn_moved"]

MOVED_MODULES: dict[str, str | None] = {
    "wm_langgraph.core": "wm_langgraph.document",
    "wm_langgraph.core.compaction": "wm_langgraph.document.compaction",
    "wm_langgraph.core.guards": "wm_langgraph.document.guards",
    "wm_langgraph.core.merge": "wm_langgraph.document.merge",
    "wm_langgraph.core.protocol": "wm_langgraph.document.protocol",
    "wm_langgraph.core.sections": "wm_langgraph.document.sections",
    "wm_langgraph.core.text": "wm_langgraph.document.text",
    "wm_langgraph.core.tokens": "wm_langgraph.document.tokens",
    "wm_langgraph.engine": None,
    "wm_langgraph.engine.archives": "wm_langgraph.storage.archives",
    "wm_langgraph.engine.assemble": "wm_langgraph.context.assemble",
    "wm_langgraph.engine.commit": "wm_langgraph.phase2.graph",
    "wm_langgraph.engine.config": "wm_langgraph.config",
    "wm_langgraph.engine.llm": "wm_langgraph.writer.generate",
    "wm_langgraph.engine.longterm": "wm_langgraph.storage.longterm",
    "wm_langgraph.engine.memory": "wm_langgraph.memory",
    "wm_langgraph.engine.persistence": "wm_langgraph.storage.sqlite",
    "wm_langgraph.engine.prompts": "wm_langgraph.writer.prompts",
    "wm_langgraph.engine.recall": "wm_langgraph.recall.tools",
    "wm_langgraph.engine.render": "wm_langgraph.messages",
    "wm_langgraph.engine.runner": "wm_langgraph.phase2.runner",
    "wm_langgraph.engine.state": "wm_langgraph.state",
    "wm_langgraph.engine.window": "wm_langgraph.phase1.window",
    "wm_langgraph.models": "wm_langgraph.writer.binding",
    "wm_langgraph.models.echo": "wm_langgraph.testing",
    "wm_langgraph.models.offline": "wm_langgraph.writer.offline.model",
    "wm_langgraph.models.openai": "wm_langgraph.writer.openai",
    "wm_langgraph.adapters": None,
    "wm_langgraph.adapters.cli": "wm_langgraph.cli.main",
    "wm_langgraph.adapters.demo": "wm_langgraph.cli.demo",
    "wm_langgraph.adapters.middleware": "wm_langgraph.middleware",
}
"""Every old public module path and its new home (None: a package whose modules moved one by
one, with no home of its own)."""

_IMPORTLIB_DIR = os.path.dirname(importlib.__file__)


def _outside_frame_level() -> int:
    """The ``stacklevel`` (for a ``warnings.warn`` in the caller) of the first frame that is
    neither this module, the package's ``__init__`` nor the import machinery: the user's
    ``import`` or attribute access, which the warning should point at.

    ``warnings.warn`` itself passes over the frames of ``importlib._bootstrap`` when it counts
    levels, so those are not counted here either.
    """
    own = {__file__, os.path.join(os.path.dirname(__file__), "__init__.py")}
    frame = sys._getframe(2)
    level = 2
    while frame is not None:
        name = frame.f_code.co_filename
        bootstrap = "importlib" in name and "_bootstrap" in name
        if not (bootstrap or name in own or os.path.dirname(name) == _IMPORTLIB_DIR):
            break
        if not bootstrap:
            level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level


def warn_moved(old: str, new: str) -> None:
    """Warn that ``old`` (a name or module path) moved to ``new``, at the user's line.

    ``from package import name`` looks ``name`` up twice (the import machinery's
    ``_handle_fromlist`` checks it exists, then the statement reads it): only the second
    look warns.
    """
    looker = sys._getframe(2).f_code
    if looker.co_name == "_handle_fromlist" and "_bootstrap" in looker.co_filename:
        return
    warnings.warn(
        f"{old} moved to {new}: import it from there "
        "(the old path will be removed in a later release)",
        WorkingMemoryDeprecationWarning,
        stacklevel=_outside_frame_level(),
    )


def _children(package: str) -> dict[str, str | None]:
    prefix = f"{package}."
    return {
        old[len(prefix) :]: new
        for old, new in MOVED_MODULES.items()
        if old.startswith(prefix) and "." not in old[len(prefix) :]
    }


def _stand_in(name: str, home: str | None) -> ModuleType:
    """A package for the old path ``name``: its old submodules import through the hook; any
    other name is read from ``home`` (with a warning)."""
    children = _children(name)
    moved = ", ".join(f"{name}.{child} -> {new}" for child, new in children.items())
    module = ModuleType(name, f"Moved: {moved}." if home is None else f"Moved to {home}.")

    def __getattr__(attribute: str) -> Any:  # noqa: N807 - a module's attribute hook
        if attribute in children:
            return importlib.import_module(f"{name}.{attribute}")
        if home is None or attribute.startswith("__"):
            raise AttributeError(f"module {name!r} has no attribute {attribute!r} ({moved})")
        warn_moved(f"{name}.{attribute}", f"{home}.{attribute}")
        return getattr(importlib.import_module(home), attribute)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__path__ = []
    return module


class _MovedLoader(importlib.abc.Loader):
    """Loads an old path as its new home's module object (or a stand-in package)."""

    def __init__(self, home: str | None, package: bool) -> None:
        self._home = home
        self._package = package
        self._real_spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        """The new home's module itself; a stand-in package where the home is not one."""
        if self._home is not None:
            module = importlib.import_module(self._home)
            if hasattr(module, "__path__") or not self._package:
                warn_moved(spec.name, self._home)
                self._real_spec = module.__spec__
                return module
        return _stand_in(spec.name, self._home)

    def exec_module(self, module: ModuleType) -> None:
        """Nothing runs; the import machinery set ``__spec__`` to the old path's: put the
        module's own back."""
        if self._real_spec is not None:
            module.__spec__ = self._real_spec


class MovedModuleFinder(importlib.abc.MetaPathFinder):
    """Finds the old module paths of :data:`MOVED_MODULES` (and nothing else)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec for an old module path; None for every other name."""
        if fullname not in MOVED_MODULES:
            return None
        package = bool(_children(fullname))
        return importlib.machinery.ModuleSpec(
            fullname,
            _MovedLoader(MOVED_MODULES[fullname], package),
            is_package=package,
        )


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): an old directory left behind with only
    ``__pycache__`` in it must not be found as a namespace package instead."""
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
