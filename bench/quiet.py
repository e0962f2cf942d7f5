"""Quiet loggers while the bench runs (its entry points and worker processes)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["quiet_loggers"]


@contextmanager
def quiet_loggers(*names: str) -> Iterator[None]:
    """Only errors from these loggers while the bench runs; their levels restored after (the
    suite calls ``main`` in-process, and a logger left at ERROR hides later tests' warnings)."""
    saved = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
