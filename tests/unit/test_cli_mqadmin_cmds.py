"""The mqadmin commands rmq gained (group, cluster, topic and message ones) end to end through typer's
CliRunner, against the project's NameServer and Broker in-process; also under their mqadmin names."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from admin import Admin, AdminError, TopicNotFoundError
from cli.local_cluster import LocalCluster, LocalClusterSettings
from cli.main import app
from consumer import ConsumerConfig, ConsumeStatus, PushConsumer
from producer import Message, Producer
from rocketmq_wire.bodies import SubscriptionGroupConfig
from rocketmq_wire.topics import ORDER_TOPIC_CONFIG

TOPIC = "CliAdminTopic"
GROUP = "CliAdminGroup"


class Rmq:
    def __init__(self, local: LocalCluster) -> None:
        self.local = local
        self.runner = CliRunner()

    async def __call__(self, *args: str) -> Result:
        env = {"NAMESRV_ADDR": self.local.namesrv_address}
        return await asyncio.to_thread(self.runner.invoke, app, list(args), env=env)

    async def json(self, *args: str) -> Any:
        result = await self(*args, "--json")
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    async def wait_for_route(self, topic: str) -> None:
        async def routed() -> bool:
            async with Admin(self.local.namesrv_address) as admin:
                try:
                    await admin.topic_route(topic)
                except TopicNotFoundError:
                    return False
                return True

        await self.local.wait_for_route(routed)

    async def topic_with_messages(self, count: int = 6) -> dict[int, int]:
        await self.json("topic", "create", TOPIC, "-r", "2", "-w", "2")
        await self.wait_for_route(TOPIC)
        per_queue = {0: 0, 1: 0}
        async with Producer("CliAdminProducer", self.local.namesrv_address) as producer:
            for i in range(count):
                result = await producer.send(Message(TOPIC, f"body-{i}".encode(), tags="T"))
                per_queue[result.message_queue.queue_id] += 1
        return per_queue


@pytest.fixture
async def rmq(tmp_path: Path) -> AsyncIterator[Rmq]:
    async with LocalCluster(LocalClusterSettings(tmp_path / "store")) as local:
        yield Rmq(local)


async def test_group_update_config_delete(rmq: Rmq) -> None:
    updated = await rmq.json("group", "update", GROUP, "-c", "DefaultCluster", "-r", "3", "--no-broadcast")
    assert updated["brokers"] == [rmq.local.broker_address]
    assert updated["config"]["retry_max_times"] == 3
    [found] = await rmq.json("group", "config", GROUP)
    assert found["broker_name"] == "broker-a"
    assert (found["config"]["retry_max_times"], found["config"]["consume_broadcast_enable"]) == (3, False)
    table = await rmq("getConsumerConfig", GROUP)  # the mqadmin name works too
    assert (
        table.exit_code == 0
        and "retry_max_times" in table.stdout
        and "DefaultCluster:broker-a" in table.stdout
    )

    deleted = await rmq.json("group", "delete", GROUP, "-b", rmq.local.broker_address)
    assert deleted["brokers"] == [rmq.local.broker_address]
    missing = await rmq("group", "config", GROUP)
    assert missing.exit_code == 1
    assert "no broker has settings for group" in missing.stderr
    both = await rmq("group", "update", GROUP)
    assert (both.exit_code, both.stderr.strip()) == (1, "error: pass either --cluster or --broker")


async def test_broker_stats_clone_skip_and_allocate(rmq: Rmq) -> None:
    per_queue = await rmq.topic_with_messages()
    async with Admin(rmq.local.namesrv_address) as admin:
        await admin.update_subscription_group(
            SubscriptionGroupConfig(group_name=GROUP),
            broker_addr=rmq.local.broker_address,
        )
        await admin.update_consumer_offset(GROUP, TOPIC, 0, 1)

    [stats] = await rmq.json("group", "broker-stats", "-b", rmq.local.broker_address)
    rows = {(r["group"], r["queue_id"]): (r["broker_offset"], r["consumer_offset"]) for r in stats["queues"]}
    assert rows == {(GROUP, 0): (per_queue[0], 1), (GROUP, 1): (per_queue[1], 0)}
    assert stats["total_diff"] == sum(per_queue.values()) - 1
    every = await rmq.json("brokerConsumeStats")  # every master when no broker is named
    assert [s["broker_addr"] for s in every] == [rmq.local.broker_address]

    cloned = await rmq.json("group", "clone-offset", "-s", GROUP, "-d", "CliClone", "-t", TOPIC)
    # the broker reports 0 for a queue the group never committed, and mqadmin copies that too
    assert [(q["queue_id"], q["offset"]) for q in cloned["queues"]] == [(0, 1), (1, 0)]

    skipped = await rmq.json("group", "skip-accumulated", "CliClone", TOPIC)
    assert sorted((q["queue_id"], q["new_offset"]) for q in skipped["queues"]) == [
        (0, per_queue[0]),
        (1, per_queue[1]),
    ]

    allocation = await rmq.json("group", "allocate", TOPIC, "-i", "10.0.0.1,10.0.0.2")
    assert allocation == {
        "result": {
            "10.0.0.1": [{"topic": TOPIC, "brokerName": "broker-a", "queueId": 0}],
            "10.0.0.2": [{"topic": TOPIC, "brokerName": "broker-a", "queueId": 1}],
        }
    }


async def test_wipe_and_add_write_perm_and_namesrv_config(rmq: Rmq) -> None:
    await rmq.topic_with_messages(1)
    wiped = await rmq.json("cluster", "wipe-write-perm", "broker-a")
    assert wiped[0]["namesrv"] == rmq.local.namesrv_address
    assert wiped[0]["topic_count"] >= 1
    route = await rmq.json("route", TOPIC)
    assert [q["perm"] for q in route["queueDatas"]] == [4]
    added = await rmq.json("addWritePerm", "broker-a")
    assert added[0]["topic_count"] == wiped[0]["topic_count"]
    assert [q["perm"] for q in (await rmq.json("route", TOPIC))["queueDatas"]] == [6]

    config = await rmq.json("cluster", "namesrv-config")
    assert config[rmq.local.namesrv_address]["orderMessageEnable"] == "false"
    await rmq.json("cluster", "update-namesrv-config", "-k", "orderMessageEnable", "-v", "true")
    config = await rmq.json("getNamesrvConfig")
    assert config[rmq.local.namesrv_address]["orderMessageEnable"] == "true"


async def test_topic_clusters_perm_and_order_conf(rmq: Rmq) -> None:
    await rmq.topic_with_messages(1)
    assert await rmq.json("topic", "clusters", TOPIC) == ["DefaultCluster"]
    changed = await rmq.json("topic", "update-perm", TOPIC, "-p", "4", "-b", rmq.local.broker_address)
    assert changed["brokers"] == [rmq.local.broker_address]
    assert rmq.local.broker.topic_config_manager.select(TOPIC).perm == 4  # type: ignore[union-attr]
    unchanged = await rmq.json("updateTopicPerm", TOPIC, "-p", "4", "-c", "DefaultCluster")
    assert unchanged["brokers"] == []

    await rmq.json("topic", "order-conf", TOPIC, "--set", "broker-a:2")
    assert rmq.local.namesrv.kv.get(ORDER_TOPIC_CONFIG, TOPIC) == "broker-a:2"
    assert (await rmq.json("topic", "order-conf", TOPIC))["order_conf"] == "broker-a:2"
    await rmq.json("updateOrderConf", TOPIC, "--delete")
    none = await rmq("topic", "order-conf", TOPIC)
    assert (none.exit_code, none.stderr.strip()) == (1, f"error: topic {TOPIC} has no order conf")


async def test_message_at_offset_and_print_queue(rmq: Rmq) -> None:
    per_queue = await rmq.topic_with_messages()
    message = await rmq.json("message", "at", TOPIC, "0", "0")
    assert (message["queue_id"], message["queue_offset"], message["tags"]) == (0, 0, "T")
    assert message["body"].startswith("body-")
    missing = await rmq("queryMsgByOffset", TOPIC, "0", "99")
    assert missing.exit_code == 1 and "no message at offset 99" in missing.stderr

    printed = await rmq.json("message", "print-queue", TOPIC, "1")
    assert [m["queue_offset"] for m in printed] == list(range(per_queue[1]))
    part = await rmq.json("printMsgByQueue", TOPIC, "1", "--begin", "1", "--end", "2")
    assert [m["queue_offset"] for m in part] == [1]
    table = await rmq("message", "print-queue", TOPIC, "0")
    assert table.exit_code == 0 and "Message ID" in table.stdout


async def test_group_status_and_producers(rmq: Rmq) -> None:
    await rmq.topic_with_messages(2)
    push = PushConsumer(
        GROUP,
        rmq.local.namesrv_address,
        consume_from="FIRST_OFFSET",
        config=ConsumerConfig(client_ip="127.0.0.1", instance_name="cli-status", await_termination_ms=500),
    )
    push.subscribe(TOPIC, "T")

    async def done(messages: list[Any], context: Any) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    push.register_listener(done)
    await push.start()
    try:
        every = await rmq.json("group", "status", GROUP)
        assert list(every) == [push.client_id]
        mine = every[push.client_id]
        subscriptions = {(s["topic"], s["expression"]) for s in mine["subscriptions"]}
        assert subscriptions == {(TOPIC, "T"), (f"%RETRY%{GROUP}", "*")}  # clustering adds the retry topic
        held = sorted(q["queue"] for q in mine["queues"] if q["queue"].startswith(TOPIC))
        assert held == [f"{TOPIC}@broker-a:0", f"{TOPIC}@broker-a:1"]
        assert mine["properties"]["consumeFromWhere"] == "CONSUME_FROM_FIRST_OFFSET"
        detail = await rmq("consumerStatus", GROUP, "-i", push.client_id)
        assert detail.exit_code == 0, detail.output
        for heading in ("Properties of", "Subscriptions", "Queues held", "RT and TPS"):
            assert heading in detail.stdout
        summary = await rmq("group", "status", GROUP)
        assert summary.exit_code == 0 and push.client_id in summary.stdout
    finally:
        await push.shutdown()

    async with Producer("CliStatusProducer", rmq.local.namesrv_address) as producer:
        await producer.send(Message(TOPIC, b"x"))
        [connection] = await rmq.json("group", "producers", "CliStatusProducer", TOPIC)
        assert connection["client_id"] == producer.client_id


async def test_broker_maintenance_commands(rmq: Rmq) -> None:
    per_queue = await rmq.topic_with_messages(4)
    store = rmq.local.broker.store
    # a topic the broker forgot while its consume queues stayed behind
    rmq.local.broker.topic_config_manager.delete(TOPIC)
    assert TOPIC in store.topics()
    cleaned = await rmq.json("clean-unused-topic", "-c", "DefaultCluster")
    assert cleaned == {"brokers": [rmq.local.broker_address], "success": True}
    assert TOPIC not in store.topics()

    await rmq.json("topic", "create", "KeptTopic", "-r", "1", "-w", "1")
    await rmq.wait_for_route("KeptTopic")
    async with Producer("KeptProducer", rmq.local.namesrv_address) as producer:
        await producer.send(Message("KeptTopic", b"stays"))
    # nothing is old enough to go: both answer SUCCESS and keep the data
    assert (await rmq.json("cleanExpiredCQ"))["brokers"] == [rmq.local.broker_address]
    assert (await rmq.json("delete-expired-commitlog", "-b", rmq.local.broker_address))["success"] is True
    assert store.get_max_offset("KeptTopic", 0) == 1
    assert sum(per_queue.values()) == 4

    updated = await rmq(
        "update-broker-config",
        "-b",
        rmq.local.broker_address,
        "-k",
        "flushConsumerOffsetInterval",
        "-v",
        "4321",
    )
    assert updated.exit_code == 0, updated.output
    async with Admin(rmq.local.namesrv_address) as admin:
        config = await admin.broker_config(rmq.local.broker_address)
    assert config["flushConsumerOffsetInterval"] == "4321"
    neither = await rmq("updateBrokerConfig", "-k", "a", "-v", "b")
    assert (neither.exit_code, neither.stderr.strip()) == (1, "error: pass --broker or --cluster")


async def test_producer_table_lists_a_connected_producer(rmq: Rmq) -> None:
    await rmq.topic_with_messages(0)
    addr = rmq.local.broker_address
    async with Producer("CliTableProducer", rmq.local.namesrv_address) as producer:
        await producer.send(Message(TOPIC, b"x"))
        for _ in range(100):  # the producer's first heartbeat follows its first connection
            [listed] = await rmq.json("group", "producer-table", "-b", addr)
            if "CliTableProducer" in listed["groups"]:
                break
            await asyncio.sleep(0.05)
        assert listed["broker_addr"] == addr
        [mine] = listed["groups"]["CliTableProducer"]
        assert mine["client_id"] == producer.client_id
        assert mine["remote_ip"].startswith("/127.0.0.1:") and mine["language"] == "PYTHON"
        assert [p["client_id"] for p in listed["groups"]["CLIENT_INNER_PRODUCER"]] == [producer.client_id]

        every = await rmq.json("group", "producer-table")  # every master when no broker is named
        assert [b["broker_addr"] for b in every] == [addr]
        table = await rmq("producer", "-b", addr)  # mqadmin's name
        assert table.exit_code == 0, table.output
        assert "CliTableProducer" in table.stdout and "CLIENT_INNER_PRODUCER" in table.stdout

    bad = await rmq("group", "producer-table", "-b", "no-port-here")
    assert bad.exit_code == 2 and bad.stderr.count("error:") == 1 and "--broker" in bad.stderr


async def test_the_other_mqadmin_aliases(rmq: Rmq) -> None:
    await rmq.topic_with_messages(0)
    sent = await rmq.json("sendMessage", TOPIC, "via mqadmin's name")
    assert sent["status"] == "SEND_OK"
    [printed] = await rmq.json("printMsg", TOPIC, "--begin", "0")
    assert (printed["queue_id"], printed["queue_offset"]) == (sent["queue_id"], 0)
    put = await rmq.json("updateKvConfig", "CliNs", "k", "v")
    assert put["namesrvs"] == [rmq.local.namesrv_address]
    async with Admin(rmq.local.namesrv_address) as admin:
        assert await admin.kv_get("CliNs", "k") == "v"
        await rmq.json("deleteKvConfig", "CliNs", "k")
        assert await admin.kv_get("CliNs", "k") is None


async def test_send_round_trips(rmq: Rmq) -> None:
    await rmq.topic_with_messages(0)
    report = await rmq.json("message", "check-send-rt", TOPIC, "-a", "4", "-s", "16")
    assert [(s["broker_name"], s["queue_id"], s["ok"]) for s in report["sends"]] == [
        ("broker-a", i % 2, True) for i in range(4)
    ]
    assert report["avg_rt_ms"] == pytest.approx(sum(s["rt_ms"] for s in report["sends"][1:]) / 3)
    store = rmq.local.broker.store
    assert (store.get_max_offset(TOPIC, 0), store.get_max_offset(TOPIC, 1)) == (2, 2)

    status = await rmq.json("sendMsgStatus", "broker-a", "-c", "2")
    assert [s["ok"] for s in status["sends"]] == [True, True]
    assert all(s["msg_id"] for s in status["sends"])

    [row] = await rmq.json("cluster", "rt", "-a", "3")
    assert (row["cluster"], row["broker_name"], row["success"], row["failed"]) == (
        "DefaultCluster",
        "broker-a",
        3,
        0,
    )
    missing = await rmq("clusterRT", "-c", "Nope", "-a", "1")
    assert (missing.exit_code, missing.stderr.strip()) == (1, "error: cluster [Nope] not exist")


async def test_stats_all_and_the_brokers_stats_answer(rmq: Rmq) -> None:
    per_queue = await rmq.topic_with_messages(3)
    async with Admin(rmq.local.namesrv_address) as admin:
        await admin.update_consumer_offset(GROUP, TOPIC, 0, 0)
        # the project's broker keeps no per-topic items: it answers as Apache does for a missing one
        with pytest.raises(AdminError, match=f"The stats <TOPIC_PUT_NUMS> <{TOPIC}> not exist"):
            await admin.view_broker_stats(rmq.local.broker_address, "TOPIC_PUT_NUMS", TOPIC)
    # the group with an offset on the topic consumes it; its backlog is the whole topic
    rows = await rmq.json("topic", "stats-all", "-t", TOPIC)
    assert rows == [
        {
            "topic": TOPIC,
            "group": GROUP,
            "accumulation": 3,
            "in_tps": 0.0,
            "out_tps": 0.0,
            "in_msg_24h": 0,
            "out_msg_24h": 0,
        }
    ]
    assert await rmq.json("statsAll", "-t", TOPIC, "--active") == []  # no counted traffic: not active
    every = await rmq.json("topic", "stats-all")
    assert {(row["topic"], row["group"]) for row in every} >= {(TOPIC, GROUP), ("broker-a", None)}
    assert not any(row["topic"].startswith("%RETRY%") for row in every)
    assert sum(per_queue.values()) == 3


async def test_export_metadata_and_configs(rmq: Rmq, tmp_path: Path) -> None:
    await rmq.topic_with_messages(0)
    await rmq.json("group", "update", GROUP, "-c", "DefaultCluster", "-q", "2")
    folder = tmp_path / "export"
    exported = await rmq.json("cluster", "export-metadata", "-c", "DefaultCluster", "-f", str(folder))
    assert exported["path"] == str(folder / "metadata.json")
    written = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
    assert written["topicConfigTable"][TOPIC] == {
        "order": False,
        "perm": 6,
        "readQueueNums": 2,
        "topicFilterType": "SINGLE_TAG",
        "topicName": TOPIC,
        "topicSysFlag": 0,
        "writeQueueNums": 2,
    }
    assert not any(
        name.startswith(("%RETRY%", "RMQ_SYS_", "SCHEDULE_TOPIC")) for name in written["topicConfigTable"]
    )
    assert written["subscriptionGroupTable"][GROUP]["retryQueueNums"] == 2
    assert written["exportTime"] > 0

    only_topics = await rmq("exportMetadata", "-b", rmq.local.broker_address, "-t", "-f", str(folder))
    assert (
        only_topics.exit_code == 0 and only_topics.stdout.strip() == f"export {folder / 'topic.json'} success"
    )
    assert set(json.loads((folder / "topic.json").read_text())) == {"topicConfigTable", "exportTime"}

    configs = await rmq.json("cluster", "export-configs", "-c", "DefaultCluster", "-f", str(folder))
    written = json.loads((folder / "configs.json").read_text(encoding="utf-8"))
    assert written == {k: v for k, v in configs.items() if k != "path"}
    assert written["clusterScale"] == {"namesrvSize": 1, "masterBrokerSize": 1, "slaveBrokerSize": 0}
    broker_a = written["brokerConfigs"]["broker-a"]
    assert (broker_a["brokerClusterName"], broker_a["brokerId"], broker_a["brokerRole"]) == (
        "DefaultCluster",
        "0",
        "ASYNC_MASTER",
    )


async def test_consume_message_reads_without_committing(rmq: Rmq) -> None:
    per_queue = await rmq.topic_with_messages(6)
    every = await rmq.json("message", "consume", TOPIC)
    assert sorted((m["queue_id"], m["queue_offset"]) for m in every) == sorted(
        (q, o) for q, n in per_queue.items() for o in range(n)
    )
    assert len(await rmq.json("consumeMessage", TOPIC, "-c", "2")) == 2
    one = await rmq.json("message", "consume", TOPIC, "-b", "broker-a", "-i", "1", "-o", "1", "-c", "1")
    assert [(m["queue_id"], m["queue_offset"]) for m in one] == [(1, 1)]
    future = await rmq.json("message", "consume", TOPIC, "--begin", "4102444800000")  # 2100: nothing yet
    assert future == []
    # nothing was committed for anyone
    assert rmq.local.broker.consumer_offsets.groups_of_topic(TOPIC) == set()
    bad = await rmq("message", "consume", TOPIC, "-o", "3")
    assert (bad.exit_code, bad.stderr.strip()) == (1, "error: --offset needs --broker and --queue")


async def test_query_consume_queue(rmq: Rmq) -> None:
    per_queue = await rmq.topic_with_messages(4)
    [answer] = await rmq.json("topic", "query-cq", TOPIC, "0", "-c", "10", "-g", GROUP)
    assert answer["broker_addr"] == rmq.local.broker_address
    body = answer["body"]
    assert (body["min_queue_index"], body["max_queue_index"]) == (0, per_queue[0])
    assert body["filter_data"] == f"{GROUP}@{TOPIC} is not online!"
    entries = body["queue_data"]
    assert len(entries) == per_queue[0]
    store = rmq.local.broker.store
    for queue_offset, entry in enumerate(entries):
        assert entry["physic_offset"] == store.get_commit_log_offset(TOPIC, 0, queue_offset)
        stored = store.look_message_by_offset(entry["physic_offset"])
        assert stored is not None and entry["physic_size"] == stored.store_size
        assert entry["tags_code"] == ord("T")  # "T".hashCode()
    past = await rmq.json("queryCq", TOPIC, "0", "-i", "99")
    assert past == [
        {
            "broker_addr": rmq.local.broker_address,
            "remark": f"Index 99 of 0@{TOPIC} is not exist!",
            "body": None,
        }
    ]
    missing = await rmq("topic", "query-cq", TOPIC, "7")
    assert missing.exit_code == 1 and f"7@{TOPIC} is not exist!" in missing.stderr


async def test_export_metrics(rmq: Rmq, tmp_path: Path) -> None:
    await rmq.topic_with_messages(3)
    await rmq.json("group", "update", GROUP, "-c", "DefaultCluster")
    push = PushConsumer(
        GROUP,
        rmq.local.namesrv_address,
        config=ConsumerConfig(client_ip="127.0.0.1", instance_name="cli-metrics", await_termination_ms=500),
    )
    push.subscribe(TOPIC, "*")

    async def done(messages: list[Any], context: Any) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    push.register_listener(done)
    await push.start()
    try:
        document = await rmq.json("cluster", "export-metrics", "-c", "DefaultCluster", "-f", str(tmp_path))
    finally:
        await push.shutdown()
    written = json.loads((tmp_path / "metrics.json").read_text(encoding="utf-8"))
    assert written == {k: v for k, v in document.items() if k != "path"}
    broker_a = written["evaluateReport"]["broker-a"]
    quota = broker_a["runtimeQuota"]
    assert quota["topicSize"] >= 2  # the test topic and the broker's own topics, no system ones
    assert quota["groupSize"] == 1
    assert quota["oneDayNum"]["transOneDayInNum"] == 0
    assert broker_a["runtimeVersion"] == {"rocketmqVersion": "V4_9_8", "clientInfo": ["PYTHON%V4_9_8"]}
    assert written["totalData"]["totalTps"]["totalNormalInTps"] == quota["tps"]["normalInTps"]
    missing = await rmq("exportMetrics", "-c", "Nope", "-f", str(tmp_path))
    assert (missing.exit_code, missing.stderr.strip()) == (1, "error: no cluster named 'Nope'")


async def test_rocketmq_5_consumption_on_the_projects_broker(rmq: Rmq) -> None:
    """The project's broker answers as 5.3.3 and serves consume modes; it filters by SQL92 only with
    enablePropertyFilter (off by default, as Apache's): the mode is set and read back, a SQL92 consumer is
    refused in one readable line naming why, and mistakes in the call are one line each."""
    await rmq.topic_with_messages(1)
    mode = await rmq("group", "set-consume-mode", GROUP, "-t", TOPIC, "-m", "POP", "-c", "DefaultCluster")
    assert mode.exit_code == 0, mode.output
    modes = await rmq.json("group", "consume-modes", "-b", rmq.local.broker_address)
    assert TOPIC in json.dumps(modes) and "POP" in json.dumps(modes), modes
    both = await rmq("consume", TOPIC, "-g", GROUP, "--tag", "TagA", "--sql", "a > 1")
    assert (both.exit_code, both.stderr.strip()) == (1, "error: give either --tag or --sql, not both")
    sql = await rmq("consume", TOPIC, "-g", GROUP, "--sql", "a > 1", "-c", "1")
    assert sql.exit_code == 1 and len(sql.stderr.strip().splitlines()) == 1, sql.stderr
    assert sql.stderr.startswith("error: ") and "SQL92" in sql.stderr and "Traceback" not in sql.output
    bad = await rmq("group", "set-consume-mode", GROUP, "-t", TOPIC, "-m", "PUSH", "-c", "DefaultCluster")
    assert bad.exit_code == 1
    assert bad.stderr.strip() == "error: unknown consume mode 'PUSH'; choose PULL or POP"
