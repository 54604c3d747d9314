"""The cluster fixture's own machinery: provider selection, skip reasons, stopping by pid.

The binaries provider is exercised for real against a *stand-in* distribution: a ``ROCKETMQ_HOME`` whose
``bin/mqnamesrv`` and ``bin/mqbroker`` are shell scripts shaped like Apache's (``mqbroker`` runs
``sh runbroker.sh``, which runs the server without ``exec``, so the server is a grandchild of the process the
provider started), whose "JVM" is the project's NameServer or Broker. That checks everything the provider
does -- config files, ``JAVA_OPT_EXT``, ``user.home``, boot lines, registration, process-group shutdown --
on machines without Apache's binaries; only Java itself is not covered.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any, ClassVar, Self

import pytest

from producer import Message, Producer, SendStatus
from tests.integration.clusters import apache_binaries, apache_docker, providers
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME, ProviderUnavailable, unique_name
from tests.integration.clusters.processes import ManagedProcess, ProcessId, free_port_block, is_running
from tests.integration.clusters.readback import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("scenario_budget")]

STAND_IN_VERSION = "4.9.8"

STAND_IN = '''
"""A stand-in "JVM": runs the project's NameServer or Broker the way Apache's startup classes would."""
import asyncio, json, os, re, signal, sys
from pathlib import Path

from broker import Broker, BrokerConfig
from nameserver import NameServer

main_class, args = sys.argv[1], sys.argv[2:]
options = dict(zip(args[::2], args[1::2]))
text = Path(options["-c"]).read_text()
props = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
user_home = re.search(r"-Duser[.]home=(\\S+)", os.environ["JAVA_OPT_EXT"]).group(1)
logs = Path(user_home) / "logs" / "rocketmqlogs"
logs.mkdir(parents=True, exist_ok=True)
role = "namesrv" if main_class.endswith("NamesrvStartup") else "broker"
record = {k: os.environ.get(k) for k in ("JAVA_OPT_EXT", "ROCKETMQ_HOME", "JAVA_HOME")}
record.update(argv=sys.argv, pid=os.getpid(), cwd=os.getcwd())
(logs / f"{role}-stand-in.json").write_text(json.dumps(record))


async def main():
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    if role == "namesrv":
        server = NameServer(props.get("bindAddress", "0.0.0.0"), int(props["listenPort"]))
        await server.start()
        print("The Name Server boot success. serializeType=JSON", flush=True)
    else:
        config = BrokerConfig.from_properties(text)
        config.listen_host = props.get("bindAddress", "0.0.0.0")
        config.namesrv_addr = options["-n"]
        server = Broker(config)
        await server.start()
        line = f"The broker[{config.broker_name}, {server.address}] boot success. serializeType=JSON"
        # Apache prints it and logs it; the provider must find it in the log file too.
        (logs / "broker.log").write_text(line + " and name server is " + options["-n"] + "\\n")
    await stop.wait()
    await server.close()

asyncio.run(main())
'''


def stand_in_distribution(home: Path) -> Path:
    """A ROCKETMQ_HOME laid out like Apache's binary distribution, with the stand-in as its JVM."""
    (home / "bin").mkdir(parents=True)
    (home / "lib").mkdir()
    (home / "lib" / f"rocketmq-broker-{STAND_IN_VERSION}.jar").write_bytes(b"")
    (home / "bin" / "stand_in.py").write_text(STAND_IN)
    jvm = f'[ -e "$JAVA_HOME/bin/java" ] || exit 1\n"{sys.executable}" "$(dirname $0)/stand_in.py" "$@"'
    scripts = {
        "mqnamesrv": 'sh "$ROCKETMQ_HOME/bin/runserver.sh" org.apache.rocketmq.namesrv.NamesrvStartup "$@"',
        "mqbroker": 'sh "$ROCKETMQ_HOME/bin/runbroker.sh" org.apache.rocketmq.broker.BrokerStartup "$@"',
        "runserver.sh": jvm,
        "runbroker.sh": jvm,
    }
    for name, body in scripts.items():
        (home / "bin" / name).write_text(f"#!/bin/sh\n{body}\n")
    return home


def stand_in_record(logs_dir: Path, role: str) -> dict[str, Any]:
    """What the stand-in saw: its argv, JAVA_OPT_EXT, ROCKETMQ_HOME, JAVA_HOME (found under user.home)."""
    [found] = logs_dir.glob(f"apache-{role}-home/logs/rocketmqlogs/{role}-stand-in.json")
    record: dict[str, Any] = json.loads(found.read_text())
    return record


async def send_and_read_back(namesrv: str) -> None:
    topic = unique_name("StandIn")
    async with Producer(unique_name("pg"), namesrv) as producer:
        result = await producer.send(Message(topic, b"through the stand-in", tags="t"))
    assert result.status is SendStatus.SEND_OK
    [stored] = await read_topic(namesrv, topic, 1)
    assert (stored.body, stored.tags) == (b"through the stand-in", "t")


@pytest.mark.parametrize(
    "provider_id",
    [
        f"binaries-{STAND_IN_VERSION}",
        f"mixed-apache-{STAND_IN_VERSION}-broker-on-python-namesrv",
        f"mixed-python-broker-on-apache-{STAND_IN_VERSION}-namesrv",
    ],
)
def test_binaries_provider_with_a_stand_in_distribution(
    provider_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROCKETMQ_HOME", str(stand_in_distribution(tmp_path / "rocketmq")))
    monkeypatch.setenv("ROCKETMQ_PROVIDERS", "binaries,mixed")
    [spec] = [s for s in providers.provider_specs() if s.id == provider_id]
    assert spec.unavailable() is None
    cluster, launch = providers.start_cluster(spec, tmp_path / "work", tmp_path / "logs")
    try:
        assert (cluster.cluster_name, cluster.broker_name) == (CLUSTER_NAME, BROKER_NAME)
        assert cluster.broker_addrs[0].startswith("127.0.0.1:")
        apache_roles = [
            role for role in ("namesrv", "broker") if f"apache-{role}" in {p.name for p in launch.processes}
        ]
        assert apache_roles, "every provider here starts at least one Apache server"
        for role in apache_roles:
            record = stand_in_record(tmp_path / "logs", role)
            options = str(record["JAVA_OPT_EXT"]).split()
            assert {"-Xms256m", "-Xmx256m", "-Xmn128m"} <= set(options)
            assert f"-Duser.home={tmp_path / 'logs' / f'apache-{role}-home'}" in options
            assert record["ROCKETMQ_HOME"] == str(tmp_path / "rocketmq")
            assert Path(str(record["JAVA_HOME"]), "bin", "java").exists()
        for process in launch.processes:
            if process.name == "python-namesrv":  # answers as the NameServer of the broker's generation
                assert process.argv[process.argv.index("--apache-version") + 1] == STAND_IN_VERSION
        if "broker" in apache_roles:
            argv = [str(arg) for arg in stand_in_record(tmp_path / "logs", "broker")["argv"]]
            assert argv[argv.index("-n") + 1] == cluster.namesrv
            assert cluster.version == STAND_IN_VERSION
        else:
            assert cluster.version == "python"
        asyncio.run(send_and_read_back(cluster.namesrv))
        # The server is the grandchild of the launched shell, as with Apache's scripts; all are tracked.
        pids: list[ProcessId] = [p for process in launch.processes for p in process.pids]
        for process in launch.processes:
            if process.name.startswith("apache-"):
                assert len(process.pids) >= 3, (process.name, process.pids)
    finally:
        leftovers = launch.stop()
    assert leftovers == []
    for process_id in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(process_id.pid, 0)


def test_binaries_skip_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_PROVIDERS", "binaries")
    monkeypatch.delenv("ROCKETMQ_HOME", raising=False)
    [spec] = providers.provider_specs()
    assert (spec.id, spec.unavailable()) == ("binaries", "ROCKETMQ_HOME not set")
    monkeypatch.setenv("ROCKETMQ_HOME", str(tmp_path / "nothing-here"))
    [spec] = providers.provider_specs()
    assert spec.unavailable() == f"ROCKETMQ_HOME={tmp_path / 'nothing-here'} has no bin/mqnamesrv"
    home = stand_in_distribution(tmp_path / "no-java")
    monkeypatch.setenv("ROCKETMQ_HOME", str(home))
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(
        ProviderUnavailable, match=re.escape(f"JAVA_HOME={tmp_path / 'no-jdk'} has no bin/java")
    ):
        apache_binaries.inspect_install(home)


def test_provider_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROCKETMQ_PROVIDERS", "python")
    assert [s.id for s in providers.provider_specs()] == ["python"]
    monkeypatch.setenv("ROCKETMQ_PROVIDERS", "docker")
    monkeypatch.setenv(
        "ROCKETMQ_DOCKER_IMAGES", "apache/rocketmq:4.9.8, registry.local:5000/apache/rocketmq:5.3.3"
    )
    assert [s.id for s in providers.provider_specs()] == ["docker-4.9.8", "docker-5.3.3"]
    monkeypatch.delenv("ROCKETMQ_PROVIDERS")
    assert {s.family for s in providers.provider_specs()} == {"python", "binaries", "docker", "mixed"}
    monkeypatch.setenv("ROCKETMQ_PROVIDERS", "python,kafka")
    with pytest.raises(ValueError, match="unknown provider"):
        providers.provider_specs()


def test_docker_reason_names_the_engine_address() -> None:
    reason = apache_docker.engine_unavailable()
    if reason is not None:
        assert reason.startswith(f"no Docker engine answers at {apache_docker.docker_host()}: ")


def test_stop_kills_a_grandchild_that_ignores_sigterm(tmp_path: Path) -> None:
    stubborn = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True)\n"
        "while True: time.sleep(1)"
    )
    process = ManagedProcess(
        "stubborn", ["sh", "-c", f'"{sys.executable}" -c "{stubborn}"; echo never'], tmp_path / "stubborn.log"
    ).start()
    process.wait_for_output(re.compile("^up$", re.M), time.monotonic() + 20)
    pids = process.pids
    assert len(pids) == 2 and all(is_running(p) for p in pids)
    started = time.monotonic()
    assert process.stop(grace_s=1.0) == []
    assert time.monotonic() - started < 10
    assert process.popen.returncode == -signal.SIGTERM  # the shell obeyed SIGTERM; its child needed SIGKILL
    for process_id in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(process_id.pid, 0)


def test_port_block_leaves_room_for_the_vip_and_ha_ports() -> None:
    port = free_port_block()
    assert 1024 < port - 2 and port + 1 < 65536


# -- the Docker provider against a recording stand-in for testcontainers (no engine needed) ----------------

#: What Apache's servers print when they are up (NamesrvStartup, 5.x wording; BrokerStartup).
APACHE_NAMESRV_BOOT = "The Name Server boot success. serializeType=JSON, address 0.0.0.0:9876\n"
APACHE_BROKER_BOOT = (
    "The broker[it-broker-a, 127.0.0.1:{port}] boot success. serializeType=JSON and name server is "
    "rmq-namesrv:9876\n"
)


class RecordingContainer:
    """Records what the provider configures; ``start`` runs the provider's real wait strategy against the
    boot line Apache prints. Only methods testcontainers' ``DockerContainer`` has are offered."""

    created: ClassVar[list[RecordingContainer]] = []

    def __init__(self, image: str) -> None:
        self.image = image
        self.command = ""
        self.env: dict[str, str] = {}
        self.ports: dict[str, Any] = {}
        self.files: dict[str, bytes] = {}
        self.aliases: tuple[str, ...] = ()
        self.network: object = None
        self.strategy: Any = None
        self.state = "created"
        RecordingContainer.created.append(self)

    def with_command(self, command: str) -> Self:
        self.command = command
        return self

    def with_network(self, network: object) -> Self:
        self.network = network
        return self

    def with_network_aliases(self, *aliases: str) -> Self:
        self.aliases = aliases
        return self

    def with_env(self, key: str, value: str) -> Self:
        self.env[key] = value
        return self

    def with_copy_into_container(self, data: bytes, destination: str) -> Self:
        self.files[destination] = data
        return self

    def waiting_for(self, strategy: Any) -> Self:
        self.strategy = strategy
        return self

    def start(self) -> Self:
        self.state = "running"
        self.strategy.wait_until_ready(self)
        return self

    def boot_text(self) -> str:
        if "mqnamesrv" in self.command:
            return APACHE_NAMESRV_BOOT
        [conf] = self.files.values()
        port = re.search(r"^listenPort=(\d+)$", conf.decode(), re.M)
        assert port is not None
        return APACHE_BROKER_BOOT.format(port=port.group(1))

    def get_logs(self) -> tuple[bytes, bytes]:
        return self.boot_text().encode(), b""

    def get_wrapped_container(self) -> Self:
        return self

    def reload(self) -> None:
        pass

    @property
    def status(self) -> str:
        return self.state

    def get_container_id(self) -> str:
        return f"{id(self):064x}"

    def stop(self) -> None:
        self.state = "removed"


class RecordingNetwork:
    def __init__(self) -> None:
        self.removed = False

    def create(self) -> Self:
        return self

    def remove(self) -> None:
        self.removed = True


class FakeDockerSdk:
    """docker-py as ``_remove`` uses it: the engine no longer knows any container."""

    class errors:
        class NotFound(Exception):
            pass

    class _Containers:
        def get(self, container_id: str) -> None:
            raise FakeDockerSdk.errors.NotFound(container_id)

    class _Client:
        def __init__(self) -> None:
            self.containers = FakeDockerSdk._Containers()

        def close(self) -> None:
            pass

    @classmethod
    def from_env(cls, timeout: int) -> Any:
        return cls._Client()


def test_docker_provider_configures_containers_as_documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from testcontainers.core import container as tc_container
    from testcontainers.core import network as tc_network
    from testcontainers.core.container import DockerContainer

    for method in ("with_command", "with_network", "with_network_aliases", "with_env", "waiting_for"):
        assert hasattr(DockerContainer, method), method
    assert hasattr(DockerContainer, "with_copy_into_container") and hasattr(DockerContainer, "get_logs")
    RecordingContainer.created.clear()
    network = RecordingNetwork()
    monkeypatch.setattr(tc_container, "DockerContainer", RecordingContainer)
    monkeypatch.setattr(tc_network, "Network", lambda: network)
    monkeypatch.setattr(apache_docker, "engine_unavailable", lambda: None)
    monkeypatch.setattr(apache_docker, "_host_address", lambda: "127.0.0.1")
    monkeypatch.setattr(apache_docker, "_docker_sdk", lambda: FakeDockerSdk)
    monkeypatch.setenv("ROCKETMQ_PROVIDERS", "docker")
    monkeypatch.setenv("ROCKETMQ_DOCKER_IMAGES", "apache/rocketmq:5.3.3")
    [spec] = providers.provider_specs()
    launch = Launch(tmp_path / "work", tmp_path / "logs")
    (tmp_path / "logs").mkdir()
    namesrv, version = spec.start(launch)
    namesrv_box, broker_box = RecordingContainer.created
    assert version == "5.3.3" and namesrv.version == "5.3.3"
    assert (namesrv_box.image, namesrv_box.command, namesrv_box.aliases) == (
        "apache/rocketmq:5.3.3",
        "sh mqnamesrv",
        ("rmq-namesrv",),
    )
    [(namesrv_port, namesrv_binding)] = namesrv_box.ports.items()
    assert namesrv_port == "9876/tcp" and namesrv.addr == f"127.0.0.1:{namesrv_binding[1]}"
    assert namesrv.internal_addr == "rmq-namesrv:9876"
    assert broker_box.network is network and namesrv_box.network is network
    [(conf_path, conf)] = broker_box.files.items()
    assert broker_box.command == f"sh mqbroker -c {conf_path}"
    settings = dict(line.split("=", 1) for line in conf.decode().splitlines())
    port = int(settings["listenPort"])
    assert (settings["brokerIP1"], settings["namesrvAddr"]) == ("127.0.0.1", "rmq-namesrv:9876")
    assert "storePathRootDir" not in settings and "bindAddress" not in settings
    assert broker_box.ports == {f"{p}/tcp": ("127.0.0.1", p) for p in (port - 2, port, port + 1)}
    for box in (namesrv_box, broker_box):
        assert "-Xmx256m" in box.env["JAVA_OPT_EXT"].split()
    assert launch.stop() == []
    assert [box.state for box in (namesrv_box, broker_box)] == ["removed", "removed"]
    assert network.removed
    assert (tmp_path / "logs" / "docker-broker.log").read_text().startswith("The broker[it-broker-a")
