"""Node taints and pod tolerations (``k8s.io/api/core/v1/toleration.go``, v1.36).

``Toleration.tolerates`` is ``Toleration.ToleratesTaint``. The numeric ``Gt``/``Lt`` operators
exist behind the TaintTolerationComparisonOperators feature gate, which is alpha and *off* by
default in v1.36 (``pkg/features/kube_features.go``): with the gate off such a toleration
tolerates nothing. ``enable_comparison_operators=True`` gives the gate-on behaviour.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.model.errors import InvalidSpecError
from scheduler.model.fields import str_field as _str
from scheduler.model.validation import is_list, is_mapping, parse_go_int64

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

EQUAL = "Equal"
EXISTS = "Exists"
GT = "Gt"
LT = "Lt"
TOLERATION_OPERATORS = frozenset(("", EQUAL, EXISTS, GT, LT))

_EMPTY: Mapping[str, Any] = {}


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


def _decimal_integer(value: str) -> int | None:
    """``content.IsDecimalInteger`` then ``ParseInt``: no sign but '-', no leading zeros."""
    if not value:
        return None
    digits = value[1:] if value[0] == "-" else value
    if not digits or (digits[0] == "0" and value != "0") or not digits.isascii():
        return None
    if not digits.isdigit():
        return None
    return parse_go_int64(value)


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str
    toleration_seconds: int | None
    # A pod's tolerations key the plugins' per-toleration memos several times a cycle: the
    # hash is computed once, not by the generated (Python) __hash__ each time.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(
            (self.key, self.operator, self.value, self.effect, self.toleration_seconds)))

    def __hash__(self) -> int:
        return self._hash

    def tolerates(self, taint: Taint, enable_comparison_operators: bool = False) -> bool:
        """``Toleration.ToleratesTaint``: effect empty or equal, key empty or equal, then the
        operator: ""/Equal compare values, Exists matches any value, Gt/Lt compare integers
        (only with the feature gate), anything else matches nothing."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        op = self.operator
        if op == "" or op == EQUAL:
            return self.value == taint.value
        if op == EXISTS:
            return True
        if op in (GT, LT):
            if not enable_comparison_operators:
                return False
            want = _decimal_integer(self.value)
            have = _decimal_integer(taint.value)
            if want is None or have is None:
                return False
            return have > want if op == GT else have < want
        return False


def tolerates_any(
    tolerations: Iterable[Toleration], taint: Taint, enable_comparison_operators: bool = False
) -> bool:
    """``TolerationsTolerateTaint``: some toleration tolerates the taint."""
    for toleration in tolerations:
        if toleration.tolerates(taint, enable_comparison_operators):
            return True
    return False


def parse_taints(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    """``node.spec.taints`` (``timeAdded`` is not needed for scheduling)."""
    raw = (node.get("spec") or _EMPTY).get("taints")
    if not raw:
        return ()
    if not is_list(raw):
        raise InvalidSpecError("spec.taints", "must be a list")
    out: list[Taint] = []
    for i, item in enumerate(raw):
        path = f"spec.taints[{i}]"
        if not is_mapping(item):
            raise InvalidSpecError(path, "must be an object")
        out.append(
            Taint(_str(item, "key", path), _str(item, "value", path),
                  _str(item, "effect", path))
        )
    return tuple(out)


def parse_tolerations(raw: Sequence[Any] | None, field: str) -> tuple[Toleration, ...]:
    """A pod's ``spec.tolerations``. An operator other than "", Equal, Exists, Gt and Lt is an
    ``InvalidSpecError`` (the API server never admits one)."""
    if not raw:
        return ()
    if not is_list(raw):
        raise InvalidSpecError(field, "must be a list")
    out: list[Toleration] = []
    for i, item in enumerate(raw):
        path = f"{field}[{i}]"
        if not is_mapping(item):
            raise InvalidSpecError(path, "must be an object")
        operator = _str(item, "operator", path)
        if operator not in TOLERATION_OPERATORS:
            raise InvalidSpecError(f"{path}.operator", f'Unsupported value: "{operator}"')
        seconds = item.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            raise InvalidSpecError(f"{path}.tolerationSeconds", "must be an integer")
        out.append(
            Toleration(
                key=_str(item, "key", path),
                operator=operator,
                value=_str(item, "value", path),
                effect=_str(item, "effect", path),
                toleration_seconds=seconds,
            )
        )
    return tuple(out)
