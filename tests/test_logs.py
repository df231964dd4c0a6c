"""Logging: in JSON mode every logger's lines are JSON naming the logger (ours, kopf's,
urllib3's, the Kubernetes client's), and ``-v`` maps as kube-scheduler's klog verbosity."""

from __future__ import annotations

import json
import logging

import pytest
import structlog

from scheduler import logs


def lines(err: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in err.splitlines()]


def test_json_mode_renders_every_loggers_lines_as_json_with_the_loggers_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logs.configure("info", json=True)
    structlog.get_logger("scheduler.app").info("Scheduler started", port=10259)
    for name in ("kopf.objects", "urllib3.connectionpool", "kubernetes.client.rest"):
        logging.getLogger(name).warning("something from %s", name)
    got = lines(capsys.readouterr().err)
    assert [(line["logger"], line["level"]) for line in got] == [
        ("scheduler.app", "info"), ("kopf.objects", "warning"),
        ("urllib3.connectionpool", "warning"), ("kubernetes.client.rest", "warning")]
    assert got[0]["port"] == 10259 and got[1]["event"] == "something from kopf.objects"
    assert all("timestamp" in line for line in got)


def test_the_other_loggers_stay_at_warning_unless_asked(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logs.configure("debug", json=True)
    logging.getLogger("urllib3.connectionpool").info("Starting new HTTPS connection")
    structlog.get_logger("scheduler.cycle").debug("Attempting to schedule pod")
    assert [line["logger"] for line in lines(capsys.readouterr().err)] == ["scheduler.cycle"]


@pytest.mark.parametrize(("verbosity", "ours", "others"), [
    pytest.param(0, logging.INFO, logging.WARNING, id="0: the steady state"),
    pytest.param(2, logging.INFO, logging.WARNING, id="2: kube-scheduler's usual setting"),
    pytest.param(4, logging.DEBUG, logging.INFO, id="4: debugging"),
    pytest.param(6, logging.DEBUG, logging.DEBUG, id="6: the API requests, as client-go"),
])
def test_verbosity_maps_onto_levels(verbosity: int, ours: int, others: int) -> None:
    assert logs.levels_for_verbosity(verbosity) == (ours, others)
