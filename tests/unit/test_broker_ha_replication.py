"""A project master and a project slave in one process: the slave's commit log is the master's, byte for
byte, its queues serve the same messages, it resumes where it stopped, and it shows up in routes."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker
from broker.testing import BrokerClient, message_properties
from nameserver.server import NameServer
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader
from rocketmq_wire.headers.transaction import EndTransactionRequestHeader, TransactionType
from rocketmq_wire.message import decode_messages, sysflag
from rocketmq_wire.message.ids import decode_offset_msg_id
from rocketmq_wire.transport import RemotingClient
from tests.unit.ha_helpers import (
    SEGMENT,
    caught_up,
    commit_log_files,
    ha_master,
    master_config,
    slave_config,
    slave_link,
    wait_caught_up,
    wait_until,
)

TOPIC = "Mixed"
SIZES = [1, 100, 1000, 5000, 20_000, 300, 12_000, 7, 9000, 31_000, 2, 40_000, 25_000, 64]


@pytest.fixture
async def namesrv() -> AsyncIterator[NameServer]:
    server = NameServer("127.0.0.1", 0)
    await server.start()
    try:
        yield server
    finally:
        await server.close()


def _body(size: int, seed: int) -> bytes:
    return bytes((seed + i) % 251 for i in range(size))


async def _send_everything(client: BrokerClient) -> int:
    """Mixed sizes on two queues, a batch, a delayed and a committed transactional message; returns how
    many messages the topic's queues end up with."""
    assert (await client.create_topic(TOPIC, 2)).code == ResponseCode.SUCCESS
    count = 0
    for i, size in enumerate(SIZES):
        sent = await client.send(TOPIC, _body(size, i), queue_id=i % 2, tags=f"T{i % 3}", keys=[f"k{i}"])
        assert sent.code == ResponseCode.SUCCESS, sent.remark
        count += 1
    batch = [(_body(700 * (j + 1), j), message_properties("Batch", [f"b{j}"])) for j in range(5)]
    assert (await client.send_batch(TOPIC, batch, queue_id=1)).code == ResponseCode.SUCCESS
    count += len(batch)
    delayed = message_properties("Later", delay_level=18)  # two hours: it stays in the schedule topic
    assert (await client.send(TOPIC, b"later", properties=delayed)).code == ResponseCode.SUCCESS
    half = await client.send(
        TOPIC,
        b"transactional",
        properties=message_properties("Tx", extra={"TRAN_MSG": "true", "PGROUP": "TxGroup"}),
        sys_flag=sysflag.TRANSACTION_PREPARED_TYPE,
        group="TxGroup",
    )
    assert half.code == ResponseCode.SUCCESS
    fields = half.fields()
    commit = EndTransactionRequestHeader(
        producer_group="TxGroup",
        tran_state_table_offset=int(fields["queueOffset"]),
        commit_log_offset=decode_offset_msg_id(fields["msgId"]).offset,
        commit_or_rollback=TransactionType.COMMIT_TYPE,
        from_transaction_check=False,
        msg_id=fields["transactionId"],
    )
    assert (await client.request(RequestCode.END_TRANSACTION, commit)).code == ResponseCode.SUCCESS
    return count + 1


async def _route(namesrv: NameServer, topic: str) -> TopicRouteData:
    async with RemotingClient() as client:
        request = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
        )
        answer = await client.invoke(namesrv.address, request, 3000)
    assert answer.code == ResponseCode.SUCCESS
    return TopicRouteData.from_json(answer.body)


async def _pull_all(address: str, queue_id: int) -> list[bytes]:
    """The stored bytes of every message of one queue, as pulls return them."""
    records: list[bytes] = []
    async with BrokerClient(address) as client:
        offset = 0
        while True:
            answer = await client.pull("Readers", TOPIC, queue_id, offset)
            if answer.code != ResponseCode.SUCCESS:
                return records
            messages = decode_messages(answer.body)
            records += [m.body for m in messages]
            offset = int(answer.fields()["nextBeginOffset"])


async def test_slave_copies_the_commit_log_byte_for_byte_and_serves_the_same_messages(
    tmp_path: Path, namesrv: NameServer
) -> None:
    master = Broker(
        master_config(tmp_path / "master", namesrv_addr=namesrv.address, ha_transfer_batch_size=4000)
    )
    slave = Broker(slave_config(tmp_path / "slave", namesrv_addr=namesrv.address))
    await master.start()
    try:
        await slave.start()
        try:
            # The slave learned both of its master's addresses from the NameServer's answer.
            assert slave.ha.slave is not None
            assert slave.ha.slave.master_address == master.config.ha_server_addr
            assert slave.ha.synchronizer is not None and slave.ha.synchronizer.master_addr == master.address
            link = await slave_link(master)
            assert link.request_offset == 0

            async with BrokerClient(master.address) as client:
                in_topic = await _send_everything(client)
            await wait_caught_up(master, slave)

            master_files = commit_log_files(master)
            assert len(master_files) >= 3  # the messages rolled over several files
            assert commit_log_files(slave) == master_files
            assert slave.store.dispatch_behind_bytes == 0

            # The slave's queues hold the same entries: same offsets, same stored bytes on pull.
            for queue_id in (0, 1):
                assert slave.store.get_max_offset(TOPIC, queue_id) == master.store.get_max_offset(
                    TOPIC, queue_id
                )
            assert slave.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 17) == 1
            assert slave.store.get_max_offset("RMQ_SYS_TRANS_HALF_TOPIC", 0) == 1
            assert slave.store.get_max_offset("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0) == 1
            await slave.ha.synchronizer.sync_all()  # the topic itself comes with the metadata
            assert slave.topic_exists(TOPIC)
            from_master = [await _pull_all(master.address, q) for q in (0, 1)]
            from_slave = [await _pull_all(slave.address, q) for q in (0, 1)]
            assert from_slave == from_master
            assert sum(len(q) for q in from_slave) == in_topic
            assert b"transactional" in from_slave[0] + from_slave[1]
            # ... and the same key index.
            hits = slave.store.query_messages(TOPIC, "k4", 10)
            assert len(hits.messages) == 1 and decode_messages(hits.body)[0].body == _body(20_000, 4)

            # Routes show the slave next to its master.
            route = await _route(namesrv, TOPIC)
            assert [b.broker_addrs for b in route.broker_datas] == [{0: master.address, 1: slave.address}]

            status = json.loads((await _request(master, RequestCode.GET_BROKER_HA_STATUS)).body)
            assert status["master"] is True and status["inSyncSlaveNums"] == 1
            [info] = status["haConnectionInfo"]
            assert info["slaveAckOffset"] == master.store.max_physical_offset and info["diff"] == 0
            slave_status = json.loads((await _request(slave, RequestCode.GET_BROKER_HA_STATUS)).body)
            assert slave_status["master"] is False
            assert slave_status["haClientRuntimeInfo"]["masterAddr"] == master.config.ha_server_addr
            assert slave_status["haClientRuntimeInfo"]["maxOffset"] == master.store.max_physical_offset
        finally:
            await slave.close()
    finally:
        await master.close()


async def _request(broker: Broker, code: int) -> RemotingCommand:
    async with BrokerClient(broker.address) as client:
        answer = await client.request(code)
    assert answer.code == ResponseCode.SUCCESS
    return answer


async def test_a_restarted_slave_resumes_from_its_own_offset(tmp_path: Path) -> None:
    master = Broker(master_config(tmp_path / "master"))
    await master.start()
    try:
        async with BrokerClient(master.address) as client:
            slave = Broker(slave_config(tmp_path / "slave", master))
            await slave.start()
            try:
                await slave_link(master)
                for i in range(6):
                    assert (await client.send(TOPIC, _body(9000, i))).code == ResponseCode.SUCCESS
                await wait_caught_up(master, slave)
                stopped_at = slave.store.max_physical_offset
            finally:
                await slave.close()
            await wait_until(lambda: not ha_master(master).links, "the master noticed the slave left")

            for i in range(6, 12):  # the slave misses these, across a file boundary
                assert (await client.send(TOPIC, _body(9000, i))).code == ResponseCode.SUCCESS
            assert master.store.max_physical_offset > SEGMENT

            again = Broker(slave_config(tmp_path / "slave", master))
            await again.start()
            try:
                link = await slave_link(master)
                assert link.request_offset == stopped_at  # not 0, not the start of the master's last file
                await wait_caught_up(master, again)
                assert commit_log_files(again) == commit_log_files(master)
                assert again.store.get_max_offset(TOPIC, 0) == 12
            finally:
                await again.close()
    finally:
        await master.close()


async def test_an_empty_slave_starts_at_the_masters_last_file(tmp_path: Path) -> None:
    master = Broker(master_config(tmp_path / "master"))
    await master.start()
    try:
        async with BrokerClient(master.address) as client:
            for i in range(20):
                assert (await client.send(TOPIC, _body(9000, i))).code == ResponseCode.SUCCESS
        master_files = commit_log_files(master)
        last = max(master_files)
        assert len(master_files) >= 3
        slave = Broker(slave_config(tmp_path / "slave", master))
        await slave.start()
        try:
            link = await slave_link(master)
            assert link.request_offset == 0 and link.transfer_from == int(last)
            await wait_caught_up(master, slave)
            assert commit_log_files(slave) == {last: master_files[last]}
            # The slave's queue begins where its log does: the first entries it has are the last file's.
            first = slave.store.get_min_offset(TOPIC, 0)
            assert 0 < first < 20 and slave.store.get_max_offset(TOPIC, 0) == 20
            offset = slave.store.get_commit_log_offset(TOPIC, 0, first)
            assert offset == master.store.get_commit_log_offset(TOPIC, 0, first)
            assert offset is not None and offset >= int(last)
        finally:
            await slave.close()
    finally:
        await master.close()


async def test_slave_keeps_following_while_the_master_takes_more(tmp_path: Path) -> None:
    master = Broker(master_config(tmp_path / "master"))
    await master.start()
    slave = Broker(slave_config(tmp_path / "slave", master))
    await slave.start()
    try:
        await slave_link(master)
        async with BrokerClient(master.address) as client:
            for i in range(30):
                assert (await client.send(TOPIC, _body(1500 + i * 97, i), queue_id=i % 3)).code == 0
                if i % 10 == 9:
                    await wait_caught_up(master, slave)
        await wait_caught_up(master, slave)
        assert caught_up(master, slave)
        assert commit_log_files(slave) == commit_log_files(master)
    finally:
        await slave.close()
        await master.close()
