"""LOCK_BATCH_MQ and UNLOCK_BATCH_MQ: orderly consumers taking and releasing their queues."""

from __future__ import annotations

from broker.locks import RebalanceLockManager
from broker.processors.common import BadRequest
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.bodies.lock import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from rocketmq_wire.errors import CodecError
from rocketmq_wire.transport import Connection


class LockBatchMqProcessor:
    def __init__(self, *, locks: RebalanceLockManager) -> None:
        self._locks = locks

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        try:
            body = LockBatchRequestBody.from_json(request.body)
        except CodecError as exc:
            raise BadRequest(f"the lock request body is malformed: {exc}") from None
        granted = self._locks.try_lock_batch(body.consumer_group or "", body.mq_set, body.client_id or "")
        answer = LockBatchResponseBody(lock_ok_mq_set=granted)
        return request.make_response(ResponseCode.SUCCESS, body=answer.to_json())


class UnlockBatchMqProcessor:
    def __init__(self, *, locks: RebalanceLockManager) -> None:
        self._locks = locks

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        try:
            body = UnlockBatchRequestBody.from_json(request.body)
        except CodecError as exc:
            raise BadRequest(f"the unlock request body is malformed: {exc}") from None
        self._locks.unlock_batch(body.consumer_group or "", body.mq_set, body.client_id or "")
        return request.make_response(ResponseCode.SUCCESS)
