"""The pytest plugin (entry point ``pytest11: rocketmq``): RocketMQ clusters as fixtures.

pytest loads this module in every session of a project that installed the toolkit, so it imports nothing
but pytest at load time; servers, clients and testcontainers are imported by a fixture when a test asks
for it. Fixtures:

* ``rocketmq_cluster`` -- one cluster for the whole session; ``rocketmq_cluster_function`` -- one per test;
  ``rocketmq_cluster_factory`` -- ``rocketmq_cluster_factory(brokers=2, image=None, **broker_settings)``
  for clusters of other shapes, each stopped after its test. All give a
  :class:`~rocketmq_testing.cluster.RocketMQCluster`.
* The clusters are the toolkit's embedded NameServer and Broker(s) on loopback, unless an image is named
  (``--rocketmq-image=IMAGE`` or the ini option ``rocketmq_image``; the factory's ``image=``): then Apache's
  servers in a :class:`~rocketmq_testing.containers.RocketMQContainer`.
* ``rocketmq_container_factory`` -- how a container is made from an image name; override it in a
  ``conftest.py`` to change the container (its network, commands, broker settings).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from rocketmq_testing.cluster import RocketMQCluster
    from rocketmq_testing.containers import RocketMQContainer

IMAGE_OPTION = "--rocketmq-image"
IMAGE_INI = "rocketmq_image"


class ClusterFactory(Protocol):
    """What ``rocketmq_cluster_factory`` gives: a call that starts a cluster, stopped after the test."""

    def __call__(
        self, brokers: int = 1, image: str | None = None, **broker_settings: Any
    ) -> RocketMQCluster: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rocketmq", "RocketMQ clusters for tests (rocketmq-toolkit)")
    group.addoption(
        IMAGE_OPTION,
        dest="rocketmq_image",
        default=None,
        metavar="IMAGE",
        help="run the rocketmq_cluster fixtures on Apache's servers in this Docker image (testcontainers) "
        "instead of the toolkit's embedded NameServer and Broker",
    )
    parser.addini(IMAGE_INI, f"the default of {IMAGE_OPTION}", default="")


@pytest.fixture(scope="session")
def rocketmq_image(pytestconfig: pytest.Config) -> str | None:
    """The Docker image the clusters run (``--rocketmq-image``, else the ini option), or None: embedded."""
    named = pytestconfig.getoption("rocketmq_image") or pytestconfig.getini(IMAGE_INI)
    return str(named) if named else None


@pytest.fixture(scope="session")
def rocketmq_container_factory() -> Callable[[str], RocketMQContainer]:
    """Image name -> a container not yet started. Override this fixture to configure the container."""
    from rocketmq_testing.containers import RocketMQContainer

    return RocketMQContainer


class _Launcher:
    """Starts clusters for the fixtures: where embedded ones store, how containers are made."""

    def __init__(
        self,
        tmp_path_factory: pytest.TempPathFactory,
        container_factory: Callable[[str], RocketMQContainer],
        image: str | None,
    ) -> None:
        self._tmp = tmp_path_factory
        self._container_factory = container_factory
        self.image = image

    def start(self, brokers: int, image: str | None, broker_settings: dict[str, Any]) -> RocketMQCluster:
        if image is None:
            from rocketmq_testing.cluster import start_embedded

            return start_embedded(self._tmp.mktemp("rocketmq"), brokers=brokers, **broker_settings)
        if brokers != 1:
            raise ValueError(f"a RocketMQ container holds one broker; {brokers} brokers run embedded only")
        return self._in_container(image, broker_settings)

    def _in_container(self, image: str, broker_settings: dict[str, Any]) -> RocketMQCluster:
        from rocketmq_testing.cluster import attach

        container = self._container_factory(image)
        if broker_settings:
            container.with_broker_config(**{key: str(value) for key, value in broker_settings.items()})
        container.start()
        try:
            return attach(
                container.get_namesrv_addr(), cluster_name=container.cluster_name, stop=container.stop
            )
        except BaseException:
            container.stop()
            raise


@pytest.fixture(scope="session")
def _rocketmq_launcher(
    tmp_path_factory: pytest.TempPathFactory,
    rocketmq_container_factory: Callable[[str], RocketMQContainer],
    rocketmq_image: str | None,
) -> _Launcher:
    return _Launcher(tmp_path_factory, rocketmq_container_factory, rocketmq_image)


@pytest.fixture(scope="session")
def rocketmq_cluster(_rocketmq_launcher: _Launcher) -> Iterator[RocketMQCluster]:
    """One NameServer and Broker for the whole session (embedded, or in a container with an image)."""
    with _rocketmq_launcher.start(1, _rocketmq_launcher.image, {}) as cluster:
        yield cluster


@pytest.fixture
def rocketmq_cluster_function(_rocketmq_launcher: _Launcher) -> Iterator[RocketMQCluster]:
    """A NameServer and Broker of this test's own, stopped after it."""
    with _rocketmq_launcher.start(1, _rocketmq_launcher.image, {}) as cluster:
        yield cluster


@pytest.fixture
def rocketmq_cluster_factory(_rocketmq_launcher: _Launcher) -> Iterator[ClusterFactory]:
    """``rocketmq_cluster_factory(brokers=2, image=None, **broker_settings)``: clusters of this test's own,
    all stopped after it. ``broker_settings`` are :class:`broker.BrokerConfig` fields by Python name
    (embedded) or Apache's broker settings by their names (in a container). A one-broker cluster's
    ``image`` defaults to ``--rocketmq-image``; with neither, and always with several brokers, the cluster is
    embedded."""
    started: list[RocketMQCluster] = []

    def start(brokers: int = 1, image: str | None = None, **broker_settings: Any) -> RocketMQCluster:
        if image is None and brokers == 1:
            image = _rocketmq_launcher.image
        cluster = _rocketmq_launcher.start(brokers, image, broker_settings)
        started.append(cluster)
        return cluster

    try:
        yield start
    finally:
        for cluster in reversed(started):
            cluster.close()
