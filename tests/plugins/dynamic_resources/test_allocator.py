"""The structured allocator against upstream's table (``k8s.io/dynamic-resource-allocation/
structured/internal/allocatortesting/allocator_testing.go`` ``TestAllocator``, run there for
the incubating allocator), case names kept. ``CASES`` says which cases are ported; the module
docstring of ``cases_*.py`` lists what is left out and why."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from scheduler.model.dra import (
    AllocationResult,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
)
from scheduler.model.dra_cel import SelectorCache
from scheduler.plugins.dynamic_resources.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
)
from tests.plugins.dynamic_resources.builders import Case
from tests.plugins.dynamic_resources.cases_core import CASES as CORE
from tests.plugins.dynamic_resources.cases_more import CASES as MORE
from tests.plugins.dynamic_resources.cases_partitionable import CASES as PARTITIONABLE
from tests.plugins.dynamic_resources.cases_pools import CASES as POOLS
from tests.plugins.dynamic_resources.cases_prioritized import CASES as PRIORITIZED
from tests.plugins.dynamic_resources.cases_sharing import CASES as SHARING
from tests.plugins.dynamic_resources.cases_taints import CASES as TAINTS

FIXED_SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


def _canonical(result: AllocationResult) -> tuple[Any, ...]:
    results = [
        replace(r, share_id=FIXED_SHARE_ID if r.share_id is not None else None)
        for r in result.results
    ]
    return result.node_selector, Counter(map(repr, results)), tuple(result.config)


def run_case(case: Case) -> None:
    classes = {c.name: c for c in map(DeviceClass.parse, case.classes)}
    slices = [ResourceSlice.parse(s) for s in case.slices]
    claims = [ResourceClaim.parse(c) for c in case.claims]
    state = AllocatedState(
        devices=frozenset(case.allocated),
        shared_devices=frozenset(case.shared),
        aggregated_capacity=case.aggregated,
    )
    allocator = Allocator(state, classes, slices, SelectorCache(), lambda: FIXED_SHARE_ID)
    node_name, labels = case.node
    if case.error is not None:
        with pytest.raises(AllocationError) as err:
            allocator.allocate(node_name, labels, claims)
        assert case.error in str(err.value)
        return
    got = allocator.allocate(node_name, labels, claims)
    if not case.expect:
        assert not got, got
        return
    assert got is not None, "no allocation"
    want = [
        AllocationResult(tuple(e.results), tuple(e.config), e.node_selector) for e in case.expect
    ]
    assert [_canonical(r) for r in got] == [_canonical(r) for r in want]


CASES = {**CORE, **MORE, **PRIORITIZED, **TAINTS, **SHARING, **POOLS, **PARTITIONABLE}


@pytest.mark.parametrize("name", sorted(CASES))
def test_allocator(name: str) -> None:
    run_case(CASES[name])
