"""Apache RocketMQ's own NameServer and Broker from a binary distribution (``ROCKETMQ_HOME``).

Started the documented way -- ``sh bin/mqnamesrv -c FILE`` and ``sh bin/mqbroker -c FILE -n ADDR`` -- with:

* ``JAVA_OPT_EXT`` keeping the JVMs small: the scripts ask for 4-8 GiB heaps, and ``JAVA_OPT_EXT`` comes last
  on the java command line, where the last of a repeated option wins;
* ``-Duser.home`` pointing into the launch's logs folder, because both servers log to
  ``${user.home}/logs/rocketmqlogs`` (the NameServer also keeps ``${user.home}/namesrv/kvConfig.json`` there;
  the broker's store goes to the work folder through ``storePathRootDir``);
* ``JAVA_HOME`` exported even when only ``java`` on ``PATH`` is known: the scripts otherwise fall back to
  ``$HOME/jdk/java`` and ``/usr/java`` and give up.

Both servers print a boot line on stdout (``NamesrvStartup``: "The Name Server boot success. serializeType=…";
``BrokerStartup``: "The broker[NAME, IP:PORT] boot success. serializeType=…"), which is awaited first; the
broker is then only ready once the NameServer lists it (see :mod:`.probe`).

4.x servers bind every interface (there is no setting for it); 5.x reads ``bindAddress`` and is kept on
loopback.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from tests.integration.clusters import configs
from tests.integration.clusters.launch import Launch, NamesrvEndpoint
from tests.integration.clusters.model import ProviderUnavailable
from tests.integration.clusters.processes import free_port, free_port_block

HOME_ENV = "ROCKETMQ_HOME"
#: A JVM's start-up plus RocketMQ's own (store recovery, registration) on a slow CI machine.
BOOT_TIMEOUT_S = 90.0
#: Shutdown hooks flush and unregister; a broker may take several seconds.
GRACE_S = 25.0
NAMESRV_BOOT = re.compile(r"The Name Server boot success")
BROKER_BOOT = re.compile(r"The broker\[[^\]]*\] boot success")
_JAR_VERSION = re.compile(r"rocketmq-(?:broker|namesrv|common)-(\d+\.\d+\.\d+)\S*\.jar$")


@dataclasses.dataclass(frozen=True)
class ApacheInstall:
    """One binary distribution and the JVM that runs it."""

    home: Path
    version: str
    java_home: Path
    java_major: int

    @property
    def label(self) -> str:
        return self.version


def _java_home() -> Path:
    configured = os.environ.get("JAVA_HOME")
    if configured:
        home = Path(configured)
        if not (home / "bin" / "java").exists():
            raise ProviderUnavailable(f"JAVA_HOME={configured} has no bin/java")
        return home
    java = shutil.which("java")
    if java is None:
        raise ProviderUnavailable("no Java: JAVA_HOME not set and no java on PATH")
    return Path(java).resolve().parent.parent


@functools.cache
def java_major(java_home: Path) -> int:
    """8 for "1.8.0_…", else the first number of ``java -version``'s version string."""
    result = subprocess.run(
        [str(java_home / "bin" / "java"), "-version"], capture_output=True, text=True, timeout=60, check=False
    )
    found = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if found is None:
        raise ProviderUnavailable(f"{java_home}/bin/java -version printed no version: {result.stderr!r}")
    first = int(found.group(1))
    return int(found.group(2) or 0) if first == 1 else first


def _version_of(home: Path) -> str:
    for jar in sorted((home / "lib").glob("rocketmq-*.jar")):
        found = _JAR_VERSION.search(jar.name)
        if found:
            return found.group(1)
    raise ProviderUnavailable(f"{HOME_ENV}={home}: no lib/rocketmq-broker-<version>.jar to tell the version")


def homes() -> list[Path]:
    """``ROCKETMQ_HOME``: one distribution, or several separated by ``os.pathsep`` (e.g. a 4.9 and a 5.3)."""
    value = os.environ.get(HOME_ENV, "")
    return [Path(part) for part in value.split(os.pathsep) if part]


def inspect_install(home: Path) -> ApacheInstall:
    """The distribution at ``home``, or :class:`ProviderUnavailable` naming what is missing."""
    for script in ("mqnamesrv", "mqbroker", "runserver.sh", "runbroker.sh"):
        if not (home / "bin" / script).is_file():
            raise ProviderUnavailable(f"{HOME_ENV}={home} has no bin/{script}")
    java_home = _java_home()
    return ApacheInstall(home, _version_of(home), java_home, java_major(java_home))


def java_opt_ext(install: ApacheInstall, user_home: Path) -> str:
    options = [
        f"-Duser.home={user_home}",
        "-Xms256m",
        "-Xmx256m",
        "-Xmn128m",
        # 5.x brokers size buffers from the direct-memory limit (the scripts give 15 GiB); 4.x accept it too.
        "-XX:MaxDirectMemorySize=512m",
    ]
    if install.java_major >= 9:
        # MappedFile unmaps through sun.nio.ch.DirectBuffer's cleaner, closed to reflection since Java 9.
        options += [
            "--add-opens=java.base/java.nio=ALL-UNNAMED",
            "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
        ]
    return " ".join(options)


def _env(install: ApacheInstall, user_home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        ROCKETMQ_HOME=str(install.home),
        JAVA_HOME=str(install.java_home),
        JAVA_OPT_EXT=java_opt_ext(install, user_home),
    )
    return env


def start_namesrv(launch: Launch, install: ApacheInstall) -> NamesrvEndpoint:
    port = free_port()
    folder = launch.work_dir / "apache-namesrv"
    user_home = launch.logs_dir / "apache-namesrv-home"
    user_home.mkdir(parents=True, exist_ok=True)
    config = configs.write_properties(
        folder / "namesrv.properties", {"listenPort": str(port), "bindAddress": "127.0.0.1"}
    )
    process = launch.process(
        "apache-namesrv",
        ["sh", str(install.home / "bin" / "mqnamesrv"), "-c", str(config)],
        env=_env(install, user_home),
        cwd=folder,
        grace_s=GRACE_S,
    )
    log_file = user_home / "logs" / "rocketmqlogs" / "namesrv.log"
    process.wait_for_output(NAMESRV_BOOT, time.monotonic() + BOOT_TIMEOUT_S, also=[log_file])
    return NamesrvEndpoint(f"127.0.0.1:{port}", install.version)


def start_broker(launch: Launch, install: ApacheInstall, namesrv_addr: str) -> None:
    port = free_port_block()
    folder = launch.work_dir / "apache-broker"
    user_home = launch.logs_dir / "apache-broker-home"
    user_home.mkdir(parents=True, exist_ok=True)
    settings = configs.broker_properties(
        listen_port=port,
        namesrv_addr=namesrv_addr,
        store_dir=str(folder / "store"),
        extra={"bindAddress": "127.0.0.1"},
    )
    config = configs.write_properties(folder / "broker.conf", settings)
    process = launch.process(
        "apache-broker",
        ["sh", str(install.home / "bin" / "mqbroker"), "-c", str(config), "-n", namesrv_addr],
        env=_env(install, user_home),
        cwd=folder,
        grace_s=GRACE_S,
    )
    log_file = user_home / "logs" / "rocketmqlogs" / "broker.log"
    process.wait_for_output(BROKER_BOOT, time.monotonic() + BOOT_TIMEOUT_S, also=[log_file])
