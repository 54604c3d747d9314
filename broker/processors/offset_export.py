"""GET_ALL_CONSUMER_OFFSET and GET_ALL_DELAY_OFFSET: a broker's whole offset tables, as admin tools and
slaves fetch them (the JSON the broker keeps in ``config/consumerOffset.json`` and ``delayOffset.json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rocketmq_wire import RemotingCommand, ResponseCode, fastjson
from rocketmq_wire.bodies.consumer import ConsumerOffsetSerializeWrapper
from rocketmq_wire.transport import Connection

if TYPE_CHECKING:
    from broker.broker import Broker


class GetAllConsumerOffsetProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        table = {
            f"{topic}@{group}": dict(offsets)
            for (topic, group), offsets in self._broker.consumer_offsets.table().items()
        }
        body = ConsumerOffsetSerializeWrapper(offset_table=table).to_json()
        return request.make_response(ResponseCode.SUCCESS, body=body)


class GetAllDelayOffsetProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        offsets: dict[fastjson.JsonKey, fastjson.JsonValue] = dict(
            sorted(self._broker.schedule.offsets().items())
        )
        body = fastjson.dump_bytes(fastjson.Bean({"offsetTable": offsets}))
        return request.make_response(ResponseCode.SUCCESS, body=body)
