"""The CLI's modules depend on each other one way: a command module (``*_cmd``/``*_cmds``: typer commands and
their options) may use run modules (``*_run``: the doing) and the shared ones (``params``, ``common``,
``render``, ``errors``, ...); a run module never reaches back into a command module, and no command module
uses another one -- only ``cli.main``, which assembles the app, imports them all.

The imports are read from the source with :mod:`ast`, wherever they stand: at the top, inside a function (the
commands import their heavy parts lazily) or under ``if TYPE_CHECKING:``, which would still tie the modules
together for the type checker and for whoever reads them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

import cli

#: The package as imported (the checkout, or site-packages in a run against the installed wheel).
CLI = Path(cli.__file__).resolve().parent
PACKAGE = "cli"


def _is_command(module: str) -> bool:
    name = module.rpartition(".")[2]
    return name.endswith(("_cmd", "_cmds"))


def _is_run(module: str) -> bool:
    return module.rpartition(".")[2].endswith("_run")


def _targets(node: ast.Import | ast.ImportFrom, here: str, known: set[str]) -> Iterator[str]:
    """The modules of ``known`` an import statement in module ``here`` loads."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names if alias.name in known)
        return
    base = node.module or ""
    if node.level:  # relative: against the package holding ``here`` (``cli`` is its own package)
        package = here.split(".") if here == PACKAGE else here.split(".")[:-1]
        parent = package[: len(package) - node.level + 1]
        base = ".".join([*parent, base] if base else parent)
    for alias in node.names:  # ``from cli import params`` names a module, ``from cli.x import y`` one name
        submodule = f"{base}.{alias.name}"
        if submodule in known:
            yield submodule
        elif base in known:
            yield base


def import_graph(sources: Mapping[str, str]) -> dict[str, set[str]]:
    """Module name -> the modules among ``sources`` it imports (itself left out)."""
    known = set(sources)
    graph: dict[str, set[str]] = {}
    for module, text in sources.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.update(_targets(node, module, known))
        found.discard(module)
        graph[module] = found
    return graph


def layer_violations(graph: Mapping[str, set[str]]) -> list[str]:
    """Every import going against the layering, one line each."""
    wrong = []
    for module, imported in sorted(graph.items()):
        for other in sorted(imported):
            if _is_command(other) and _is_command(module):
                wrong.append(f"command module {module} imports command module {other}")
            elif _is_command(other) and _is_run(module):
                wrong.append(f"run module {module} imports command module {other}")
    return wrong


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules in order, the first repeated at the end), or None."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        for other in sorted(graph.get(module, ())):
            cycle = visit(other, [*path, module])
            if cycle is not None:
                return cycle
        done.add(module)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle is not None:
            return cycle
    return None


def _cli_sources() -> dict[str, str]:
    sources = {}
    for path in sorted(CLI.glob("*.py")):
        name = PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"
        sources[name] = path.read_text(encoding="utf-8")
    return sources


@pytest.fixture(scope="module")
def cli_graph() -> dict[str, set[str]]:
    return import_graph(_cli_sources())


def test_the_graph_sees_the_cli(cli_graph: dict[str, set[str]]) -> None:
    # a reader that found nothing would pass every check below
    assert "cli.send_run" in cli_graph["cli.send_cmd"]
    assert "cli.send_stats" in cli_graph["cli.send_run"]
    assert {"cli.topic_cmd", "cli.group_cmd", "cli.send_cmd"} <= cli_graph["cli.main"]


def test_commands_and_runs_import_one_way(cli_graph: dict[str, set[str]]) -> None:
    assert layer_violations(cli_graph) == []


def test_the_cli_has_no_import_cycle(cli_graph: dict[str, set[str]]) -> None:
    assert find_cycle(cli_graph) is None


def test_only_main_imports_every_command_module(cli_graph: dict[str, set[str]]) -> None:
    commands = {module for module in cli_graph if _is_command(module)}
    importers = {module for module, imported in cli_graph.items() if imported & commands}
    assert importers <= {"cli.main"}


# -- the checks themselves, on made-up modules --------------------------------------------------------------

_MADE_UP = {
    "cli": "from . import common\n",
    "cli.common": "import cli.render\n",
    "cli.render": "from rich.text import Text\n",
    "cli.a_cmd": "from cli import common\ndef f() -> None:\n    from cli.b_cmd import thing\n",
    "cli.b_cmd": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a_run import Runner\n",
    "cli.a_run": "from . import a_cmd\nimport json\n",
}


def test_imports_are_found_wherever_they_stand() -> None:
    graph = import_graph(_MADE_UP)
    assert graph["cli.a_cmd"] == {"cli.common", "cli.b_cmd"}  # module level and inside a function
    assert graph["cli.b_cmd"] == {"cli.a_run"}  # under TYPE_CHECKING, relative
    assert graph["cli.a_run"] == {"cli.a_cmd"}  # ``from . import``; json is not the CLI's
    assert graph["cli"] == {"cli.common"}  # the package's own relative import


def test_wrong_imports_are_reported() -> None:
    assert layer_violations(import_graph(_MADE_UP)) == [
        "command module cli.a_cmd imports command module cli.b_cmd",
        "run module cli.a_run imports command module cli.a_cmd",
    ]


def test_a_cycle_is_reported() -> None:
    assert find_cycle(import_graph(_MADE_UP)) == ["cli.a_cmd", "cli.b_cmd", "cli.a_run", "cli.a_cmd"]
    assert find_cycle({"cli.common": {"cli.render"}, "cli.render": {"cli.common"}}) == [
        "cli.common",
        "cli.render",
        "cli.common",
    ]
    assert find_cycle({"cli.x": {"cli.y"}, "cli.y": set()}) is None
