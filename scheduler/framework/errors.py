"""Errors shared across the framework."""

from __future__ import annotations


class ConfigError(ValueError):
    """A configuration problem; the message names the field, e.g. ``profiles[0].plugins``."""
