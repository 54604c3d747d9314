"""The ``rmq`` command line (typer). ``cli.main:app`` is the console-script entry point."""
