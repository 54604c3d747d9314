"""The ``rmq`` command line (typer): ``cli.main:main`` is the console-script entry point, ``cli.main:app``
the typer app.

Every ``rmq`` call is a new interpreter, so the command modules import only typer, rich's console and the
light checks of :mod:`cli.params` at module level; clients, servers, wire bodies, ``rich.table`` and the
renderers are imported inside the functions that run a command (or by its ``*_run`` module), and names
needed only in annotations come under ``if TYPE_CHECKING:``. Parameter annotations are read by typer, so
they stay plain types or enums defined here. ``tests/unit/test_cli_startup.py`` checks what gets imported.
"""
