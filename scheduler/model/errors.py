"""The one error type of the model layer: a spec field that cannot be understood."""

from __future__ import annotations


class InvalidSpecError(ValueError):
    """A field of an API object that the scheduler cannot parse.

    ``field`` is a JSON path such as ``spec.containers[0].resources.requests.cpu``; ``detail``
    says what is wrong with it. ``str(error) == f"{field}: {detail}"``.
    """

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(field, detail)
        self.field = field
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.field}: {self.detail}"

    def __repr__(self) -> str:
        return f"InvalidSpecError({self.field!r}, {self.detail!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InvalidSpecError):
            return NotImplemented
        return (self.field, self.detail) == (other.field, other.detail)

    def __hash__(self) -> int:
        return hash((InvalidSpecError, self.field, self.detail))
