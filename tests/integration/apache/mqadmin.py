"""Apache's mqadmin (``MQAdminStartup``) of a release, run once per command with ``java -cp``.

Its output is the text a RocketMQ operator reads; tests parse the few columns they check. The serialization
of its requests follows ``-Drocketmq.serialize.type`` (JSON or ROCKETMQ), as with any Apache client.
"""

from __future__ import annotations

import dataclasses
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.integration.apache import jvm, maven
from tests.integration.apache.cache import cache_root
from tests.integration.apache.releases import ApacheRelease

MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"
TIMEOUT_S = 120.0


@dataclasses.dataclass(frozen=True)
class AdminRun:
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    def check(self) -> AdminRun:
        if self.returncode != 0:
            raise AssertionError(
                f"mqadmin exited {self.returncode}: {' '.join(self.argv[-8:])}\n"
                f"stdout:\n{self.stdout[-3000:]}\nstderr:\n{self.stderr[-3000:]}"
            )
        return self


def run(
    release: ApacheRelease,
    command: str,
    args: Sequence[str],
    *,
    namesrv: str | None = None,
    serialize: str = "JSON",
    timeout: float = TIMEOUT_S,
) -> AdminRun:
    """``mqadmin COMMAND [-n NAMESRV] ARGS``; a non-zero exit is not raised (see :meth:`AdminRun.check`)."""
    classpath = maven.classpath("tools", release.tools_version)
    rmq_home = jvm.rocketmq_home(cache_root() / "rocketmq-home")
    full_args = [command, *(["-n", namesrv] if namesrv else []), *args]
    with tempfile.TemporaryDirectory(prefix="mqadmin-") as user_home:
        argv = jvm.java_argv(
            "tool",
            classpath,
            MQADMIN_MAIN,
            full_args,
            user_home=Path(user_home),
            system_properties={"rocketmq.serialize.type": serialize},
        )
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=jvm.java_env(rmq_home),
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    return AdminRun(argv, result.returncode, result.stdout, result.stderr)
