"""Blocking producers for code that is not async: the asyncio producer on its own loop in a thread.

Each blocking producer owns one background thread running one event loop, so it works the same whether the
caller has a loop of its own or not, and two blocking producers never share a loop. Calls are thread-safe:
several threads may send through one producer at once, and their sends are pipelined on the connection.
The local-transaction callback runs in the calling thread, as Java runs it.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import logging
from collections.abc import Callable, Coroutine, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from producer.errors import ProducerError, ProducerStateError
from producer.producer import DEFAULT_REQUEST_TIMEOUT_MS, Producer
from producer.result import (
    LocalTransactionState,
    MessageQueue,
    SendResult,
    SendStatus,
    TransactionSendResult,
)
from producer.selectors import QueueSelector
from producer.transaction import LocalTransactionExecutor, TransactionProducer, as_state, transaction_result
from rocketmq_wire.message import Message, MessageExt
from rocketmq_wire.transport.loop_thread import BlockingRunner

logger = logging.getLogger("producer.blocking")

T = TypeVar("T")


class BlockingProducer:
    """:class:`~producer.Producer` with blocking methods; takes exactly the same arguments."""

    _producer: Producer

    def __init__(self, group: str, namesrv: str | Sequence[str], **kwargs: Any) -> None:
        self._producer = self._create(group, namesrv, kwargs)
        self._runner = BlockingRunner(
            f"rocketmq-producer-{group}", lambda why: ProducerStateError(f"the producer: {why}")
        )

    def _create(self, group: str, namesrv: str | Sequence[str], kwargs: dict[str, Any]) -> Producer:
        return Producer(group, namesrv, **kwargs)

    @property
    def producer(self) -> Producer:
        """The asyncio producer underneath (use it only from its own loop)."""
        return self._producer

    @property
    def client_id(self) -> str:
        return self._producer.client_id

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    def start(self) -> None:
        self._runner.start(self._producer.start)

    def shutdown(self) -> None:
        """Shut the producer down and stop its thread; idempotent."""
        self._runner.stop(self._producer.shutdown)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._runner.run(coro)

    def send(
        self,
        message: Message,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        sharding_key: str | None = None,
        timeout_ms: float | None = None,
    ) -> SendResult:
        return self._run(
            self._producer.send(
                message,
                queue=queue,
                selector=selector,
                arg=arg,
                sharding_key=sharding_key,
                timeout_ms=timeout_ms,
            )
        )

    def send_oneway(
        self,
        message: Message,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        sharding_key: str | None = None,
    ) -> None:
        self._run(
            self._producer.send_oneway(
                message, queue=queue, selector=selector, arg=arg, sharding_key=sharding_key
            )
        )

    def send_batch(
        self,
        messages: Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        timeout_ms: float | None = None,
    ) -> SendResult:
        return self._run(self._producer.send_batch(messages, queue=queue, timeout_ms=timeout_ms))

    def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        return self._run(self._producer.fetch_publish_queues(topic))

    def request(
        self, message: Message, timeout_ms: float = DEFAULT_REQUEST_TIMEOUT_MS, **kwargs: Any
    ) -> MessageExt:
        """See :meth:`producer.Producer.request`; blocks until the reply (or the timeout)."""
        return self._run(self._producer.request(message, timeout_ms, **kwargs))

    def request_with_callback(
        self,
        message: Message,
        on_reply: Callable[[MessageExt], None],
        on_error: Callable[[BaseException], None],
        timeout_ms: float = DEFAULT_REQUEST_TIMEOUT_MS,
    ) -> concurrent.futures.Future[MessageExt]:
        """Java's ``request(msg, RequestCallback, timeout)``: returns at once; ``on_reply`` or ``on_error``
        runs on the producer's event-loop thread when the reply (or the failure) comes."""
        future = self._runner.submit(self._producer.request(message, timeout_ms))

        def done(finished: concurrent.futures.Future[MessageExt]) -> None:
            error = finished.exception()
            if error is not None:
                on_error(error)
            else:
                on_reply(finished.result())

        future.add_done_callback(done)
        return future

    def reply(self, request: MessageExt, body: bytes, *, timeout_ms: float | None = None) -> SendResult:
        """See :meth:`producer.Producer.reply`."""
        return self._run(self._producer.reply(request, body, timeout_ms=timeout_ms))

    def recall(self, topic: str, handle: str, *, timeout_ms: float | None = None) -> str:
        """See :meth:`producer.Producer.recall`."""
        return self._run(self._producer.recall(topic, handle, timeout_ms=timeout_ms))


class BlockingTransactionProducer(BlockingProducer):
    """:class:`~producer.TransactionProducer` with blocking methods; same arguments (``checker`` ...)."""

    _producer: TransactionProducer

    def _create(self, group: str, namesrv: str | Sequence[str], kwargs: dict[str, Any]) -> Producer:
        self._executor: LocalTransactionExecutor | None = kwargs.pop("executor", None)
        return TransactionProducer(group, namesrv, **kwargs)

    def send_in_transaction(
        self, message: Message, arg: Any = None, *, executor: LocalTransactionExecutor | None = None
    ) -> TransactionSendResult:
        """As the async one, but ``executor`` (a plain function) runs here, in the calling thread."""
        run = executor or self._executor
        if run is None:
            raise ProducerError("no local transaction executor: pass one here or to the constructor")
        result = self._run(self._producer.send_half(message))
        state = LocalTransactionState.ROLLBACK_MESSAGE
        error: BaseException | None = None
        if result.status is SendStatus.SEND_OK:
            try:
                outcome = run(message, result.msg_id, arg)
                if inspect.isawaitable(outcome):
                    if inspect.iscoroutine(outcome):
                        outcome.close()
                    raise ProducerError("a blocking producer needs a plain function as transaction executor")
                state = as_state(outcome)
            except Exception as exc:
                logger.exception(
                    "local transaction of message %s failed; its state stays unknown", result.msg_id
                )
                state, error = LocalTransactionState.UNKNOWN, exc
        try:
            self._run(self._producer.end_transaction(result, state, error))
        except Exception as exc:
            logger.warning(
                "could not send the verdict on message %s (%s); the broker will ask", result.msg_id, exc
            )
        return transaction_result(result, state)
