"""END_TRANSACTION: a producer's commit or rollback of a half message (Apache's ``EndTransactionProcessor``).

Usually oneway, so the answer is only for the rare caller that waits. A verdict of "unknown" (NOT_TYPE)
changes nothing and is not answered: the broker will ask again later. A slave takes no verdict
(SLAVE_NOT_AVAILABLE, as Apache's): its master stores the outcome.
"""

from __future__ import annotations

import logging

from broker.config import BrokerConfig
from broker.processors.common import read_header
from broker.timer import TimerMessageService, TimerRefusal
from broker.transaction import TransactionalMessageService, Verdict
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.headers.transaction import EndTransactionRequestHeader, TransactionType
from rocketmq_wire.message.stored import MessageExt
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.end_transaction")


class EndTransactionProcessor:
    def __init__(
        self, *, config: BrokerConfig, transactions: TransactionalMessageService, timer: TimerMessageService
    ) -> None:
        self._config = config
        self._transactions = transactions
        self._timer = timer

    def _place(self, message: MessageExt) -> MessageExt | Verdict:
        """A committed timer message waits for its time, as Apache's store hook makes it."""
        placed = self._timer.place(message)
        if isinstance(placed, TimerRefusal):
            return Verdict(placed.code, placed.remark)
        return placed

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, EndTransactionRequestHeader)
        if self._config.is_slave:
            log.warning("end of transaction %s refused: this broker is a slave", header.msg_id)
            return request.make_response(ResponseCode.SLAVE_NOT_AVAILABLE)
        verdict = int(header.commit_or_rollback or 0)
        group = str(header.producer_group)
        source = "check of" if header.from_transaction_check else "end of"
        if verdict == TransactionType.NOT_TYPE:
            log.warning(
                "producer %s of group %s reports transaction %s as still pending (%s)",
                conn.remote_address,
                group,
                header.msg_id,
                source,
            )
            return None
        log.debug(
            "%s transaction %s by %s: %s",
            source,
            header.msg_id,
            conn.remote_address,
            TransactionType(verdict).name,
        )
        outcome = await self._transactions.end(
            group,
            int(header.tran_state_table_offset or 0),
            int(header.commit_log_offset or 0),
            verdict,
            self._place,
        )
        if outcome.remark is not None:
            log.warning(
                "%s transaction %s from %s failed: %s",
                source,
                header.msg_id,
                conn.remote_address,
                outcome.remark,
            )
        return request.make_response(outcome.code, outcome.remark)
