"""Transactional messages: a half message, the local transaction, then commit or rollback.

The broker keeps a half message invisible until the producer says what became of the local transaction
(END_TRANSACTION, oneway). If that verdict never arrives, or was "unknown", the broker asks again later with
CHECK_TRANSACTION_STATE over the producer's own connection; the checker callback answers, and the verdict goes
back with ``fromTransactionCheck=true``. This follows Java's ``TransactionMQProducer`` step for step.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from client.trace import now_ms
from producer.errors import ProducerError
from producer.producer import Producer, ServerRequestHandler
from producer.result import LocalTransactionState, SendResult, SendStatus, TransactionSendResult
from rocketmq_wire.codes import MQVersion, RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.transaction import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
    TransactionType,
)
from rocketmq_wire.message import Message, MessageExt, decode_message, decode_offset_msg_id
from rocketmq_wire.message import const as props
from rocketmq_wire.topics import without_namespace
from rocketmq_wire.trace import JAVA_NULL, TraceBean, TraceContext, TraceMessageType, TraceType
from rocketmq_wire.transport import Connection

logger = logging.getLogger("producer.transaction")

_V5_0_0 = MQVersion.NAMES.index("V5_0_0")

#: ``executor(message, transaction_id, arg)``: runs the local transaction; may be a coroutine function.
LocalTransactionExecutor = Callable[
    [Message, str, Any], LocalTransactionState | Awaitable[LocalTransactionState] | None
]
#: ``checker(message)``: the fate of a half message the broker asks about (``message.unique_id`` is the
#: transaction id); may be a coroutine function. Plain functions run in a worker thread, as Java's do.
TransactionChecker = Callable[[MessageExt], LocalTransactionState | Awaitable[LocalTransactionState] | None]

_VERDICT = {
    LocalTransactionState.COMMIT_MESSAGE: TransactionType.COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: TransactionType.ROLLBACK_TYPE,
    LocalTransactionState.UNKNOWN: TransactionType.NOT_TYPE,
}


def as_state(value: object) -> LocalTransactionState:
    if value is None:
        return LocalTransactionState.UNKNOWN
    if isinstance(value, LocalTransactionState):
        return value
    raise ProducerError(f"a transaction callback returned {value!r}, not a LocalTransactionState")


def transaction_result(result: SendResult, state: LocalTransactionState) -> TransactionSendResult:
    return TransactionSendResult(
        status=result.status,
        msg_id=result.msg_id,
        message_queue=result.message_queue,
        queue_offset=result.queue_offset,
        transaction_id=result.msg_id,
        local_state=state,
    )


def end_transaction_request(
    result: SendResult,
    state: LocalTransactionState,
    *,
    group: str,
    wire_topic: str,
    version: int,
    error: BaseException | None = None,
) -> RemotingCommand:
    """END_TRANSACTION for a half message's send result, as Java's ``endTransaction`` builds it.

    The commit-log offset comes from the broker's offset id (the producer's own id when the broker sent
    none); 5.x clients also name the topic. A failed local transaction is described in the remark.
    """
    stored_at = decode_offset_msg_id(result.offset_msg_id or result.msg_id)
    header = EndTransactionRequestHeader(
        topic=wire_topic if version >= _V5_0_0 else None,
        producer_group=group,
        tran_state_table_offset=result.queue_offset,
        commit_log_offset=stored_at.offset,
        commit_or_rollback=int(_VERDICT[state]),
        from_transaction_check=False,
        msg_id=result.msg_id,
        transaction_id=result.transaction_id,
        bname=result.message_queue.broker_name,
    )
    remark = f"executeLocalTransactionBranch exception: {error!r}" if error is not None else None
    return RemotingCommand.request(RequestCode.END_TRANSACTION, header, remark=remark)


class TransactionProducer(Producer):
    """A producer of transactional messages; ``checker`` answers the broker's state checks.

    ``executor`` is the default local-transaction callback of :meth:`send_in_transaction`.
    """

    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str],
        *,
        checker: TransactionChecker,
        executor: LocalTransactionExecutor | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(group, namesrv, **kwargs)
        self._checker = checker
        self._executor = executor

    # -- public API -------------------------------------------------------------------------------------

    async def send_in_transaction(
        self, message: Message, arg: Any = None, *, executor: LocalTransactionExecutor | None = None
    ) -> TransactionSendResult:
        """Send ``message`` as a half message, run the local transaction, and tell the broker the verdict.

        A failing executor leaves the verdict unknown (the broker will check back); a half message stored
        without ``SEND_OK`` is rolled back without running the executor, as in Java.
        """
        run = executor or self._executor
        if run is None:
            raise ProducerError("no local transaction executor: pass one here or to the constructor")
        result = await self.send_half(message)
        state = LocalTransactionState.ROLLBACK_MESSAGE
        error: BaseException | None = None
        if result.status is SendStatus.SEND_OK:
            try:
                outcome = run(message, result.msg_id, arg)
                state = as_state(await outcome if inspect.isawaitable(outcome) else outcome)
            except Exception as exc:
                logger.exception(
                    "local transaction of message %s failed; its state stays unknown", result.msg_id
                )
                state, error = LocalTransactionState.UNKNOWN, exc
        if state is not LocalTransactionState.COMMIT_MESSAGE:
            logger.info("local transaction of message %s: %s", result.msg_id, state.name)
        try:
            await self.end_transaction(result, state, error, message=message)
        except Exception as exc:  # the broker will check back; the send itself succeeded
            logger.warning(
                "could not send the verdict on message %s (%s); the broker will ask", result.msg_id, exc
            )
        return transaction_result(result, state)

    async def send_half(self, message: Message) -> SendResult:
        """Step one on its own: the half message, marked prepared (TRAN_MSG, PGROUP); any delay is dropped."""
        if message.delay_level:
            message = dataclasses.replace(message, delay_level=0)
        prepared = self._prepare(message, {props.TRAN_MSG: "true", props.PGROUP: self.wire_group})
        begin = now_ms()
        result = await self._dispatch(prepared, message, None, None, None, None, None, False)
        assert result is not None
        if self._tracer is not None:
            self._trace_pub(
                [message], result, [result.msg_id], begin, prepared.topic, TraceMessageType.TRANS_HALF
            )
        return result

    async def end_transaction(
        self,
        result: SendResult,
        state: LocalTransactionState,
        error: BaseException | None = None,
        *,
        message: Message | None = None,
    ) -> None:
        """Step three on its own: END_TRANSACTION (oneway) to the broker holding the half message.

        With message trace on, an ``EndTransaction`` record is written (tags and keys from ``message``)."""
        self._check_running()
        broker_name = result.message_queue.broker_name
        addr = self._route_table().master_address(broker_name)
        if addr is None:
            raise ProducerError(f"the broker {broker_name!r} of the half message is not in any route")
        cmd = end_transaction_request(
            result,
            state,
            group=self.wire_group,
            wire_topic=self._wire_queue(result.message_queue).topic,
            version=self.config.version,
            error=error,
        )
        await self._rpc_client().invoke_oneway(addr, cmd, self.config.send_timeout_ms)
        self._trace_end(
            result.message_queue.topic,
            result.msg_id,
            message.tags if message is not None else None,
            message.keys if message is not None else [],
            addr,
            result.transaction_id,
            state,
            from_check=False,
        )

    def _trace_end(
        self,
        topic: str,
        msg_id: str,
        tags: str | None,
        keys: Sequence[str],
        store_host: str,
        transaction_id: str | None,
        state: LocalTransactionState,
        *,
        from_check: bool,
    ) -> None:
        """Queue an ``EndTransaction`` record (Java's ``EndTransactionTraceHookImpl``); never raises."""
        tracer = self._tracer
        if tracer is None:
            return
        bean = TraceBean(
            topic=topic,
            msg_id=msg_id,
            tags=tags if tags is not None else JAVA_NULL,
            keys=" ".join(keys) if keys else JAVA_NULL,
            store_host=store_host,
            msg_type=TraceMessageType.TRANS_COMMIT,
            transaction_id=transaction_id if transaction_id is not None else JAVA_NULL,
            transaction_state=state.value,
            from_transaction_check=from_check,
        )
        tracer.append(
            TraceContext(TraceType.END_TRANSACTION, timestamp=now_ms(), group_name=self.group, beans=[bean])
        )

    # -- the broker's check -------------------------------------------------------------------------------

    def _server_request_handlers(self) -> Mapping[int, ServerRequestHandler]:
        return {RequestCode.CHECK_TRANSACTION_STATE: self._on_check}

    async def _on_check(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        try:
            header = request.read_header(CheckTransactionStateRequestHeader)
            message, _ = decode_message(request.body)
        except CodecError as exc:
            logger.warning("unreadable transaction check from %s: %s", conn.remote_address, exc)
            return None
        group = message.get_property(props.PGROUP)
        if group is not None and group != self.wire_group:
            logger.warning(
                "transaction check for group %s reached producer %s; ignored", group, self.wire_group
            )
            return None
        message = dataclasses.replace(message, topic=without_namespace(message.topic, self.config.namespace))
        state = LocalTransactionState.UNKNOWN
        error: BaseException | None = None
        try:
            state = as_state(await run_checker(self._checker, message))
        except Exception as exc:
            logger.exception("transaction checker failed for message %s", message.unique_id)
            error = exc
        await self._answer_check(conn, header, message, state, error)
        return None

    async def _answer_check(
        self,
        conn: Connection,
        check: CheckTransactionStateRequestHeader,
        message: MessageExt,
        state: LocalTransactionState,
        error: BaseException | None,
    ) -> None:
        header = EndTransactionRequestHeader(
            topic=check.topic if self.config.version >= _V5_0_0 else None,
            producer_group=self.wire_group,
            tran_state_table_offset=check.tran_state_table_offset,
            commit_log_offset=check.commit_log_offset,
            commit_or_rollback=int(_VERDICT[state]),
            from_transaction_check=True,
            msg_id=message.unique_id or message.msg_id,
            transaction_id=check.transaction_id,
            bname=check.bname,
        )
        remark = f"checkLocalTransactionState Exception: {error!r}" if error is not None else None
        cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, header, remark=remark)
        try:
            await self._rpc_client().oneway_on(conn, cmd)
        except Exception as exc:
            logger.warning("could not answer the transaction check of %s: %s", message.unique_id, exc)
            return
        self._trace_end(
            message.topic,
            message.unique_id or message.msg_id,
            message.tags,
            message.keys,
            conn.remote_address,
            check.transaction_id,
            state,
            from_check=True,
        )


async def run_checker(checker: TransactionChecker, message: MessageExt) -> object:
    """Await an async checker; run a plain one in a worker thread so a slow check does not stall the loop."""
    if inspect.iscoroutinefunction(checker):
        return await checker(message)
    outcome = await asyncio.to_thread(checker, message)
    if inspect.isawaitable(outcome):
        return await outcome
    return outcome
