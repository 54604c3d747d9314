"""Topics a scenario creates on purpose, before any client sends to them.

A topic auto-created by its first sends exists on whichever broker those reached, and reaches the others'
routes later; a scenario whose assertions depend on the route (orderly sends, queue counts, several brokers)
creates its topic on every master first and waits until the NameServer routes it to all of them.
"""

from __future__ import annotations

from collections.abc import Mapping

from admin import Admin, TopicNotFoundError
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.probe import eventually

#: Brokers tell the NameServer about a new topic at once or at their next registration.
CONVERGE_S = 40.0
#: Apache's broker answers UPDATE_AND_CREATE_TOPIC after it has registered with the NameServer; a JVM still
#: warming up beside the other test workers has been seen to take over the admin's usual 3 s for that.
CREATE_TIMEOUT_MS = 10_000


async def create_on_every_broker(
    cluster: Cluster,
    prefix: str,
    queues: int = 4,
    attributes: Mapping[str, str] | None = None,
    keys: tuple[str, str] | None = None,
) -> str:
    """A new topic named after ``prefix`` with ``queues`` queues on each master, routed to all of them;
    ``attributes`` are its 5.x topic attributes (``{"message.type": "FIFO"}``); ``keys`` sign the requests
    (an access key and secret key: an admin's, where the brokers enforce ACL)."""
    topic = unique_name(prefix)
    expected = sorted((b.name, queues) for b in cluster.brokers)
    access_key, secret_key = keys if keys is not None else (None, None)
    async with Admin(
        cluster.namesrv, timeout_ms=CREATE_TIMEOUT_MS, access_key=access_key, secret_key=secret_key
    ) as admin:
        await admin.create_topic(
            topic,
            cluster=cluster.cluster_name,
            read_queue_nums=queues,
            write_queue_nums=queues,
            attributes=attributes,
        )
        await eventually(
            lambda: admin.topic_route(topic),
            lambda r: sorted((q.broker_name, q.write_queue_nums) for q in r.queue_datas) == expected,
            timeout_s=CONVERGE_S,
            what=f"route of {topic} on every broker",
            retry_on=(TopicNotFoundError,),
        )
    return topic
