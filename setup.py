"""Declares the optional C accelerator; every other piece of metadata lives in pyproject.toml.

``optional=True`` makes a failed compile (no compiler, no Python headers) a warning rather than an error, so
the package still installs and runs on its pure-Python code (``rocketmq_wire.accel`` picks the path). The
build command below says so in plain words in the build log (``pip install -v``): setuptools' own warning
names only the failed command, and whoever reads the log wants to know what the installed package will do.
"""

from __future__ import annotations

import logging

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OptionalBuildExt(build_ext):
    """setuptools' ``build_ext``, with a message naming the codec path the installed package will use."""

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            # setuptools raises CCompilerError, CompileError or another DistutilsError (its vendored
            # distutils' classes, not importable under one stable name); optional=True decides what counts.
            if not getattr(ext, "optional", False):
                raise
            self.warn(
                f"rocketmq-toolkit: the C accelerator {ext.name} was not built ({exc}); "
                "the package installs with the pure-Python codec (rmq --version names the path in use)"
            )
            return
        self.announce(f"rocketmq-toolkit: built the C accelerator {ext.name}", level=logging.INFO)


setup(
    cmdclass={"build_ext": OptionalBuildExt},
    ext_modules=[
        Extension(
            "rocketmq_wire._speedups",
            sources=["rocketmq_wire/_speedups.c"],
            optional=True,
        )
    ],
)
