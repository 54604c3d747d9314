"""One pull, start to finish (Java's ``PullAPIWrapper``): pick the broker, send, decode, filter.

Shared by both consumers. It remembers, per queue, which broker of the group the last answer suggested (a
master under load may send readers to a slave), never asks a slave to commit an offset (only masters keep
them), and speaks LITE_PULL_MESSAGE for a lite pull consumer as Java does -- falling back, per broker, to
PULL_MESSAGE for brokers that do not know that code.
"""

from __future__ import annotations

import dataclasses
import logging

from consumer import commands
from consumer.client import ConsumerClient
from consumer.errors import BrokerError
from consumer.fetch import PullResult, PullStatus, decode_found
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.route import MASTER_ID
from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.message import sysflag

logger = logging.getLogger("consumer.puller")


class Puller:
    """Pulls for one consumer."""

    def __init__(self, client: ConsumerClient) -> None:
        self._client = client
        self._suggested: dict[MessageQueue, int] = {}
        self._no_lite_pull: set[str] = set()

    def forget(self, queue: MessageQueue) -> None:
        self._suggested.pop(queue, None)

    async def pull(
        self,
        queue: MessageQueue,
        offset: int,
        spec: commands.PullSpec,
        tags: frozenset[str] | None,
        timeout_ms: float,
    ) -> PullResult:
        """Pull ``queue`` from ``offset``; FOUND results come with their messages decoded and filtered."""
        addr, broker_id = await self._client.pull_address(queue, self._suggested.get(queue, MASTER_ID))
        if broker_id != MASTER_ID and spec.sys_flag & sysflag.PULL_COMMIT_OFFSET:
            spec = dataclasses.replace(spec, sys_flag=sysflag.without_commit_offset(spec.sys_flag))
        if spec.lite and addr in self._no_lite_pull:
            spec = dataclasses.replace(spec, lite=False)
        try:
            result = await self._client.api.pull(addr, commands.pull_request(spec, queue, offset), timeout_ms)
        except BrokerError as exc:
            if not (spec.lite and exc.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED):
                raise
            logger.info("broker %s does not serve LITE_PULL_MESSAGE; pulling with PULL_MESSAGE", addr)
            self._no_lite_pull.add(addr)
            spec = dataclasses.replace(spec, lite=False)
            result = await self._client.api.pull(addr, commands.pull_request(spec, queue, offset), timeout_ms)
        self._suggested[queue] = result.suggest_which_broker_id
        if result.status is PullStatus.FOUND:
            decode_found(result, tags)
        return result
