"""The project's import graph: no circles, and packages that import only the layers below them.

Every import of every module counts, wherever it stands: at the top, under ``if TYPE_CHECKING:``, inside a
function. A circle hidden in a function or a type-checking block still ties the modules together (neither can
be understood, moved or tested without the other), so the rule is the import statements, not what happens
to run at import time. Parent packages a dotted import initialises on the way are not counted: every
``package/__init__.py`` that re-exports its modules would otherwise sit in a circle with each of them.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import pytest

import rocketmq_wire

#: The folder holding the packages as imported: the checkout, or site-packages in a run against the wheel.
REPO = Path(rocketmq_wire.__file__).resolve().parents[1]

#: The layers, lowest first, and what each package may import of the others (see docs/ARCHITECTURE.md).
ALLOWED: dict[str, set[str]] = {
    "rocketmq_wire": set(),
    "client": {"rocketmq_wire"},
    "nameserver": {"rocketmq_wire"},
    "broker": {"rocketmq_wire", "nameserver"},
    "producer": {"rocketmq_wire", "client"},
    "consumer": {"rocketmq_wire", "client", "producer"},
    "admin": {"rocketmq_wire", "client", "producer", "consumer"},
    "spark_connector": {"rocketmq_wire", "client", "producer", "consumer", "admin"},
    "cli": {
        "rocketmq_wire",
        "client",
        "producer",
        "consumer",
        "admin",
        "nameserver",
        "broker",
        "spark_connector",
    },
    # The pytest plugin and testcontainers module for users' tests: servers and clients, on top of the
    # layering (no package lists it, so nothing imports it).
    "rocketmq_testing": {
        "rocketmq_wire",
        "client",
        "producer",
        "consumer",
        "admin",
        "nameserver",
        "broker",
    },
}
#: A client package's ``testing`` module runs an embedded NameServer and Broker for its users' tests.
TESTING_MAY_ALSO_IMPORT = {"nameserver", "broker"}
#: Packages that may use ``producer`` only through its public face (``from producer import ...``).
PUBLIC_PRODUCER_ONLY = ("consumer", "admin", "spark_connector")


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the project's packages present in this checkout."""
    found: dict[str, Path] = {}
    for package in ALLOWED:
        root = REPO / package
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imported_names(path: Path, module: str) -> Iterator[str]:
    """Every dotted name the module's import statements name, relative ones resolved; for ``from a import
    b`` both ``a.b`` (if b is a module) and ``a``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            yield base
            for alias in node.names:
                yield f"{base}.{alias.name}"


@functools.cache
def graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (the deepest module each imported name resolves to)."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for module, path in known.items():
        targets: set[str] = set()
        for name in imported_names(path, module):
            while name and name not in known:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        edges[module] = targets
    # ``from a import b`` also named ``a``: keep ``a`` only when nothing deeper of it was named there.
    return {m: {t for t in ts if not any(o.startswith(t + ".") for o in ts)} for m, ts in edges.items()}


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(edges[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_reader_sees_imports_everywhere(tmp_path: Path) -> None:
    """The rule counts type-checking and function-level imports, and resolves relative ones."""
    source = tmp_path / "mod.py"
    source.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a.b import C\n"
        "def f():\n    import d.e\nfrom . import sibling\n"
    )
    names = set(imported_names(source, "pkg.mod"))
    assert {"a.b", "a.b.C", "d.e", "pkg", "pkg.sibling"} <= names
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles() -> None:
    found = circles(graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in graph().items()
        if module.split(".")[0] == package
        for target in targets
        if (top := target.split(".")[0]) != package
        and top not in ALLOWED[package]
        and not (module.endswith(".testing") and top in TESTING_MAY_ALSO_IMPORT)
    )
    assert not wrong, f"{package} may import only {sorted(ALLOWED[package])}:\n" + "\n".join(wrong)


@pytest.mark.parametrize("package", PUBLIC_PRODUCER_ONLY)
def test_only_the_public_producer_is_used_outside_it(package: str) -> None:
    inner = sorted(
        f"{module} -> {target}"
        for module, targets in graph().items()
        if module.split(".")[0] == package
        for target in targets
        if target.startswith("producer.")
    )
    assert not inner, f"{package} reaches into producer/ (use `from producer import ...`):\n" + "\n".join(
        inner
    )
