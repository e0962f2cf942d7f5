"""One error hierarchy: every exception of the package derives from WorkingMemoryError, keeps the
builtin base it had, and is still importable from where it was defined before."""

from __future__ import annotations

import importlib

import pytest

from wm_langgraph import errors
from wm_langgraph.errors import (
    CallRefusedError,
    CallTimeoutError,
    ConflictingMiddlewareError,
    ContextLengthError,
    ContextOverflow,
    GenerationError,
    NoCheckpointerError,
    NoStoreError,
    ToolCallingNotSupportedError,
    WorkingMemoryDeprecationWarning,
    WorkingMemoryError,
)

BUILTIN_BASES = {
    NoStoreError: ValueError,
    NoCheckpointerError: ValueError,
    ConflictingMiddlewareError: RuntimeError,
    ToolCallingNotSupportedError: TypeError,
    GenerationError: Exception,
    ContextLengthError: GenerationError,
    CallTimeoutError: Exception,
    CallRefusedError: Exception,
}

OLD_HOMES = [
    ("wm_langgraph.storage.keys", "NoStoreError"),
    ("wm_langgraph.storage.archives", "NoStoreError"),
    ("wm_langgraph.integration.binding", "ConflictingMiddlewareError"),
    ("wm_langgraph.writer.binding", "ToolCallingNotSupportedError"),
    ("wm_langgraph.writer.calls", "GenerationError"),
    ("wm_langgraph.writer.calls", "ContextLengthError"),
    ("wm_langgraph.writer.calls", "CallTimeoutError"),
    ("wm_langgraph.writer.calls", "CallRefusedError"),
    ("wm_langgraph.writer.calls", "ErrorKindName"),
    ("wm_langgraph.writer.generate", "GenerationError"),
    ("wm_langgraph.writer.generate", "ContextLengthError"),
    ("wm_langgraph.writer.provider", "ContextOverflow"),
]


def test_every_exception_of_the_module_derives_from_the_base():
    classes = [
        value
        for name in errors.__all__
        if isinstance(value := getattr(errors, name), type)
        and issubclass(value, BaseException)
        and not issubclass(value, Warning)
    ]
    assert set(classes) == {WorkingMemoryError, *BUILTIN_BASES}
    for cls in classes:
        assert issubclass(cls, WorkingMemoryError), cls


@pytest.mark.parametrize(("cls", "base"), list(BUILTIN_BASES.items()))
def test_each_keeps_its_builtin_base(cls, base):
    assert issubclass(cls, base)
    assert issubclass(cls, WorkingMemoryError)


def test_an_except_on_the_old_builtin_base_still_catches():
    with pytest.raises(ValueError, match="no store"):
        raise NoStoreError("no store")
    with pytest.raises(WorkingMemoryError):
        raise ContextLengthError("too long", ContextOverflow(limit=10))


@pytest.mark.parametrize(("module", "name"), OLD_HOMES)
def test_old_import_locations_are_the_same_objects(module, name):
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


def test_generation_error_kinds():
    assert GenerationError("x").kind == "transient"
    assert GenerationError("x", kind="rejected").kind == "rejected"
    overflow = ContextOverflow(limit=8192, requested=9000)
    error = ContextLengthError("x", overflow)
    assert (error.kind, error.overflow) == ("overflow", overflow)


def test_the_deprecation_warning_is_a_deprecation_warning_not_an_error():
    assert issubclass(WorkingMemoryDeprecationWarning, DeprecationWarning)
    assert not issubclass(WorkingMemoryDeprecationWarning, WorkingMemoryError)
