"""Words and numbers as the plugins' explanations print them (``explain_nodes``,
``explain_hints``), and as the explanation around them does."""

from __future__ import annotations

from scheduler.plugin_api import CPU, EPHEMERAL_STORAGE, MEMORY, Taint


def nodes_phrase(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def taint_text(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"


_BINARY = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def quantity(resource: str, value: int) -> str:
    """A resource amount as people write it: cpu in cores or millicores, bytes binary."""
    if resource == CPU:
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if resource in (MEMORY, EPHEMERAL_STORAGE) or resource.startswith("hugepages-"):
        for suffix, size in _BINARY:
            if value and value % size == 0:
                return f"{value // size}{suffix}"
    return str(value)
