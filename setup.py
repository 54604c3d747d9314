"""Declares the optional C accelerator; every other piece of metadata lives in pyproject.toml.

``optional=True`` makes a failed compile (no compiler, no Python headers) a warning rather than an error, so
the package still installs and runs on its pure-Python code (``rocketmq_wire.accel`` picks the path).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "rocketmq_wire._speedups",
            sources=["rocketmq_wire/_speedups.c"],
            optional=True,
        )
    ]
)
