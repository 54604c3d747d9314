"""The ``docker`` provider's own image, end to end: built locally, Apache's servers booted from it, used.

For each full release (4.9.7, 5.3.3): build (or reuse) ``rocketmq-toolkit-it/apache-rocketmq:<version>-…``
from the suite's Debian base -- no registry is asked -- start Apache's NameServer and Broker in containers on
the host's network, wait until the NameServer lists the broker, send a message with the project's producer and
read it back with its pull consumer, check the version the broker reports, then stop everything and check
that neither a leftover nor a container of the launch is left in the engine.

Skipped, with the reason, when no Docker engine answers (or the image cannot be made here: no root for
debootstrap, no Maven); failed instead when ``ROCKETMQ_REQUIRE_PEERS=1``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import NoReturn

import pytest

from admin import Admin, RequestRefusedError
from producer import Message, Producer, SendStatus
from tests.integration.apache import servers
from tests.integration.apache.cache import peers_required
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters import apache_docker, docker_image
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME, ProviderUnavailable, unique_name
from tests.integration.clusters.probe import eventually, wait_for_broker_sync
from tests.integration.clusters.readback import read_topic

pytestmark = pytest.mark.integration

log = logging.getLogger("tests.docker_image")

REGISTER_TIMEOUT_S = 120.0


def _unavailable(reason: str) -> NoReturn:
    if peers_required():
        pytest.fail(f"the docker provider cannot run here: {reason}")
    pytest.skip(reason)


def _version_desc(version: str) -> str:
    """What a broker reports as ``brokerVersionDesc``: ``5.3.3`` -> ``V5_3_3``."""
    return "V" + version.replace(".", "_")


async def _send_and_read(namesrv: str, broker_addr: str) -> str:
    topic = unique_name("DockerImage")
    body = f"hello from {topic}".encode()
    async with Producer(unique_name("pg"), namesrv) as producer:
        result = await producer.send(Message(topic, body, tags="it", keys=["docker"]))
    assert result.status == SendStatus.SEND_OK
    assert result.message_queue.broker_name == BROKER_NAME
    [stored] = await read_topic(namesrv, topic, 1, timeout_s=30.0)
    assert (stored.topic, stored.body, stored.tags) == (topic, body, "it")
    async with Admin(namesrv) as admin:
        # 4.x answers SYSTEM_ERROR (NoSuchElementException) until its store statistics took a first sample,
        # about a second after the boot.
        stats = await eventually(
            lambda: admin.broker_runtime_stats(broker_addr),
            lambda table: "brokerVersionDesc" in table,
            timeout_s=15.0,
            what=f"runtime info of {broker_addr}",
            retry_on=(RequestRefusedError,),
        )
    return stats["brokerVersionDesc"]


@pytest.mark.parametrize("release", apache_docker.releases(), ids=lambda r: r.version)
def test_apache_servers_in_local_image(release: ApacheRelease, tmp_path: Path) -> None:
    reason = apache_docker.engine_unavailable()
    if reason is not None:
        _unavailable(reason)
    started = time.monotonic()
    try:
        image = docker_image.apache_image(release)
    except ProviderUnavailable as exc:
        _unavailable(str(exc))
    built_s = time.monotonic() - started
    started = time.monotonic()
    assert docker_image.apache_image(release) == image, "a second call must reuse the image"
    reused_s = time.monotonic() - started
    log.info("image %s: %.1f s to build or find, %.2f s to find again", image, built_s, reused_s)

    launch = Launch(tmp_path / "work", tmp_path / "logs")
    launch.logs_dir.mkdir(parents=True)
    try:
        started = time.monotonic()
        namesrv = apache_docker.start_namesrv(launch, release)
        broker = apache_docker.start_broker(launch, release, namesrv)
        data = wait_for_broker_sync(
            namesrv.addr, CLUSTER_NAME, BROKER_NAME, REGISTER_TIMEOUT_S, launch.check_alive
        )
        log.info(
            "%s: broker registered %.1f s after the containers' start",
            release.version,
            time.monotonic() - started,
        )
        assert data.master_addr() == broker.addr
        assert broker.image == image and namesrv.version == release.version
        assert apache_docker.image_version(image) == release.version
        version = asyncio.run(_send_and_read(namesrv.addr, broker.addr))
        assert version == _version_desc(release.version)
        assert len(apache_docker.containers_of(launch)) == 2
    finally:
        leftovers = launch.stop(discard=True)
    assert leftovers == []
    assert apache_docker.containers_of(launch) == [], "a container of the launch is still in the engine"
    broker_log = (launch.logs_dir / "docker-broker.log").read_text("utf-8", "replace")
    assert "boot success" in broker_log
    assert (launch.logs_dir / "docker-namesrv.log").is_file()


def test_a_container_that_exits_before_booting_is_removed_and_its_output_reported(tmp_path: Path) -> None:
    reason = apache_docker.engine_unavailable()
    if reason is not None:
        _unavailable(reason)
    [release, *_] = apache_docker.releases()
    try:
        image = docker_image.apache_image(release)
    except ProviderUnavailable as exc:
        _unavailable(str(exc))
    launch = Launch(tmp_path / "work", tmp_path / "logs")
    launch.logs_dir.mkdir(parents=True)
    marker = unique_name("no-boot")
    command = ["sh", "-c", f"echo {marker}; echo the-end >&2; exit 3"]
    with pytest.raises(apache_docker.NotBooted) as failed:
        apache_docker._run(launch, "doomed", image, command, {}, servers.BROKER_BOOT, "127.0.0.1:1")
    assert marker in str(failed.value) and "the-end" in str(failed.value)
    assert apache_docker.containers_of(launch) == [], "the failed container is still in the engine"
    [saved] = launch.logs_dir.glob("doomed-failed-*.log")
    assert marker in saved.read_text("utf-8", "replace")
    launch.check_alive()  # nothing of the failed start is left to be checked
    assert launch.stop(discard=True) == []
