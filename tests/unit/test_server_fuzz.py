"""A short fuzz pass against the project's NameServer and Broker, in process on loopback, fixed seeds.

Mutated frames of the common requests (``tests/server_fuzz.py``: bit flips, cut frames, lone surrogates,
numbers outside their Java type, huge lengths, wrong serialize types, spliced bytes) are sent over several
connections to both servers at once. Every frame that owes an answer must get one or have its connection
closed within the timeout; afterwards both servers answer clean requests on new connections, the messages
sent and acknowledged before the pass read back exactly, and consumer offsets are still saved.

``benchmarks/fuzz_servers.py`` runs the same engine for longer, with any seed.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from broker.testing import BrokerClient, running_broker
from nameserver import NameServer, NamesrvConfig
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode, fastjson
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader, PutKVConfigRequestHeader
from rocketmq_wire.headers.offset import QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader
from rocketmq_wire.message import decode_messages
from rocketmq_wire.transport import RemotingClient
from tests import server_fuzz

#: Frames per server, the seeds, how long a frame may wait for its answer or close, and the whole budget.
FRAMES = 2000
NAMESRV_SEED = 20240601
BROKER_SEED = 20240602
FRAME_TIMEOUT_S = 5.0
PASS_LIMIT_S = 60.0

KEEP_TOPIC = "KeepTopic"
KEEP_GROUP = "KeepGroup"
QUEUES = 4


async def _store_messages(client: BrokerClient) -> dict[int, list[bytes]]:
    """Acknowledged messages of the run's own topic, by queue, in offset order."""
    created = await client.create_topic(KEEP_TOPIC, queues=QUEUES)
    assert created.code == ResponseCode.SUCCESS, created.remark
    stored: dict[int, list[bytes]] = {queue: [] for queue in range(QUEUES)}
    for n in range(24):
        queue = n % QUEUES
        body = f"kept message {n} \u00e9\u4f60 {'x' * n}".encode()
        answer = await client.send(KEEP_TOPIC, body, queue_id=queue, tags="keep")
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        assert int(answer.fields()["queueOffset"]) == len(stored[queue])
        stored[queue].append(body)
    return stored


async def _read_back(client: BrokerClient) -> dict[int, list[bytes]]:
    found: dict[int, list[bytes]] = {}
    for queue in range(QUEUES):
        pulled = await client.pull("ReadBackGroup", KEEP_TOPIC, queue, 0, max_nums=64)
        assert pulled.code == ResponseCode.SUCCESS, pulled.remark
        found[queue] = [message.body for message in decode_messages(pulled.body)]
        after = await client.pull("ReadBackGroup", KEEP_TOPIC, queue, len(found[queue]))
        assert after.code == ResponseCode.PULL_NOT_FOUND, "nothing may have been added to the topic"
    return found


async def _offset(client: BrokerClient, queue: int) -> str:
    header = QueryConsumerOffsetRequestHeader(consumer_group=KEEP_GROUP, topic=KEEP_TOPIC, queue_id=queue)
    answer = await client.request(RequestCode.QUERY_CONSUMER_OFFSET, header)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    return answer.fields()["offset"]


async def _commit(client: BrokerClient, queue: int, offset: int) -> None:
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=KEEP_GROUP, topic=KEEP_TOPIC, queue_id=queue, commit_offset=offset
    )
    answer = await client.request(RequestCode.UPDATE_CONSUMER_OFFSET, header)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


async def test_hostile_frames_are_answered_or_closed_and_stored_data_survives(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL)  # thousands of refusals are logged; the figures tell the story
    kv_path = tmp_path / "kvConfig.json"
    async with NameServer("127.0.0.1", 0, config=NamesrvConfig(kv_config_path=str(kv_path))) as namesrv:
        namesrv_address = f"127.0.0.1:{namesrv.remoting.port}"
        async with running_broker(
            tmp_path / "store",
            namesrv_addr=namesrv_address,
            # a held pull is answered after short_polling_time_mills, not the suspend time a frame names
            long_polling_enable=False,
            short_polling_time_mills=100,
        ) as broker:
            async with BrokerClient(broker.address) as client:
                stored = await _store_messages(client)
                await _commit(client, 1, 3)

            started = asyncio.get_running_loop().time()
            async with asyncio.timeout(PASS_LIMIT_S):
                at_namesrv, at_broker = await asyncio.gather(
                    server_fuzz.fuzz(
                        namesrv_address,
                        server_fuzz.namesrv_corpus(),
                        FRAMES,
                        NAMESRV_SEED,
                        timeout=FRAME_TIMEOUT_S,
                    ),
                    server_fuzz.fuzz(
                        broker.address,
                        server_fuzz.broker_corpus(),
                        FRAMES,
                        BROKER_SEED,
                        timeout=FRAME_TIMEOUT_S,
                    ),
                )
            elapsed = asyncio.get_running_loop().time() - started

            for name, figures in (("NameServer", at_namesrv), ("Broker", at_broker)):
                report = f"{name}: {server_fuzz.describe(figures, elapsed)}"
                assert figures.sent == FRAMES, report
                assert figures.silent == 0, report
                assert figures.garbled == 0, report
                assert figures.closed_instead == 0, report
                assert figures.answered + figures.closed + figures.not_due == FRAMES, report
                # the pass really reached the handlers, and really broke frames
                assert figures.answered > FRAMES // 10 and figures.closed > FRAMES // 10, report
                for kind in server_fuzz.MUTATIONS:
                    assert figures.by_mutation.get(kind, [0])[0] > 0, report

            # both servers still serve clean requests, on new connections
            async with RemotingClient() as fresh:
                clusters = await fresh.invoke(
                    namesrv_address, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 5000
                )
                assert clusters.code == ResponseCode.SUCCESS, clusters.remark
                assert broker.config.broker_name in fastjson.loads(clusters.body)["brokerAddrTable"]
                route = await fresh.invoke(
                    namesrv_address,
                    RemotingCommand.request(
                        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic="TBW102")
                    ),
                    5000,
                )
                assert route.code == ResponseCode.SUCCESS, route.remark
            async with BrokerClient(broker.address) as client:
                assert await _read_back(client) == stored
                assert await _offset(client, 1) == "3"
                await _commit(client, 2, 5)
                # offsets are still saved, whatever values the pass tried to commit
                await asyncio.to_thread(broker.consumer_offsets.persist)
                saved = fastjson.loads(broker.consumer_offsets.path.read_bytes())
                assert saved["offsetTable"][f"{KEEP_TOPIC}@{KEEP_GROUP}"] == {1: 3, 2: 5}
            # and so is the NameServer's KV config, whatever the pass put there
            async with RemotingClient() as fresh:
                put = PutKVConfigRequestHeader(namespace="KeepSpace", key="k", value="kept")
                answer = await fresh.invoke(
                    namesrv_address, RemotingCommand.request(RequestCode.PUT_KV_CONFIG, put), 5000
                )
                assert answer.code == ResponseCode.SUCCESS, answer.remark
            saved = fastjson.loads(kv_path.read_bytes())
            assert saved["configTable"]["KeepSpace"] == {"k": "kept"}
