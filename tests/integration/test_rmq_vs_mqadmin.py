"""Each mqadmin command ``rmq`` gained, against the project's servers and Apache's: ``rmq … --json`` and
Apache's mqadmin (the same release as the servers; the first full release against the project's) read the same
cluster, and the facts they print agree: topic, group and broker names, addresses, offsets, counts.

The read commands run once per set-up while a producer and a push consumer are connected (the connection
commands need them), their outputs kept; write commands run ``rmq`` and read the effect back with mqadmin (and
once the other way round).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from admin import Admin
from consumer import ConsumeStatus, PullConsumer, PushConsumer
from producer import Message, Producer, SendResult
from rocketmq_wire.bodies.subscription_group import SubscriptionGroupConfig
from rocketmq_wire.message import MessageExt
from tests.integration.apache import mqadmin
from tests.integration.apache.releases import ApacheRelease, full_releases
from tests.integration.clusters import providers
from tests.integration.clusters.fixture import dedicated_cluster, skip_or_fail
from tests.integration.clusters.model import Cluster, unique_name

pytestmark = [pytest.mark.integration]

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]
SENT = 6
QUEUES = 4
RMQ_TIMEOUT_S = 60.0


def _first_full_release() -> ApacheRelease | None:
    full = full_releases()
    return full[0] if full else None


_FIRST = _first_full_release()
SETUPS = ["python", *([f"binaries-{_FIRST.version}"] if _FIRST is not None else [])]


class Scene:
    """One cluster, a topic with messages, a group that consumed and committed them, and what ``rmq`` and
    mqadmin printed for each read command."""

    def __init__(self, cluster: Cluster, release: ApacheRelease) -> None:
        self.cluster = cluster
        self.release = release
        self.topic = unique_name("RmqVs")
        self.group = unique_name("RmqVsGroup")
        self.producer_group = unique_name("RmqVsProducer")
        self.push_group = unique_name("RmqVsPush")
        self.producer_client_id = ""
        self.push_client_id = ""
        self.sent: list[SendResult] = []
        self.rmq_out: dict[str, Any] = {}
        self.admin_out: dict[str, mqadmin.AdminRun] = {}

    def admin_text(self, command: str, *args: str) -> str:
        return mqadmin.run(self.release, command, list(args), namesrv=self.cluster.namesrv).check().stdout

    def admin_run(self, command: str, *args: str) -> mqadmin.AdminRun:
        return mqadmin.run(self.release, command, list(args), namesrv=self.cluster.namesrv)

    def rmq_raw(self, *args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "cli.main", *args, "-n", self.cluster.namesrv]
        env = {**os.environ, "COLUMNS": "200"}
        env.pop("NAMESRV_ADDR", None)
        return subprocess.run(
            argv,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=RMQ_TIMEOUT_S,
            check=False,
            env=env,
            stdin=subprocess.DEVNULL,
        )

    def rmq(self, *args: str) -> Any:
        """``rmq ARGS -n NAMESRV --json``, parsed."""
        done = self.rmq_raw(*args, "--json")
        assert done.returncode == 0, (
            f"rmq {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
        return json.loads(done.stdout)

    @property
    def first(self) -> SendResult:
        return self.sent[0]


def read_commands(scene: Scene) -> dict[str, tuple[list[str], list[str]]]:
    """mqadmin command -> (its rmq arguments, its mqadmin arguments)."""
    c = scene.cluster
    first = scene.first
    queue = str(first.message_queue.queue_id)
    clients = "10.0.0.1@a,10.0.0.2@b"
    return {
        "topicClusterList": (["topic", "clusters", scene.topic], ["-t", scene.topic]),
        "statsAll": (["topic", "stats-all", "-t", scene.topic], ["-t", scene.topic]),
        "queryCq": (
            ["topic", "query-cq", scene.topic, queue, "-c", str(SENT)],
            ["-t", scene.topic, "-q", queue, "-i", "0", "-c", str(SENT)],
        ),
        "getConsumerConfig": (["group", "config", scene.group], ["-g", scene.group]),
        "brokerConsumeStats": (["group", "broker-stats", "-b", c.broker_addr], ["-b", c.broker_addr]),
        "producerConnection": (
            ["group", "producers", scene.producer_group, scene.topic],
            ["-g", scene.producer_group, "-t", scene.topic],
        ),
        "consumerConnection": (["consumer-connections", scene.push_group], ["-g", scene.push_group]),
        "queryMsgByKey": (["message", "query", scene.topic, "-k", "key1"], ["-t", scene.topic, "-k", "key1"]),
        "queryMsgByUniqueKey": (
            ["message", "get", first.msg_id, "-t", scene.topic],
            ["-t", scene.topic, "-i", first.msg_id],
        ),
        "queryMsgByOffset": (
            ["message", "at", scene.topic, queue, str(first.queue_offset), "-b", c.broker_name],
            ["-t", scene.topic, "-b", c.broker_name, "-i", queue, "-o", str(first.queue_offset)],
        ),
        "printMsgByQueue": (
            ["message", "print-queue", scene.topic, queue],
            ["-t", scene.topic, "-a", c.broker_name, "-i", queue, "-p", "true", "-d", "true"],
        ),
        "getNamesrvConfig": (["cluster", "namesrv-config"], []),
        "clusterList": (["clusters"], []),
        "allocateMQ": (["group", "allocate", scene.topic, "-i", clients], ["-t", scene.topic, "-i", clients]),
        "producer": (["group", "producer-table", "-b", c.broker_addr], ["-b", c.broker_addr]),
    }


async def _until(check: Any, what: str, tries: int = 150) -> None:
    for _ in range(tries):
        if await check():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


async def _prepare_and_read(scene: Scene) -> None:
    c = scene.cluster
    async with Admin(c.namesrv) as admin:
        await admin.create_topic(
            scene.topic, broker_addr=c.broker_addr, read_queue_nums=QUEUES, write_queue_nums=QUEUES
        )

        async def routed() -> bool:
            try:
                return bool((await admin.topic_route(scene.topic)).queue_datas)
            except Exception:
                return False

        await _until(routed, "the topic's route")
    async with Producer(scene.producer_group, c.namesrv) as producer:
        scene.producer_client_id = producer.client_id
        scene.sent = [
            await producer.send(
                Message(
                    scene.topic, f"body{i}".encode(), tags="TagA" if i % 2 == 0 else "TagB", keys=[f"key{i}"]
                )
            )
            for i in range(SENT)
        ]
        consumer = PullConsumer(scene.group, c.namesrv, consume_from="FIRST_OFFSET")
        consumer.subscribe(scene.topic, "*")
        async with consumer:
            got = 0
            while got < SENT:
                got += len(await consumer.poll(2.0))
            await consumer.commit()

        push = PushConsumer(scene.push_group, c.namesrv, consume_from="CONSUME_FROM_FIRST_OFFSET")
        push.subscribe(scene.topic, "TagA")

        async def listener(messages: list[MessageExt], context: object) -> ConsumeStatus:
            return ConsumeStatus.CONSUME_SUCCESS

        push.register_listener(listener)
        async with push:
            scene.push_client_id = push.client_id
            async with Admin(c.namesrv) as admin:

                async def push_connected() -> bool:
                    return bool((await admin.consumer_connections(scene.push_group)).connections)

                async def producer_connected() -> bool:
                    return bool(await admin.producer_connections(scene.producer_group, scene.topic))

                async def push_caught_up() -> bool:  # its offsets at the end: statsAll's accumulation is 0
                    progress = await admin.consumer_progress(scene.push_group, scene.topic)
                    return progress.total_lag == 0 and bool(progress.queues)

                await _until(push_connected, "the push consumer's heartbeat")
                await _until(producer_connected, "the producer's heartbeat")
                await _until(push_caught_up, "the push consumer's committed offsets", tries=300)
            await asyncio.to_thread(_run_reads, scene)


def _run_reads(scene: Scene) -> None:
    commands = read_commands(scene)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        rmq_runs = {name: pool.submit(scene.rmq_raw, *args, "--json") for name, (args, _) in commands.items()}
        admin_runs = {name: pool.submit(scene.admin_run, name, *args) for name, (_, args) in commands.items()}
        for name in commands:
            done = rmq_runs[name].result()
            scene.rmq_out[name] = json.loads(done.stdout) if done.returncode == 0 else done
            scene.admin_out[name] = admin_runs[name].result()


@pytest.fixture(scope="module", params=SETUPS)
def scene(request: pytest.FixtureRequest) -> Iterator[Scene]:
    provider_id: str = request.param
    release = _FIRST
    if release is None:
        skip_or_fail("no full Apache release selected (ROCKETMQ_VERSIONS): no mqadmin to compare with")
        return
    reason = providers.java_unavailable(release)
    if reason is not None:
        skip_or_fail(reason)
    with dedicated_cluster(provider_id) as (cluster, _launch, _spec):
        made = Scene(cluster, release)
        asyncio.run(_prepare_and_read(made))
        yield made


# -- parsing mqadmin's text ---------------------------------------------------------------------------------


def _rows(out: str) -> list[list[str]]:
    """A table's rows (its header starts with ``#``), split on blanks."""
    return [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]


def _equals_table(out: str) -> dict[str, str]:
    """``key = value`` lines (getConsumerConfig, getNamesrvConfig)."""
    return {k: v.strip() for k, v in re.findall(r"^(\w+)\s+=\s?(.*)$", out, re.M)}


def _fields(out: str) -> dict[str, str]:
    """``Name: value`` lines of a message mqadmin prints (queryMsgByUniqueKey, queryMsgByOffset)."""
    return {k: v.strip() for k, v in re.findall(r"^([A-Za-z ]+):\s+(.*)$", out, re.M)}


def _properties(printed: str) -> dict[str, str]:
    """Java's ``{K=V, K=V}`` of a message's properties."""
    return dict(item.split("=", 1) for item in printed.strip().strip("{}").split(", ") if item)


def _assert_same_message(rmq: dict[str, Any], out: str) -> None:
    fields = _fields(out)
    assert fields["Topic"] == rmq["topic"]
    assert (fields["Tags"], fields["Keys"]) == (f"[{rmq['tags']}]", f"[{' '.join(rmq['keys'])}]")
    assert (int(fields["Queue ID"]), int(fields["Queue Offset"])) == (rmq["queue_id"], rmq["queue_offset"])
    assert int(fields["CommitLog Offset"]) == rmq["commit_log_offset"]
    assert int(fields["Reconsume Times"]) == rmq["reconsume_times"]
    assert (fields["Born Host"], fields["Store Host"]) == (rmq["born_host"], rmq["store_host"])
    assert int(fields["System Flag"]) == rmq["sys_flag"]
    # mqadmin's pull adds MIN_OFFSET/MAX_OFFSET (queryMsgByOffset); every other property is the same
    props = _properties(fields["Properties"])
    assert {k: v for k, v in props.items() if k not in ("MIN_OFFSET", "MAX_OFFSET")} == rmq["properties"]


# -- read commands: the facts both print ---------------------------------------------------------------------


def check_topic_cluster_list(scene: Scene, rmq: Any, out: str) -> None:
    assert rmq == [scene.cluster.cluster_name]
    assert out.split() == rmq


def check_stats_all(scene: Scene, rmq: Any, out: str) -> None:
    # TPS are rates sampled at different moments; the counts and the accumulation are facts
    printed = {r[1]: (int(r[2]), int(r[5]), int(r[6])) for r in _rows(out) if r[0] == scene.topic}
    listed = {
        row["group"]: (row["accumulation"], row["in_msg_24h"], row["out_msg_24h"])
        for row in rmq
        if row["topic"] == scene.topic
    }
    assert set(listed) == {scene.group, scene.push_group}
    assert printed == listed


def check_query_cq(scene: Scene, rmq: Any, out: str) -> None:
    [answer] = rmq
    body = answer["body"]
    assert answer["broker_addr"] == scene.cluster.broker_addr
    in_queue = [s for s in scene.sent if s.message_queue.queue_id == scene.first.message_queue.queue_id]
    assert body["max_queue_index"] == len(in_queue)
    assert re.search(rf"^max: {body['max_queue_index']}, min: {body['min_queue_index']}$", out, re.M), out
    printed = [
        tuple(int(v) for v in m)
        for m in re.findall(r"physicOffset=(\d+), physicSize=(\d+), tagsCode=(-?\d+)", out)
    ]
    listed = [(e["physic_offset"], e["physic_size"], e["tags_code"]) for e in body["queue_data"]]
    assert printed == listed and len(listed) == len(in_queue)


def check_get_consumer_config(scene: Scene, rmq: Any, out: str) -> None:
    [entry] = rmq
    c = scene.cluster
    assert (entry["cluster"], entry["broker_name"], entry["broker_addr"]) == (
        c.cluster_name,
        c.broker_name,
        c.broker_addr,
    )
    assert re.search(rf"^=+{re.escape(c.cluster_name)}:{re.escape(c.broker_name)}=+$", out, re.M), out
    _assert_same_group_config(entry["config"], _equals_table(out))
    assert entry["config"]["group_name"] == scene.group


_GROUP_CONFIG_KEYS = {
    "group_name": "groupName",
    "consume_enable": "consumeEnable",
    "consume_from_min_enable": "consumeFromMinEnable",
    "consume_broadcast_enable": "consumeBroadcastEnable",
    "retry_queue_nums": "retryQueueNums",
    "retry_max_times": "retryMaxTimes",
    "broker_id": "brokerId",
    "which_broker_when_consume_slowly": "whichBrokerWhenConsumeSlowly",
    "notify_consumer_ids_changed_enable": "notifyConsumerIdsChangedEnable",
}


def _java_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _assert_same_group_config(config: dict[str, Any], printed: dict[str, str]) -> None:
    for ours, java in _GROUP_CONFIG_KEYS.items():
        assert printed[java] == _java_text(config[ours]), (java, printed, config)


def check_broker_consume_stats(scene: Scene, rmq: Any, out: str) -> None:
    [stats] = rmq
    assert stats["broker_addr"] == scene.cluster.broker_addr
    ours = {scene.group, scene.push_group}
    listed = {
        (
            q["topic"],
            q["group"],
            q["broker_name"],
            q["queue_id"],
            q["broker_offset"],
            q["consumer_offset"],
            q["diff"],
        )
        for q in stats["queues"]
        if q["topic"] == scene.topic and q["group"] in ours
    }
    printed = {
        (r[0], r[1], r[2], int(r[3]), int(r[4]), int(r[5]), int(r[6]))
        for r in _rows(out)
        if len(r) >= 7 and r[0] == scene.topic and r[1] in ours
    }
    assert len(listed) == 2 * QUEUES
    assert printed == listed
    assert sum(q[4] for q in listed if q[1] == scene.group) == SENT
    total = re.search(r"^Diff Total: (\d+)$", out, re.M)
    assert total is not None and int(total.group(1)) == stats["total_diff"], out


def check_producer_connection(scene: Scene, rmq: Any, out: str) -> None:
    [connection] = rmq
    assert connection["client_id"] == scene.producer_client_id
    # 0001  clientId  clientAddr  language  V4_9_8 (Java prints the version's name, rmq its number)
    [row] = [r for r in _rows(out) if re.fullmatch(r"\d{4}", r[0])]
    assert row[1:4] == [connection["client_id"], connection["client_addr"], connection["language"]]
    assert re.fullmatch(r"V\d+_\d+_\d+(_SNAPSHOT)?", row[4]), row


def check_consumer_connection(scene: Scene, rmq: Any, out: str) -> None:
    assert rmq["group"] == scene.push_group
    [connection] = rmq["connections"]
    assert connection["client_id"] == scene.push_client_id
    assert re.search(
        rf"^{re.escape(connection['client_id'])}\s+{re.escape(connection['client_addr'])}\s+"
        rf"{connection['language']}\s+V\S+$",
        out,
        re.M,
    ), out
    # "Below is subscription:", a "#Topic #SubExpression" header, one row per subscription, a blank line
    subscriptions = out[out.index("Below is subscription:") :].split("\n\n", 1)[0]
    printed = {r[0]: r[1] for r in _rows(subscriptions)[1:]}
    assert printed == rmq["subscriptions"] == {scene.topic: "TagA", f"%RETRY%{scene.push_group}": "*"}
    for java, ours in (("ConsumeType", "consume_type"), ("MessageModel", "message_model")):
        assert re.search(rf"^{java}: {rmq[ours]}$", out, re.M), out
    assert re.search(rf"^ConsumeFromWhere: {rmq['consume_from_where']}$", out, re.M), out


def check_query_msg_by_key(scene: Scene, rmq: Any, out: str) -> None:
    sent = scene.sent[1]
    [message] = rmq
    assert (message["msg_id"], message["keys"], message["queue_id"], message["queue_offset"]) == (
        sent.msg_id,
        ["key1"],
        sent.message_queue.queue_id,
        sent.queue_offset,
    )
    printed = [(r[0], int(r[1]), int(r[2])) for r in _rows(out)]
    assert printed == [(m["msg_id"], m["queue_id"], m["queue_offset"]) for m in rmq]


def check_query_msg_by_unique_key(scene: Scene, rmq: Any, out: str) -> None:
    assert (rmq["msg_id"], rmq["offset_msg_id"]) == (scene.first.msg_id, scene.first.offset_msg_id)
    _assert_same_message(rmq, out)
    assert f"UNIQ_KEY={rmq['unique_id']}" in out


def check_query_msg_by_offset(scene: Scene, rmq: Any, out: str) -> None:
    assert rmq["offset_msg_id"] == scene.first.offset_msg_id
    _assert_same_message(rmq, out)
    assert _fields(out)["OffsetID"] == rmq["offset_msg_id"]


def check_print_msg_by_queue(scene: Scene, rmq: Any, out: str) -> None:
    queue = scene.first.message_queue.queue_id
    expected = sorted((s.queue_offset, s.msg_id) for s in scene.sent if s.message_queue.queue_id == queue)
    assert [(m["queue_offset"], m["msg_id"]) for m in rmq] == expected
    printed = re.findall(
        r"^MSGID: (\S+) MessageExt \[brokerName=(\S+), queueId=(\d+), storeSize=\d+, queueOffset=(\d+),"
        r".*msgId=(\w+),.*BODY: (.*)$",
        out,
        re.M,
    )
    listed = [
        (
            m["msg_id"],
            scene.cluster.broker_name,
            str(m["queue_id"]),
            str(m["queue_offset"]),
            m["offset_msg_id"],
            m["body"],
        )
        for m in rmq
    ]
    assert printed == listed, out


def check_get_namesrv_config(scene: Scene, rmq: Any, out: str) -> None:
    assert list(rmq) == [scene.cluster.namesrv]
    assert re.search(rf"^=+{re.escape(scene.cluster.namesrv)}=+$", out, re.M), out
    assert _equals_table(out) == rmq[scene.cluster.namesrv]


def check_cluster_list(scene: Scene, rmq: Any, out: str) -> None:
    # TPS, hours of messages and disk use are sampled at different moments; names, ids and addresses are facts
    listed = [(b["cluster"], b["broker_name"], str(b["broker_id"]), b["addr"], b["version"]) for b in rmq]
    printed = [tuple(r[:5]) for r in _rows(out)]
    assert printed == listed
    c = scene.cluster
    assert listed == [(c.cluster_name, c.broker_name, "0", c.broker_addr, listed[0][4])]
    assert listed[0][4].startswith("V")


def check_allocate_mq(scene: Scene, rmq: Any, out: str) -> None:
    printed = json.loads(out[out.index("{") : out.rindex("}") + 1])["result"]
    listed = rmq["result"]

    def queues(result: dict[str, list[dict[str, Any]]]) -> dict[str, list[tuple[str, str, int]]]:
        return {
            client: sorted((q["topic"], q["brokerName"], q["queueId"]) for q in mqs)
            for client, mqs in result.items()
        }

    every = [(scene.topic, scene.cluster.broker_name, i) for i in range(QUEUES)]
    # rmq allocates over the sorted queues as a consumer's rebalance does: contiguous ranges in client order
    assert queues(listed) == {"10.0.0.1@a": every[:2], "10.0.0.2@b": every[2:]}
    # mqadmin hands AllocateMessageQueueAveragely the route's queues in HashSet order, unsorted (Apache's
    # AllocateMQSubCommand): each client gets as many, together all of them, but which ones depends on the
    # queues' hash order
    assert sorted(printed) == sorted(listed)
    assert sorted(q for mqs in queues(printed).values() for q in mqs) == every
    assert [len(mqs) for mqs in queues(printed).values()] == [len(mqs) for mqs in queues(listed).values()]


def check_producer(scene: Scene, rmq: Any, out: str) -> None:
    [table] = rmq
    assert table["broker_addr"] == scene.cluster.broker_addr
    listed = {
        (group, p["client_id"], p["remote_ip"], p["language"], str(p["version"]))
        for group, producers in table["groups"].items()
        for p in producers
    }
    printed = set(
        re.findall(
            r"^producer group \((\S+)\) instance : clientId=(\S+),remoteIP=(\S+),"
            r" language=(\w+), version=(\d+),",
            out,
            re.M,
        )
    )
    assert printed == listed
    assert (scene.producer_group, scene.producer_client_id) in {(g, cid) for g, cid, *_ in listed}


CHECKS = {
    "topicClusterList": check_topic_cluster_list,
    "statsAll": check_stats_all,
    "queryCq": check_query_cq,
    "getConsumerConfig": check_get_consumer_config,
    "brokerConsumeStats": check_broker_consume_stats,
    "producerConnection": check_producer_connection,
    "consumerConnection": check_consumer_connection,
    "queryMsgByKey": check_query_msg_by_key,
    "queryMsgByUniqueKey": check_query_msg_by_unique_key,
    "queryMsgByOffset": check_query_msg_by_offset,
    "printMsgByQueue": check_print_msg_by_queue,
    "getNamesrvConfig": check_get_namesrv_config,
    "clusterList": check_cluster_list,
    "allocateMQ": check_allocate_mq,
    "producer": check_producer,
}


@pytest.mark.parametrize("command", list(CHECKS))
def test_read_command_agrees(scene: Scene, command: str) -> None:
    rmq = scene.rmq_out[command]
    assert not isinstance(rmq, subprocess.CompletedProcess), (
        f"rmq {command} exited {rmq.returncode}:\n{rmq.stdout}\n{rmq.stderr}"
    )
    out = scene.admin_out[command].check().stdout
    log.info("rmq %s --json: %s\nmqadmin %s:\n%s", command, json.dumps(rmq), command, out)
    if command in SAMPLED:
        rmq, out = _agreeing_reads(scene, command, rmq, out)
    CHECKS[command](scene, rmq, out)


#: Commands that print the broker's sampled statistics: statsAll's 24-hour counts fall back to the sum
#: over the last minute, which moves each time the broker samples (every 10 s). Two reads taken seconds
#: apart may straddle a sample; such a pair is read again, back to back.
SAMPLED = {"statsAll"}
SAMPLED_READS = 4


def _agreeing_reads(scene: Scene, command: str, rmq: Any, out: str) -> tuple[Any, str]:
    for _ in range(SAMPLED_READS):
        try:
            CHECKS[command](scene, rmq, out)
            return rmq, out
        except AssertionError as exc:
            log.info("%s: the two reads differ (%s); reading both again", command, exc)
        rmq_args, admin_args = read_commands(scene)[command]
        rmq = scene.rmq(*rmq_args)
        out = scene.admin_run(command, *admin_args).check().stdout
    return rmq, out


# -- write commands: rmq writes, mqadmin reads the effect (and once the other way round) ---------------------


def _route_perms(out: str) -> set[int]:
    # fastjson's text, not JSON: brokerAddrs has unquoted numeric keys
    return {int(perm) for perm in re.findall(r'"perm":(\d+)', out)}


def _progress_rows(out: str, topic: str) -> dict[int, tuple[int, int]]:
    """consumerProgress's rows of ``topic``: queue id -> (broker offset, consumer offset)."""
    return {int(r[2]): (int(r[3]), int(r[4])) for r in _rows(out) if r[0] == topic and len(r) >= 6}


def test_update_sub_group_then_get_consumer_config(scene: Scene) -> None:
    c = scene.cluster
    group = unique_name("RmqVsUpdated")
    scene.rmq(
        "group",
        "update",
        group,
        "-b",
        c.broker_addr,
        "-r",
        "5",
        "-q",
        "2",
        "--consume-disable",
        "--no-broadcast",
    )
    printed = _equals_table(scene.admin_text("getConsumerConfig", "-g", group))
    assert printed["groupName"] == group
    assert (printed["retryMaxTimes"], printed["retryQueueNums"]) == ("5", "2")
    assert (printed["consumeEnable"], printed["consumeBroadcastEnable"]) == ("false", "false")


def test_mqadmin_update_sub_group_then_rmq_group_config(scene: Scene) -> None:
    c = scene.cluster
    group = unique_name("RmqVsByMqadmin")
    out = scene.admin_text(
        "updateSubGroup", "-b", c.broker_addr, "-g", group, "-r", "7", "-q", "3", "-s", "false"
    )
    assert "success" in out, out
    [entry] = scene.rmq("group", "config", group)
    assert entry["broker_addr"] == c.broker_addr
    config = entry["config"]
    assert (config["group_name"], config["retry_max_times"], config["retry_queue_nums"]) == (group, 7, 3)
    assert config["consume_enable"] is False


def test_update_topic_perm_then_topic_route(scene: Scene) -> None:
    c = scene.cluster
    topic = unique_name("RmqVsPerm")

    async def create() -> None:
        async with Admin(c.namesrv) as admin:
            await admin.create_topic(topic, broker_addr=c.broker_addr, read_queue_nums=2, write_queue_nums=2)

    asyncio.run(create())
    scene.rmq("topic", "update-perm", topic, "-p", "4", "-b", c.broker_addr)

    async def perm_on_namesrv() -> None:  # the broker registers the change with the NameServer
        async with Admin(c.namesrv) as admin:

            async def read_only() -> bool:
                return {q.perm for q in (await admin.topic_route(topic)).queue_datas} == {4}

            await _until(read_only, "the new perm in the route")

    asyncio.run(perm_on_namesrv())
    assert _route_perms(scene.admin_text("topicRoute", "-t", topic)) == {4}


def test_wipe_then_add_write_perm_then_topic_route(scene: Scene) -> None:
    """wipeWritePerm and addWritePerm change the NameServer's route only (the broker keeps its own permission,
    so brokerStatus does not show them): mqadmin's topicRoute reads the queues read-only, then read-write."""
    c = scene.cluster
    try:
        wiped = scene.rmq("cluster", "wipe-write-perm", c.broker_name)
        log.info("rmq cluster wipe-write-perm: %s", wiped)
        assert _route_perms(scene.admin_text("topicRoute", "-t", scene.topic)) == {4}
        added = scene.rmq("cluster", "add-write-perm", c.broker_name)
        log.info("rmq cluster add-write-perm: %s", added)
        assert _route_perms(scene.admin_text("topicRoute", "-t", scene.topic)) == {6}
    finally:

        async def restore() -> None:
            async with Admin(c.namesrv) as admin:
                await admin.add_write_perm(c.broker_name)

        asyncio.run(restore())


async def _send_more(scene: Scene, count: int) -> None:
    async with Producer(unique_name("RmqVsMore"), scene.cluster.namesrv) as producer:
        for i in range(count):
            await producer.send(Message(scene.topic, f"more{i}".encode(), tags="TagC"))


def test_skip_accumulated_then_consumer_progress(scene: Scene) -> None:
    asyncio.run(_send_more(scene, 3))
    before = _progress_rows(scene.admin_text("consumerProgress", "-g", scene.group), scene.topic)
    assert sum(broker - consumer for broker, consumer in before.values()) == 3, before
    scene.rmq("group", "skip-accumulated", scene.group, scene.topic)
    out = scene.admin_text("consumerProgress", "-g", scene.group)
    after = _progress_rows(out, scene.topic)
    assert sorted(after) == list(range(QUEUES)), out
    assert all(broker == consumer for broker, consumer in after.values()), out
    assert {q: broker for q, (broker, _) in after.items()} == {q: broker for q, (broker, _) in before.items()}
    assert re.search(r"^(Consume )?Diff Total: 0$", out, re.M), out


def test_clone_group_offset_then_consumer_progress(scene: Scene) -> None:
    """A group of its own gets offset 1 on every queue, then rmq copies its offsets onto the push group
    (which had committed the end of every queue); mqadmin reads the push group's progress.

    Not the scene's group: ``skip-accumulated`` reset it while offline, and from 5.2 on Apache's broker
    (``useServerSideResetOffset``) drops that group's commits until one of its consumers pulls."""
    source = unique_name("RmqVsCloneSource")

    async def rewind() -> None:
        async with Admin(scene.cluster.namesrv) as admin:
            # 5.x brokers take offsets only of a group they know
            config = SubscriptionGroupConfig(group_name=source)
            await admin.update_subscription_group(config, broker_addr=scene.cluster.broker_addr)
            for queue in range(QUEUES):
                await admin.update_consumer_offset(source, scene.topic, queue, 1)

    asyncio.run(rewind())
    scene.rmq("group", "clone-offset", "-s", source, "-d", scene.push_group, "-t", scene.topic)
    out = scene.admin_text("consumerProgress", "-g", scene.push_group)
    rows = _progress_rows(out, scene.topic)
    assert {q: consumer for q, (_, consumer) in rows.items()} == dict.fromkeys(range(QUEUES), 1), out


def test_delete_sub_group_then_get_consumer_config(scene: Scene) -> None:
    c = scene.cluster
    group = unique_name("RmqVsDeleted")
    scene.rmq("group", "update", group, "-b", c.broker_addr)
    assert [e["config"]["group_name"] for e in scene.rmq("group", "config", group)] == [group]
    scene.rmq("group", "delete", group, "-b", c.broker_addr)
    # mqadmin asks every master for the group and prints nothing (exit 0) where none has it
    out = scene.admin_text("getConsumerConfig", "-g", group)
    assert group not in out and "groupName" not in out, out
