"""Before a write starts: does the sink's topic exist, or will a broker create it on first send?

A job whose ``topic`` option names a topic that no broker serves would otherwise fail in its tasks, one
after the other, possibly after other tasks (or other topics' rows) were written. The driver asks as the
producer does before its first send: the topic's route, else the route of the auto-create key topic
(TBW102), which a broker registers only when it creates topics on demand (``autoCreateTopicEnable``).
Rows that name their topic in a ``topic`` column are checked by the producer at their first send. A cluster
that cannot be asked at all is left to the tasks, which fail and report it as before (an aborted job).
"""

from __future__ import annotations

import asyncio
import logging

from producer import NoRouteError, Producer, ProducerError
from spark_connector.errors import OptionError
from spark_connector.options import SinkOptions

logger = logging.getLogger("spark_connector.topic_check")


async def _publish_queues(options: SinkOptions, topic: str) -> int:
    connection = options.connection
    producer = Producer(
        options.group,
        list(connection.namesrv),
        namespace=connection.namespace,
        access_key=connection.access_key,
        secret_key=connection.secret_key,
        send_timeout_ms=options.send_timeout_ms,
        ssl=connection.ssl_context(),
    )
    async with producer:
        return len(await producer.fetch_publish_queues(topic))


def check_topic_writable(options: SinkOptions) -> None:
    """Raise :class:`OptionError` when the ``topic`` option names a topic no broker serves or would create;
    nothing is checked without that option."""
    topic = options.topic
    if topic is None:
        return
    try:
        queues = asyncio.run(_publish_queues(options, topic))
    except NoRouteError as exc:
        raise OptionError(
            f"option 'topic': topic {topic!r} does not exist and no broker creates topics on demand "
            f"(autoCreateTopicEnable=false): create it first (rmq topic create, mqadmin updateTopic); "
            f"nothing was written ({exc})"
        ) from None
    except ProducerError as exc:
        logger.warning("could not check that topic %s exists; the tasks will find out: %s", topic, exc)
        return
    logger.debug("topic %s is writable on %d queue(s)", topic, queues)
