"""Headers of transactional messages: the producer's verdict and the broker's state check."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import ClassVar, Self

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.base import jbool, jint, jlong, jstr
from rocketmq_wire.headers.rpc import RpcRequestHeader


class TransactionType(enum.IntEnum):
    """``commitOrRollback`` values: the transaction bits of ``MessageSysFlag``."""

    NOT_TYPE = 0
    PREPARED_TYPE = 0x4
    COMMIT_TYPE = 0x8
    ROLLBACK_TYPE = 0xC


#: What END_TRANSACTION accepts; a prepared marker is not a verdict.
_VERDICTS = frozenset({TransactionType.NOT_TYPE, TransactionType.COMMIT_TYPE, TransactionType.ROLLBACK_TYPE})


@dataclasses.dataclass(slots=True, kw_only=True)
class EndTransactionRequestHeader(RpcRequestHeader):
    """END_TRANSACTION (oneway): commit, roll back or leave unknown a half message.

    ``fromTransactionCheck`` tells whether this answers a CHECK_TRANSACTION_STATE; ``topic`` is 5.x.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.END_TRANSACTION,)

    topic: str | None = jstr("topic")
    producer_group: str | None = jstr("producerGroup", required=True)
    tran_state_table_offset: int | None = jlong("tranStateTableOffset", required=True)
    commit_log_offset: int | None = jlong("commitLogOffset", required=True)
    commit_or_rollback: int | None = jint("commitOrRollback", required=True)
    from_transaction_check: bool | None = jbool("fromTransactionCheck")
    msg_id: str | None = jstr("msgId", required=True)
    transaction_id: str | None = jstr("transactionId")

    @classmethod
    def from_ext(cls, ext: Mapping[str, str]) -> Self:
        """As the base, then Java's own check: the verdict must be not-type, commit or rollback."""
        header = super(EndTransactionRequestHeader, cls).from_ext(ext)
        if header.commit_or_rollback not in _VERDICTS:
            raise CodecError(
                f"{cls.__name__}: commitOrRollback {header.commit_or_rollback} is not 0, 8 or 12"
            )
        return header


@dataclasses.dataclass(slots=True, kw_only=True)
class CheckTransactionStateRequestHeader(RpcRequestHeader):
    """CHECK_TRANSACTION_STATE, broker to producer; the half message itself is the body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.CHECK_TRANSACTION_STATE,)

    topic: str | None = jstr("topic")
    tran_state_table_offset: int | None = jlong("tranStateTableOffset", required=True)
    commit_log_offset: int | None = jlong("commitLogOffset", required=True)
    msg_id: str | None = jstr("msgId")
    transaction_id: str | None = jstr("transactionId")
    offset_msg_id: str | None = jstr("offsetMsgId")
