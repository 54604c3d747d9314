"""Transactional messages: half messages, the producer's verdict, and asking producers that never gave one.

A producer sends a transactional message as a *half* message: the broker stores it in queue 0 of
``RMQ_SYS_TRANS_HALF_TOPIC`` (real topic and queue in its properties), invisible to consumers of the real
topic. The producer then runs its local transaction and sends END_TRANSACTION: *commit* stores the message
under its real topic, *rollback* does not; either way an *op* record (body: the half message's queue offset)
goes to ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` so the half message counts as settled.

Half messages left unsettled longer than ``transactionTimeOut`` are checked back: each check round re-stores
such a message at the end of the half queue with its check count raised, and sends CHECK_TRANSACTION_STATE
to a live producer of its group, which answers with an END_TRANSACTION about the new copy. After
``transactionCheckMax`` checks a message is given up. How far the rounds got is kept as the consumer offsets
of the internal group ``CID_RMQ_SYS_TRANS`` on both topics, as Apache keeps it, so it survives restarts.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable

from broker.clock import Clock
from broker.config import BrokerConfig
from broker.message_service import MessageService, stored_properties
from broker.store import ConsumerOffsetStore, GetMessageStatus, PutMessageResult
from broker.transaction_metrics import TransactionMetrics
from rocketmq_wire import topics
from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.transaction import CheckTransactionStateRequestHeader, TransactionType
from rocketmq_wire.message import const, sysflag
from rocketmq_wire.message.ids import encode_offset_msg_id
from rocketmq_wire.message.stored import MessageExt, decode_message, encode_stored_message

log = logging.getLogger("broker.transaction")

HALF_QUEUE_ID = 0
#: Tag of op records that settle a half message (Apache's ``REMOVETAG``).
OP_TAG = "d"

#: ``send_check(producer_group, header, body)``: deliver a CHECK_TRANSACTION_STATE; False if nobody to ask.
CheckSender = Callable[[str, CheckTransactionStateRequestHeader, bytes], Awaitable[bool]]


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """What END_TRANSACTION answers (the response is only sent when the request was not oneway)."""

    code: int
    remark: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class CheckRound:
    """What one check round did, for logs and tests."""

    checked: int = 0
    discarded: int = 0
    settled_until: int = 0


class TransactionalMessageService:
    def __init__(
        self,
        messages: MessageService,
        offsets: ConsumerOffsetStore,
        config: BrokerConfig,
        clock: Clock,
        send_check: CheckSender,
    ) -> None:
        self._messages = messages
        self._offsets = offsets
        self._config = config
        self._clock = clock
        self._send_check = send_check
        self.metrics = TransactionMetrics()

    # -- the half message -------------------------------------------------------------------------------

    def make_half(self, message: MessageExt, properties: dict[str, str]) -> MessageExt:
        """The half message stored for a transactional send (``parseHalfMessageInner``)."""
        properties[const.REAL_TOPIC] = message.topic
        properties[const.REAL_QID] = str(message.queue_id)
        return dataclasses.replace(
            message,
            topic=topics.TRANS_HALF_TOPIC,
            queue_id=HALF_QUEUE_ID,
            sys_flag=sysflag.with_transaction_type(message.sys_flag, sysflag.TRANSACTION_NOT_TYPE),
            properties_string=stored_properties(properties),
        )

    async def prepare(self, half: MessageExt) -> PutMessageResult:
        result = await self._messages.put(half)
        if result.status.stored:
            self.metrics.prepared(half.properties.get(const.REAL_TOPIC, ""))
        return result

    # -- the producer's verdict -------------------------------------------------------------------------

    def _find_half(self, commit_log_offset: int) -> MessageExt | None:
        data = self._messages.store.lookup_message_by_physical_offset(commit_log_offset)
        if data is None:
            return None
        try:
            message, _ = decode_message(data, 0, decompress_body=False)
        except CodecError:
            return None
        return message if message.topic == topics.TRANS_HALF_TOPIC else None

    async def end(
        self,
        producer_group: str,
        tran_state_table_offset: int,
        commit_log_offset: int,
        verdict: int,
        place: Callable[[MessageExt], MessageExt | Verdict] | None = None,
    ) -> Verdict:
        """Apply a producer's COMMIT or ROLLBACK to the half message at ``commit_log_offset``.

        ``place`` may re-address the committed message before it is stored (a timer message waits in the
        timer topic, as Apache's store hook sends a committed one there), or refuse it."""
        half = self._find_half(commit_log_offset)
        if half is None:
            return Verdict(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if half.properties.get(const.PGROUP) != producer_group:
            return Verdict(ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        if half.queue_offset != tran_state_table_offset:
            return Verdict(ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
        if half.commit_log_offset != commit_log_offset:
            return Verdict(ResponseCode.SYSTEM_ERROR, "The commit log offset wrong")
        if verdict == TransactionType.COMMIT_TYPE:
            final = self._final_message(half)
            if place is not None:
                placed = place(final)
                if isinstance(placed, Verdict):
                    return placed
                final = placed
            result = await self._messages.put(final)
            if not result.status.stored:
                log.warning("committing transaction message %s failed: %s", half.msg_id, result.status.name)
                return Verdict(ResponseCode.SYSTEM_ERROR, result.status.name)
            log.debug("committed transaction message %s to %s/%d", half.msg_id, final.topic, final.queue_id)
            latency_s = (self._clock.now_ms() - half.born_timestamp) // 1000
            self.metrics.committed(half.properties.get(const.REAL_TOPIC, ""), latency_s)
        else:
            log.debug("rolled back transaction message %s", half.msg_id)
            self.metrics.rolled_back(half.properties.get(const.REAL_TOPIC, ""))
        await self._settle(half)
        return Verdict(ResponseCode.SUCCESS)

    def _final_message(self, half: MessageExt) -> MessageExt:
        """The committed message (``endMessageTransaction``): the half message under its real topic.

        The properties are re-encoded from the half message's, so they keep ``REAL_TOPIC``/``REAL_QID``, as a
        4.9 broker's committed messages do; ``preparedTransactionOffset`` points back at the half message.
        """
        properties = half.properties
        return MessageExt(
            topic=properties.get(const.REAL_TOPIC, ""),
            body=half.body,
            flag=half.flag,
            properties_string=stored_properties(properties),
            queue_id=int(properties.get(const.REAL_QID, "0") or 0),
            sys_flag=sysflag.with_transaction_type(half.sys_flag, sysflag.TRANSACTION_COMMIT_TYPE),
            born_timestamp=half.born_timestamp,
            born_host=half.born_host,
            store_host=self._config.store_host,
            reconsume_times=half.reconsume_times,
            prepared_transaction_offset=half.commit_log_offset,
        )

    async def _settle(self, half: MessageExt) -> None:
        properties = {const.TAGS: OP_TAG, const.WAIT: "false"}
        op = MessageExt(
            topic=topics.TRANS_OP_HALF_TOPIC,
            body=str(half.queue_offset).encode("ascii"),
            properties_string=stored_properties(properties),
            queue_id=HALF_QUEUE_ID,
            born_timestamp=self._clock.now_ms(),
            born_host=self._config.store_host,
            store_host=self._config.store_host,
        )
        result = await self._messages.put(op)
        if not result.status.stored:
            log.error(
                "could not record the end of transaction message %s: %s", half.msg_id, result.status.name
            )

    # -- checking back ----------------------------------------------------------------------------------

    def _progress(self, topic: str) -> int:
        committed = self._offsets.query_offset(topics.TRANS_CHECK_GROUP, topic, HALF_QUEUE_ID)
        if committed >= 0:
            return committed
        return self._messages.store.get_min_offset(topic, HALF_QUEUE_ID)

    def _settled_offsets(self, op_from: int) -> list[tuple[int, int]]:
        """(op queue offset, settled half offset) of every op record from ``op_from`` on."""
        store = self._messages.store
        found: list[tuple[int, int]] = []
        offset = op_from
        while True:
            result = store.get_messages(topics.TRANS_OP_HALF_TOPIC, HALF_QUEUE_ID, offset, 32)
            if result.status is not GetMessageStatus.FOUND:
                if result.next_begin_offset > offset:
                    offset = result.next_begin_offset
                    continue
                return found
            for data, queue_offset in zip(result.messages, result.queue_offsets, strict=True):
                try:
                    op, _ = decode_message(data, 0)
                    found.append((queue_offset, int(op.body.decode("ascii"))))
                except (CodecError, ValueError, UnicodeDecodeError):
                    log.warning("ignoring a malformed op record at offset %d", queue_offset)
            offset = result.next_begin_offset

    async def check_once(self) -> CheckRound:
        """One check round over the half queue (Apache's ``TransactionalMessageServiceImpl.check``)."""
        store = self._messages.store
        round_start = self._clock.now_ms()
        half_from = self._progress(topics.TRANS_HALF_TOPIC)
        op_from = self._progress(topics.TRANS_OP_HALF_TOPIC)
        ops = self._settled_offsets(op_from)
        settled = {half for _, half in ops}
        half_end = store.get_max_offset(topics.TRANS_HALF_TOPIC, HALF_QUEUE_ID)
        checked = discarded = 0
        offset = half_from
        while offset < half_end:
            if offset in settled:
                offset += 1
                continue
            result = store.get_messages(topics.TRANS_HALF_TOPIC, HALF_QUEUE_ID, offset, 1)
            if result.status is not GetMessageStatus.FOUND:
                if result.next_begin_offset > offset:
                    offset = result.next_begin_offset
                    continue
                break
            half, _ = decode_message(result.messages[0], 0, decompress_body=False)
            if half.store_timestamp >= round_start:
                break  # stored during this round (a copy made by it): next round's business
            properties = dict(half.properties)
            times_text = properties.get(const.TRANSACTION_CHECK_TIMES, "0")
            times = int(times_text) if times_text.isdigit() else 0
            if times >= self._config.transaction_check_max:
                log.warning(
                    "giving up transaction message %s after %d checks (group %s)",
                    half.unique_id,
                    times,
                    properties.get(const.PGROUP),
                )
                discarded += 1
                self.metrics.given_up(properties.get(const.REAL_TOPIC, ""))
                offset += 1
                continue
            immunity_text = properties.get(const.CHECK_IMMUNITY_TIME_IN_SECONDS, "")
            immunity = (
                int(immunity_text) * 1000 if immunity_text.isdigit() else self._config.transaction_time_out
            )
            if round_start - half.born_timestamp < immunity:
                break  # not due yet, and everything after it is younger
            properties[const.TRANSACTION_CHECK_TIMES] = str(times + 1)
            # The renewed copy is stored without waiting for a flush, and says so (WAIT=false), as Apache's
            # does; the producer's check listener sees that copy.
            properties[const.WAIT] = "false"
            await self._check_back(half, properties)
            checked += 1
            offset += 1
        self._commit_progress(offset, ops)
        return CheckRound(checked, discarded, offset)

    async def _check_back(self, half: MessageExt, properties: dict[str, str]) -> None:
        copy = dataclasses.replace(half, properties_string=stored_properties(properties))
        result = await self._messages.put(copy)
        if not result.status.stored:
            log.error("could not re-store half message %s for a check: %s", half.msg_id, result.status.name)
            return
        group = properties.get(const.PGROUP, "")
        stored_copy = dataclasses.replace(
            copy,
            topic=properties.get(const.REAL_TOPIC, copy.topic),
            queue_id=int(properties.get(const.REAL_QID, "0") or 0),
            queue_offset=result.queue_offset,
            commit_log_offset=result.wrote_offset,
            store_timestamp=result.store_timestamp,
            store_host=self._config.store_host,
        )
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=result.queue_offset,
            commit_log_offset=result.wrote_offset,
            msg_id=properties.get(const.UNIQ_KEY),
            transaction_id=properties.get(const.TRANSACTION_ID) or properties.get(const.UNIQ_KEY),
            offset_msg_id=encode_offset_msg_id(self._config.store_host, result.wrote_offset),
        )
        if not await self._send_check(group, header, encode_stored_message(stored_copy)):
            log.warning("no producer of group %s is connected to check transaction %s", group, half.unique_id)

    def _commit_progress(self, half_offset: int, ops: list[tuple[int, int]]) -> None:
        group = topics.TRANS_CHECK_GROUP
        self._offsets.commit_offset(group, topics.TRANS_HALF_TOPIC, HALF_QUEUE_ID, half_offset)
        op_offset = self._progress(topics.TRANS_OP_HALF_TOPIC)
        for queue_offset, half in ops:
            if half >= half_offset or queue_offset != op_offset:
                break
            op_offset = queue_offset + 1
        self._offsets.commit_offset(group, topics.TRANS_OP_HALF_TOPIC, HALF_QUEUE_ID, op_offset)
