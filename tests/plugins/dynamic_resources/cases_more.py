"""Upstream allocator cases, continued (see cases_core)."""

from __future__ import annotations

from tests.plugins.dynamic_resources.builders import Case

CASES: dict[str, Case] = {}
