"""A slave's copy of its master's metadata (Apache's ``SlaveSynchronize``).

The commit log is replicated over the HA link; everything else a slave needs to serve consumers comes over
the remoting port, every 10 s after a first round 3 s after start (Apache's schedule):

* topic configs (GET_ALL_TOPIC_CONFIG): the whole table replaces the slave's when its data version differs;
* consumer offsets (GET_ALL_CONSUMER_OFFSET): each ``topic@group`` entry replaces the slave's;
* delay-level offsets (GET_ALL_DELAY_OFFSET): the master's text becomes ``config/delayOffset.json``;
* subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG): replaced when the data version differs.

The master's remoting address comes from the NameServer's answer to registration. Each part fails on its
own (logged); the next round tries again.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from broker.auth.inner_client import inner_credentials
from broker.config import BrokerConfig
from broker.schedule import FILE_NAME as DELAY_OFFSET_FILE
from broker.schedule import ScheduleMessageService
from broker.store.atomic_file import write_atomically
from broker.store.consumer_offsets import ConsumerOffsetStore
from broker.store.json_config import DataVersion
from broker.subscription_groups import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode, fastjson
from rocketmq_wire.bodies.base import Fields
from rocketmq_wire.bodies.consumer import ConsumerOffsetSerializeWrapper
from rocketmq_wire.bodies.topic_config import TopicConfig
from rocketmq_wire.errors import CodecError
from rocketmq_wire.transport import RemotingClient, RemotingError

log = logging.getLogger("broker.ha.sync")

#: Apache's timeout for each of these calls.
CALL_TIMEOUT_MS = 3000
#: Apache's schedule: first round after 3 s, then every 10 s.
FIRST_SYNC_DELAY_MS = 3000
SYNC_PERIOD_MS = 10_000


class MasterUnavailable(Exception):
    """The master did not answer a sync call usefully."""


class SlaveSynchronizer:
    """Copies the master's tables into this slave's: the parts it takes are the ones it overwrites."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        client: RemotingClient,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetStore,
        schedule: ScheduleMessageService,
    ) -> None:
        self._config = config
        self._client = client
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._schedule = schedule
        #: The master's remoting address; None while unknown (or gone from the NameServer).
        self.master_addr: str | None = None
        #: Rounds completed (each part attempted), for monitoring and tests.
        self.rounds = 0

    async def sync_all(self) -> None:
        """One round: topics, consumer offsets, delay offsets, subscription groups."""
        master = self.master_addr
        if master is None or master == self._config.broker_addr:
            return
        parts = (self._sync_topics, self._sync_consumer_offsets, self._sync_delay_offsets, self._sync_groups)
        for part in parts:
            try:
                await part(master)
            except (RemotingError, MasterUnavailable, CodecError, OSError) as exc:
                log.warning("%s from master %s failed: %s", part.__name__.lstrip("_"), master, exc)
        self.rounds += 1

    async def _fetch(self, master: str, code: int) -> bytes:
        request = RemotingCommand.request(code)
        credentials = inner_credentials(self._config)
        if credentials is not None:  # a master with ACL 2.0 on answers only signed requests
            credentials.sign(request)
        answer = await self._client.invoke(master, request, CALL_TIMEOUT_MS)
        if answer.code != ResponseCode.SUCCESS:
            raise MasterUnavailable(f"request {code} answered {answer.code} {answer.remark}")
        return answer.body

    async def _sync_topics(self, master: str) -> None:
        parsed = fastjson.loads(await self._fetch(master, RequestCode.GET_ALL_TOPIC_CONFIG))
        if not isinstance(parsed, dict):
            raise CodecError("the topic table is not a JSON object")
        raw = parsed.get("topicConfigTable")
        table: dict[str, dict[str, Any]] = {}
        if isinstance(raw, dict):
            table = {
                name: dict(config)
                for name, config in raw.items()
                if isinstance(name, str) and isinstance(config, dict)
            }
        for name, config in table.items():
            _check_storable_topic(name, config)
        version = DataVersion.from_json(parsed.get("dataVersion"))
        _check_storable_version(version)
        if self._topics.replace_all(table, version):
            log.info("updated the topic configs from master %s", master)

    async def _sync_consumer_offsets(self, master: str) -> None:
        body = await self._fetch(master, RequestCode.GET_ALL_CONSUMER_OFFSET)
        offsets = ConsumerOffsetSerializeWrapper.from_json(body).offset_table
        store = self._offsets
        store.merge(offsets)
        await asyncio.to_thread(store.persist)
        log.debug("updated %d consumer offsets from master %s", len(offsets), master)

    async def _sync_delay_offsets(self, master: str) -> None:
        body = await self._fetch(master, RequestCode.GET_ALL_DELAY_OFFSET)
        if not body:
            return
        await asyncio.to_thread(write_atomically, self._config.config_dir / DELAY_OFFSET_FILE, body)
        self._schedule.load()
        log.debug("updated the delay offsets from master %s", master)

    async def _sync_groups(self, master: str) -> None:
        body = await self._fetch(master, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        if self._groups.replace_from_json(body):
            log.info("updated the subscription groups from master %s", master)


def _check_storable_topic(name: str, config: dict[str, Any]) -> None:
    """Refuse (:class:`CodecError`) a master's topic config a Java broker could not hold or ours could not
    write back: kept, it would make every later save of ``topics.json`` fail."""
    TopicConfig.from_object(Fields(config, f"topic {name}"))  # the Java types of the known fields
    fastjson.dumps(fastjson.Bean(config))  # everything else it carries, as the store will write it


def _check_storable_version(version: DataVersion) -> None:
    stamps = (version.timestamp, version.counter, version.state_version)
    if not all(-(1 << 63) <= stamp < 1 << 63 for stamp in stamps):
        raise CodecError(f"the master's dataVersion {stamps} does not fit Java's long")
