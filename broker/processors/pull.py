"""PULL_MESSAGE: serve a consumer's pull from a queue, or hold it until something arrives.

The checks, their order, the status mapping and the remarks follow Apache's ``PullMessageProcessor``:
broker and topic readable, a sane queue id, a subscription (from the request when it carries one, else from
the group's heartbeat, which must be at least as new as the request's ``subVersion``), then the store read.
The remark of an answer is the store's status name (``FOUND``, ``NO_MATCHED_MESSAGE``, ``OFFSET_OVERFLOW_ONE``
...), which consumers log; ``nextBeginOffset``/``minOffset``/``maxOffset`` tell the consumer where to go on.

A SQL92 subscription (Apache's ``ExpressionMessageFilter`` with filter data) is refused with SYSTEM_ERROR
unless ``enablePropertyFilter`` is on; its expression comes compiled from the broker's cache and is judged on
each message's properties after the tag step. As in Apache, an expression carried by the pull itself that
does not compile leaves the pull unfiltered (Apache keeps no filter data and logs it), while one from the
group's heartbeat answers FILTER_DATA_NOT_EXIST.

A slave serves pulls from its replicated queues; it neither stores the offset a pull commits nor moves a
consumer whose offset it does not have (``offsetCheckInSlave``), and ``suggestWhichBrokerId`` follows
``slaveReadEnable`` as in Apache.
"""

from __future__ import annotations

import logging

from broker.clients import ConsumerManager
from broker.config import BrokerConfig
from broker.filtering import ACCEPT_ALL, SubscriptionFilter, subscription_filter, tag_codes
from broker.long_polling import PullRequestHoldService
from broker.processors.common import read_header
from broker.sql92 import CompileError, ExpressionCompiler
from broker.stats import BrokerStats
from broker.store import ConsumerOffsetStore, GetMessageStatus, MessageStore
from broker.subscription_groups import MASTER_ID, SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, ResponseCode, topics
from rocketmq_wire.bodies.heartbeat import SubscriptionData
from rocketmq_wire.bodies.subscription import build_subscription, is_tag_type
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_wire.message import sysflag
from rocketmq_wire.perm import is_readable
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.pull")

_CODE_BY_STATUS = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


class PullMessageProcessor:
    """Answers a pull from the store, or holds it in ``pull_holder`` until messages arrive.

    The hold service hands a held pull back to :meth:`process` (with ``allow_suspend`` off) when it is due.
    """

    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetStore,
        consumers: ConsumerManager,
        store: MessageStore,
        stats: BrokerStats,
        pull_holder: PullRequestHoldService,
        filters: ExpressionCompiler,
    ) -> None:
        self._config = config
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._consumers = consumers
        self._store = store
        self._stats = stats
        self._pull_holder = pull_holder
        self._filters = filters

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        return self.answer_now(request, conn)

    def answer_now(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        """A pull never waits here: it is answered from the store or held (``None``), so the broker serves
        it inline."""
        return self.process(request, conn, allow_suspend=True)

    def process(
        self, request: RemotingCommand, conn: Connection, allow_suspend: bool
    ) -> RemotingCommand | None:
        """The answer to a pull, or ``None`` when it is held for long polling."""
        config = self._config
        header = read_header(request, PullMessageRequestHeader)
        assert header.consumer_group is not None and header.topic is not None
        group, topic = header.consumer_group, header.topic
        queue_id = int(header.queue_id or 0)
        queue_offset = int(header.queue_offset or 0)
        pull_flag = int(header.sys_flag or 0)

        if not is_readable(config.broker_permission):
            return request.make_response(
                ResponseCode.NO_PERMISSION, f"the broker[{config.broker_ip1}] pulling message is forbidden"
            )
        group_config = self._groups.find(group)
        if group_config is None:
            return request.make_response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{group}] does not exist, {topics.suggest_todo()}",
            )
        if not group_config.consume_enable:
            return request.make_response(
                ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}"
            )

        topic_config = self._topics.select_shared(topic)
        if topic_config is None:
            log.error("pull from topic %s, which does not exist, by %s", topic, conn.remote_address)
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {topics.suggest_todo()}",
            )
        if not is_readable(topic_config.perm):
            return request.make_response(
                ResponseCode.NO_PERMISSION, f"the topic[{topic}] pulling message is forbidden"
            )
        if queue_id < 0 or queue_id >= topic_config.read_queue_nums:
            remark = (
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{topic_config.read_queue_nums}] consumer:[{conn.remote_address}]"
            )
            log.warning(remark)
            return request.make_response(ResponseCode.SYSTEM_ERROR, remark)

        subscription: SubscriptionData
        message_filter: SubscriptionFilter | None = None
        if sysflag.has_subscription(pull_flag):
            try:
                subscription = build_subscription(topic, header.subscription, header.expression_type)
            except CodecError:
                log.warning("cannot parse the subscription %r of group %s", header.subscription, group)
                return request.make_response(
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
                )
            if not is_tag_type(subscription.expression_type):
                try:
                    message_filter = subscription_filter(subscription, self._filters)
                except CompileError as error:
                    # Apache logs it and goes on without filter data: such a pull filters nothing.
                    log.error(
                        "group %s pulls %s with an expression that does not compile, unfiltered: %r (%s)",
                        group,
                        topic,
                        subscription.sub_string,
                        error.remark,
                    )
                    message_filter = ACCEPT_ALL
        else:
            group_info = self._consumers.group(group)
            if group_info is None:
                return request.make_response(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST,
                    "the consumer's group info not exist" + topics.suggest_todo(),
                )
            if not group_config.consume_broadcast_enable and group_info.message_model == "BROADCASTING":
                return request.make_response(
                    ResponseCode.NO_PERMISSION,
                    f"the consumer group[{group}] can not consume by broadcast way",
                )
            found = group_info.find_subscription(topic)
            if found is None:
                return request.make_response(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST,
                    "the consumer's subscription not exist" + topics.suggest_todo(),
                )
            if found.sub_version < int(header.sub_version or 0):
                return request.make_response(
                    ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest"
                )
            subscription = found
            if not is_tag_type(subscription.expression_type):
                try:
                    message_filter = subscription_filter(subscription, self._filters)
                except CompileError:
                    # Apache keeps no filter data for a heartbeat's expression that does not compile.
                    return request.make_response(
                        ResponseCode.FILTER_DATA_NOT_EXIST,
                        "The broker's consumer filter data is not exist!Your expression may be wrong!",
                    )
        if not is_tag_type(subscription.expression_type) and not config.enable_property_filter:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {subscription.expression_type}",
            )
        if message_filter is None:  # a tag subscription: the consume queue alone decides, at no extra cost
            codes, record_filter = tag_codes(subscription), None
        else:
            codes, record_filter = message_filter.codes, message_filter.record_filter
        result = self._store.get_messages(
            topic,
            queue_id,
            queue_offset,
            max(0, int(header.max_msg_nums or 0)),
            codes,
            message_filter=record_filter,
        )
        self._stats.got(result.message_count)
        self._stats.pulled(
            group, topic, queue_id, result.next_begin_offset, result.message_count, result.buffer_total_size
        )
        # Where the consumer should pull next (Apache's suggestWhichBrokerId): the master, unless slave reads
        # are enabled -- then the group's brokerId, or whichBrokerWhenConsumeSlowly for a consumer so far
        # behind that its messages left memory. (Apache's slave also sets PULL_RETRY_IMMEDIATELY when slave
        # reads are off, but the status below overwrites that code, so only the suggestion remains.)
        suggest = MASTER_ID
        if config.slave_read_enable:
            suggest = (
                group_config.which_broker_when_consume_slowly
                if result.suggest_pulling_from_slave
                else group_config.broker_id
            )
        response_header = PullMessageResponseHeader(
            suggest_which_broker_id=suggest,
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        )
        status = result.status
        if status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
            code = ResponseCode.PULL_OFFSET_MOVED if queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = _CODE_BY_STATUS[status]
        if code == ResponseCode.PULL_OFFSET_MOVED and config.is_slave and not config.offset_check_in_slave:
            # A slave may only lag its master: it does not move the consumer, it sends it to try again.
            log.warning(
                "pull offset moved, not corrected on a slave: group %s %s/%d requested %d",
                group,
                topic,
                queue_id,
                queue_offset,
            )
            response_header.suggest_which_broker_id = group_config.broker_id
            code = ResponseCode.PULL_RETRY_IMMEDIATELY
        if code == ResponseCode.PULL_OFFSET_MOVED:
            log.info(
                "pull offset moved: group %s %s/%d requested %d, next %d (%s)",
                group,
                topic,
                queue_id,
                queue_offset,
                result.next_begin_offset,
                status.name,
            )

        answer: RemotingCommand | None
        if code == ResponseCode.PULL_NOT_FOUND and allow_suspend and sysflag.has_suspend(pull_flag):
            timeout = int(header.suspend_timeout_millis or 0)
            if not config.long_polling_enable:
                timeout = config.short_polling_time_mills
            self._pull_holder.suspend(topic, queue_id, request, conn, queue_offset, codes, timeout)
            answer = None
        else:
            answer = request.make_response(
                code, status.name, response_header, result.body if result.messages else b""
            )

        if allow_suspend and sysflag.has_commit_offset(pull_flag) and not config.is_slave:
            commit = int(header.commit_offset or 0)
            self._offsets.commit_offset(group, topic, queue_id, commit)
        return answer
