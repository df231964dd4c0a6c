"""Every test starts with the process's logging set-up (JSON lines, as the scheduler runs),
whatever the test before it configured: a test that runs the command line (which sets up
logging for the process) leaves nothing behind for the next. structlog's own default, a
console renderer that draws every logged exception with its locals, would make a test that
logs exceptions seconds slower."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog

from scheduler import logs
from scheduler.logs import HANDLER_NAME


def pytest_configure(config: pytest.Config) -> None:
    """structlog as the process sets it up; the standard library's root left to pytest."""
    level = logging.getLogger().level
    logs.configure("info", json=True)
    _forget_the_root_handler(level)


def _forget_the_root_handler(level: int) -> None:
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.name == HANDLER_NAME]:
        root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    level = logging.getLogger().level
    structlog_config = structlog.get_config()
    yield
    _forget_the_root_handler(level)
    structlog.configure(**structlog_config)
