"""What the roles promise: a SYNC_MASTER answers by its slave, a slave refuses writes and serves reads as
Apache's does, copies its master's metadata, and drops a link whose offsets do not line up."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from pathlib import Path

import pytest

from broker import Broker
from broker.ha.protocol import HEADER, REPORT, encode_report, encode_transfer
from broker.processors.topic_admin import SLAVE_REFUSAL
from broker.subscription_groups import SubscriptionGroupConfig
from broker.testing import BrokerClient
from rocketmq_wire import RequestCode, ResponseCode, fastjson
from rocketmq_wire.headers.offset import UpdateConsumerOffsetRequestHeader
from rocketmq_wire.headers.transaction import EndTransactionRequestHeader, TransactionType
from rocketmq_wire.message import decode_messages
from rocketmq_wire.message.stored import MessageExt, encode_stored_message
from tests.unit.ha_helpers import (
    LIMIT_S,
    ha_master,
    master_config,
    slave_config,
    slave_link,
    wait_caught_up,
    wait_until,
)

TOPIC = "Orders"


async def test_sync_master_answers_by_whether_a_slave_holds_the_message(tmp_path: Path) -> None:
    master = Broker(master_config(tmp_path / "master", broker_role="SYNC_MASTER"))
    await master.start()
    try:
        async with BrokerClient(master.address) as client:
            # No slave at all: stored, but SLAVE_NOT_AVAILABLE (with the ids, as Apache answers).
            alone = await client.send(TOPIC, b"nobody copies me")
            assert alone.code == ResponseCode.SLAVE_NOT_AVAILABLE and alone.remark is None
            assert alone.fields()["queueOffset"] == "0" and alone.fields()["msgId"]

            slave = Broker(slave_config(tmp_path / "slave", master))
            await slave.start()
            try:
                await slave_link(master)
                copied = await client.send(TOPIC, b"my slave holds me")
                assert copied.code == ResponseCode.SUCCESS
                # SEND_OK was only given once the slave had acknowledged the message.
                assert ha_master(master).push_max_offset == master.store.max_physical_offset
                assert slave.store.max_physical_offset == master.store.max_physical_offset
            finally:
                await slave.close()
            await wait_until(lambda: not ha_master(master).links, "the master noticed the slave left")

            gone = await client.send(TOPIC, b"my slave left")
            assert gone.code == ResponseCode.SLAVE_NOT_AVAILABLE
            assert gone.fields()["queueOffset"] == "2"
        assert master.store.get_max_offset(TOPIC, 0) == 3  # every one of them was stored
    finally:
        await master.close()


async def _fake_slave(master: Broker, report: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A slave that reports once and then never reads nor acknowledges anything."""
    host, port = master.config.ha_server_addr.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(encode_report(report))
    await writer.drain()
    await slave_link(master)
    return reader, writer


async def test_sync_master_times_out_on_a_slave_that_stalls(tmp_path: Path) -> None:
    master = Broker(master_config(tmp_path / "master", broker_role="SYNC_MASTER", slave_timeout=300))
    await master.start()
    try:
        _, writer = await _fake_slave(master, 0)
        try:
            async with BrokerClient(master.address) as client:
                loop = asyncio.get_running_loop()
                began = loop.time()
                stalled = await client.send(TOPIC, b"x" * 2000)
                waited = loop.time() - began
            assert stalled.code == ResponseCode.FLUSH_SLAVE_TIMEOUT and stalled.remark is None
            assert stalled.fields()["msgId"] and stalled.fields()["queueOffset"] == "0"
            assert 0.25 < waited < LIMIT_S  # it did wait slaveTimeout for the acknowledgement
            assert master.store.get_max_offset(TOPIC, 0) == 1
        finally:
            writer.close()
    finally:
        await master.close()


async def test_sync_master_does_not_wait_for_a_slave_too_far_behind(tmp_path: Path) -> None:
    master = Broker(
        master_config(tmp_path / "master", broker_role="SYNC_MASTER", ha_slave_fallbehind_max=100)
    )
    await master.start()
    try:
        _, writer = await _fake_slave(master, 0)  # connected, but holding nothing
        try:
            async with BrokerClient(master.address) as client:
                far = await client.send(TOPIC, b"y" * 500)
            assert far.code == ResponseCode.SLAVE_NOT_AVAILABLE
        finally:
            writer.close()
    finally:
        await master.close()


async def test_async_master_does_not_wait(tmp_path: Path) -> None:
    master = Broker(master_config(tmp_path / "master"))
    await master.start()
    try:
        _, writer = await _fake_slave(master, 0)
        try:
            async with BrokerClient(master.address) as client:
                assert (await client.send(TOPIC, b"z")).code == ResponseCode.SUCCESS
        finally:
            writer.close()
    finally:
        await master.close()


async def test_slave_refuses_sends_and_serves_pulls_as_apache(tmp_path: Path) -> None:
    master = Broker(master_config(tmp_path / "master"))
    await master.start()
    slave = Broker(slave_config(tmp_path / "slave", master))
    await slave.start()
    try:
        await slave_link(master)
        async with BrokerClient(master.address) as to_master:
            assert (await to_master.create_topic(TOPIC, 1)).code == ResponseCode.SUCCESS
            for i in range(3):
                assert (await to_master.send(TOPIC, f"m{i}".encode())).code == ResponseCode.SUCCESS
        await wait_caught_up(master, slave)
        before = slave.store.max_physical_offset
        async with BrokerClient(slave.address) as to_slave:
            refused = await to_slave.send(TOPIC, b"to the slave")
            assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
            assert refused.remark is not None and "messages are put to the slave" in refused.remark
            assert slave.store.max_physical_offset == before
            # Topics and transaction outcomes are the master's to change, as in Apache.
            created = await to_slave.create_topic("OnSlave", 1)
            assert created.code == ResponseCode.SYSTEM_ERROR and created.remark == SLAVE_REFUSAL
            verdict = EndTransactionRequestHeader(
                producer_group="TxGroup",
                tran_state_table_offset=0,
                commit_log_offset=0,
                commit_or_rollback=TransactionType.COMMIT_TYPE,
                from_transaction_check=False,
                msg_id="x",
            )
            ended = await to_slave.request(RequestCode.END_TRANSACTION, verdict)
            assert ended.code == ResponseCode.SLAVE_NOT_AVAILABLE and ended.remark is None

            assert slave.ha.synchronizer is not None
            slave.ha.synchronizer.master_addr = master.address
            await slave.ha.synchronizer.sync_all()
            pulled = await to_slave.pull("Readers", TOPIC, 0, 0, commit_offset=2)
            assert pulled.code == ResponseCode.SUCCESS
            assert [m.body for m in decode_messages(pulled.body)] == [b"m0", b"m1", b"m2"]
            assert pulled.fields()["suggestWhichBrokerId"] == "0"  # slaveReadEnable is off: go to the master
            # A slave keeps no offset a pull commits: its master's are copied to it.
            assert slave.consumer_offsets.query_offset("Readers", TOPIC, 0) == -1
            # Nor does it move a consumer past offsets it may only lack for now.
            ahead = await to_slave.pull("Readers", TOPIC, 0, 9)
            assert (
                ahead.code == ResponseCode.PULL_RETRY_IMMEDIATELY and ahead.remark == "OFFSET_OVERFLOW_BADLY"
            )
            assert ahead.fields()["nextBeginOffset"] == "9"
        async with BrokerClient(master.address) as to_master:
            moved = await to_master.pull("Readers", TOPIC, 0, 9)
            assert moved.code == ResponseCode.PULL_OFFSET_MOVED and moved.fields()["nextBeginOffset"] == "3"
    finally:
        await slave.close()
        await master.close()


async def test_slave_read_enable_suggests_the_groups_broker(tmp_path: Path) -> None:
    master = Broker(master_config(tmp_path / "master", slave_read_enable=True))
    await master.start()
    try:
        master.subscription_groups.put(SubscriptionGroupConfig(group_name="Readers", broker_id=1))
        async with BrokerClient(master.address) as client:
            await client.send(TOPIC, b"m")
            pulled = await client.pull("Readers", TOPIC, 0, 0)
            assert pulled.code == ResponseCode.SUCCESS and pulled.fields()["suggestWhichBrokerId"] == "1"
            other = await client.pull("Others", TOPIC, 0, 0)
            assert other.fields()["suggestWhichBrokerId"] == "0"
    finally:
        await master.close()


async def test_slave_copies_its_masters_metadata(tmp_path: Path) -> None:
    master = Broker(master_config(tmp_path / "master"))
    await master.start()
    slave = Broker(slave_config(tmp_path / "slave", master))
    await slave.start()
    try:
        async with BrokerClient(master.address) as client:
            assert (await client.create_topic("Configured", 3)).code == ResponseCode.SUCCESS
            update = UpdateConsumerOffsetRequestHeader(
                consumer_group="Billing", topic="Configured", queue_id=2, commit_offset=42
            )
            assert (await client.request(RequestCode.UPDATE_CONSUMER_OFFSET, update)).code == 0
        master.subscription_groups.put(SubscriptionGroupConfig(group_name="Billing", retry_max_times=3))
        assert not slave.topic_exists("Configured")

        synchronizer = slave.ha.synchronizer
        assert synchronizer is not None
        assert synchronizer.master_addr is None  # no NameServer named it yet: nothing to do
        await synchronizer.sync_all()
        assert synchronizer.rounds == 0
        synchronizer.master_addr = master.address
        await synchronizer.sync_all()
        assert synchronizer.rounds == 1

        copied = slave.topic_config_manager.select("Configured")
        assert copied is not None and copied.read_queue_nums == 3 and copied.write_queue_nums == 3
        assert slave.topic_config_manager.data_version() == master.topic_config_manager.data_version()
        assert slave.consumer_offsets.query_offset("Billing", "Configured", 2) == 42
        group = slave.subscription_groups.find("Billing")
        assert group is not None and group.retry_max_times == 3
        delay_file = Path(slave.config.store_path_root_dir) / "config" / "delayOffset.json"
        assert json.loads(delay_file.read_text()) == {"offsetTable": {}}

        # Persisted as Apache's files, so a restarted slave (or an Apache broker on its store) has them.
        saved = json.loads((Path(slave.config.store_path_root_dir) / "config" / "topics.json").read_text())
        assert saved["topicConfigTable"]["Configured"]["readQueueNums"] == 3
        assert (
            '"Configured@Billing":{2:42}'
            in (Path(slave.config.store_path_root_dir) / "config" / "consumerOffset.json").read_text()
        )

        # What a 5.x slave also needs from its master: a data version with the offsets, the POP modes.
        offsets = fastjson.loads(await _get(master, RequestCode.GET_ALL_CONSUMER_OFFSET))
        assert offsets["offsetTable"]["Configured@Billing"] == {2: 42}
        assert offsets["dataVersion"]["counter"] == master.consumer_offsets.data_version.counter > 0
        modes = await _get(master, RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
        assert json.loads(modes) == {"messageRequestModeMap": {}}

        # Unchanged data versions change nothing the next round.
        master_groups = json.loads(
            (await _get(master, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)).decode()
        )
        assert master_groups["subscriptionGroupTable"]["Billing"]["retryMaxTimes"] == 3
        assert (
            slave.subscription_groups.replace_from_json(
                await _get(master, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
            )
            is False
        )
    finally:
        await slave.close()
        await master.close()


async def _get(broker: Broker, code: int) -> bytes:
    async with BrokerClient(broker.address) as client:
        answer = await client.request(code)
    assert answer.code == ResponseCode.SUCCESS
    return answer.body


class FakeMaster:
    """An HA port that replays a script per connection and records the reports it receives."""

    def __init__(self) -> None:
        self.first_reports: list[int] = []
        self.record = encode_stored_message(
            MessageExt(
                topic=TOPIC,
                body=b"replicated",
                properties_string="TAGS\x01A\x02",
                born_host="127.0.0.1:5555",
                store_host="127.0.0.1:10911",
                born_timestamp=1,
                store_timestamp=2,
            )
        )
        self.acknowledged = asyncio.Event()
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"127.0.0.1:{port}"

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            (first,) = REPORT.unpack(await reader.readexactly(REPORT.size))
            self.first_reports.append(first)
            if len(self.first_reports) == 1:
                # Half a record, then the rest: the slave must hold both parts and ack the whole.
                cut = len(self.record) // 2
                writer.write(encode_transfer(0, self.record[:cut]))
                await writer.drain()
                writer.write(encode_transfer(cut, self.record[cut:]))
                await writer.drain()
                while True:
                    (acked,) = REPORT.unpack(await reader.readexactly(REPORT.size))
                    if acked == len(self.record):
                        break
                self.acknowledged.set()
                # Now claim the stream continues somewhere else: the slave must drop the link.
                writer.write(HEADER.pack(len(self.record) + 100, 0))
                await writer.drain()
            await reader.read()  # until the slave hangs up (or the test ends)
        except (asyncio.IncompleteReadError, ConnectionError, struct.error):
            pass
        finally:
            writer.close()


async def test_slave_drops_a_link_whose_offset_does_not_continue_its_log(tmp_path: Path) -> None:
    fake = FakeMaster()
    address = await fake.start()
    slave = Broker(slave_config(tmp_path / "slave", ha_master_address=address))
    await slave.start()
    try:
        async with asyncio.timeout(LIMIT_S):
            await fake.acknowledged.wait()
        assert slave.store.get_max_offset(TOPIC, 0) == 1  # dispatched once the record was whole
        await wait_until(lambda: len(fake.first_reports) == 2, "the slave connected again")
        # The new link starts from what the slave holds, not from what the master claimed.
        assert fake.first_reports == [0, len(fake.record)]
        assert slave.ha.slave is not None and slave.ha.slave.connections == 2
        assert slave.store.max_physical_offset == len(fake.record)
        segment = Path(slave.config.store_path_root_dir) / "commitlog" / f"{0:020d}"
        assert segment.read_bytes()[: len(fake.record)] == fake.record
    finally:
        await slave.close()
        await fake.close()


def test_a_slave_needs_a_broker_id(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="brokerId"):
        Broker(slave_config(tmp_path / "slave", broker_id=0))


def _free_port_block() -> int:
    """A port ``p`` with ``p - 2`` (VIP channel), ``p`` and ``p + 1`` (HA) free right now."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        free = True
        for other in (port - 2, port + 1):
            with socket.socket() as taken:
                try:
                    taken.bind(("127.0.0.1", other))
                except OSError:
                    free = False
        if free:
            return port
    raise AssertionError("no free block of ports")


async def test_ha_port_is_listen_port_plus_one_and_a_taken_one_is_survived(tmp_path: Path) -> None:
    port = _free_port_block()
    first = Broker(master_config(tmp_path / "a", listen_port=port, ha_listen_port=0))
    await first.start()
    try:
        assert first.config.ha_listen_port == port + 1  # Apache's BrokerStartup rule
        assert ha_master(first).port == port + 1
        async with BrokerClient(first.address) as client:
            answer = await client.request(RequestCode.GET_BROKER_CONFIG)
        settings = dict(line.split("=", 1) for line in answer.body.decode().splitlines() if "=" in line)
        assert settings["haListenPort"] == str(port + 1) and settings["brokerRole"] == "ASYNC_MASTER"
        assert settings["haSendHeartbeatInterval"] == "5000" and settings["haTransferBatchSize"] == "32768"
        assert settings["slaveReadEnable"] == "false" and settings["slaveTimeout"] == "3000"
        assert "haMasterAddress" not in settings  # null, left out as Java leaves it out

        # The VIP channel (listenPort - 2), where an Apache slave fetches its master's topic table.
        async with BrokerClient(f"127.0.0.1:{port - 2}") as vip:
            topics = await vip.request(RequestCode.GET_ALL_TOPIC_CONFIG)
            assert topics.code == ResponseCode.SUCCESS and b'"TBW102"' in topics.body
            pull = await vip.pull("Readers", TOPIC, 0, 0)
            assert pull.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED  # pulls only on the main port

        # Another master configured onto the same HA port still runs, without slaves.
        second = Broker(
            master_config(tmp_path / "b", ha_listen_port=port + 1, broker_role="SYNC_MASTER", broker_id=3)
        )
        await second.start()
        try:
            assert second.ha.master is None and second.config.broker_id == 0  # a master is broker 0
            async with BrokerClient(second.address) as client:
                assert (await client.send(TOPIC, b"alone")).code == ResponseCode.SLAVE_NOT_AVAILABLE
        finally:
            await second.close()
    finally:
        await first.close()
