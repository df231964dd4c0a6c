"""Events per second the pod watch path consumes: our Reflector (list + watch, plain JSON)
and, optionally, the intake behind it, against the fake API server in
../shared/tools/kopf-event-rate (the same server the kopf measurement uses).

    python3 fake_apiserver.py 20000 20000 PORT &     # in ../shared/tools/kopf-event-rate
    python bench/watch_rate.py PORT 20000 [--intake]  # the number of watch events to await
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kubernetes import client as k8s

from scheduler import logs
from scheduler.config import default_config
from scheduler.framework.ports import NullPorts
from scheduler.intake import Intake
from scheduler.operator.kubeapi import KubeApi
from scheduler.operator.reflector import Reflector
from scheduler.plugins.registry import default_registry
from scheduler.scheduler import Scheduler


def main() -> None:
    port, events = int(sys.argv[1]), int(sys.argv[2])
    with_intake = "--intake" in sys.argv
    logs.configure("warning")
    configuration = k8s.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    api = KubeApi(k8s.ApiClient(configuration), qps=0)
    registry = default_registry()
    ports = NullPorts()
    intake = Intake(Scheduler(default_config(registry), registry, binder=ports, reporter=ports))
    seen = 0
    done = threading.Event()
    t_list = time.perf_counter()
    t_watch = 0.0

    def on_event(kind: str | None, obj: dict[str, Any]) -> None:
        nonlocal seen
        if with_intake:
            intake.on_pod(kind, obj)
        seen += 1
        if seen >= events:
            done.set()

    def on_listed(items: list[dict[str, Any]]) -> None:
        nonlocal t_watch
        if with_intake:
            intake.resync_pods(items)
        print(f"listed {len(items)} pods in {time.perf_counter() - t_list:.2f} s")
        t_watch = time.perf_counter()

    reflector = Reflector(api, "/api/v1/pods", name="pods", on_event=on_event,
                          on_listed=on_listed)
    reflector.start()
    done.wait(600)
    elapsed = time.perf_counter() - t_watch
    print(f"{'reflector+intake' if with_intake else 'reflector'}: {seen} watch events in "
          f"{elapsed:.2f} s = {seen / elapsed:,.0f} events/s")
    reflector.stop()


if __name__ == "__main__":
    main()
