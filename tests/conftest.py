"""Every test starts with the logging set-up it found: a test that runs the command line
(which sets up logging for the process) leaves nothing behind for the next."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog

from scheduler.logs import HANDLER_NAME


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    structlog_config = structlog.get_config()
    yield
    for handler in [h for h in root.handlers if h.name == HANDLER_NAME]:
        root.removeHandler(handler)
    root.setLevel(level)
    structlog.configure(**structlog_config)
