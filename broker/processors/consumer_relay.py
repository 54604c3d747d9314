"""GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY: admin requests the broker passes on to a consumer.

Tools cannot reach a consumer directly; they ask a broker the consumer's group is on, and the broker forwards
the request over that consumer's own connection and returns its answer (``mqadmin consumerStatus``,
``consumeMessage``). As Apache's broker does: an unknown client is SYSTEM_ERROR "not online", a client older
than 3.1.8 cannot answer, a client that does not answer in time is CONSUME_MSG_TIMEOUT; for a direct consume
the broker fills in its name and the stored message named by the offset message id.
"""

from __future__ import annotations

import logging

from broker.clients import ClientChannel, ConsumerManager
from broker.config import BrokerConfig
from broker.processors.common import read_header
from broker.store import MessageStore
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
)
from rocketmq_wire.message.ids import decode_offset_msg_id
from rocketmq_wire.transport import Connection, RemotingError, RemotingTimeoutError

log = logging.getLogger("broker.processors.consumer_relay")

#: How long the broker waits for the consumer's answer (Apache's ``callClient``).
CALL_CLIENT_TIMEOUT_MS = 10_000
#: The oldest client version that answers these requests.
_V3_1_8_SNAPSHOT = MQVersion.value_of("V3_1_8_SNAPSHOT")


class ConsumerRelayProcessor:
    """Forwards one of the two codes to the consumer named by group and client id."""

    def __init__(
        self, *, config: BrokerConfig, consumers: ConsumerManager, store: MessageStore, channel: ClientChannel
    ) -> None:
        self._config = config
        self._consumers = consumers
        self._store = store
        self._channel = channel

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            header = read_header(request, GetConsumerRunningInfoRequestHeader)
            return await self._call(request, str(header.consumer_group), str(header.client_id))
        direct = read_header(request, ConsumeMessageDirectlyResultRequestHeader)
        body = request.body
        try:
            offset = decode_offset_msg_id(str(direct.msg_id)).offset
        except (CodecError, ValueError):
            pass  # Apache forwards the request without a message as well
        else:
            body = self._store.lookup_message_by_physical_offset(offset) or body
        fields = dict(request.fields())
        fields["brokerName"] = self._config.broker_name
        return await self._call(
            request, str(direct.consumer_group), str(direct.client_id), body=body, fields=fields
        )

    async def _call(
        self,
        request: RemotingCommand,
        group: str,
        client_id: str,
        *,
        body: bytes | None = None,
        fields: dict[str, str] | None = None,
    ) -> RemotingCommand:
        info = self._consumers.group(group)
        member = None
        if info is not None:
            member = next((c for c in info.channels.values() if c.client_id == client_id), None)
        if member is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online"
            )
        if member.version < _V3_1_8_SNAPSHOT:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{client_id}> Version <{MQVersion.name_of(member.version)}> too low to "
                "finish, please upgrade it to V3_1_8_SNAPSHOT",
            )
        code = request.code
        forwarded = RemotingCommand.request(
            code,
            body=request.body if body is None else body,
            ext_fields=dict(request.fields()) if fields is None else fields,
        )
        try:
            return await self._channel.invoke(member.conn, forwarded, CALL_CLIENT_TIMEOUT_MS)
        except RemotingTimeoutError as exc:
            return request.make_response(
                ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {exc}"
            )
        except RemotingError as exc:
            log.warning("relaying request %d to consumer %s failed: %s", code, client_id, exc)
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"invoke consumer <{group}> <{client_id}> Exception: {exc}"
            )
