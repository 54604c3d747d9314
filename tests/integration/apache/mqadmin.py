"""Apache's mqadmin (``MQAdminStartup``) of a release, started with ``java -cp``.

It runs through ``rmqit.AdminExit`` (compiled with the Java peer): Apache's main, then an exit as soon as it
returns, instead of two idle seconds waiting for the client's event loops to wind down. Where the Java peer
cannot be compiled (a JRE without ``javac``), Apache's main class runs on its own.

Its output is the text a RocketMQ operator reads; tests parse the few columns they check. The serialization
of its requests follows ``-Drocketmq.serialize.type`` (JSON or ROCKETMQ), as with any Apache client.
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import logging
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from tests.integration.apache import jvm, maven, mqadmin_host
from tests.integration.apache.cache import cache_root
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters.model import ProviderUnavailable
from tests.integration.java_peer.build import classes_jar, compile_classes

log = logging.getLogger("tests.apache.mqadmin")

MQADMIN_MAIN = "org.apache.rocketmq.tools.command.MQAdminStartup"
#: Our wrapper of MQADMIN_MAIN (``tests/integration/java/src/rmqit/AdminExit.java``).
EXITING_MAIN = "rmqit.AdminExit"
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
    """``mqadmin COMMAND [-n NAMESRV] ARGS``; a non-zero exit is not raised (see :meth:`AdminRun.check`).

    The command runs in a host JVM (:mod:`.mqadmin_host`) where the wrapper could be compiled, else in a
    JVM of its own."""
    classpath, main_class = _program(release.tools_version)
    rmq_home = jvm.rocketmq_home(cache_root() / "rocketmq-home")
    full_args = [command, *(["-n", namesrv] if namesrv else []), *args]
    properties = {"rocketmq.serialize.type": serialize, **jvm.LOADED_MACHINE_CLIENT_PROPERTIES}
    if main_class == EXITING_MAIN and mqadmin_host.enabled():

        def host_argv(share_classes: bool = True) -> list[str]:
            return jvm.java_argv(
                "tool",
                classpath,
                mqadmin_host.HOST_MAIN,
                [],
                user_home=_host_home(),
                system_properties=properties,
                share_classes=share_classes,
            )

        key = tuple(host_argv(share_classes=False))
        code, stdout, stderr = mqadmin_host.run(key, host_argv, jvm.java_env(rmq_home), full_args, timeout)
        return AdminRun([*key, *full_args], code, stdout, stderr)
    with tempfile.TemporaryDirectory(prefix="mqadmin-") as user_home:
        argv = jvm.java_argv(
            "tool", classpath, main_class, full_args, user_home=Path(user_home), system_properties=properties
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


@functools.cache
def _host_home() -> Path:
    """The hosts' ``user.home`` (mqadmin logs under it), one per test process, removed at its exit."""
    home = Path(tempfile.mkdtemp(prefix="mqadmin-home-"))
    atexit.register(shutil.rmtree, home, True)
    return home


@functools.cache
def _program(tools_version: str) -> tuple[tuple[Path, ...], str]:
    """The classpath and main class mqadmin of ``tools_version`` runs with (compiling the wrapper once)."""
    try:
        classes, classpath = compile_classes(tools_version)
    except ProviderUnavailable as exc:
        log.warning("mqadmin runs without its exit wrapper (each call waits ~2 s longer): %s", exc)
        return maven.classpath("tools", tools_version), MQADMIN_MAIN
    return (*classpath, classes_jar(classes)), EXITING_MAIN
