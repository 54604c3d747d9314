"""Apache's NameServer and Broker, by release, as processes of a launch (:mod:`.clusters.launch`).

``java -cp <resolved jars> org.apache.rocketmq.namesrv.NamesrvStartup -c FILE`` and ``...BrokerStartup -c
FILE``: no distribution, no start-up scripts. Both print a boot line on stdout ("The Name Server boot
success", "The broker[NAME, ADDR] boot success"), awaited first; a broker is only ready once the NameServer
lists it (:mod:`tests.integration.clusters.probe`). 4.x servers bind every interface (no setting exists);
5.x reads ``bindAddress`` and stays on loopback.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

from tests.integration.apache import class_data, jvm, maven
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters import configs
from tests.integration.clusters.launch import Launch, NamesrvEndpoint
from tests.integration.clusters.model import BROKER_NAME
from tests.integration.clusters.processes import ManagedProcess, free_port, free_port_block

NAMESRV_MAIN = "org.apache.rocketmq.namesrv.NamesrvStartup"
BROKER_MAIN = "org.apache.rocketmq.broker.BrokerStartup"
#: A JVM's start-up plus RocketMQ's own (store recovery, registration) on a busy 2-core machine.
BOOT_TIMEOUT_S = 120.0
#: Shutdown hooks flush and unregister; a broker may take several seconds.
GRACE_S = 25.0
NAMESRV_BOOT = re.compile(r"The Name Server boot success")
BROKER_BOOT = re.compile(r"The broker\[[^\]]*\] boot success")


def _start(
    launch: Launch,
    name: str,
    release: ApacheRelease,
    main: str,
    config_args: list[str],
    system_properties: Mapping[str, str] | None = None,
) -> tuple[ManagedProcess, class_data.ArchivePlan]:
    folder = launch.work_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    user_home = launch.logs_dir / f"{name}-home"
    user_home.mkdir(parents=True, exist_ok=True)
    rmq_home = jvm.rocketmq_home(launch.work_dir / "rocketmq-home")
    kind: jvm.Kind = "namesrv" if main == NAMESRV_MAIN else "broker"
    classpath = maven.classpath("servers", release.version)
    class_plan = jvm.server_class_plan(kind, classpath, main)
    argv = jvm.java_argv(
        kind,
        classpath,
        main,
        config_args,
        user_home=user_home,
        system_properties=system_properties,
        class_plan=class_plan,
    )
    process = launch.process(
        name, argv, env=jvm.java_env(rmq_home), cwd=folder, grace_s=GRACE_S, kill_on_discard=True
    )
    return process, class_plan


def _booted(process: ManagedProcess, class_plan: class_data.ArchivePlan) -> None:
    """A server just printed its boot line: everything a server loads to start is loaded, so this is the
    moment to dump its classes for the next starts (when this start was chosen to)."""
    if class_plan.dump_to is not None:
        class_data.dump_running(jvm.java_home() / "bin" / "java", process.pid, class_plan.dump_to)


def start_namesrv(
    launch: Launch,
    release: ApacheRelease,
    name: str = "apache-namesrv",
    *,
    system_properties: Mapping[str, str] | None = None,
) -> NamesrvEndpoint:
    """An Apache NameServer; ``system_properties`` are the JVM's ``-D`` settings (e.g. ``tls.*``)."""
    port = free_port()
    config = configs.write_properties(
        launch.work_dir / name / "namesrv.properties", {"listenPort": str(port), "bindAddress": "127.0.0.1"}
    )
    process, class_plan = _start(launch, name, release, NAMESRV_MAIN, ["-c", str(config)], system_properties)
    process.wait_for_output(NAMESRV_BOOT, time.monotonic() + BOOT_TIMEOUT_S)
    _booted(process, class_plan)
    return NamesrvEndpoint(f"127.0.0.1:{port}", release.version)


def start_broker(
    launch: Launch,
    release: ApacheRelease,
    namesrv_addr: str,
    *,
    broker_name: str = BROKER_NAME,
    name: str = "apache-broker",
    extra: Mapping[str, str] | None = None,
    system_properties: Mapping[str, str] | None = None,
) -> ManagedProcess:
    """An Apache broker (its process returned, so a test may kill it) registered to ``namesrv_addr``;
    ``extra`` goes into its broker.conf, ``system_properties`` are the JVM's ``-D`` settings."""
    port = free_port_block()
    store = launch.work_dir / name / "store"
    settings = configs.broker_properties(
        listen_port=port,
        namesrv_addr=namesrv_addr,
        store_dir=str(store),
        broker_name=broker_name,
        extra={"bindAddress": "127.0.0.1", **(extra or {})},
    )
    config = configs.write_properties(launch.work_dir / name / "broker.conf", settings)
    process, class_plan = _start(
        launch, name, release, BROKER_MAIN, ["-c", str(config), "-n", namesrv_addr], system_properties
    )
    process.wait_for_output(BROKER_BOOT, time.monotonic() + BOOT_TIMEOUT_S)
    _booted(process, class_plan)
    return process
