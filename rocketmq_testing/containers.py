"""Apache RocketMQ's NameServer and Broker in one Docker container, for tests, through testcontainers.

:class:`RocketMQContainer` has the shape of testcontainers' ``KafkaContainer``: the image as the first
argument, ``with_*`` settings before ``start()``, a ``with`` block, and :meth:`~RocketMQContainer.
get_namesrv_addr` for the clients. It is ready when the broker has registered with the NameServer (asked over
the wire with the toolkit's admin client, see :class:`BrokerRegistered`), not after a pause.

Clients connect to the broker at the address it registers, so that address must be one this host reaches:

* bridge network (the default): the NameServer's port is published on a port Docker picks; the broker
  listens on a port chosen free on this host and published as the same number, and registers the host
  Docker says containers are reached at. The configuration files are written into the container once it
  runs (only then is that host known); the container's command waits for them.
* ``host_network=True``: both servers bind free ports of this host's loopback and the broker registers
  ``127.0.0.1`` (for an engine running on this host; Docker Desktop's VM has no such network).

The default image is Apache's ``apache/rocketmq`` (servers started as ``sh mqnamesrv`` and ``sh mqbroker``
from its working directory, as Apache's Docker instructions do); an image laid out otherwise names its two
start commands with :meth:`~RocketMQContainer.with_server_commands`. Each command gets ``-c <file>`` appended.
"""

from __future__ import annotations

import logging
import shlex
import socket
from collections.abc import Mapping, Sequence
from typing import Any, Self

try:
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import WaitStrategy, WaitStrategyTarget
except ImportError as exc:  # an optional dependency: say which extra brings it
    raise ImportError(
        f"rocketmq_testing.containers needs {exc.name} (pip install 'rocketmq-toolkit[testing]')"
    ) from exc

logger = logging.getLogger("rocketmq_testing.containers")

DEFAULT_IMAGE = "apache/rocketmq:5.3.3"
NAMESRV_PORT = 9876
#: Where the configurations go in the container (``/tmp``: writable whatever user the image runs as).
NAMESRV_CONF = "/tmp/rocketmq-testing-namesrv.properties"
BROKER_CONF = "/tmp/rocketmq-testing-broker.conf"
STORE_DIR = "/tmp/rocketmq-testing-store"
#: Apache's start scripts size the broker's heap for a production machine (8 GB); a test needs little.
DEFAULT_JAVA_OPT_EXT = "-Xms256m -Xmx256m -Xmn128m"
#: A JVM pair's start on a busy 2-core machine.
DEFAULT_STARTUP_TIMEOUT_S = 120


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on this host right now (the OS's pick for a socket bound to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def free_broker_port(host: str = "127.0.0.1", attempts: int = 50) -> int:
    """A free port ``p`` whose neighbours a broker also binds are free too: ``p - 2`` (Apache's "fast"
    port) and ``p + 1`` (HA)."""
    for _ in range(attempts):
        port = free_port(host)
        if port < 1026 or port > 0xFFFE:
            continue
        try:
            with socket.socket() as fast, socket.socket() as ha:
                fast.bind((host, port - 2))
                ha.bind((host, port + 1))
        except OSError:
            continue
        return port
    raise OSError(f"no free port block for a broker on {host} after {attempts} tries")


def _accepts(addr: str) -> bool:
    """Whether something accepts TCP connections at ``host:port``."""
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


def render_properties(settings: Mapping[str, str]) -> str:
    """A Java properties file (the values need no escaping: addresses, names, numbers, paths)."""
    return "".join(f"{key}={value}\n" for key, value in settings.items())


class BrokerRegistered(WaitStrategy):
    """Ready once the NameServer lists the broker ``broker_name`` of ``cluster_name`` with a master address.

    The NameServer is asked for its cluster information (GET_BROKER_CLUSTER_INFO) at every poll; a
    container that stops meanwhile fails the wait at once, with the end of its output.
    """

    def __init__(self, cluster_name: str, broker_name: str) -> None:
        super().__init__()
        self.cluster_name = cluster_name
        self.broker_name = broker_name
        #: The address the broker registered, once it has.
        self.broker_addr: str | None = None

    def wait_until_ready(self, container: WaitStrategyTarget) -> None:
        from admin import AdminError, BlockingAdmin

        if not isinstance(container, RocketMQContainer):
            raise TypeError(f"{type(self).__name__} waits on a RocketMQContainer, not {container!r}")
        admin = BlockingAdmin(container.get_namesrv_addr(), timeout_ms=3000)
        admin.start()
        try:

            def registered() -> bool:
                container.reload()
                if container.status not in ("created", "running"):
                    stdout, stderr = container.get_logs()
                    tail = (stdout + stderr).decode("utf-8", "replace").splitlines()[-30:]
                    raise RuntimeError(
                        f"the RocketMQ container stopped ({container.status}) before its broker registered:\n"
                        + "\n".join(tail)
                    )
                if not _accepts(container.get_namesrv_addr()):
                    return False  # the NameServer's JVM is still starting: no client to set retrying
                try:
                    info = admin.cluster_info()
                except AdminError:
                    return False
                if self.broker_name not in info.cluster_addr_table.get(self.cluster_name, []):
                    return False
                data = info.broker_addr_table.get(self.broker_name)
                self.broker_addr = None if data is None else data.master_addr()
                return self.broker_addr is not None

            if not self._poll(registered):
                raise TimeoutError(
                    f"broker {self.broker_name} of {self.cluster_name} did not register with "
                    f"{container.get_namesrv_addr()} within {self._startup_timeout:.0f} s"
                )
        finally:
            admin.close()


class RocketMQContainer(DockerContainer):
    """A NameServer and a Broker in one container::

    with RocketMQContainer("apache/rocketmq:5.3.3") as rocketmq:
        with BlockingProducer("orders", rocketmq.get_namesrv_addr()) as producer:
            producer.send(Message("Orders", b"..."))
    """

    def __init__(
        self,
        image: str = DEFAULT_IMAGE,
        *,
        host_network: bool = False,
        cluster_name: str = "DefaultCluster",
        broker_name: str = "broker-a",
        broker_config: Mapping[str, str] | None = None,
        startup_timeout: int = DEFAULT_STARTUP_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(image, **kwargs)
        self.host_network = host_network
        self.cluster_name = cluster_name
        self.broker_name = broker_name
        self.startup_timeout = startup_timeout
        self._broker_config: dict[str, str] = dict(broker_config or {})
        self._namesrv_command: list[str] = ["sh", "mqnamesrv"]
        self._broker_command: list[str] = ["sh", "mqbroker"]
        self._namesrv_port = NAMESRV_PORT
        self._broker_port = 0
        self._namesrv_addr: str | None = None
        self._registration: BrokerRegistered | None = None
        self.with_env("JAVA_OPT_EXT", DEFAULT_JAVA_OPT_EXT)

    def with_broker_config(self, **settings: str) -> Self:
        """Broker settings under Apache's names (``autoCreateTopicEnable="false"``), over the defaults;
        ``brokerName`` and ``brokerClusterName`` change what the start waits to see registered."""
        self.broker_name = settings.pop("brokerName", self.broker_name)
        self.cluster_name = settings.pop("brokerClusterName", self.cluster_name)
        self._broker_config.update(settings)
        return self

    def with_server_commands(self, namesrv: Sequence[str], broker: Sequence[str]) -> Self:
        """How the image starts its NameServer and its Broker (each gets ``-c <config file>`` appended),
        for images without Apache's ``mqnamesrv``/``mqbroker`` in their working directory."""
        self._namesrv_command = list(namesrv)
        self._broker_command = list(broker)
        return self

    def start(self, timeout: int | None = None) -> Self:
        """Start the container, write the configurations, and return once the broker has registered."""
        self._broker_port = free_broker_port()
        if self.host_network:
            self._namesrv_port = free_port()
            self.with_kwargs(**{**self._kwargs, "network_mode": "host"})
        else:
            self._namesrv_port = NAMESRV_PORT
            self.with_exposed_ports(NAMESRV_PORT)
            self.with_bind_ports(self._broker_port, self._broker_port)
        self.with_command(["sh", "-c", self._script()])
        super().start()
        try:
            self._namesrv_addr = self._namesrv_address()
            broker_host = "127.0.0.1" if self.host_network else self.get_container_host_ip()
            # The broker's file last: the command starts both servers once it exists.
            self.copy_into_container(render_properties(self._namesrv_settings()).encode(), NAMESRV_CONF)
            self.copy_into_container(
                render_properties(self._broker_settings(broker_host)).encode(), BROKER_CONF
            )
            wait = BrokerRegistered(self.cluster_name, self.broker_name)
            self._registration = wait.with_startup_timeout(timeout or self.startup_timeout)
            wait.with_poll_interval(0.25).wait_until_ready(self)
        except BaseException:
            self.stop()
            raise
        logger.info(
            "RocketMQ up in %s: NameServer %s, broker %s",
            self.image,
            self._namesrv_addr,
            self.get_broker_addr(),
        )
        return self

    def get_namesrv_addr(self) -> str:
        """``host:port`` of the NameServer as this host reaches it: what the clients are given."""
        if self._namesrv_addr is None:
            raise RuntimeError("the container is not started")
        return self._namesrv_addr

    def get_broker_addr(self) -> str:
        """The address the broker registered with the NameServer (and clients connect to)."""
        addr = None if self._registration is None else self._registration.broker_addr
        if addr is None:
            raise RuntimeError("the broker has not registered")
        return addr

    def _namesrv_address(self) -> str:
        if self.host_network:
            return f"127.0.0.1:{self._namesrv_port}"
        return f"{self.get_container_host_ip()}:{self.get_exposed_port(NAMESRV_PORT)}"

    def _script(self) -> str:
        """Wait for the configurations, start the NameServer in the background and the broker in front."""
        namesrv = shlex.join([*self._namesrv_command, "-c", NAMESRV_CONF])
        broker = shlex.join([*self._broker_command, "-c", BROKER_CONF])
        return f"while [ ! -f {BROKER_CONF} ]; do sleep 0.1; done; {namesrv} & exec {broker}"

    def _namesrv_settings(self) -> dict[str, str]:
        return {"listenPort": str(self._namesrv_port), **self._loopback_only()}

    def _loopback_only(self) -> dict[str, str]:
        """On the host's network, listen on its loopback only (5.x's ``bindAddress``; 4.x ignores it)."""
        return {"bindAddress": "127.0.0.1"} if self.host_network else {}

    def _broker_settings(self, broker_host: str) -> dict[str, str]:
        port = self._broker_port
        return {
            "brokerClusterName": self.cluster_name,
            "brokerName": self.broker_name,
            "brokerId": "0",
            "namesrvAddr": f"127.0.0.1:{self._namesrv_port}",
            "listenPort": str(port),
            "brokerIP1": broker_host,
            "haListenPort": str(port + 1),
            "storePathRootDir": STORE_DIR,
            "storePathCommitLog": f"{STORE_DIR}/commitlog",
            "autoCreateTopicEnable": "true",
            **self._loopback_only(),
            **self._broker_config,
        }
