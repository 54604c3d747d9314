"""GET_TIMER_CHECK_POINT and GET_TIMER_METRICS: what an admin tool asks about the broker's timer.

Apache answers with its wheel's checkpoint and per-topic counts. This broker's timer has no wheel file and
no timer log (:mod:`broker.timer`), so the checkpoint's fields carry their nearest meaning here: the read
time is the time through which everything due has been delivered, the timer log's flush position is the
size of the durable progress log, and both queue offsets are the timer-queue offset read into the index
(this broker being the master). Its data version moves with each durable checkpoint.
"""

from __future__ import annotations

from broker.timer import TimerMessageService
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.bodies.timer import TimerCheckpointBody, TimerMetric, TimerMetricsBody
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.transport import Connection


class GetTimerCheckPointProcessor:
    def __init__(self, *, timer: TimerMessageService) -> None:
        self._timer = timer

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        timer = self._timer
        progress = timer.progress
        body = TimerCheckpointBody(
            last_read_time_ms=timer.read_through_ms,
            last_timer_log_flush_pos=progress.size_bytes(),
            last_timer_queue_offset=timer.indexed_offset,
            master_timer_queue_offset=timer.indexed_offset,
            state_version=0,
            timestamp=progress.version_timestamp,
            counter=progress.version_counter,
        )
        return request.make_response(ResponseCode.SUCCESS, None, body=body.encode())


class GetTimerMetricsProcessor:
    def __init__(self, *, timer: TimerMessageService) -> None:
        self._timer = timer

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        timer = self._timer
        progress = timer.progress
        body = TimerMetricsBody(
            timing_count={
                topic: TimerMetric(count, stamp) for topic, (count, stamp) in timer.timing_count.items()
            },
            data_version=DataVersion(
                timestamp=progress.version_timestamp, counter=progress.version_counter, state_version=0
            ),
        )
        return request.make_response(ResponseCode.SUCCESS, None, body=body.to_json())
