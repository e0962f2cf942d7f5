"""Shared test fixtures. Tests are hermetic: sockets are disabled by pytest-socket (see
pyproject), only unix sockets are allowed."""
