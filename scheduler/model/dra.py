"""Dynamic Resource Allocation objects (``resource.k8s.io/v1``), parsed once from API dicts.

ResourceClaim, ResourceClaimTemplate, ResourceSlice, DeviceClass and DeviceTaintRule as the
scheduler reads them (``k8s.io/api/resource/v1/types.go``). Every type is frozen; quantities
are whole nano-units (``scheduler.model.quantity``); a malformed field raises
``InvalidSpecError`` naming its JSON path. Defaults are the API server's
(``allocationMode: ExactCount``, ``count: 1``, toleration ``operator: Equal``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.dra_cel import DeviceInput, parse_semver, quantity_value, semver_value
from scheduler.model.dra_cel import split_qualified_name as _split
from scheduler.model.errors import InvalidSpecError
from scheduler.model.fields import int_field as _int
from scheduler.model.fields import list_at as _list
from scheduler.model.fields import object_at as _obj
from scheduler.model.fields import opt_bool_field as _opt_bool
from scheduler.model.fields import required_str_field as _required_str
from scheduler.model.fields import str_field as _str
from scheduler.model.fields import str_list_field as _strings
from scheduler.model.quantity import parse_nanos
from scheduler.model.resources import is_extended_resource_name
from scheduler.model.selectors import NodeSelector, parse_node_selector

EXACT_COUNT = "ExactCount"
ALL = "All"
ALLOCATION_MODES = frozenset((EXACT_COUNT, ALL))
TAINT_NO_SCHEDULE = "NoSchedule"
TAINT_NO_EXECUTE = "NoExecute"
TAINT_NONE = "None"
TOLERATION_EQUAL = "Equal"
TOLERATION_EXISTS = "Exists"
# resourceapi.AllocationResultsMaxSize
ALLOCATION_RESULTS_MAX_SIZE = 32

# The implicit extended resource of every DeviceClass (resourceapi.ResourceDeviceClassPrefix).
DEVICE_CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


def is_dra_extended_resource_name(name: str) -> bool:
    """``schedutil.IsDRAExtendedResourceName``: an extended resource, or a DeviceClass's
    implicit one."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_RESOURCE_PREFIX)


# A device by (driver, pool, device name), as upstream's structured.DeviceID.
DeviceID = tuple[str, str, str]


# --- small parsing helpers ------------------------------------------------------------------


def _quantities(raw: Any, path: str) -> Mapping[str, int]:
    return {str(k): parse_nanos(v, f"{path}.{k}") for k, v in _obj(raw, path).items()}


# --- ResourceSlice --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceAttribute:
    """One typed attribute value: ``kind`` is ``int``, ``bool``, ``string`` or ``version``."""

    kind: str
    value: int | bool | str


_ATTRIBUTE_FIELDS = (("int", "int"), ("bool", "bool"), ("string", "string"), ("version", "version"))


# The Python type of each attribute kind's value, compared exactly (True is no int).
_ATTRIBUTE_TYPES: Mapping[str, type] = {"int": int, "bool": bool, "string": str, "version": str}


def _parse_attributes(raw: Any, path: str) -> dict[str, DeviceAttribute]:
    """A device's attributes. Nearly all have the plain shape (one value, of its kind's
    type): those are taken as they are, and only the others go through the checked parser,
    with the JSON path its error would name (5,000 devices of 13 attributes each cost a
    third of a second that way, half of it the paths)."""
    parsed: dict[str, DeviceAttribute] = {}
    for name, value in _obj(raw, path).items():
        if type(value) is dict and len(value) == 1:
            ((kind, one),) = value.items()
            if type(one) is _ATTRIBUTE_TYPES.get(kind):
                parsed[str(name)] = DeviceAttribute(kind, value[kind])
                continue
        parsed[str(name)] = _parse_attribute(value, f"{path}.{name}")
    return parsed


def _parse_attribute(raw: Any, path: str) -> DeviceAttribute:
    obj = _obj(raw, path)
    present = [(kind, obj[key]) for key, kind in _ATTRIBUTE_FIELDS if obj.get(key) is not None]
    if len(present) != 1:
        raise InvalidSpecError(path, "exactly one value must be specified")
    kind, value = present[0]
    ok = (
        isinstance(value, bool)
        if kind == "bool"
        else isinstance(value, int) and not isinstance(value, bool)
        if kind == "int"
        else isinstance(value, str)
    )
    if not ok or not isinstance(value, int | str):
        raise InvalidSpecError(f"{path}.{kind}", f"must be of type {kind}")
    return DeviceAttribute(kind, value)


@dataclass(frozen=True, slots=True)
class CapacityRequestPolicy:
    default: int | None = None
    valid_values: tuple[int, ...] = ()
    valid_range_min: int | None = None
    valid_range_max: int | None = None
    valid_range_step: int | None = None
    has_valid_range: bool = False


@dataclass(frozen=True, slots=True)
class DeviceCapacity:
    value: int
    request_policy: CapacityRequestPolicy | None = None


def _parse_policy(raw: Any, path: str) -> CapacityRequestPolicy | None:
    if raw is None:
        return None
    obj = _obj(raw, path)
    default = obj.get("default")
    values = _list(obj.get("validValues"), f"{path}.validValues")
    rng = obj.get("validRange")
    r = _obj(rng, f"{path}.validRange")

    def q(key: str) -> int | None:
        value = r.get(key)
        return None if value is None else parse_nanos(value, f"{path}.validRange.{key}")

    return CapacityRequestPolicy(
        default=None if default is None else parse_nanos(default, f"{path}.default"),
        valid_values=tuple(
            parse_nanos(v, f"{path}.validValues[{i}]") for i, v in enumerate(values)
        ),
        valid_range_min=q("min"),
        valid_range_max=q("max"),
        valid_range_step=q("step"),
        has_valid_range=rng is not None,
    )


def _parse_capacity(raw: Any, path: str) -> DeviceCapacity:
    obj = _obj(raw, path)
    if obj.get("value") is None:
        raise InvalidSpecError(f"{path}.value", "Required value")
    return DeviceCapacity(
        parse_nanos(obj["value"], f"{path}.value"),
        _parse_policy(obj.get("requestPolicy"), f"{path}.requestPolicy"),
    )


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str = ""
    effect: str = ""
    time_added: str | None = None


def parse_device_taint(raw: Any, path: str) -> DeviceTaint:
    obj = _obj(raw, path)
    return DeviceTaint(
        key=_required_str(obj, "key", path),
        value=_str(obj, "value", path),
        effect=_required_str(obj, "effect", path),
        time_added=obj.get("timeAdded"),
    )


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str = ""
    operator: str = TOLERATION_EQUAL
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: DeviceTaint) -> bool:
        """``resourceclaim.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", TOLERATION_EQUAL):
            return self.value == taint.value
        return self.operator == TOLERATION_EXISTS


def _parse_toleration(raw: Any, path: str) -> DeviceToleration:
    obj = _obj(raw, path)
    seconds = obj.get("tolerationSeconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
        raise InvalidSpecError(f"{path}.tolerationSeconds", "must be an integer")
    return DeviceToleration(
        key=_str(obj, "key", path),
        operator=_str(obj, "operator", path, TOLERATION_EQUAL) or TOLERATION_EQUAL,
        value=_str(obj, "value", path),
        effect=_str(obj, "effect", path),
        toleration_seconds=seconds,
    )


@dataclass(frozen=True, slots=True)
class CounterConsumption:
    counter_set: str
    counters: Mapping[str, int]


def _parse_counter_map(raw: Any, path: str) -> Mapping[str, int]:
    counters: dict[str, int] = {}
    for name, counter in _obj(raw, path).items():
        where = f"{path}.{name}"
        counters[str(name)] = parse_nanos(_obj(counter, where).get("value", "0"), f"{where}.value")
    return counters


@dataclass(frozen=True, slots=True)
class CounterSet:
    name: str
    counters: Mapping[str, int]


def _parse_counter_set(raw: Any, path: str) -> CounterSet:
    obj = _obj(raw, path)
    name = _required_str(obj, "name", path)
    return CounterSet(name, _parse_counter_map(obj.get("counters"), f"{path}.counters"))


@dataclass(frozen=True, slots=True)
class Device:
    """``resourceapi.Device``; ``cel`` is the device as the CEL ``device`` variable."""

    name: str
    attributes: Mapping[str, DeviceAttribute] = field(default_factory=dict)
    capacity: Mapping[str, DeviceCapacity] = field(default_factory=dict)
    consumes_counters: tuple[CounterConsumption, ...] = ()
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool | None = None
    taints: tuple[DeviceTaint, ...] = ()
    binds_to_node: bool = False
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    allow_multiple_allocations: bool | None = None
    # The device as CEL input, kept with the (immutable) device so that it and the selector
    # verdicts it memoizes outlive a scheduling cycle: slices change far less often than pods
    # are scheduled.
    _cel_inputs: dict[str, DeviceInput] = field(default_factory=dict, compare=False, repr=False)
    # ``cel_conversion_error``, once computed (a one-element list: the device is frozen).
    _conversion_error: list[str | None] = field(
        default_factory=list, compare=False, repr=False
    )

    def cel_conversion_error(self) -> str | None:
        """Why the device cannot be converted into CEL input (``DeviceInput.error``), found
        without converting it: a selector that needs only the driver asks this."""
        if not self._conversion_error:
            error = None
            for name, attr in self.attributes.items():
                if attr.kind == "version":
                    error = _version_error(name, attr) or error
            self._conversion_error.append(error)
        return self._conversion_error[0]

    def cel_input(self, driver: str) -> DeviceInput:
        """``cel.Device`` for this device of ``driver`` (attributes keyed domain -> id)."""
        found = self._cel_inputs.get(driver)
        if found is None:
            found = self._convert_for_cel(driver)
            self._cel_inputs[driver] = found
        return found

    def _convert_for_cel(self, driver: str) -> DeviceInput:
        attributes: dict[str, dict[str, Any]] = {}
        error = None
        for name, attr in self.attributes.items():
            domain, ident = _split(name, driver)
            value: Any = attr.value
            if attr.kind == "version":
                problem = _version_error(name, attr)
                if problem is None:
                    value = semver_value(parse_semver(str(attr.value)))
                error = problem or error
            attributes.setdefault(domain, {})[ident] = value
        capacity: dict[str, dict[str, Any]] = {}
        for name, cap in self.capacity.items():
            domain, ident = _split(name, driver)
            capacity.setdefault(domain, {})[ident] = quantity_value(cap.value)
        return DeviceInput(
            driver, bool(self.allow_multiple_allocations), attributes, capacity, error
        )


def _version_error(name: str, attr: DeviceAttribute) -> str | None:
    try:
        parse_semver(str(attr.value))
    except ValueError as err:
        return f"attribute {name}: parse semantic version: {err}"
    return None


def _parse_device(raw: Any, path: str) -> Device:
    obj = _obj(raw, path)
    caps = _obj(obj.get("capacity"), f"{path}.capacity")
    consumes = _list(obj.get("consumesCounters"), f"{path}.consumesCounters")
    taints = _list(obj.get("taints"), f"{path}.taints")
    return Device(
        name=_required_str(obj, "name", path),
        attributes=_parse_attributes(obj.get("attributes"), f"{path}.attributes"),
        capacity={str(k): _parse_capacity(v, f"{path}.capacity.{k}") for k, v in caps.items()},
        consumes_counters=tuple(
            CounterConsumption(
                _required_str(_obj(c, p := f"{path}.consumesCounters[{i}]"), "counterSet", p),
                _parse_counter_map(_obj(c, p).get("counters"), f"{p}.counters"),
            )
            for i, c in enumerate(consumes)
        ),
        node_name=obj.get("nodeName") or None,
        node_selector=parse_node_selector(obj.get("nodeSelector"), f"{path}.nodeSelector"),
        all_nodes=_opt_bool(obj, "allNodes", path),
        taints=tuple(parse_device_taint(t, f"{path}.taints[{i}]") for i, t in enumerate(taints)),
        binds_to_node=bool(_opt_bool(obj, "bindsToNode", path)),
        binding_conditions=_strings(obj, "bindingConditions", path),
        binding_failure_conditions=_strings(obj, "bindingFailureConditions", path),
        allow_multiple_allocations=_opt_bool(obj, "allowMultipleAllocations", path),
    )


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    name: str
    driver: str
    pool: str
    generation: int
    resource_slice_count: int
    node_name: str | None = None
    node_selector: NodeSelector | None = None
    all_nodes: bool = False
    per_device_node_selection: bool = False
    devices: tuple[Device, ...] = ()
    shared_counters: tuple[CounterSet, ...] = ()

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> ResourceSlice:
        meta = _obj(obj.get("metadata"), "metadata")
        spec = _obj(obj.get("spec"), "spec")
        pool = _obj(spec.get("pool"), "spec.pool")
        devices = _list(spec.get("devices"), "spec.devices")
        counters = _list(spec.get("sharedCounters"), "spec.sharedCounters")
        return cls(
            name=_str(meta, "name", "metadata"),
            driver=_required_str(spec, "driver", "spec"),
            pool=_required_str(pool, "name", "spec.pool"),
            generation=_int(pool, "generation", "spec.pool"),
            resource_slice_count=_int(pool, "resourceSliceCount", "spec.pool"),
            node_name=spec.get("nodeName") or None,
            node_selector=parse_node_selector(spec.get("nodeSelector"), "spec.nodeSelector"),
            all_nodes=bool(_opt_bool(spec, "allNodes", "spec")),
            per_device_node_selection=bool(_opt_bool(spec, "perDeviceNodeSelection", "spec")),
            devices=tuple(_parse_device(d, f"spec.devices[{i}]") for i, d in enumerate(devices)),
            shared_counters=tuple(
                _parse_counter_set(c, f"spec.sharedCounters[{i}]") for i, c in enumerate(counters)
            ),
        )


# --- DeviceClass and DeviceTaintRule --------------------------------------------------------


def _parse_selectors(raw: Any, path: str) -> tuple[str | None, ...]:
    """CEL expressions of ``selectors``; None for a selector without ``cel`` (unsupported)."""
    result: list[str | None] = []
    for i, sel in enumerate(_list(raw, path)):
        cel_obj = _obj(sel, f"{path}[{i}]").get("cel")
        result.append(
            None if cel_obj is None else _str(_obj(cel_obj, f"{path}[{i}].cel"), "expression",
                                                f"{path}[{i}].cel")
        )
    return tuple(result)


@dataclass(frozen=True, slots=True)
class DeviceConfiguration:
    """One ``config`` entry as written (opaque driver parameters are passed through)."""

    requests: tuple[str, ...]
    opaque: Mapping[str, Any]


def _parse_configs(raw: Any, path: str) -> tuple[DeviceConfiguration, ...]:
    result = []
    for i, c in enumerate(_list(raw, path)):
        obj = _obj(c, f"{path}[{i}]")
        result.append(
            DeviceConfiguration(
                _strings(obj, "requests", f"{path}[{i}]"),
                _obj(obj.get("opaque"), f"{path}[{i}].opaque"),
            )
        )
    return tuple(result)


@dataclass(frozen=True, slots=True)
class DeviceClass:
    name: str
    selectors: tuple[str | None, ...] = ()
    config: tuple[DeviceConfiguration, ...] = ()
    extended_resource_name: str | None = None
    creation_timestamp: str = ""

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> DeviceClass:
        meta = _obj(obj.get("metadata"), "metadata")
        spec = _obj(obj.get("spec"), "spec")
        return cls(
            name=_str(meta, "name", "metadata"),
            selectors=_parse_selectors(spec.get("selectors"), "spec.selectors"),
            config=_parse_configs(spec.get("config"), "spec.config"),
            extended_resource_name=spec.get("extendedResourceName") or None,
            creation_timestamp=_str(meta, "creationTimestamp", "metadata"),
        )


@dataclass(frozen=True, slots=True)
class DeviceTaintRule:
    """A taint for the devices its selector names; a nil selector names no device."""

    name: str
    taint: DeviceTaint
    has_selector: bool = False
    driver: str | None = None
    pool: str | None = None
    device: str | None = None

    def selects(self, driver: str, pool: str, device: str) -> bool:
        return (
            self.has_selector
            and self.driver in (None, driver)
            and self.pool in (None, pool)
            and self.device in (None, device)
        )

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> DeviceTaintRule:
        meta = _obj(obj.get("metadata"), "metadata")
        spec = _obj(obj.get("spec"), "spec")
        raw_sel = spec.get("deviceSelector")
        sel = _obj(raw_sel, "spec.deviceSelector")
        return cls(
            name=_str(meta, "name", "metadata"),
            taint=parse_device_taint(spec.get("taint"), "spec.taint"),
            has_selector=raw_sel is not None,
            driver=sel.get("driver"),
            pool=sel.get("pool"),
            device=sel.get("device"),
        )


# --- ResourceClaim and ResourceClaimTemplate ------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    """An ``exactly`` request or a ``firstAvailable`` entry (only the first has admin access)."""

    name: str
    device_class_name: str
    selectors: tuple[str | None, ...] = ()
    allocation_mode: str = EXACT_COUNT
    count: int = 1
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    capacity_requests: Mapping[str, int] | None = None


def _parse_sub_request(raw: Any, name: str, path: str) -> DeviceSubRequest:
    obj = _obj(raw, path)
    mode = _str(obj, "allocationMode", path, EXACT_COUNT) or EXACT_COUNT
    if mode not in ALLOCATION_MODES:
        raise InvalidSpecError(f"{path}.allocationMode", f'Unsupported value: "{mode}"')
    count = _int(obj, "count", path, 1 if mode == EXACT_COUNT else 0)
    if mode == EXACT_COUNT and count < 1:
        raise InvalidSpecError(f"{path}.count", "must be greater than zero")
    capacity = obj.get("capacity")
    tolerations = _list(obj.get("tolerations"), f"{path}.tolerations")
    return DeviceSubRequest(
        name=name,
        device_class_name=_str(obj, "deviceClassName", path),
        selectors=_parse_selectors(obj.get("selectors"), f"{path}.selectors"),
        allocation_mode=mode,
        count=count,
        admin_access=_opt_bool(obj, "adminAccess", path),
        tolerations=tuple(
            _parse_toleration(t, f"{path}.tolerations[{i}]") for i, t in enumerate(tolerations)
        ),
        capacity_requests=None
        if capacity is None
        else _quantities(_obj(capacity, f"{path}.capacity").get("requests"),
                         f"{path}.capacity.requests"),
    )


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One request: ``exactly`` set, or a non-empty ``first_available`` list."""

    name: str
    exactly: DeviceSubRequest | None = None
    first_available: tuple[DeviceSubRequest, ...] = ()


def _parse_request(raw: Any, path: str) -> DeviceRequest:
    obj = _obj(raw, path)
    name = _required_str(obj, "name", path)
    exactly = obj.get("exactly")
    first = _list(obj.get("firstAvailable"), f"{path}.firstAvailable")
    if (exactly is None) == (not first):
        raise InvalidSpecError(path, "exactly one of `exactly` or `firstAvailable` is required")
    if exactly is not None:
        return DeviceRequest(name, exactly=_parse_sub_request(exactly, name, f"{path}.exactly"))
    subs = []
    for i, sub in enumerate(first):
        p = f"{path}.firstAvailable[{i}]"
        subs.append(_parse_sub_request(sub, _required_str(_obj(sub, p), "name", p), p))
    return DeviceRequest(name, first_available=tuple(subs))


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    requests: tuple[str, ...] = ()
    match_attribute: str | None = None
    distinct_attribute: str | None = None


@dataclass(frozen=True, slots=True)
class ClaimSpec:
    requests: tuple[DeviceRequest, ...] = ()
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[DeviceConfiguration, ...] = ()


def parse_claim_spec(raw: Any, path: str) -> ClaimSpec:
    devices = _obj(_obj(raw, path).get("devices"), f"{path}.devices")
    p = f"{path}.devices"
    requests = _list(devices.get("requests"), f"{p}.requests")
    constraints = _list(devices.get("constraints"), f"{p}.constraints")
    return ClaimSpec(
        requests=tuple(_parse_request(r, f"{p}.requests[{i}]") for i, r in enumerate(requests)),
        constraints=tuple(
            DeviceConstraint(
                _strings(c_obj := _obj(c, cp := f"{p}.constraints[{i}]"), "requests", cp),
                c_obj.get("matchAttribute"),
                c_obj.get("distinctAttribute"),
            )
            for i, c in enumerate(constraints)
        ),
        config=_parse_configs(devices.get("config"), f"{p}.config"),
    )


@dataclass(frozen=True, slots=True)
class DeviceRequestAllocationResult:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool | None = None
    tolerations: tuple[DeviceToleration, ...] = ()
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    share_id: str | None = None
    consumed_capacity: Mapping[str, int] | None = None


@dataclass(frozen=True, slots=True)
class AllocationConfiguration:
    source: str
    requests: tuple[str, ...] | None
    opaque: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class AllocationResult:
    results: tuple[DeviceRequestAllocationResult, ...] = ()
    config: tuple[AllocationConfiguration, ...] = ()
    node_selector: NodeSelector | None = None
    allocation_timestamp: str | None = None


def _parse_allocation(raw: Any, path: str) -> AllocationResult:
    obj = _obj(raw, path)
    devices = _obj(obj.get("devices"), f"{path}.devices")
    results = []
    for i, r in enumerate(_list(devices.get("results"), f"{path}.devices.results")):
        rp = f"{path}.devices.results[{i}]"
        ro = _obj(r, rp)
        results.append(
            DeviceRequestAllocationResult(
                request=_str(ro, "request", rp),
                driver=_str(ro, "driver", rp),
                pool=_str(ro, "pool", rp),
                device=_str(ro, "device", rp),
                admin_access=_opt_bool(ro, "adminAccess", rp),
                binding_conditions=_strings(ro, "bindingConditions", rp),
                binding_failure_conditions=_strings(ro, "bindingFailureConditions", rp),
                share_id=ro.get("shareID"),
                consumed_capacity=None
                if ro.get("consumedCapacity") is None
                else _quantities(ro["consumedCapacity"], f"{rp}.consumedCapacity"),
            )
        )
    return AllocationResult(
        results=tuple(results),
        node_selector=parse_node_selector(obj.get("nodeSelector"), f"{path}.nodeSelector"),
        allocation_timestamp=obj.get("allocationTimestamp"),
    )


@dataclass(frozen=True, slots=True)
class ConsumerReference:
    resource: str
    name: str
    uid: str
    api_group: str = ""


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    namespace: str
    name: str
    uid: str
    spec: ClaimSpec
    allocation: AllocationResult | None = None
    reserved_for: tuple[ConsumerReference, ...] = ()
    deleting: bool = False
    finalizers: tuple[str, ...] = ()
    annotations: Mapping[str, str] = field(default_factory=dict)
    owner_uids: tuple[str, ...] = ()
    resource_version: str = ""
    # The API object as parsed: what the scheduler writes back (status, finalizers) starts
    # from it, so fields this model does not read survive the write.
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> ResourceClaim:
        meta = _obj(obj.get("metadata"), "metadata")
        status = _obj(obj.get("status"), "status")
        allocation = status.get("allocation")
        reserved = _list(status.get("reservedFor"), "status.reservedFor")
        owners = _list(meta.get("ownerReferences"), "metadata.ownerReferences")
        return cls(
            namespace=_str(meta, "namespace", "metadata"),
            name=_str(meta, "name", "metadata"),
            uid=_str(meta, "uid", "metadata"),
            spec=parse_claim_spec(obj.get("spec"), "spec"),
            allocation=None
            if allocation is None
            else _parse_allocation(allocation, "status.allocation"),
            reserved_for=tuple(
                ConsumerReference(
                    _str(ro := _obj(r, rp := f"status.reservedFor[{i}]"), "resource", rp),
                    _str(ro, "name", rp),
                    _str(ro, "uid", rp),
                    _str(ro, "apiGroup", rp),
                )
                for i, r in enumerate(reserved)
            ),
            deleting=meta.get("deletionTimestamp") is not None,
            finalizers=_strings(meta, "finalizers", "metadata"),
            annotations=dict(_obj(meta.get("annotations"), "metadata.annotations")),
            owner_uids=tuple(
                _str(_obj(o, f"metadata.ownerReferences[{i}]"), "uid", "metadata.ownerReferences")
                for i, o in enumerate(owners)
                if _obj(o, f"metadata.ownerReferences[{i}]").get("controller") is True
            ),
            resource_version=_str(meta, "resourceVersion", "metadata"),
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    namespace: str
    name: str
    spec: ClaimSpec

    @classmethod
    def parse(cls, obj: Mapping[str, Any]) -> ResourceClaimTemplate:
        meta = _obj(obj.get("metadata"), "metadata")
        spec = _obj(obj.get("spec"), "spec")
        return cls(
            namespace=_str(meta, "namespace", "metadata"),
            name=_str(meta, "name", "metadata"),
            spec=parse_claim_spec(spec.get("spec"), "spec.spec"),
        )
