"""Plugins installed with pip: discovered under the entry-point group, refused clearly."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from scheduler.framework.registry import ConfigError
from scheduler.operator import main as entry
from scheduler.plugins import registry as plugins

EXAMPLE = "prefer_label:SPEC"


def installed(monkeypatch: pytest.MonkeyPatch, *pairs: tuple[str, str]) -> None:
    found = [EntryPoint(name, value, plugins.ENTRY_POINT_GROUP) for name, value in pairs]

    def entry_points(*, group: str) -> list[EntryPoint]:
        return found if group == plugins.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(plugins, "entry_points", entry_points)


def test_an_installed_plugin_joins_the_built_in_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    installed(monkeypatch, ("PreferLabel", EXAMPLE))
    registry = plugins.installed_registry()
    spec = registry.get("PreferLabel")
    assert spec is not None and spec.points == frozenset({"score"})
    assert registry.get("NodeAffinity") is not None


@pytest.mark.parametrize(
    ("pairs", "error"),
    [
        pytest.param([("NodeAffinity", "scheduler.plugins.node_affinity:SPEC")],
                     "plugin 'NodeAffinity' from an unknown distribution "
                     "(scheduler.plugins.node_affinity:SPEC) clashes with a built-in plugin",
                     id="a built-in's name"),
        pytest.param([("PreferLabel", EXAMPLE), ("PreferLabel", EXAMPLE)],
                     f"plugin 'PreferLabel' from an unknown distribution ({EXAMPLE}) clashes "
                     f"with an unknown distribution ({EXAMPLE})",
                     id="two packages, one name"),
        pytest.param([("PreferLabel", "prefer_label:NAME")],
                     "is a str, not a PluginSpec", id="not a PluginSpec"),
        pytest.param([("Missing", "no_such_package.plugin:SPEC")],
                     "plugin 'Missing' from an unknown distribution (no_such_package.plugin:SPEC)"
                     " could not be loaded: ModuleNotFoundError", id="cannot be imported"),
        pytest.param([("Other", EXAMPLE)], "calls itself 'PreferLabel'",
                     id="the entry point and the plugin disagree on the name"),
    ],
)
def test_a_bad_installed_plugin_fails_start_up_with_its_origin_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    pairs: list[tuple[str, str]], error: str,
) -> None:
    installed(monkeypatch, *pairs)
    with pytest.raises(ConfigError) as raised:
        plugins.installed_registry()
    assert error in str(raised.value)
    # main() would point structlog at pytest's captured stream, closed after this test.
    monkeypatch.setattr(entry.logs, "configure", lambda *args, **kwargs: None)
    assert entry.main(["--log-format", "json"]) == 2
    assert error in capsys.readouterr().err
