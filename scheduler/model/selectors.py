"""Label selectors and node selectors, with apimachinery's and component-helpers' semantics.

- ``Requirement.matches`` is ``labels.Requirement.Matches`` (``pkg/labels/selector.go``).
- ``LabelSelector.parse`` is ``metav1.LabelSelectorAsSelector``: nil matches nothing, ``{}``
  matches everything, ``matchLabels`` become single-value ``In`` requirements, and every
  requirement is validated as ``labels.NewRequirement`` does (an error is an
  ``InvalidSpecError``).
- ``NodeSelectorTerm``/``NodeSelector`` follow ``component-helpers/scheduling/corev1/
  nodeaffinity``'s ``LazyErrorNodeSelector``, which the NodeAffinity filter uses: terms are
  ORed, empty terms are dropped, a term with an invalid requirement never matches (the other
  terms still can), and ``matchFields`` only compare against the node's ``metadata.name``.
- ``parse_preferred_terms`` is ``NewPreferredSchedulingTerms``: weight-0 and empty terms are
  skipped, and any other invalid term is an error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from scheduler.model.errors import InvalidSpecError
from scheduler.model.validation import (
    is_list,
    is_mapping,
    label_key_error,
    label_value_error,
    parse_go_int64,
)

IN = "In"
NOT_IN = "NotIn"
EXISTS = "Exists"
DOES_NOT_EXIST = "DoesNotExist"
GT = "Gt"
LT = "Lt"

LABEL_SELECTOR_OPERATORS = frozenset((IN, NOT_IN, EXISTS, DOES_NOT_EXIST))
NODE_SELECTOR_OPERATORS = frozenset((IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT))
NODE_FIELD_OPERATORS = frozenset((IN, NOT_IN))
NODE_NAME_FIELD = "metadata.name"

_EMPTY: Mapping[str, Any] = {}


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key operator values`` requirement on a label set."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == IN:
            value = labels.get(self.key)
            return value is not None and value in self.values
        if op == NOT_IN:
            value = labels.get(self.key)
            return value is None or value not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GT, LT):
            value = labels.get(self.key)
            if value is None or len(self.values) != 1:
                return False
            have = parse_go_int64(value)
            want = parse_go_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == GT else have < want
        return False


def requirement_error(req: Requirement) -> tuple[str, str] | None:
    """``labels.NewRequirement``'s validation: (sub-field, detail) of the first problem."""
    error = label_key_error(req.key)
    if error is not None:
        return "key", f'Invalid value: "{req.key}": {error}'
    op, values = req.operator, req.values
    if op in (IN, NOT_IN):
        if not values:
            return "values", "for 'in', 'notin' operators, values set can't be empty"
    elif op in (EXISTS, DOES_NOT_EXIST):
        if values:
            return "values", "values set must be empty for exists and does not exist"
    elif op in (GT, LT):
        if len(values) != 1:
            return "values", "for 'Gt', 'Lt' operators, exactly one value is required"
        for i, value in enumerate(values):
            if parse_go_int64(value) is None:
                return (
                    f"values[{i}]",
                    f'Invalid value: "{value}": for \'Gt\', \'Lt\' operators, '
                    "the value must be an integer",
                )
    else:
        return "operator", f'Unsupported value: "{op}"'
    for i, value in enumerate(values):
        error = label_value_error(value)
        if error is not None:
            return f"values[{i}]", f'Invalid value: "{value}": {error}'
    return None


def _canonical(requirements: Iterable[Requirement]) -> tuple[Requirement, ...]:
    """Sorted and de-duplicated, so equal selectors compare and hash equal."""
    return tuple(sorted(set(requirements), key=lambda r: (r.key, r.operator, r.values)))


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A parsed ``metav1.LabelSelector``: all requirements must match (hashable)."""

    requirements: tuple[Requirement, ...]
    matches_nothing: bool = False

    EVERYTHING: ClassVar[LabelSelector]
    NOTHING: ClassVar[LabelSelector]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.matches_nothing:
            return False
        for requirement in self.requirements:  # noqa: SIM110 (hot path: no generator)
            if not requirement.matches(labels):
                return False
        return True

    @property
    def matches_everything(self) -> bool:
        """True for ``{}`` (``labels.Everything()``, which upstream calls ``Empty()``)."""
        return not self.matches_nothing and not self.requirements

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None, field: str) -> LabelSelector:
        """``metav1.LabelSelectorAsSelector`` of ``raw`` (the API's JSON object)."""
        if raw is None:
            return NOTHING
        if not is_mapping(raw):
            raise InvalidSpecError(field, "must be an object")
        match_labels = raw.get("matchLabels") or _EMPTY
        match_expressions = raw.get("matchExpressions") or ()
        if not match_labels and not match_expressions:
            return EVERYTHING
        if not is_mapping(match_labels):
            raise InvalidSpecError(f"{field}.matchLabels", "must be a map of strings")
        if not is_list(match_expressions):
            raise InvalidSpecError(f"{field}.matchExpressions", "must be a list")
        requirements: list[Requirement] = []
        for key, value in match_labels.items():
            path = f"{field}.matchLabels.{key}"
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidSpecError(path, "label keys and values must be strings")
            req = Requirement(key, IN, (value,))
            problem = requirement_error(req)
            if problem is not None:
                raise InvalidSpecError(path, problem[1])
            requirements.append(req)
        for i, expr in enumerate(match_expressions):
            path = f"{field}.matchExpressions[{i}]"
            req = _parse_requirement(expr, path)
            if req.operator not in LABEL_SELECTOR_OPERATORS:
                raise InvalidSpecError(
                    f"{path}.operator",
                    f'"{req.operator}" is not a valid label selector operator',
                )
            problem = requirement_error(req)
            if problem is not None:
                raise InvalidSpecError(f"{path}.{problem[0]}", problem[1])
            if req.values:
                req = Requirement(req.key, req.operator, tuple(sorted(set(req.values))))
            requirements.append(req)
        return cls(_canonical(requirements))

    def with_match_label_keys(
        self, pod_labels: Mapping[str, str], keys: Iterable[str]
    ) -> LabelSelector:
        """Add ``key In [pod_labels[key]]`` for each key the pod has (topology spread
        ``matchLabelKeys``, ``mergeLabelSetWithSelector``); a nil selector stays nil."""
        if self.matches_nothing:
            return self
        added = [Requirement(k, IN, (pod_labels[k],)) for k in keys if k in pod_labels]
        if not added:
            return self
        return LabelSelector(_canonical((*self.requirements, *added)))


EVERYTHING = LabelSelector(())
NOTHING = LabelSelector((), matches_nothing=True)
LabelSelector.EVERYTHING = EVERYTHING
LabelSelector.NOTHING = NOTHING


def _parse_requirement(raw: Any, path: str) -> Requirement:
    """The shape of a label/node selector requirement (content is validated elsewhere)."""
    if not is_mapping(raw):
        raise InvalidSpecError(path, "must be an object")
    key = raw.get("key", "")
    operator = raw.get("operator", "")
    values = raw.get("values") or ()
    if not isinstance(key, str):
        raise InvalidSpecError(f"{path}.key", "must be a string")
    if not isinstance(operator, str):
        raise InvalidSpecError(f"{path}.operator", "must be a string")
    if (
        not is_list(values)
        or not all(isinstance(v, str) for v in values)
    ):
        raise InvalidSpecError(f"{path}.values", "must be a list of strings")
    return Requirement(key, operator, tuple(values))


def node_selector_term_error(
    match_expressions: Sequence[Requirement], match_fields: Sequence[Requirement]
) -> str | None:
    """Why a term can never match (``newNodeSelectorTerm``'s parse errors), or None."""
    if not match_expressions and not match_fields:
        return "an empty term matches no objects"
    for i, req in enumerate(match_expressions):
        if req.operator not in NODE_SELECTOR_OPERATORS:
            return f'matchExpressions[{i}].operator: Unsupported value: "{req.operator}"'
        problem = requirement_error(req)
        if problem is not None:
            return f"matchExpressions[{i}].{problem[0]}: {problem[1]}"
    for i, req in enumerate(match_fields):
        if req.operator not in NODE_FIELD_OPERATORS:
            return f'matchFields[{i}].operator: Unsupported value: "{req.operator}"'
        if len(req.values) != 1:
            return f"matchFields[{i}].values: must have one element"
    return None


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Requirements on node labels (``matchExpressions``) and fields (``matchFields``), ANDed.

    ``error`` (computed) says why the term can never match; it is None for a valid term.
    """

    match_expressions: tuple[Requirement, ...]
    match_fields: tuple[Requirement, ...] = ()
    error: str | None = dataclasses.field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "error", node_selector_term_error(self.match_expressions, self.match_fields)
        )

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if self.error is not None:
            return False
        for requirement in self.match_expressions:
            if not requirement.matches(labels):
                return False
        if self.match_fields and node_name:
            for requirement in self.match_fields:
                # The only node field is metadata.name; any other key reads as "".
                actual = node_name if requirement.key == NODE_NAME_FIELD else ""
                if (actual == requirement.values[0]) != (requirement.operator == IN):
                    return False
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """``v1.NodeSelector``: the terms are ORed; no terms matches nothing."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        for term in self.terms:  # noqa: SIM110 (hot path: no generator)
            if term.matches(labels, node_name):
                return True
        return False


@dataclass(frozen=True, slots=True)
class PreferredSchedulingTerm:
    weight: int
    term: NodeSelectorTerm


def _parse_requirements(raw: Any, path: str) -> tuple[Requirement, ...]:
    if raw is None:
        return ()
    if not is_list(raw):
        raise InvalidSpecError(path, "must be a list")
    return tuple(_parse_requirement(r, f"{path}[{i}]") for i, r in enumerate(raw))


def parse_node_selector_term(raw: Any, field: str) -> NodeSelectorTerm:
    """A ``NodeSelectorTerm`` as written; an invalid one is kept and never matches."""
    if raw is None:
        return NodeSelectorTerm((), ())
    if not is_mapping(raw):
        raise InvalidSpecError(field, "must be an object")
    return NodeSelectorTerm(
        _parse_requirements(raw.get("matchExpressions"), f"{field}.matchExpressions"),
        _parse_requirements(raw.get("matchFields"), f"{field}.matchFields"),
    )


def parse_node_selector(raw: Mapping[str, Any] | None, field: str) -> NodeSelector | None:
    """``v1.NodeSelector`` (None stays None); empty terms are dropped, invalid terms kept
    (they never match, as with upstream's ``LazyErrorNodeSelector``). Only a malformed shape
    (a term that is not an object, values that are not strings...) raises."""
    if raw is None:
        return None
    if not is_mapping(raw):
        raise InvalidSpecError(field, "must be an object")
    raw_terms = raw.get("nodeSelectorTerms") or ()
    if not is_list(raw_terms):
        raise InvalidSpecError(f"{field}.nodeSelectorTerms", "must be a list")
    terms = []
    for i, raw_term in enumerate(raw_terms):
        term = parse_node_selector_term(raw_term, f"{field}.nodeSelectorTerms[{i}]")
        if term.match_expressions or term.match_fields:
            terms.append(term)
    return NodeSelector(tuple(terms))


def parse_preferred_terms(
    raw: Sequence[Any] | None, field: str
) -> tuple[PreferredSchedulingTerm, ...]:
    """``NewPreferredSchedulingTerms``: weight-0 and empty terms are skipped; an invalid term
    raises ``InvalidSpecError`` (upstream's PreScore then fails)."""
    if raw is None:
        return ()
    if not is_list(raw):
        raise InvalidSpecError(field, "must be a list")
    out: list[PreferredSchedulingTerm] = []
    for i, item in enumerate(raw):
        path = f"{field}[{i}]"
        if not is_mapping(item):
            raise InvalidSpecError(path, "must be an object")
        weight = item.get("weight", 0)
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise InvalidSpecError(f"{path}.weight", "must be an integer")
        term = parse_node_selector_term(item.get("preference"), f"{path}.preference")
        if weight == 0 or (not term.match_expressions and not term.match_fields):
            continue
        if term.error is not None:
            raise InvalidSpecError(f"{path}.preference", term.error)
        out.append(PreferredSchedulingTerm(weight, term))
    return tuple(out)
