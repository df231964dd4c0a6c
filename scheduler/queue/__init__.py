"""The scheduling queue: activeQ, backoffQ, the unschedulable pool and the nominator."""

from scheduler.queue.nominator import Nominator
from scheduler.queue.queued_pod import QueueablePod, QueuedPodInfo
from scheduler.queue.scheduling_queue import SchedulingQueue, Strategy

__all__ = [
    "Nominator",
    "QueueablePod",
    "QueuedPodInfo",
    "SchedulingQueue",
    "Strategy",
]
