"""The ``java`` command lines that run Apache's code: which JVM, how small, what it may reflect into.

Every Apache process gets:

* a small heap (a broker otherwise sizes itself for a production host; see :data:`HEAPS`);
* on Java 9+ the opens and exports Apache's code reflects through (:data:`JAVA17_OPENS`): memory-mapped
  files are unmapped through ``sun.nio.ch.DirectBuffer``'s cleaner (``jdk.internal.ref.Cleaner.clean()``,
  which fails with ``InaccessibleObjectException`` without ``jdk.internal.ref``: a topic deletion on 4.9.x),
  and fastjson and the remoting layer reflect into ``java.lang``, ``java.lang.reflect``, ``java.util``;
* ``-Duser.home`` in a folder of the launch: Apache logs to ``${user.home}/logs/rocketmqlogs`` and keeps
  state under ``${user.home}/store`` and ``${user.home}/namesrv``;
* for the servers, TLS off (:data:`PLAIN_SERVER`) unless the launch asks for a TLS mode;
* ``ROCKETMQ_HOME`` pointing at a folder of ours whose ``conf/`` holds the logging configurations 4.x
  loads from there at start-up (5.x carries its own in its jars); the servers refuse to start without it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from tests.integration.apache import class_data
from tests.integration.clusters.model import ProviderUnavailable

Kind = Literal["namesrv", "broker", "tool"]

JAVA17_OPENS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
)
HEAPS: Mapping[Kind, tuple[str, ...]] = {
    "namesrv": ("-Xms128m", "-Xmx256m"),
    # 5.x brokers size buffers from the direct-memory limit; 4.x accept it too.
    "broker": ("-Xms256m", "-Xmx384m", "-Xmn128m", "-XX:MaxDirectMemorySize=512m"),
    # Short-lived: mqadmin and the client peers start faster with C1 only and the serial collector.
    "tool": ("-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"),
}
#: Apache's servers default to TLS mode "permissive" in test mode, where every remoting server (a broker
#: has two) makes a self-signed certificate at start-up: an RSA key generated on the spot. Measured on
#: this suite's 2-core machine, that was 3.3 s of the 4.9 s of CPU a 4.9.7 NameServer spends to start
#: (4.0 of 6.4 s on 5.3.3, and a broker's start about halved). A plain client sees no difference: a
#: permissive server reads plain frames as they come. The tests that speak TLS set ``tls.server.mode``
#: in their ``system_properties``, which follow these options on the command line, so theirs wins.
PLAIN_SERVER = ("-Dtls.server.mode=disabled",)
#: System properties of every Apache client JVM the suite starts (the Java peer, mqadmin). Apache's client
#: gives up on a connection not made within 3 s; several JVMs starting at once on a loaded 2-core machine
#: missed that on their first connection ("send request exception ... channel[null]", seen in CI).
LOADED_MACHINE_CLIENT_PROPERTIES: Mapping[str, str] = {
    "com.rocketmq.remoting.client.connect.timeout": "10000"
}

#: What the 4.x servers and mqadmin read from ``$ROCKETMQ_HOME/conf`` (file name: log file it writes).
_LOGBACK_FILES = {
    "logback_namesrv.xml": "namesrv",
    "logback_broker.xml": "broker",
    "logback_tools.xml": "tools",
}
_LOGBACK = """<?xml version="1.0" encoding="UTF-8"?>
<!-- rocketmq-toolkit's integration tests: everything at INFO into one file per role. -->
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${{user.home}}/logs/rocketmqlogs/{name}.log</file>
    <encoder><pattern>%d{{HH:mm:ss.SSS}} %-5level [%thread] %logger{{32}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


def java_home() -> Path:
    """``JAVA_HOME``, else the JDK of ``java`` on ``PATH``."""
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
def java_major(home: Path) -> int:
    """8 for "1.8.0_…", else the first number of ``java -version``'s version string."""
    result = subprocess.run(
        [str(home / "bin" / "java"), "-version"], capture_output=True, text=True, timeout=60, check=False
    )
    found = re.search(r'version "(\d+)(?:\.(\d+))?', result.stderr + result.stdout)
    if found is None:
        raise ProviderUnavailable(f"{home}/bin/java -version printed no version: {result.stderr!r}")
    first = int(found.group(1))
    return int(found.group(2) or 0) if first == 1 else first


def rocketmq_home(folder: Path) -> Path:
    """A ``ROCKETMQ_HOME`` with our logging configurations in ``conf/`` (idempotent)."""
    conf = folder / "conf"
    conf.mkdir(parents=True, exist_ok=True)
    for file_name, log_name in _LOGBACK_FILES.items():
        target = conf / file_name
        if not target.exists():
            target.write_text(_LOGBACK.format(name=log_name), "utf-8")
    return folder


def server_options(kind: Kind) -> tuple[str, ...]:
    """Options a server of ``kind`` gets beside its heap (none for a tool)."""
    return PLAIN_SERVER if kind != "tool" else ()


def java_options(kind: Kind, user_home: Path, home: Path | None = None) -> list[str]:
    """JVM options (before ``-cp``) for an Apache process of ``kind`` logging under ``user_home``."""
    options = [*HEAPS[kind], *server_options(kind), f"-Duser.home={user_home}", "-Dfile.encoding=UTF-8"]
    if java_major(home or java_home()) >= 9:
        options += JAVA17_OPENS
    return options


def java_argv(
    kind: Kind,
    classpath: Sequence[Path],
    main_class: str,
    args: Sequence[str],
    *,
    user_home: Path,
    system_properties: Mapping[str, str] | None = None,
    share_classes: bool = True,
    class_plan: class_data.ArchivePlan | None = None,
) -> list[str]:
    """``java [options] -cp CLASSPATH MAIN ARGS``. ``share_classes``: a tool's run uses the class-data
    archive of its program, or dumps it (:mod:`.class_data`); pass False for an argv that may never run.
    ``class_plan``: the servers' own (see :func:`server_class_plan`)."""
    home = java_home()
    java = home / "bin" / "java"
    options = java_options(kind, user_home, home)
    props = [f"-D{key}={value}" for key, value in (system_properties or {}).items()]
    cp = os.pathsep.join(str(jar) for jar in classpath)
    if class_plan is not None:
        archive = class_plan.options
    elif share_classes and kind == "tool":
        archive = class_data.archive_options(java, HEAPS[kind], classpath, main_class)
    else:
        archive = []
    return [
        str(java),
        *archive,
        *options,
        *props,
        "-cp",
        cp,
        main_class,
        *args,
    ]


def server_class_plan(kind: Kind, classpath: Sequence[Path], main_class: str) -> class_data.ArchivePlan:
    """The class-data archive a server of ``kind`` maps, or dumps once it has started."""
    return class_data.plan(java_home() / "bin" / "java", HEAPS[kind], classpath, main_class, at_exit=False)


def java_env(rmq_home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["ROCKETMQ_HOME"] = str(rmq_home)
    env["JAVA_HOME"] = str(java_home())
    env.pop("JAVA_TOOL_OPTIONS", None)  # it would print a banner into mqadmin's output
    return env
