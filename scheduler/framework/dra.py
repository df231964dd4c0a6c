"""The DRA objects a plugin reads, and the claims it allocates in flight (upstream's
``fwk.SharedDRAManager``: its ResourceClaimTracker, ResourceSliceLister, DeviceClassLister and
DeviceClassResolver, in ``k8s.io/kube-scheduler/framework/listers.go``).

The watches write into it as they deliver, from their own thread, as upstream's informers write
into its assume cache; the DynamicResources plugin reads it at PreFilter and writes into it at
Reserve, Unreserve and PreBind, from the scheduling and binding threads. Every read returns
a value that no later write changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from scheduler.model.dra import (
    AllocationResult,
    DeviceClass,
    DeviceID,
    DeviceTaintRule,
    ResourceClaim,
    ResourceSlice,
)


@dataclass(frozen=True, slots=True)
class AllocatedDevices:
    """Devices that allocated claims and claims in flight hold (``GatherAllocatedState``).

    ``devices`` are held whole; ``shared_devices`` have at least one share (a result with a
    ``shareID``), and ``consumed`` sums the capacity their shares consume. Results with admin
    access hold nothing, as upstream's ``foreachAllocatedDevice`` skips them.
    """

    devices: frozenset[DeviceID] = frozenset()
    shared_devices: frozenset[DeviceID] = frozenset()
    consumed: Mapping[DeviceID, Mapping[str, int]] = field(default_factory=dict)

    def is_allocated(self, device_id: DeviceID) -> bool:
        """``IsDeviceAllocated``: held whole, by a share, or with capacity consumed."""
        return (device_id in self.devices or device_id in self.shared_devices
                or device_id in self.consumed)


class DraManager(Protocol):
    """What the DynamicResources plugin reads and tracks, shared by every profile."""

    def claim(self, namespace: str, name: str) -> ResourceClaim | None:
        """The claim as the watch last delivered it, or as assumed after this scheduler's
        own API call until the watch delivers that version or a newer one (``Get``)."""
        ...

    def claims(self) -> Sequence[ResourceClaim]:
        """Every claim, read as :meth:`claim` reads one (``List``)."""
        ...

    def allocated(self) -> AllocatedDevices:
        """Devices held by allocated claims, in-flight allocations included."""
        ...

    def slices(self) -> Sequence[ResourceSlice]:
        """Every ResourceSlice, without DeviceTaintRules applied (the plugin applies
        :meth:`taint_rules`, as upstream's slice tracker does)."""
        ...

    def taint_rules(self) -> Sequence[DeviceTaintRule]: ...

    @property
    def slices_generation(self) -> int:
        """Changes whenever a slice or a DeviceTaintRule changes: a key for what a plugin
        keeps of the slices between cycles."""
        ...

    def device_class(self, name: str) -> DeviceClass | None: ...

    def device_classes(self) -> Mapping[str, DeviceClass]: ...

    @property
    def classes_generation(self) -> int:
        """Changes whenever a DeviceClass changes."""
        ...

    def class_for_extended_resource(self, resource_name: str) -> DeviceClass | None:
        """The DeviceClass serving an extended resource (``DeviceClassResolver``): the one
        naming it in ``spec.extendedResourceName``, else the class ``c`` for the implicit
        ``deviceclass.resource.kubernetes.io/c``; of several, the newest wins."""
        ...

    def signal_pending_allocation(self, claim: ResourceClaim) -> None:
        """``SignalClaimPendingAllocation``: ``claim`` (with its allocation) will be written
        in the binding cycle; its devices count as allocated from now on. A second signal
        for the same claim UID shares the in-flight allocation."""
        ...

    def pending_allocation(self, claim_uid: str) -> AllocationResult | None:
        """``GetPendingAllocation``."""
        ...

    def remove_pending_allocation(self, claim_uid: str, force: bool = False) -> bool:
        """``MaybeRemoveClaimPendingAllocation``: drops one sharer (all with ``force``);
        True when the in-flight allocation is gone."""
        ...

    def assume_after_api_call(self, claim: ResourceClaim) -> None:
        """``AssumeClaimAfterAPICall``: the claim as this scheduler just wrote it."""
        ...

    def restore_assumed(self, namespace: str, name: str) -> None:
        """``AssumedClaimRestore``: the write failed; read the watch's version again."""
        ...
