"""DynamicResources: devices for pods' ResourceClaims (``plugin.py``), found by the
structured allocator (``allocator.py``)."""

from scheduler.plugins.dynamic_resources.plugin import SPEC

__all__ = ["SPEC"]
