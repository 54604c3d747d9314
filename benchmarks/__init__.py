"""Benchmarks: scripts that measure and print figures (never pass/fail), run from the repository root as
modules, ``.venv/bin/python -m benchmarks.<name> [--help]``.

Run as modules, they import the project's packages and the integration suite's launchers (``tests.*``) from
the checkout they sit in, and nothing here can stand in for a package of the same name (``benchmarks/
producer.py`` for ``producer``), which running a script by its path would allow. Files starting with ``_``
are helpers the scripts share.
"""
