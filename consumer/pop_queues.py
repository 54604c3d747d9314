"""The POP queues a broker assigned to a push consumer: gained and lost through rebalance hooks, each popped
by a :class:`~consumer.consume_pop.PopReader`, all consumed by one
:class:`~consumer.consume_pop.PopConsumeService`. Kept apart from :mod:`consumer.push`, which creates it only
when the consumer leaves the sharing to the brokers (``client_rebalance=False``)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from consumer.consume_pop import POP_POLL_MS, PopConsumeService, PopProcessQueue, PopReader
from consumer.core import ConsumerCore
from consumer.listener import ConcurrentHandler
from consumer.pop_client import PopClient
from consumer.rebalance import QueueOwner
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.message import MessageExt

logger = logging.getLogger("consumer.pop_queues")


class PopQueues:
    """The POP side of one push consumer; :meth:`start` after the consumer's core is open."""

    def __init__(
        self,
        core: ConsumerCore,
        *,
        handler: ConcurrentHandler,
        paused: Callable[[], bool],
        init_mode: int,
        received: Callable[[list[MessageExt]], None] | None = None,
    ) -> None:
        self._core = core
        self._received = received
        self._paused = paused
        self._client = PopClient(core, init_mode=init_mode)
        self._service = PopConsumeService(
            group=core.wire_group,
            handler=handler,
            config=core.config,
            ack=self._client.ack,
            hide=self._client.change_invisible_time,
            stats=core.stats,
        )
        self._readers: dict[MessageQueue, PopReader] = {}

    def owner(self) -> QueueOwner:
        """The rebalance hooks for POP queues."""
        return QueueOwner(
            owned=self._owned, release=self._release, acquire=self._acquire, changed=self._changed
        )

    def queues(self) -> list[MessageQueue]:
        """The POP queues read now (queue id -1: every queue of the topic on that broker)."""
        return [queue for queue, reader in self._readers.items() if not reader.pq.dropped]

    def start(self) -> None:
        self._service.start()

    async def stop(self) -> None:
        """Stop popping and consuming; what was popped and not acknowledged reappears for the group."""
        for reader in list(self._readers.values()):
            await reader.stop()
        self._readers.clear()
        await self._service.shutdown()

    # -- rebalance hooks -----------------------------------------------------------------------------------

    def _owned(self, topic: str) -> set[MessageQueue]:
        return {queue for queue in self._readers if queue.topic == topic}

    async def _acquire(self, queue: MessageQueue) -> bool:
        reader = PopReader(
            queue,
            PopProcessQueue(),
            config=self._core.config,
            pop=self._pop,
            submit=self._submit,
            paused=self._paused,
        )
        self._readers[queue] = reader
        reader.start()
        return True

    async def _release(self, queue: MessageQueue) -> bool:
        reader = self._readers.pop(queue, None)
        if reader is not None:
            await reader.stop()
        return True

    async def _changed(self, topic: str, all_queues: list[MessageQueue], owned: list[MessageQueue]) -> None:
        logger.info("group %s: popping %s", self._core.wire_group, [str(q) for q in owned])

    # -- popping -------------------------------------------------------------------------------------------

    async def _pop(self, queue: MessageQueue, max_nums: int, invisible_ms: int) -> list[MessageExt]:
        _, result = await self._client.pop(
            queue, max_nums=max_nums, invisible_ms=invisible_ms, poll_ms=POP_POLL_MS
        )
        return result.messages

    def _submit(self, messages: list[MessageExt], pq: PopProcessQueue, queue: MessageQueue) -> None:
        if self._received is not None:
            self._received(messages)
        self._service.submit(messages, pq, self._core.user_queue(queue))
