"""docs/writing-a-plugin.md walks a newcomer through a package of two plugins: its Python code
blocks (each starting ``# <module>.py``) are written out and every test they define is run
here, and its table of extension points is checked against the contract the scheduler
enforces, so the page cannot drift from the API it teaches."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

from scheduler.framework.points import PLUGIN_HOOKS, POINTS

DOC = Path(__file__).resolve().parents[1] / "docs" / "writing-a-plugin.md"


def modules() -> dict[str, str]:
    """The page's Python blocks, by the module name their first line gives."""
    out: dict[str, str] = {}
    for code in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S):
        first = re.match(r"# (\w+)\.py\n", code)
        assert first is not None, f"a python block without its file name: {code[:60]!r}"
        out[first.group(1)] = code
    return out


def test_the_walkthrough_plugins_and_their_tests_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = modules()
    assert {"maintenance_filter", "team_packing"} <= blocks.keys()
    for name, code in blocks.items():
        (tmp_path / f"{name}.py").write_text(code)
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    ran = []
    for name in sorted(n for n in blocks if n.startswith("test_")):
        tests = importlib.import_module(name)
        for test in sorted(t for t in dir(tests) if t.startswith("test_")):
            getattr(tests, test)()
            ran.append(f"{name}.{test}")
    assert len(ran) == 7, ran


def test_the_page_shows_every_point_and_hook_with_its_signature() -> None:
    text = DOC.read_text().replace("\\|", "|")
    for point in POINTS:
        row = f"| `{point.name}` | `{point.protocol.__name__}` | `{point.call.signature}`"
        assert row in text, row
        for hook in point.required:
            assert f"`{hook.signature}`" in text, hook.signature
        for hook, protocol in point.optional:
            assert f"| `{hook.signature}` | `{protocol.__name__}` |" in text, hook.signature
    for hook, protocol in PLUGIN_HOOKS:
        assert f"| `{hook.signature}` | `{protocol.__name__}` |" in text, hook.signature
