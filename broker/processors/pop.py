"""POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME, as Apache 5.5's broker
answers them (checks, codes and remarks of its ``PopMessageProcessor``, ``AckMessageProcessor`` and
``ChangeInvisibleTimeProcessor``); the state lives in :class:`broker.pop.service.PopService`.

A pop reads the group's POP retry topic first with Apache's probability (``popFromRetryProbability``,
20 in 100), else after the topic when the topic gave fewer messages than asked; an orderly pop never reads
it. With nothing found and a ``pollTime``, the pop waits for a message on either topic, then tries once
more: POLLING_TIMEOUT when still nothing, POLLING_FULL when too many pops already wait.
"""

from __future__ import annotations

import asyncio
import logging
import random

from broker.clock import Clock
from broker.config import BrokerConfig
from broker.pop.filter import ACCEPT_ALL, SubscriptionFilter, store_filter
from broker.pop.service import PopService, QueuePop
from broker.processors.common import read_header
from broker.sql92 import CompileError, ExpressionCompiler
from broker.stats import BrokerStats
from broker.store import MessageStore
from broker.subscription_groups import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode, topics
from rocketmq_wire.bodies.heartbeat import SubscriptionData
from rocketmq_wire.bodies.pop import BatchAck, BatchAckMessageRequestBody
from rocketmq_wire.bodies.subscription import build_subscription
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_wire.message import const, encode_properties
from rocketmq_wire.message.stored import decode_message, encode_stored_message
from rocketmq_wire.perm import is_readable
from rocketmq_wire.pop_extra import (
    ORDER_REVIVE_QUEUE,
    ExtraInfo,
    build_offset_info,
    pop_retry_topic,
    queue_offset_key,
    real_topic,
    retry_mark,
)
from rocketmq_wire.topics import RETRY_GROUP_TOPIC_PREFIX
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.pop")

#: Apache's ``popFromRetryProbability`` (percent) and ``reviveQueueNum``.
POP_FROM_RETRY_PROBABILITY = 20
REVIVE_QUEUE_NUM = 8
#: Apache's cap on ``maxMsgNums``.
MAX_POP_NUMS = 32
#: A pop that reached the broker this much later than its poll time allowed is not served.
TIMEOUT_TOO_MUCH_MS = 500


def _refused_topic_or_group(
    topics_: TopicConfigManager,
    groups: SubscriptionGroupManager,
    request: RemotingCommand,
    topic: str,
    group: str,
    queue_id: int,
    conn: Connection,
) -> RemotingCommand | None:
    """The checks POP_MESSAGE and NOTIFICATION share, in Apache's order and with its remarks: the topic
    exists and is readable, the queue is one of it (-1: any), the group exists and may consume."""
    topic_config = topics_.select(topic)
    if topic_config is None:
        log.error("pop from topic %s, which does not exist, by %s", topic, conn.remote_address)
        return request.make_response(
            ResponseCode.TOPIC_NOT_EXIST,
            f"topic[{topic}] not exist, apply first please! {topics.suggest_todo()}",
        )
    if not is_readable(topic_config.perm):
        return request.make_response(
            ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden"
        )
    if queue_id >= topic_config.read_queue_nums:
        remark = _illegal_queue(topic, queue_id, topic_config.read_queue_nums, conn)
        log.warning(remark)
        return request.make_response(ResponseCode.INVALID_PARAMETER, remark)
    group_config = groups.find(group)
    if group_config is None:
        return request.make_response(
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            f"subscription group [{group}] does not exist, {topics.suggest_todo()}",
        )
    if not group_config.consume_enable:
        return request.make_response(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
    return None


def _illegal_queue(topic: str, queue_id: int, read_queue_nums: int, conn: Connection) -> str:
    return (
        f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{read_queue_nums}] "
        f"consumer:[{conn.remote_address}]"
    )


def _unsaved(request: RemotingCommand, exc: OSError) -> RemotingCommand:
    log.error("POP state not saved: %s", exc)
    return request.make_response(ResponseCode.SYSTEM_ERROR, f"pop checkpoint not persisted: {exc}")


class PopMessageProcessor:
    """Hands out messages under a checkpoint, waiting up to ``pollTime`` for some to arrive."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        clock: Clock,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        pop: PopService,
        filters: ExpressionCompiler,
        stats: BrokerStats,
    ) -> None:
        self._config = config
        self._clock = clock
        self._topics = topics
        self._groups = groups
        self._pop = pop
        self._filters = filters
        self._stats = stats
        self._random = random.Random()
        self._ck_number = 0

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        config = self._config
        header = read_header(request, PopMessageRequestHeader)
        assert header.topic is not None and header.consumer_group is not None
        topic, group = header.topic, header.consumer_group
        now = self._clock.now_ms()
        born = int(header.born_time or 0) or now
        poll_time = int(header.poll_time or 0)
        broker_ip = config.broker_ip1
        if now - born - poll_time > TIMEOUT_TOO_MUCH_MS:
            return request.make_response(
                ResponseCode.POLLING_TIMEOUT, f"the broker[{broker_ip}] pop message is timeout too much"
            )
        if not is_readable(config.broker_permission):
            return request.make_response(
                ResponseCode.NO_PERMISSION, f"the broker[{broker_ip}] pop message is forbidden"
            )
        max_nums = int(header.max_msg_nums or 0)
        if max_nums > MAX_POP_NUMS:
            return request.make_response(
                ResponseCode.INVALID_PARAMETER,
                f"the broker[{broker_ip}] pop message's num is greater than 32",
            )
        if not config.timer_wheel_enable:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"the broker[{broker_ip}] pop message is forbidden because timerWheelEnable is false",
            )
        queue_id = int(header.queue_id if header.queue_id is not None else -1)
        refused = _refused_topic_or_group(self._topics, self._groups, request, topic, group, queue_id, conn)
        if refused is not None:
            return refused
        found_filter = ACCEPT_ALL
        if header.exp:
            try:
                subscription: SubscriptionData = build_subscription(topic, header.exp, header.exp_type)
            except CodecError:
                log.warning("cannot parse the subscription %r of group %s", header.exp, group)
                return request.make_response(
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
                )
            try:
                found_filter = store_filter(subscription, self._filters)
            except CompileError as error:
                log.warning(
                    "group %s pops %s with an expression that does not compile: %s", group, topic, error
                )
                return request.make_response(
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
                )
        answer = await self._pop_all(request, header, queue_id, found_filter, now)
        if answer is not None or poll_time <= 0:
            return answer or self._not_found(request, header, now, ResponseCode.POLLING_TIMEOUT)
        retry = pop_retry_topic(topic, group)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + poll_time / 1000
        while (left_ms := int((deadline - loop.time()) * 1000)) > 0:
            # Woken by any arrival on the topic or its retry topic; held again when the arrival was not
            # the group's to pop (filtered out, or an orderly queue still busy).
            if not await self._pop.wait_for((topic, retry), left_ms):
                return self._not_found(request, header, now, ResponseCode.POLLING_FULL)
            now = self._clock.now_ms()
            answer = await self._pop_all(request, header, queue_id, found_filter, now)
            if answer is not None:
                return answer
        return self._not_found(request, header, self._clock.now_ms(), ResponseCode.POLLING_TIMEOUT)

    def _not_found(
        self, request: RemotingCommand, header: PopMessageRequestHeader, pop_time: int, code: int
    ) -> RemotingCommand:
        answer = PopMessageResponseHeader(
            rest_num=0,
            pop_time=pop_time,
            invisible_time=header.invisible_time,
            revive_qid=0,
            start_offset_info="",
            msg_offset_info="",
        )
        return request.make_response(code, "NO_MESSAGE_IN_QUEUE", answer)

    async def _pop_all(
        self,
        request: RemotingCommand,
        header: PopMessageRequestHeader,
        queue_id: int,
        found_filter: SubscriptionFilter,
        pop_time: int,
    ) -> RemotingCommand | None:
        """The answer with what every queue to read gave, or ``None`` when none gave anything."""
        assert header.topic is not None and header.consumer_group is not None
        topic, group = header.topic, header.consumer_group
        order = bool(header.order)
        max_nums = int(header.max_msg_nums or 0)
        invisible = int(header.invisible_time or 0)
        random_q = self._random.randrange(100)
        if order:
            revive_qid = ORDER_REVIVE_QUEUE
        else:
            revive_qid = self._ck_number % REVIVE_QUEUE_NUM
            self._ck_number += 1
        retry = pop_retry_topic(topic, group)
        need_retry = random_q < POP_FROM_RETRY_PROBABILITY
        plan: list[tuple[str, list[int], SubscriptionFilter]] = []
        retry_config = self._topics.select(retry)
        retry_queues = list(range(retry_config.read_queue_nums)) if retry_config is not None else []
        if need_retry and not order:
            plan.append((retry, retry_queues, ACCEPT_ALL))
        topic_config = self._topics.select(topic)
        count = topic_config.read_queue_nums if topic_config is not None else 0
        queues = [(random_q + i) % count for i in range(count)] if queue_id < 0 else [queue_id]
        plan.append((topic, queues, found_filter))
        if not need_retry and not order:
            plan.append((retry, retry_queues, ACCEPT_ALL))

        popped: list[QueuePop] = []
        rest = 0
        got = 0
        for name, queue_ids, the_filter in plan:
            for qid in queue_ids:
                if got >= max_nums:
                    rest += max(0, self._pop.backlog(group, name, qid))
                    continue
                result, left = self._pop.pop_queue(
                    group=group,
                    topic=name,
                    queue_id=qid,
                    init_mode=int(header.init_mode or 0),
                    max_count=max_nums - got,
                    store_filter=the_filter,
                    pop_time=pop_time,
                    invisible_time=invisible,
                    order=order,
                    revive_qid=revive_qid,
                )
                rest += left
                if result is not None:
                    popped.append(result)
                    got += len(result.messages)
                    size = sum(len(data) for data in result.messages)
                    self._stats.popped(group, topic, name != topic, len(result.messages), size)
        try:
            await self._pop.save_durably()
        except OSError as exc:
            return _unsaved(request, exc)
        if not popped:
            return None
        body = b"".join(
            self._shown(m, p, topic, pop_time, invisible, revive_qid) for p in popped for m in p.messages
        )
        answer = PopMessageResponseHeader(
            rest_num=rest,
            pop_time=pop_time,
            invisible_time=invisible,
            revive_qid=revive_qid,
            start_offset_info=build_offset_info((p.topic, p.queue_id, p.start_offset) for p in popped),
            msg_offset_info=build_offset_info((p.topic, p.queue_id, p.offsets) for p in popped),
        )
        if order:
            entries: list[tuple[str, int | str, int]] = []
            for p in popped:
                entries += [(p.topic, queue_offset_key(p.queue_id, o), n) for o, n in p.order_counts]
                entries.append((p.topic, p.queue_id, p.min_count))
            answer.order_count_info = build_offset_info(entries)
        return request.make_response(ResponseCode.SUCCESS, "FOUND", answer, body)

    def _shown(
        self, record: bytes, popped: QueuePop, topic: str, pop_time: int, invisible: int, revive_qid: int
    ) -> bytes:
        """A message as the answer carries it: one from the POP retry topic under the popped topic's
        name, with its receipt handle set (Apache, unless ``popResponseReturnActualRetryTopic``)."""
        if not popped.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return record
        try:
            message = decode_message(record, 0, decompress_body=False)[0]
        except CodecError as exc:
            log.error("a stored message of %s does not decode: %s", popped.topic, exc)
            return record
        if const.POP_CK not in message.properties:
            handle = ExtraInfo(
                ck_queue_offset=popped.start_offset,
                pop_time=pop_time,
                invisible_time=invisible,
                revive_qid=revive_qid,
                retry=retry_mark(popped.topic),
                broker_name=self._config.broker_name,
                queue_id=message.queue_id,
                queue_offset=message.queue_offset,
            )
            message.append_properties(encode_properties({const.POP_CK: handle.text()}))
        message.topic = topic
        return encode_stored_message(message)


class AckMessageProcessor:
    """ACK_MESSAGE and BATCH_ACK_MESSAGE: popped messages done with.

    As Apache, an ack naming a checkpoint that is gone (acknowledged or revived already) is a success that
    changes nothing; an offset outside the queue is NO_MESSAGE.
    """

    def __init__(self, *, topics: TopicConfigManager, store: MessageStore, pop: PopService) -> None:
        self._topics = topics
        self._store = store
        self._pop = pop

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        if request.code == RequestCode.BATCH_ACK_MESSAGE:
            answer = self._batch(request, conn)
        else:
            answer = self._single(request, conn)
        if answer.code != ResponseCode.SUCCESS:
            return answer
        try:
            await self._pop.save_durably()
        except OSError as exc:
            return _unsaved(request, exc)
        return answer

    def _single(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        header = read_header(request, AckMessageRequestHeader)
        assert header.topic is not None and header.consumer_group is not None
        topic, queue_id, offset = header.topic, int(header.queue_id or 0), int(header.offset or 0)
        topic_config = self._topics.select(topic)
        if topic_config is None:
            log.error("ack on topic %s, which does not exist, by %s", topic, conn.remote_address)
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {topics.suggest_todo()}",
            )
        if queue_id < 0 or queue_id >= topic_config.read_queue_nums:
            remark = _illegal_queue(topic, queue_id, topic_config.read_queue_nums, conn)
            log.warning(remark)
            return request.make_response(ResponseCode.MESSAGE_ILLEGAL, remark)
        low, high = self._store.get_min_offset(topic, queue_id), self._store.get_max_offset(topic, queue_id)
        if offset < low or offset > high:
            remark = f"offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{low}~{high}"
            log.warning(remark)
            return request.make_response(ResponseCode.NO_MESSAGE, remark)
        try:
            handle = ExtraInfo.parse(header.extra_info or "")
        except CodecError as exc:
            return request.make_response(ResponseCode.MESSAGE_ILLEGAL, f"extraInfo is illegal: {exc}")
        self._pop.ack(header.consumer_group, topic, queue_id, offset, handle.ck_queue_offset, handle.pop_time)
        return request.make_response(ResponseCode.SUCCESS)

    def _batch(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        try:
            body = BatchAckMessageRequestBody.from_json(request.body) if request.body else None
        except CodecError as exc:
            return request.make_response(ResponseCode.MESSAGE_ILLEGAL, f"batch ack body is illegal: {exc}")
        if body is None or not body.acks:
            return request.make_response(ResponseCode.NO_MESSAGE)
        for ack in body.acks:
            refused = self._batch_entry(request, ack, conn)
            if refused is not None:
                return refused
        return request.make_response(ResponseCode.SUCCESS)

    def _batch_entry(
        self, request: RemotingCommand, ack: BatchAck, conn: Connection
    ) -> RemotingCommand | None:
        group = ack.consumer_group or ""
        try:
            topic = real_topic(ack.topic or "", group, ack.retry or "0")
        except CodecError as exc:
            return request.make_response(ResponseCode.MESSAGE_ILLEGAL, str(exc))
        topic_config = self._topics.select(topic)
        if topic_config is None:
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {topics.suggest_todo()}",
            )
        queue_id = ack.queue_id
        if queue_id < 0 or queue_id >= topic_config.read_queue_nums:
            remark = _illegal_queue(topic, queue_id, topic_config.read_queue_nums, conn)
            log.warning(remark)
            return request.make_response(ResponseCode.MESSAGE_ILLEGAL, remark)
        low = self._store.get_min_offset(topic, queue_id)
        held = [offset for offset in ack.acked_offsets() if offset >= low]  # Apache skips what is gone
        self._pop.ack_all(group, topic, queue_id, held, ack.start_offset, ack.pop_time)
        return None


class ChangeInvisibleTimeProcessor:
    """CHANGE_MESSAGE_INVISIBLETIME: a popped message stays hidden ``invisibleTime`` ms from now, under a
    checkpoint of its own starting at its offset (what the new receipt handle names)."""

    def __init__(
        self, *, clock: Clock, topics: TopicConfigManager, store: MessageStore, pop: PopService
    ) -> None:
        self._clock = clock
        self._topics = topics
        self._store = store
        self._pop = pop

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, ChangeInvisibleTimeRequestHeader)
        assert header.topic is not None and header.consumer_group is not None
        topic, queue_id, offset = header.topic, int(header.queue_id or 0), int(header.offset or 0)
        topic_config = self._topics.select(topic)
        if topic_config is None:
            log.error("change of invisible time on topic %s, which does not exist", topic)
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {topics.suggest_todo()}",
            )
        if queue_id < 0 or queue_id >= topic_config.read_queue_nums:
            remark = _illegal_queue(topic, queue_id, topic_config.read_queue_nums, conn)
            log.warning(remark)
            return request.make_response(ResponseCode.MESSAGE_ILLEGAL, remark)
        low, high = self._store.get_min_offset(topic, queue_id), self._store.get_max_offset(topic, queue_id)
        if offset < low or offset >= high:
            return request.make_response(ResponseCode.NO_MESSAGE)
        try:
            handle = ExtraInfo.parse(header.extra_info or "")
        except CodecError as exc:
            return request.make_response(ResponseCode.MESSAGE_ILLEGAL, f"extraInfo is illegal: {exc}")
        pop_time = self._clock.now_ms()
        invisible = int(header.invisible_time or 0)
        changed = self._pop.change_invisible(
            header.consumer_group,
            topic,
            queue_id,
            offset,
            handle.ck_queue_offset,
            handle.pop_time,
            pop_time,
            invisible,
            handle.revive_qid,
        )
        if not changed:
            log.info(
                "change of invisible time of %s/%d offset %d for %s: its checkpoint is gone",
                topic,
                queue_id,
                offset,
                header.consumer_group,
            )
        try:
            await self._pop.save_durably()
        except OSError as exc:
            return _unsaved(request, exc)
        answer = ChangeInvisibleTimeResponseHeader(
            invisible_time=invisible, pop_time=pop_time, revive_qid=handle.revive_qid
        )
        return request.make_response(ResponseCode.SUCCESS, None, answer)


class NotificationProcessor:
    """NOTIFICATION: whether the group has messages to pop (the topic, or its POP retry topic), held up to
    ``pollTime`` while it has none; always SUCCESS once the checks pass, ``pollingFull`` when it could not
    be held (Apache's ``NotificationProcessor``)."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        pop: PopService,
    ) -> None:
        self._config = config
        self._topics = topics
        self._groups = groups
        self._pop = pop

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        config = self._config
        header = read_header(request, NotificationRequestHeader)
        assert header.topic is not None and header.consumer_group is not None
        topic, group = header.topic, header.consumer_group
        if not is_readable(config.broker_permission):
            return request.make_response(
                ResponseCode.NO_PERMISSION, f"the broker[{config.broker_ip1}] peeking message is forbidden"
            )
        queue_id = int(header.queue_id if header.queue_id is not None else -1)
        refused = _refused_topic_or_group(self._topics, self._groups, request, topic, group, queue_id, conn)
        if refused is not None:
            return refused
        retry = pop_retry_topic(topic, group)
        has_msg = self._has_message(group, topic, retry, queue_id, bool(header.order))
        full = False
        poll_time = int(header.poll_time or 0)
        if not has_msg and poll_time > 0:
            if await self._pop.wait_for((topic, retry), poll_time):
                has_msg = self._has_message(group, topic, retry, queue_id, bool(header.order))
            else:
                full = True
        answer = NotificationResponseHeader(has_msg=has_msg, polling_full=full)
        return request.make_response(ResponseCode.SUCCESS, None, answer)

    def _has_message(self, group: str, topic: str, retry: str, queue_id: int, order: bool) -> bool:
        topic_config = self._topics.select(topic)
        count = topic_config.read_queue_nums if topic_config is not None else 0
        queues = range(count) if queue_id < 0 else [queue_id]
        if any(self._pop.backlog(group, topic, q, order=order) > 0 for q in queues):
            return True
        retry_config = self._topics.select(retry)
        retry_queues = range(retry_config.read_queue_nums) if retry_config is not None else range(0)
        return any(self._pop.backlog(group, retry, q) > 0 for q in retry_queues)
