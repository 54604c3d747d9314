"""The ``rmq`` command line (typer): ``cli.main:main`` is the console-script entry point, ``cli.main:app``
the typer app."""
