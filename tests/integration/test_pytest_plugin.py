"""The pytest plugin users get (``rocketmq_testing``), run as a user runs it: a test module of theirs, in a
pytest process of its own (pytester's subprocess run: an in-process run would drop from ``sys.modules``
whatever it imported, under the feet of the tests that run after it here), finding the fixtures through the
installed package's ``pytest11`` entry point -- no conftest names them.

* Embedded: the example of docs/testing.md as it stands there; a session cluster shared by a sync and an
  async test, a test's own cluster, two brokers from the factory, a wait that must fail; when that session
  ends (every fixture torn down, the process not yet gone) no port of any of those servers answers and no
  thread of the plugin is left (the embedded servers run in the test process: there is no pid of theirs to
  leave).
* In a container: ``--rocketmq-image`` with the suite's own image of Apache 5.3.3 (built once by
  :mod:`tests.integration.clusters.docker_image`, as the ``docker-*`` providers use it), the container made
  by an overridden ``rocketmq_container_factory``; a message goes in through the toolkit's producer and comes
  back through its pull consumer; afterwards the engine has no container of the run.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from rocketmq_testing.cluster import THREAD_NAME
from tests.integration.apache import servers
from tests.integration.clusters import apache_docker, docker_image
from tests.integration.clusters.fixture import skip_or_fail
from tests.integration.clusters.model import ProviderUnavailable

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.integration

INI = """
[pytest]
asyncio_default_fixture_loop_scope = function
"""

USER_TESTS = """
import json
import pytest
from producer import Message
from rocketmq_testing.cluster import MessagesNotArrived

SEEN = []


def record(cluster):
    SEEN.append([cluster.namesrv_addr, *cluster.broker_addrs.values()])
    with open({addresses!r}, "w") as out:
        json.dump(SEEN, out)


def test_the_plugin_came_by_its_entry_point(request):
    assert request.config.pluginmanager.hasplugin("rocketmq")


def test_sync(rocketmq_cluster):
    record(rocketmq_cluster)
    assert list(rocketmq_cluster.broker_addrs) == ["broker-a"]
    rocketmq_cluster.create_topic("Invoices", queues=3)
    route = rocketmq_cluster.admin.topic_route("Invoices")
    assert [(q.broker_name, q.write_queue_nums) for q in route.queue_datas] == [("broker-a", 3)]
    for i in range(5):
        rocketmq_cluster.producer.send(Message("Invoices", f"order-{{i}}".encode(), keys=[str(i)]))
    got = rocketmq_cluster.wait_for_messages("Invoices", 5)
    assert sorted(m.body for m in got) == [f"order-{{i}}".encode() for i in range(5)]
    assert {{m.queue_id for m in got}} <= {{0, 1, 2}}


@pytest.mark.asyncio
async def test_async_on_the_same_cluster(rocketmq_cluster):
    record(rocketmq_cluster)
    await rocketmq_cluster.create_topic_async("Payments")
    async with rocketmq_cluster.async_producer() as producer:
        await producer.send(Message("Payments", b"paid"))
    [got] = await rocketmq_cluster.wait_for_messages_async("Payments", 1)
    assert got.body == b"paid"
    # The session's cluster kept what the sync test wrote.
    assert len(await rocketmq_cluster.wait_for_messages_async("Invoices", 5)) == 5


def test_two_brokers(rocketmq_cluster_factory):
    cluster = rocketmq_cluster_factory(brokers=2)
    record(cluster)
    assert sorted(cluster.broker_addrs) == ["broker-a", "broker-b"]
    cluster.create_topic("Spread", queues=2)
    for i in range(8):
        cluster.producer.send(Message("Spread", b"%d" % i))
    got = cluster.wait_for_messages("Spread", 8)
    assert len(got) == 8
    assert {{m.store_host for m in got}} == set(cluster.broker_addrs.values())


def test_a_cluster_of_its_own_and_a_wait_that_fails(rocketmq_cluster_function, rocketmq_cluster):
    record(rocketmq_cluster_function)
    assert rocketmq_cluster_function.namesrv_addr != rocketmq_cluster.namesrv_addr
    rocketmq_cluster_function.create_topic("Empty", queues=1)
    with pytest.raises(MessagesNotArrived, match="0 of 1 messages of Empty"):
        rocketmq_cluster_function.wait_for_messages("Empty", 1, timeout=0.5)
    # What the session's cluster holds is not here.
    with pytest.raises(MessagesNotArrived):
        rocketmq_cluster_function.wait_for_messages("Invoices", 1, timeout=0.5)
"""


#: Runs in the user's session after its last fixture was torn down: what still answers, what still runs.
LEFTOVERS_CONFTEST = """
import json
import socket
import threading


def answers(addr):
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


def pytest_sessionfinish(session):
    with open({addresses!r}) as seen:
        addrs = sorted({{addr for entry in json.load(seen) for addr in entry}})
    threads = [t.name for t in threading.enumerate() if t.is_alive() and t.name.startswith({names!r})]
    with open({leftovers!r}, "w") as out:
        json.dump({{"answering": [a for a in addrs if answers(a)], "threads": threads}}, out)
"""


DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
DOCS_EXAMPLE = "<!-- example: test_orders.py"


def docs_example() -> str:
    """The user's test module of docs/testing.md: the first Python block after its marker."""
    after = DOCS.read_text(encoding="utf-8").split(DOCS_EXAMPLE, 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def test_embedded_clusters_through_the_entry_point(pytester: pytest.Pytester, tmp_path: Path) -> None:
    addresses, leftovers = tmp_path / "addresses.json", tmp_path / "leftovers.json"
    pytester.makeini(INI)
    names = (THREAD_NAME, "rocketmq-producer-", "rocketmq-admin")
    pytester.makeconftest(
        LEFTOVERS_CONFTEST.format(addresses=str(addresses), leftovers=str(leftovers), names=names)
    )
    pytester.makepyfile(test_user=USER_TESTS.format(addresses=str(addresses)), test_orders=docs_example())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(passed=5 + 3)
    seen = json.loads(addresses.read_text())
    # Three clusters: the session's (seen twice), the factory's two brokers, the test's own.
    assert len({entry[0] for entry in seen}) == 3, seen
    assert len({addr for entry in seen for addr in entry}) == 3 + 4, seen  # three NameServers, four brokers
    assert json.loads(leftovers.read_text()) == {"answering": [], "threads": []}


@pytest.fixture(scope="module")
def suite_image() -> str:
    """The suite's image of Apache 5.3.3, found (or built) before ``pytester`` points ``HOME``, and with it
    the suite's cache of jars and images, at a fresh folder."""
    reason = apache_docker.engine_unavailable()
    if reason is not None:
        skip_or_fail(f"the RocketMQ container test needs a Docker engine: {reason}")
    release = next(r for r in apache_docker.releases() if r.version.startswith("5."))
    try:
        return docker_image.apache_image(release)
    except ProviderUnavailable as exc:
        skip_or_fail(f"the RocketMQ container test needs the suite's image: {exc}")
        raise


CONTAINER_CONFTEST = """
import pytest
from rocketmq_testing.containers import RocketMQContainer


@pytest.fixture(scope="session")
def rocketmq_container_factory():
    def make(image):
        container = RocketMQContainer(image, host_network=True, labels={labels!r})
        return container.with_server_commands({namesrv!r}, {broker!r}).with_broker_config(
            brokerName="broker-c", maxMessageSize="65536"
        )
    return make
"""

CONTAINER_TESTS = """
from producer import Message


def test_through_the_container(rocketmq_cluster):
    assert list(rocketmq_cluster.broker_addrs) == ["broker-c"]
    rocketmq_cluster.create_topic("InDocker", queues=2)
    sent = rocketmq_cluster.producer.send(Message("InDocker", b"from the toolkit", tags="t1"))
    [got] = rocketmq_cluster.wait_for_messages("InDocker", 1, timeout=30)
    assert (got.body, got.tags, got.msg_id) == (b"from the toolkit", "t1", sent.offset_msg_id)
    assert got.store_host == rocketmq_cluster.broker_addrs["broker-c"]
"""


def test_apache_in_a_container_through_the_image_option(suite_image: str, pytester: pytest.Pytester) -> None:
    label = {"io.github.rocketmq-toolkit.it.plugin-test": uuid.uuid4().hex}
    pytester.makeini(INI)
    pytester.makeconftest(
        CONTAINER_CONFTEST.format(
            labels=label,
            namesrv=apache_docker._java("namesrv", servers.NAMESRV_MAIN, []),
            broker=apache_docker._java("broker", servers.BROKER_MAIN, []),
        )
    )
    pytester.makepyfile(test_in_docker=CONTAINER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", f"--rocketmq-image={suite_image}")
    result.assert_outcomes(passed=1)
    client = docker_image.docker_sdk().from_env(timeout=10)
    try:
        [(key, value)] = label.items()
        left = client.containers.list(all=True, filters={"label": f"{key}={value}"})
    finally:
        client.close()
    assert left == [], "the plugin's container is still in the engine"
