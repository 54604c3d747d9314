"""The project's broker relays GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY to the consumer named
by group and client id, as Apache's does: what ``mqadmin consumerStatus`` and ``consumeMessage`` rely on."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from admin import Admin, ConsumerNotOnlineError
from broker.testing import running_broker
from consumer import ConsumeStatus, PushConsumer
from nameserver import NameServer
from producer import Message, Producer
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies import CMResult, ConsumeMessageDirectlyResult
from rocketmq_wire.headers.consumer import ConsumeMessageDirectlyResultRequestHeader
from rocketmq_wire.message import MessageExt
from rocketmq_wire.transport import RemotingClient

TOPIC = "RelayTopic"
#: What the consumer subscribes to: the message consumed directly is on another topic, so only the relay
#: can bring it to the listener.
SUBSCRIBED = "RelaySubscribed"
GROUP = "RelayGroup"


async def wait_until(predicate: Any, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


async def test_running_info_and_direct_consume_go_through_the_broker(tmp_path: Path) -> None:
    seen: list[bytes] = []

    async def listener(messages: list[MessageExt], context: Any) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    async with NameServer("127.0.0.1", 0) as namesrv:
        async with running_broker(tmp_path / "store", namesrv_addr=namesrv.address) as broker:
            async with Producer("RelayPg", namesrv.address) as producer:
                sent = await producer.send(Message(TOPIC, b"first"))
                await producer.send(Message(SUBSCRIBED, b"routed"))
            consumer = PushConsumer(GROUP, namesrv.address)
            consumer.subscribe(SUBSCRIBED)
            consumer.register_listener(listener)
            await consumer.start()
            try:
                await wait_until(lambda: broker.consumer_manager.group(GROUP) is not None)
                async with Admin(namesrv.address) as admin:
                    info = await admin.consumer_running_info(GROUP, consumer.client_id)
                    assert SUBSCRIBED in {s.topic for s in info.subscription_set}
                    assert info.properties.get("PROP_CONSUME_TYPE") == "CONSUME_PASSIVELY"
                    try:
                        await admin.consumer_running_info(GROUP, "127.0.0.1@nobody")
                    except ConsumerNotOnlineError as exc:
                        assert "nobody" in str(exc)
                    else:
                        raise AssertionError("an unknown client must not be online")

                header = ConsumeMessageDirectlyResultRequestHeader(
                    consumer_group=GROUP, client_id=consumer.client_id, msg_id=sent.offset_msg_id
                )
                async with RemotingClient() as client:
                    request = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, header)
                    answer = await client.invoke(broker.server.address, request, 15_000)
                    unknown = ConsumeMessageDirectlyResultRequestHeader(
                        consumer_group=GROUP, client_id="127.0.0.1@ghost", msg_id=sent.offset_msg_id
                    )
                    refused = await client.invoke(
                        broker.server.address,
                        RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, unknown),
                        5000,
                    )
            finally:
                await consumer.shutdown()
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    result = ConsumeMessageDirectlyResult.from_json(answer.body)
    assert result.consume_result is CMResult.CR_SUCCESS
    assert b"first" in seen, "the broker handed the stored message to the listener"
    assert refused.code == ResponseCode.SYSTEM_ERROR
    assert refused.remark == f"The Consumer <{GROUP}> <127.0.0.1@ghost> not online"
