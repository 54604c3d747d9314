"""SEND_MESSAGE, SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE: storing what producers send.

Java clients send V2 headers (one-letter keys), the C++ client V1; V2 is converted to V1 first, as Apache
does, and everything after that sees one header. The checks and their remarks are Apache's
(``AbstractSendMessageProcessor.msgCheck``, ``SendMessageProcessor``): broker writable for ordered topics,
a valid topic name, not a system topic, the topic known (or created from the default topic when
auto-creation is on), a queue id inside the topic. Messages to ``%RETRY%<group>`` topics past their retry
limit go to the group's dead-letter topic instead; delayed messages wait in their delay level's queue;
transactional ones become half messages.

Every answer carries ``MSG_REGION`` and ``TRACE_ON`` ext fields, as Apache's do; a successful one the offset
message id, queue id and queue offset (for a batch: the ids comma-joined, the first message's offset) and
the message's unique id as ``transactionId``.
"""

from __future__ import annotations

import logging
import random
import shutil

from broker.config import BrokerConfig
from broker.message_service import MessageService, stored_properties
from broker.processors.common import BadRequest, read_header
from broker.registration import ChangeAnnouncer
from broker.schedule import ScheduleMessageService
from broker.stats import BrokerStats, message_type
from broker.store import PutMessageResult, PutMessageStatus
from broker.subscription_groups import SubscriptionGroupManager
from broker.timer import TimerMessageService, TimerRefusal
from broker.topic_attributes import KEY_MISSING_REMARK, is_compacted, keys_missing
from broker.topic_config_manager import TopicConfigManager, describe
from broker.transaction import TransactionalMessageService
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode, topics
from rocketmq_wire.bodies.topic_config import TopicConfig
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.send import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketmq_wire.javahash import ExtFields
from rocketmq_wire.message import const, sysflag
from rocketmq_wire.message.batch import decode_batch, merge_batch_properties
from rocketmq_wire.message.ids import UniqueIdGenerator
from rocketmq_wire.message.properties import decode_properties
from rocketmq_wire.message.recall import RecallHandle
from rocketmq_wire.message.stored import MessageExt
from rocketmq_wire.perm import PERM_READ, PERM_WRITE, is_writeable
from rocketmq_wire.topics import is_dlq_topic, is_retry_topic
from rocketmq_wire.transport import Connection, DeferredAnswer

log = logging.getLogger("broker.processors.send")

#: Queues of a dead-letter topic (Apache's ``DLQ_NUMS_PER_GROUP``).
DLQ_NUMS_PER_GROUP = 1
#: ``TopicSysFlag`` bits for unit-mode topics.
TOPIC_SYS_FLAG_UNIT = 0x1
TOPIC_SYS_FLAG_UNIT_SUB = 0x1 << 1
#: Clients before this version did not send ``maxReconsumeTimes``.
_V3_4_9 = MQVersion.value_of("V3_4_9")

_ILLEGAL_REMARK = (
    "the message is illegal, maybe msg body or properties length not matched. msg body length limit 128k, "
    "msg properties length limit 32k."
)


#: Statuses of a stored message and the code each is answered with (SUCCESS only when nothing timed out).
_STORED_CODES = {
    PutMessageStatus.PUT_OK: ResponseCode.SUCCESS,
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
}


#: A send request's header: V2 names its fields by letter on the wire, but both carry the same fields.
SendHeader = SendMessageRequestHeader | SendMessageRequestHeaderV2


def parse_send_header(request: RemotingCommand) -> SendHeader:
    """The header of any send request. Apache converts V2 to V1 (``parseRequestHeader``); here both are
    read by field name, which is the same in both, so the conversion (a second header object) is skipped."""
    if request.code == RequestCode.SEND_MESSAGE:
        return read_header(request, SendMessageRequestHeader)
    return read_header(request, SendMessageRequestHeaderV2)


def disk_summary(path: str) -> str:
    """Apache's ``diskUtil()`` line for the SERVICE_NOT_AVAILABLE remark."""
    try:
        usage = shutil.disk_usage(path)
        ratio = usage.used / usage.total if usage.total else 0.0
    except OSError:
        ratio = 0.0
    return f"CL: {ratio:5.2f} CQ: {ratio:5.2f} INDEX: {ratio:5.2f}"


def send_answer(
    config: BrokerConfig,
    request: RemotingCommand,
    code: int,
    remark: str | None = None,
    header: SendMessageResponseHeader | None = None,
) -> RemotingCommand:
    """A send's answer: every one carries the broker's region and trace switch, as Apache's."""
    answer = request.make_response(code, remark, header)
    answer.ext_fields = ExtFields(
        {const.MSG_REGION: config.region_id, const.TRACE_ON: "true" if config.trace_on else "false"}
    )
    return answer


def check_send_target(
    config: BrokerConfig,
    manager: TopicConfigManager,
    request: RemotingCommand,
    header: SendHeader,
    conn: Connection,
) -> TopicConfig | RemotingCommand:
    """Apache's ``msgCheck``, shared by sends and replies: the topic config to store with (made from the
    template topic when allowed), or the error answer."""
    topic = str(header.topic)
    if not is_writeable(config.broker_permission) and manager.is_order_topic(topic):
        return send_answer(
            config,
            request,
            ResponseCode.NO_PERMISSION,
            f"the broker[{config.broker_ip1}] sending message is forbidden",
        )
    refusal = topics.validate_topic(topic) or topics.check_send_allowed(topic)
    if refusal is not None:
        return send_answer(config, request, *refusal)
    topic_config = manager.select_shared(topic)
    if topic_config is None:
        sys_flag = 0
        if header.unit_mode:
            sys_flag = TOPIC_SYS_FLAG_UNIT_SUB if topics.is_retry_topic(topic) else TOPIC_SYS_FLAG_UNIT
        log.warning("the topic %s does not exist, producer %s", topic, conn.remote_address)
        topic_config = manager.create_in_send(
            topic,
            header.default_topic,
            conn.remote_address,
            int(header.default_topic_queue_nums or 0),
            sys_flag,
        )
        if topic_config is None and topics.is_retry_topic(topic):
            topic_config = manager.create_if_absent(topic, 1, PERM_READ | PERM_WRITE, sys_flag)
        if topic_config is None:
            return send_answer(
                config,
                request,
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please!{topics.suggest_todo()}",
            )
    queue_id = int(header.queue_id or 0)
    if queue_id >= max(topic_config.write_queue_nums, topic_config.read_queue_nums):
        remark = (
            f"request queueId[{queue_id}] is illegal, {describe(topic_config)} "
            f"Producer: {conn.remote_address}"
        )
        log.warning(remark)
        return send_answer(config, request, ResponseCode.SYSTEM_ERROR, remark)
    if not is_writeable(topic_config.perm):
        return send_answer(
            config, request, ResponseCode.NO_PERMISSION, f"the topic[{topic}] sending message is forbidden"
        )
    return topic_config


class SendMessageProcessor:
    """Stores a producer's message or batch, after Apache's checks, and answers with where it went."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        messages: MessageService,
        schedule: ScheduleMessageService,
        transactions: TransactionalMessageService,
        unique_ids: UniqueIdGenerator,
        announcer: ChangeAnnouncer,
        timer: TimerMessageService,
        stats: BrokerStats,
    ) -> None:
        self._timer = timer
        self._config = config
        self._topics = topics
        self._groups = groups
        self._messages = messages
        self._schedule = schedule
        self._transactions = transactions
        self._unique_ids = unique_ids
        self._announcer = announcer
        self._stats = stats
        self._random = random.Random()

    # -- the answer's frame -----------------------------------------------------------------------------

    def _answer(
        self,
        request: RemotingCommand,
        code: int,
        remark: str | None = None,
        header: SendMessageResponseHeader | None = None,
    ) -> RemotingCommand:
        return send_answer(self._config, request, code, remark, header)

    # -- entry point ------------------------------------------------------------------------------------

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | DeferredAnswer:
        header = parse_send_header(request)
        announcer = self._announcer
        seen = announcer.changes
        topic_config = self._check(request, header, conn)
        if isinstance(topic_config, RemotingCommand):
            return topic_config
        if header.batch:
            answer = await self._send_batch(request, header, conn, topic_config)
        else:
            answer = await self._send_one(request, header, conn, topic_config)
        if announcer.changes != seen:  # this send made its topic (or a DLQ): the NameServers hear of it first
            await announcer.announced_since(seen)
        return answer

    def _check(
        self, request: RemotingCommand, header: SendHeader, conn: Connection
    ) -> TopicConfig | RemotingCommand:
        return check_send_target(self._config, self._topics, request, header, conn)

    # -- one message ------------------------------------------------------------------------------------

    async def _send_one(
        self,
        request: RemotingCommand,
        header: SendHeader,
        conn: Connection,
        topic_config: TopicConfig,
    ) -> RemotingCommand | DeferredAnswer:
        config = self._config
        topic = str(header.topic)
        queue_id = int(header.queue_id or 0)
        if queue_id < 0:
            queue_id = self._random.randrange(max(1, topic_config.write_queue_nums))
        properties = decode_properties(header.properties or "")
        reconsume_times = int(header.reconsume_times or 0)

        if topics.is_retry_topic(topic):
            diverted = self._retry_or_dlq(request, header, properties, reconsume_times)
            if isinstance(diverted, RemotingCommand):
                return diverted
            if diverted is not None:
                topic, queue_id = diverted
        # Judged by the topic the producer named (a retry topic, not its dead-letter topic), as Apache does.
        if is_compacted(topic_config.attributes) and keys_missing(properties.get(const.KEYS)):
            return self._answer(request, ResponseCode.MESSAGE_ILLEGAL, KEY_MISSING_REMARK)

        sys_flag = int(header.sys_flag or 0)
        if topic_config.topic_filter_type == "MULTI_TAG":
            sys_flag |= sysflag.MULTI_TAGS
        if not properties.get(const.UNIQ_KEY):
            properties[const.UNIQ_KEY] = self._unique_ids.next_id()
        properties[const.CLUSTER] = config.broker_cluster_name
        # A stored message does not keep WAIT (it only matters while storing); Apache drops it the same way,
        # by taking it out of the map and putting it back afterwards -- at the end of the map, which decides
        # where it lands when a half or delayed message is written from the map later.
        wait = properties.pop(const.WAIT, None)
        staying = dict(properties)  # encoded only if the message stays where it was sent (a timer's does not)
        if wait is not None:
            properties[const.WAIT] = wait

        def stored(where: str, queue: int, properties_text: str) -> MessageExt:
            """The message to store (built once, where it goes known: a timer message is re-addressed)."""
            return MessageExt(
                topic=where,
                body=request.body,
                flag=int(header.flag or 0),
                properties_string=properties_text,
                queue_id=queue,
                sys_flag=sys_flag,
                born_timestamp=int(header.born_timestamp or 0),
                born_host=conn.remote_address,
                store_host=config.store_host,
                reconsume_times=reconsume_times,
            )

        transactional = properties.get(const.TRAN_MSG, "").lower() == "true"
        if transactional and not (reconsume_times > 0 and properties.get(const.DELAY, "0") not in ("", "0")):
            if config.reject_transaction_message:
                return self._answer(
                    request,
                    ResponseCode.NO_PERMISSION,
                    f"the broker[{config.broker_ip1}] sending transaction message is forbidden",
                )
            as_sent = stored(topic, queue_id, stored_properties(staying))
            half = self._transactions.make_half(as_sent, properties)
            result = await self._transactions.prepare(half)
            return self._put_answer(request, result, queue_id, properties.get(const.UNIQ_KEY))
        placed = self._timer.transform(properties, topic, queue_id)
        if isinstance(placed, TimerRefusal):
            return self._answer(request, placed.code, placed.remark)
        recall_handle: str | None = None
        if placed != (topic, queue_id):  # a timer message: it waits in the timer topic
            real_topic, real_queue = placed
            recall_handle = self._recall_handle(properties)
        else:
            real_topic, real_queue = self._schedule.apply_delay(properties, topic, queue_id)
        if real_topic != topic:
            message = stored(real_topic, real_queue, stored_properties(properties))
        else:
            message = stored(topic, queue_id, stored_properties(staying))
        return self._put([message], request, queue_id, properties.get(const.UNIQ_KEY), recall_handle)

    def _recall_handle(self, properties: dict[str, str]) -> str | None:
        """The handle a timer message's answer carries (none for a retry topic's), as Apache builds it: one
        past the floored delivery time, so the recall's own floor lands in the same slot."""
        real_topic = properties.get(const.REAL_TOPIC, "")
        out_ms = properties.get(const.TIMER_OUT_MS)
        if out_ms is None or topics.is_retry_topic(real_topic):
            return None
        return RecallHandle(
            real_topic, self._config.broker_name, str(int(out_ms) + 1), properties.get(const.UNIQ_KEY, "")
        ).encode()

    def _retry_or_dlq(
        self,
        request: RemotingCommand,
        header: SendHeader,
        properties: dict[str, str],
        reconsume_times: int,
    ) -> tuple[str, int] | RemotingCommand | None:
        """For a ``%RETRY%`` topic: the dead-letter destination once past the retry limit, else ``None``."""
        group = str(header.topic)[len(topics.RETRY_GROUP_TOPIC_PREFIX) :]
        group_config = self._groups.find(group)
        if group_config is None:
            return self._answer(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {group} {topics.suggest_todo()}",
            )
        max_times = group_config.retry_max_times
        if request.version >= _V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if reconsume_times <= max_times:
            return None
        dlq = topics.dlq_topic(group)
        self._topics.create_if_absent(dlq, DLQ_NUMS_PER_GROUP, PERM_READ | PERM_WRITE)
        properties.pop(const.DELAY, None)
        self._stats.to_dlq(str(header.producer_group), str(header.topic))
        log.info(
            "message of group %s retried %d times: to the dead-letter queue %s", group, reconsume_times, dlq
        )
        return dlq, self._random.randrange(DLQ_NUMS_PER_GROUP)

    # -- a batch ----------------------------------------------------------------------------------------

    async def _send_batch(
        self,
        request: RemotingCommand,
        header: SendHeader,
        conn: Connection,
        topic_config: TopicConfig,
    ) -> RemotingCommand | DeferredAnswer:
        config = self._config
        topic = str(header.topic)
        queue_id = int(header.queue_id or 0)
        if queue_id < 0:
            queue_id = self._random.randrange(max(1, topic_config.write_queue_nums))
        if len(topic) > topics.TOPIC_MAX_LENGTH:
            return self._answer(
                request, ResponseCode.MESSAGE_ILLEGAL, f"message topic length too long {len(topic)}"
            )
        if topics.is_retry_topic(topic):
            return self._answer(
                request, ResponseCode.MESSAGE_ILLEGAL, f"batch request does not support retry group {topic}"
            )
        try:
            entries = decode_batch(request.body)
        except CodecError as exc:
            raise BadRequest(f"the batch body is malformed: {exc}", ResponseCode.MESSAGE_ILLEGAL) from None
        if not entries:
            return self._answer(request, ResponseCode.MESSAGE_ILLEGAL, "the batch holds no message")
        batch_properties = decode_properties(header.properties or "")
        batch_properties[const.CLUSTER] = config.broker_cluster_name
        batch_string = stored_properties(batch_properties)
        sys_flag = int(header.sys_flag or 0)
        if topic_config.topic_filter_type == "MULTI_TAG":
            sys_flag |= sysflag.MULTI_TAGS
        born_timestamp = int(header.born_timestamp or 0)
        born_host = conn.remote_address
        store_host = config.store_host
        reconsume_times = int(header.reconsume_times or 0)
        messages = [
            MessageExt(
                topic=topic,
                body=entry.body,
                flag=entry.flag,
                properties_string=merge_batch_properties(entry.properties_string, batch_string),
                queue_id=queue_id,
                sys_flag=sys_flag,
                born_timestamp=born_timestamp,
                born_host=born_host,
                store_host=store_host,
                reconsume_times=reconsume_times,
            )
            for entry in entries
        ]
        return self._put(messages, request, queue_id, batch_properties.get(const.UNIQ_KEY))

    # -- the store's verdict ----------------------------------------------------------------------------

    def _put(
        self,
        messages: list[MessageExt],
        request: RemotingCommand,
        queue_id: int,
        unique_id: str | None,
        recall_handle: str | None = None,
    ) -> RemotingCommand | DeferredAnswer:
        """Store, and answer now, or once the store's wait (SYNC_FLUSH, SYNC_MASTER) is over.

        The answer is promised rather than awaited: under SYNC_FLUSH the group commit's round calls back
        with the verdict and the answer leaves from there, with no coroutine parked per send."""
        promise: DeferredAnswer | None = None  # made only when needed: ASYNC_FLUSH sends never wait

        def stored(result: PutMessageResult) -> None:
            assert promise is not None  # the store never calls back before put_all_then has returned
            self._count(messages, result)
            try:
                answer = self._put_answer(request, result, queue_id, unique_id, recall_handle)
            except Exception as exc:
                promise.fail(exc)
            else:
                promise.resolve(answer)

        result = self._messages.put_all_then(messages, stored)
        if result is None:
            promise = DeferredAnswer()
            return promise
        self._count(messages, result)
        return self._put_answer(request, result, queue_id, unique_id, recall_handle)

    def _count(self, messages: list[MessageExt], result: PutMessageResult) -> None:
        """Apache's per-topic send counters: stored sends only, retry and DLQ topics left out."""
        if result.status.stored and result.message_count:
            topic = messages[0].topic
            if not (is_retry_topic(topic) or is_dlq_topic(topic)):
                self._stats.sent(topic, message_type(messages[0]), result.message_count, result.wrote_bytes)

    def _put_answer(
        self,
        request: RemotingCommand,
        result: PutMessageResult,
        queue_id: int,
        unique_id: str | None,
        recall_handle: str | None = None,
    ) -> RemotingCommand:
        status = result.status
        stored_code = _STORED_CODES.get(status)
        if stored_code is not None:
            # Stored, whatever the wait said: the answer carries the ids, as Apache's "sendOK" answers do.
            header = SendMessageResponseHeader(
                msg_id=result.msg_id,
                queue_id=queue_id,
                queue_offset=result.queue_offset,
                transaction_id=unique_id,
                recall_handle=recall_handle,
            )
            return self._answer(request, stored_code, None, header)
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return self._answer(request, ResponseCode.MESSAGE_ILLEGAL, _ILLEGAL_REMARK)
        if status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
            remark = (
                "service not available now. It may be caused by one of the following reasons: "
                f"the broker's disk is full [{disk_summary(self._config.store_path_root_dir)}], "
                "messages are put to the slave, message store has been shut down, etc."
            )
            if result.reason:
                remark = f"{remark} Now: {result.reason}."
            return self._answer(request, ResponseCode.SERVICE_NOT_AVAILABLE, remark)
        if status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED:
            return self._answer(
                request, ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken."
            )
        if status is PutMessageStatus.OS_PAGE_CACHE_BUSY:
            return self._answer(
                request,
                ResponseCode.SYSTEM_ERROR,
                "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
            )
        if status is PutMessageStatus.UNKNOWN_ERROR:
            return self._answer(request, ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR")
        return self._answer(request, ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT")
