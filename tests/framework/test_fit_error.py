"""The aggregated "0/N nodes are available" message, word for word as upstream builds it."""

from __future__ import annotations

import numpy as np
import pytest

from scheduler.framework.fit_error import fit_error_message, truncate_note
from scheduler.framework.interface import Diagnosis


def rows(*r: int) -> np.ndarray:
    return np.asarray(r, dtype=np.int64)


def diagnosis(num: int, reasons: list[tuple[np.ndarray, str]], pre: str = "",
              post: str = "") -> Diagnosis:
    d = Diagnosis(codes=np.zeros(num, dtype=np.uint8), num_all_nodes=num)
    d.reasons = [(r, reason, "P") for r, reason in reasons]
    d.pre_filter_msg = pre
    d.post_filter_msg = post
    return d


@pytest.mark.parametrize(
    ("diag", "expected"),
    [
        pytest.param(
            diagnosis(5, [(rows(0, 1), "Insufficient cpu"),
                          (rows(2, 3, 4), "node(s) didn't match Pod's node affinity/selector")]),
            "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) didn't match Pod's node "
            "affinity/selector.",
            id="reasons are counted per node and listed in lexicographic order",
        ),
        pytest.param(
            diagnosis(12, [(rows(*range(10)), "Insufficient memory"),
                           (rows(10, 11), "Insufficient cpu")]),
            "0/12 nodes are available: 10 Insufficient memory, 2 Insufficient cpu.",
            id="counts sort as strings so 10 comes before 2 as upstream",
        ),
        pytest.param(
            diagnosis(1, [(rows(0), "Insufficient cpu"), (rows(0), "Insufficient memory")]),
            "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.",
            id="a node with two reasons counts once for each",
        ),
        pytest.param(
            diagnosis(3, [(rows(0, 1, 2), "x")], pre="pod has unbound immediate claims"),
            "0/3 nodes are available: pod has unbound immediate claims.",
            id="a PreFilter rejection replaces the per-node reasons",
        ),
        pytest.param(
            diagnosis(1, [(rows(0), "Insufficient cpu")],
                      post="preemption: 0/1 nodes are available: 1 No preemption victims "
                           "found for incoming pod."),
            "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available:"
            " 1 No preemption victims found for incoming pod.",
            id="the PostFilter message follows after a space",
        ),
    ],
)
def test_fit_error_message(diag: Diagnosis, expected: str) -> None:
    assert fit_error_message(diag) == expected


def test_long_notes_are_cut_to_the_event_limit_with_an_ellipsis() -> None:
    note = truncate_note("x" * 2000)
    assert len(note.encode()) <= 1024 and note.endswith(" ...")
    assert truncate_note("short") == "short"
