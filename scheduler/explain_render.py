"""The renderer's old path, kept only while ``scheduler.operator.explain_endpoint`` (edited
elsewhere at the same time) imports it from here; it moves to ``scheduler.explain``."""

from scheduler.explain.render import as_dict

__all__ = ["as_dict"]
