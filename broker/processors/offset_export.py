"""GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET, GET_ALL_SUBSCRIPTIONGROUP_CONFIG (and 5.x's
GET_ALL_MESSAGE_REQUEST_MODE): a broker's whole offset and group tables, as admin tools and slaves fetch
them (the JSON Apache keeps in ``config/consumerOffset.json``, ``delayOffset.json`` and
``subscriptionGroup.json``)."""

from __future__ import annotations

from broker.schedule import ScheduleMessageService
from broker.store import ConsumerOffsetStore
from broker.subscription_groups import SubscriptionGroupManager
from rocketmq_wire import RemotingCommand, ResponseCode, fastjson
from rocketmq_wire.bodies.consumer import ConsumerOffsetSerializeWrapper
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.transport import Connection


class GetAllConsumerOffsetProcessor:
    def __init__(self, *, offsets: ConsumerOffsetStore) -> None:
        self._offsets = offsets

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        table = {
            f"{topic}@{group}": dict(offsets) for (topic, group), offsets in self._offsets.table().items()
        }
        # The data version is what a 5.x slave stamps its copy with (it fails on a body without one).
        version = self._offsets.data_version
        body = ConsumerOffsetSerializeWrapper(
            offset_table=table,
            data_version=DataVersion(
                timestamp=version.timestamp, counter=version.counter, state_version=version.state_version
            ),
        ).to_json()
        return request.make_response(ResponseCode.SUCCESS, body=body)


class GetAllDelayOffsetProcessor:
    def __init__(self, *, schedule: ScheduleMessageService) -> None:
        self._schedule = schedule

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        offsets: dict[fastjson.JsonKey, fastjson.JsonValue] = dict(sorted(self._schedule.offsets().items()))
        body = fastjson.dump_bytes(fastjson.Bean({"offsetTable": offsets}))
        return request.make_response(ResponseCode.SUCCESS, body=body)


class GetAllSubscriptionGroupProcessor:
    def __init__(self, *, groups: SubscriptionGroupManager) -> None:
        self._groups = groups

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        body = self._groups.to_json()
        return request.make_response(ResponseCode.SUCCESS, body=body)
