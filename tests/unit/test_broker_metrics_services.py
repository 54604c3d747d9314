"""The broker's metric families that come from its services: request timings, creation times,
transactions, the timer wheel and POP, each driven through the broker's own request handling."""

from __future__ import annotations

import asyncio
from pathlib import Path

from broker import ManualClock
from broker.testing import BrokerClient, message_properties, running_broker
from consumer.pop_requests import (
    INIT_MODE_MIN,
    PopSpec,
    ack_request,
    parse_pop_response,
    pop_request,
    receipt_handle,
)
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.subscription_group import SubscriptionGroupConfig
from rocketmq_wire.headers.transaction import EndTransactionRequestHeader, TransactionType
from rocketmq_wire.message import const, sysflag
from rocketmq_wire.message.ids import decode_offset_msg_id
from tests.unit.test_broker_metrics import scrape, value

TOPIC = "ServiceMetricsTopic"
GROUP = "service-metrics-group"
TX_GROUP = "service-metrics-tx"


async def test_requests_and_creations_are_timed_with_apaches_labels(tmp_path: Path) -> None:
    async with running_broker(
        tmp_path / "store", metrics_exporter_type="PROM", metrics_prom_exporter_port=0
    ) as broker:
        async with BrokerClient(broker.address) as client:
            assert (await client.create_topic(TOPIC, queues=1)).code == ResponseCode.SUCCESS
            refused = await client.create_topic("bad topic name!", queues=1)
            assert refused.code != ResponseCode.SUCCESS
            refused_code = ResponseCode(refused.code).name.lower()
            group = SubscriptionGroupConfig(group_name=GROUP)
            made = await client.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=group.to_json())
            assert made.code == ResponseCode.SUCCESS
            for index in range(4):
                assert (await client.send(TOPIC, b"timed-%d" % index)).code == ResponseCode.SUCCESS
            assert (await client.request(RequestCode.GET_BROKER_RUNTIME_INFO)).code == ResponseCode.SUCCESS
            # A pull held by long polling, answered once a message arrives: timed as long polled.
            held_topic = TOPIC + "Held"
            await client.create_topic(held_topic, queues=1)
            async with BrokerClient(broker.address) as waiter:
                held = asyncio.create_task(waiter.pull(GROUP, held_topic, 0, 0, suspend_ms=30_000))
                while broker.parts.services.pull_holder.held_count == 0:
                    await asyncio.sleep(0.01)
                assert (await client.send(held_topic, b"wake")).code == ResponseCode.SUCCESS
                assert (await asyncio.wait_for(held, 10)).code == ResponseCode.SUCCESS
        _, families = await scrape(broker)
    sends = {"request_code": "send_message_v2", "response_code": "success", "result": "success"}
    # Four sends and the one that woke the held pull.
    assert value(families, "rocketmq_rpc_latency_milliseconds_count", **sends) == 5
    assert value(families, "rocketmq_rpc_latency_milliseconds_bucket", le="+Inf", **sends) == 5
    assert (
        value(families, "rocketmq_rpc_latency_milliseconds_count", request_code="get_broker_runtime_info")
        == 1
    )  # answered inline: timed all the same
    polled = {"request_code": "pull_message", "is_long_polling": "true", "response_code": "success"}
    assert value(families, "rocketmq_rpc_latency_milliseconds_count", **polled) == 1
    creations = [
        (labels["response_code"], v)
        for name, labels, v in families["rocketmq_rpc_latency_milliseconds"][1]
        if name.endswith("_count") and labels["request_code"] == "update_and_create_topic"
    ]
    assert sorted(creations) == sorted([("success", 2), (refused_code, 1)])
    buckets = [
        labels["le"]
        for name, labels, _ in families["rocketmq_rpc_latency_milliseconds"][1]
        if name.endswith("_bucket") and labels["request_code"] == "send_message_v2"
    ]
    assert buckets == ["1.0", "3.0", "5.0", "7.0", "10.0", "100.0", "1000.0", "2000.0", "3000.0", "+Inf"]
    created = "rocketmq_topic_create_execution_time_milliseconds_count"
    assert value(families, created, invocation_status="success", is_system="false") == 2
    assert value(families, created, invocation_status="failure") == 1
    assert value(families, "rocketmq_consumer_group_create_execution_time_milliseconds_count") == 1
    assert (
        value(families, "rocketmq_consumer_group_create_execution_time_milliseconds_bucket", le="10.0") == 1
    )


async def _half(client: BrokerClient, body: bytes, born: int) -> RemotingCommand:
    properties = message_properties(extra={const.TRAN_MSG: "true", const.PGROUP: TX_GROUP})
    sent = await client.send(
        TOPIC,
        body,
        properties=properties,
        sys_flag=sysflag.TRANSACTION_PREPARED_TYPE,
        group=TX_GROUP,
        born_timestamp=born,
    )
    assert sent.code == ResponseCode.SUCCESS
    return sent


async def _verdict(client: BrokerClient, sent: RemotingCommand, kind: TransactionType) -> None:
    fields = sent.fields()
    header = EndTransactionRequestHeader(
        producer_group=TX_GROUP,
        tran_state_table_offset=int(fields["queueOffset"]),
        commit_log_offset=decode_offset_msg_id(fields["msgId"]).offset,
        commit_or_rollback=kind,
        from_transaction_check=False,
        msg_id=fields["transactionId"],
    )
    answer = await client.request(RequestCode.END_TRANSACTION, header)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


async def test_transactions_count_halves_commits_rollbacks_and_the_finish_latency(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(
        tmp_path / "store", clock=clock, metrics_exporter_type="PROM", metrics_prom_exporter_port=0
    ) as broker:
        async with BrokerClient(broker.address) as client:
            await client.create_topic(TOPIC, queues=1)
            # Born 70 s ago: Apache records whole seconds, so 70 falls in its (60, 600] bucket.
            to_commit = await _half(client, b"commit", clock.now_ms() - 70_000)
            to_roll_back = await _half(client, b"rollback", clock.now_ms())
            await _half(client, b"pending", clock.now_ms())
            _, before = await scrape(broker)
            assert value(before, "rocketmq_half_messages", topic=TOPIC) == 3
            await _verdict(client, to_commit, TransactionType.COMMIT_TYPE)
            await _verdict(client, to_roll_back, TransactionType.ROLLBACK_TYPE)
        _, after = await scrape(broker)
    assert value(after, "rocketmq_half_messages", topic=TOPIC) == 1
    assert value(after, "rocketmq_commit_messages_total", topic=TOPIC) == 1
    assert value(after, "rocketmq_rollback_messages_total", topic=TOPIC) == 1
    latency = "rocketmq_finish_message_latency_milliseconds"
    assert value(after, f"{latency}_sum", topic=TOPIC) == 70
    assert value(after, f"{latency}_bucket", topic=TOPIC, le="60.0") == 0
    assert value(after, f"{latency}_bucket", topic=TOPIC, le="600.0") == 1


async def test_the_timer_wheel_reports_what_waits_and_what_is_late(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(
        tmp_path / "store", clock=clock, metrics_exporter_type="PROM", metrics_prom_exporter_port=0
    ) as broker:
        async with BrokerClient(broker.address) as client:
            await client.create_topic(TOPIC, queues=1)
            timed = message_properties(extra={const.TIMER_DELAY_SEC: "30"})
            born = clock.now_ms() - 90_000
            sent = await client.send(TOPIC, b"in 30 s", properties=timed, born_timestamp=born)
            assert sent.code == ResponseCode.SUCCESS
        timer = broker.parts.storage.timer
        _, stored = await scrape(broker)
        assert value(stored, "rocketmq_timer_enqueue_lag") in (0, 1)  # the chore may have read it already
        timer.index_new()
        _, waiting = await scrape(broker)
        assert value(waiting, "rocketmq_timer_enqueue_lag") == 0
        assert value(waiting, "rocketmq_timing_messages", topic=TOPIC) == 1
        assert value(waiting, "rocketmq_timer_enqueue_total", topic=TOPIC) == 1
        # Due in 30 s: counted in Apache's [5 s, 60 s) window.
        assert value(waiting, "rocketmq_timer_message_snapshot", timer_bound_s="60") == 1
        assert value(waiting, "rocketmq_timer_message_snapshot", timer_bound_s="5") == 0
        # Due 30 s from now, floored one precision step below (an exact multiple moves one step earlier, as
        # Apache's does), after a birth 90 s ago: 119 whole seconds, in the (60, 600] bucket.
        assert value(waiting, "rocketmq_delay_message_latency_seconds_sum", topic=TOPIC) == 119
        assert value(waiting, "rocketmq_delay_message_latency_seconds_bucket", topic=TOPIC, le="600.0") == 1
        assert value(waiting, "rocketmq_timer_dequeue_lag") == 0

        clock.advance(32_000)
        async with timer._lock:  # hold the delivery chore off while the late message is looked at
            _, late = await scrape(broker)
        assert value(late, "rocketmq_timer_dequeue_lag") == 1
        assert value(late, "rocketmq_timer_dequeue_latency_milliseconds") >= 2_000
        await timer.deliver_due()
        _, delivered = await scrape(broker)
    assert value(delivered, "rocketmq_timer_dequeue_total", topic=TOPIC) == 1
    assert value(delivered, "rocketmq_timing_messages", topic=TOPIC) == 0
    assert value(delivered, "rocketmq_timer_dequeue_lag") == 0


async def test_pop_reports_checkpoints_acks_revive_and_retries(tmp_path: Path) -> None:
    clock = ManualClock()
    async with running_broker(
        tmp_path / "store", clock=clock, metrics_exporter_type="PROM", metrics_prom_exporter_port=0
    ) as broker:
        name = broker.config.broker_name
        async with BrokerClient(broker.address) as client:
            await client.create_topic(TOPIC, queues=1)
            for index in range(3):
                assert (await client.send(TOPIC, b"pop-%d" % index)).code == ResponseCode.SUCCESS
            spec = PopSpec(
                group=GROUP,
                topic=TOPIC,
                broker_name=name,
                max_nums=32,
                invisible_time_ms=10_000,
                poll_time_ms=0,
                init_mode=INIT_MODE_MIN,
            )
            answer = await client.client.invoke(client.address, pop_request(spec, 0), 5000)
            popped = parse_pop_response(answer, broker_name=name, topic=TOPIC, order=False, addr="")
            assert len(popped.messages) == 3
            ack = ack_request(receipt_handle(popped.messages[0]), group=GROUP, topic=TOPIC)
            assert (await client.client.invoke(client.address, ack, 5000)).code == ResponseCode.SUCCESS
        _, acked = await scrape(broker)
        revive_qid = str(answer.fields()["reviveQid"])
        put = "rocketmq_pop_revive_in_message_total"
        assert value(acked, put, revive_message_type="CK", put_status="PUT_OK", topic=TOPIC) == 1
        assert value(acked, put, revive_message_type="ACK", consumer_group=GROUP) == 1
        assert value(acked, "rocketmq_messages_out_total", consumer_group=GROUP, is_retry="false") == 3
        assert value(acked, "rocketmq_pop_revive_lag_milliseconds", queue_id=revive_qid) == 0
        assert value(acked, "rocketmq_pop_checkpoint_buffer_size") == 0

        clock.advance(15_000)  # 5 s past the invisible time; the revive scan has not run yet
        pop = broker.parts.services.pop
        async with pop._revive_lock:
            _, due = await scrape(broker)
        assert value(due, "rocketmq_pop_revive_lag_milliseconds", queue_id=revive_qid) == 1
        assert value(due, "rocketmq_pop_revive_latency_milliseconds", queue_id=revive_qid) >= 5_000
        scan_family = due.get("rocketmq_pop_buffer_scan_time_consume_milliseconds", ("", []))[1]
        scans_before = sum(v for sample, _, v in scan_family if sample.endswith("_count"))
        # The revive chore wakes with the clock too; whichever scan revives them, they are revived once.
        await pop.revive_once()
        _, revived = await scrape(broker)
    out = "rocketmq_pop_revive_out_message_total"
    assert value(revived, out, queue_id=revive_qid, revive_message_type="CK", topic=TOPIC) == 1
    retried = "rocketmq_pop_revive_retry_messages_total"
    assert value(revived, retried, consumer_group=GROUP, put_status="PUT_OK", topic=TOPIC) == 2
    assert value(revived, "rocketmq_pop_revive_lag_milliseconds", queue_id=revive_qid) == 0
    assert value(revived, "rocketmq_pop_buffer_scan_time_consume_milliseconds_count") >= scans_before + 1
