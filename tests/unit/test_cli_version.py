"""``rmq --version`` names the installed version and the codec path ``rocketmq_wire.accel`` chose.

scripts/check-dist.sh reads that line from installed wheels (C accelerator) and from an sdist installed
without a compiler (pure Python); here both answers are checked against the module that decides.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata

from typer.testing import CliRunner

from cli.main import app
from cli.version_opt import DISTRIBUTION
from rocketmq_wire import accel


def test_version_names_the_distribution_and_the_codec_path_this_process_runs() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    first, codec, python = result.output.splitlines()
    assert first == f"rmq ({DISTRIBUTION}) {metadata.version(DISTRIBUTION)}"
    assert codec == f"codec: {accel.CODEC_PATH}"
    assert codec.startswith("codec: C accelerator (") is accel.ACCELERATED
    if accel.ACCELERATED:
        assert accel.speedups is not None
        assert str(accel.speedups.__file__) in codec  # type: ignore[attr-defined]  # a module's __file__
    assert python.startswith(f"Python {sys.version_info.major}.{sys.version_info.minor}.")


def test_version_follows_the_switch_to_pure_python_and_stops_before_any_command() -> None:
    """Through ``main()`` (which builds only the parser a call needs) in a fresh interpreter, as ``rmq``
    runs: the eager option answers although no command is named, and exits 0."""
    env = {**os.environ, "RMQ_NO_SPEEDUPS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", "from cli.main import main; main()", "--version"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "codec: pure Python (RMQ_NO_SPEEDUPS is set)" in done.stdout.splitlines()
