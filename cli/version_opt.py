"""``rmq --version``: the installed distribution's version and the codec path this interpreter runs.

Whether an install compiled the C accelerator is invisible otherwise (a wheel built without a compiler works,
only slower), so the version line names the path, as ``rocketmq_wire.accel`` chose it, with its reason.
The codec and the metadata reader are imported only when the option is given: other calls of ``rmq`` do not
pay for them.
"""

from __future__ import annotations

import typer

#: The distribution's name on PyPI (pyproject.toml), which metadata is looked up by.
DISTRIBUTION = "rocketmq-toolkit"


def version_text() -> str:
    """Three lines: ``rmq`` and the distribution's version, the codec path, the Python running it."""
    import platform
    from importlib import metadata

    from rocketmq_wire import accel

    try:
        version = metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # imported from a source tree that was never installed
        version = "unknown (not installed)"
    return "\n".join(
        (
            f"rmq ({DISTRIBUTION}) {version}",
            f"codec: {accel.CODEC_PATH}",
            f"Python {platform.python_version()} ({platform.python_implementation()})",
        )
    )


def show_version(value: bool) -> None:
    """The eager ``--version`` option's callback: print and stop before any command is looked for."""
    if value:
        typer.echo(version_text())
        raise typer.Exit()
