"""kube-scheduler's "0/N nodes are available: ..." message (framework/types.go FitError.Error)."""

from __future__ import annotations

from collections import Counter

from scheduler.framework.interface import Diagnosis

NO_NODE_AVAILABLE = "0/{} nodes are available"
# Events are truncated to this many bytes by the API (pkg/apis/core/validation/events.go).
NOTE_LENGTH_LIMIT = 1024


def fit_error_message(diagnosis: Diagnosis) -> str:
    message = NO_NODE_AVAILABLE.format(diagnosis.num_all_nodes) + ":"
    if diagnosis.pre_filter_msg:
        message += f" {diagnosis.pre_filter_msg}."
    else:
        histogram = reason_histogram(diagnosis)
        if histogram:
            # Upstream sorts the "count reason" strings lexicographically ("10 ..." < "2 ...").
            entries = sorted(f"{count} {reason}" for reason, count in histogram.items())
            message += f" {', '.join(entries)}."
    if diagnosis.post_filter_msg:
        message += f" {diagnosis.post_filter_msg}"
    return message


def reason_histogram(diagnosis: Diagnosis) -> Counter[str]:
    """How many nodes gave each reason; a reason counts once per node."""
    histogram: Counter[str] = Counter()
    for rows, reason, _plugin in diagnosis.reasons:
        histogram[reason] += len(set(rows.tolist()))
    return histogram


def truncate_note(message: str) -> str:
    """Shorten to what an Event note may hold, ending in " ..." as upstream does."""
    encoded = message.encode()
    if len(encoded) <= NOTE_LENGTH_LIMIT:
        return message
    cut = encoded[: NOTE_LENGTH_LIMIT - 4].decode(errors="ignore")
    return cut + " ..."
