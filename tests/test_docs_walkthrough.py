"""docs/writing-a-plugin.md walks a newcomer through a plugin: its code blocks are run here,
so the page cannot drift from the API it teaches."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "writing-a-plugin.md"


def block(first_line: str) -> str:
    for code in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S):
        if code.startswith(first_line):
            return str(code)
    raise AssertionError(f"no python block starting with {first_line!r} in {DOC}")


def test_the_walkthrough_plugin_and_its_tests_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "maintenance_filter.py").write_text(block("# maintenance_filter.py"))
    (tmp_path / "test_maintenance_filter.py").write_text(block("# test_maintenance_filter.py"))
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("maintenance_filter", "test_maintenance_filter"):
        sys.modules.pop(name, None)
    tests = importlib.import_module("test_maintenance_filter")
    ran = [name for name in dir(tests) if name.startswith("test_")]
    for name in ran:
        getattr(tests, name)()
    assert len(ran) == 2
