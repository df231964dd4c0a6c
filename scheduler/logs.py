"""Logging set-up: JSON lines when not on a terminal, readable console output otherwise.

Our loggers are structlog's; kopf, urllib3 and the Kubernetes client log through the standard
library. Both are rendered by the same renderer, so in JSON mode every line is JSON, and every
line names its logger (``"logger": "scheduler.app"``, ``"logger": "kopf.objects"``).

The verbosity ``-v N`` maps as kube-scheduler's klog verbosity reads (the Kubernetes logging
conventions): up to 3 the steady state (info), from 4 debugging (debug), from 6 the API
requests themselves, which client-go logs at 6 and more and urllib3 logs at debug.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

import structlog

# The standard library's loggers are kept quieter than ours: kopf's and urllib3's info
# lines are per request or per object.
OTHERS_FLOOR = logging.WARNING


def levels_for_verbosity(verbosity: int) -> tuple[int, int]:
    """(our level, the other loggers' level) for kube-scheduler's ``-v``."""
    if verbosity >= 6:
        return logging.DEBUG, logging.DEBUG
    if verbosity >= 4:
        return logging.DEBUG, logging.INFO
    return logging.INFO, OTHERS_FLOOR


def level_named(name: str) -> int:
    numeric = logging.getLevelNamesMapping().get(name.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {name!r}")
    return numeric


class _Stderr:
    """sys.stderr as it is when a line is written, not when logging was set up (a test's
    captured stream, or a stream replaced since, is never written to once gone)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


HANDLER_NAME = "secondary-scheduler"
# One for every logger: structlog's PrintLogger keeps one lock per file object.
_STDERR = _Stderr()


class _NamedPrintLogger(structlog.PrintLogger):
    """structlog's PrintLogger that knows its name, for ``add_logger_name``."""

    def __init__(self, file: TextIO | Any, name: str) -> None:
        super().__init__(file)
        self.name = name


def _logger_factory(*args: Any) -> _NamedPrintLogger:
    return _NamedPrintLogger(_STDERR, str(args[0]) if args else "")


def configure(level: str | int = "info", *, json: bool | None = None,
              others: int | None = None) -> None:
    """Ours at ``level`` (a name or a number), the standard library's at ``others`` (by
    default ``level`` but no lower than warning)."""
    numeric = level if isinstance(level, int) else level_named(level)
    if json is None:
        json = not sys.stderr.isatty()
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    )
    shared: list[structlog.types.Processor] = [
        structlog.processors.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *shared,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=_logger_factory,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(_STDERR)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, renderer],
        foreign_pre_chain=shared,
    ))
    handler.name = HANDLER_NAME
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.name == HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(max(numeric, OTHERS_FLOOR) if others is None else others)
