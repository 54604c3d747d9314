"""mqadmin 5.5.0's lite commands and the project's (``admin.lite``) against Apache's 5.5.0 broker.

The broker is given something to report first: a parent topic with ``message.type=LITE``, a group bound to
it (``lite.bind.topic``, set with mqadmin ``updateSubGroup``), three messages sent by the project's producer
with the ``__LITE_TOPIC`` property (the broker puts them into the lite topic's light queue once its
``enableLmq`` and ``enableMultiDispatch`` are on, set live for the test and restored after), and a lite
subscription of a client to three lite topics (a raw LITE_SUBSCRIPTION_CTL, the request Apache's proxy
sends for its gRPC consumers).

Then mqadmin runs every lite command (getBrokerLiteInfo, getParentTopicInfo, getLiteTopicInfo,
getLiteGroupInfo with and without a lite topic, getLiteClientInfo for a subscribed and an unknown client,
triggerLiteDispatch, and getParentTopicInfo of a topic that is not LITE), each followed by the project's
same read. Everything is captured off the loopback interface (where the capture can run):

* every frame, Java's and the project's, re-encodes byte for byte;
* mqadmin's requests parse with the project's headers, cover them, render them and order their keys as
  Java did, and the project's request for the same arguments carries the very same ext map;
* every answer body decodes with the project's body class and re-encodes to the broker's bytes;
* what mqadmin prints for each broker is what the project decoded from its own answer.

On releases before 5.5 the project refuses the lite reads before sending (:class:`BrokerVersionError`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from collections.abc import Callable, Collection, Sequence
from typing import TypeVar

import pytest

from admin import Admin, BrokerAnswer, BrokerVersionError, TopicNotFoundError
from cli.render import timestamp
from producer import Message, Producer
from rocketmq_wire import RequestCode, ResponseCode
from rocketmq_wire.bodies import decode_response_body
from rocketmq_wire.codes import LanguageCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers import header_for_request
from rocketmq_wire.topics import lite_queue_name
from tests.header_checks import header_mismatches, key_order_mismatch
from tests.integration.apache import mqadmin
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters.fixture import PROVIDERS
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.probe import eventually
from tests.integration.clusters.wiretap import Frame, WireTap, unavailable_reason

pytestmark = pytest.mark.integration

T = TypeVar("T")
Run = Callable[..., mqadmin.AdminRun]


def _version(release: ApacheRelease | None) -> tuple[int, ...]:
    return tuple(int(part) for part in release.version.split(".")) if release is not None else (0,)


LITE_SINCE = (5, 5)
LITE_SETUPS = [s for s in PROVIDERS if s.family == "binaries" and _version(s.release) >= LITE_SINCE]
OLDER_SETUPS = [s for s in PROVIDERS if s.family == "binaries" and _version(s.release) < LITE_SINCE]

LITE_CODES = frozenset(range(RequestCode.GET_BROKER_LITE_INFO, RequestCode.TRIGGER_LITE_DISPATCH + 1))
#: What the broker needs to write a lite topic's light queue (both off by default).
LMQ_SETTINGS = ("enableLmq", "enableMultiDispatch")
MESSAGES = 3
CLIENT = "lite-client@it"
SUBSCRIBED = ("lite-1", "lite-2", "lite-3")
TIMEOUT_MS = 10_000


def _release(cluster: Cluster) -> ApacheRelease:
    spec = next(s for s in PROVIDERS if s.id == cluster.provider)
    assert spec.release is not None
    return spec.release


_DATE, _TIME = re.compile(r"\d{4}-\d\d-\d\d"), re.compile(r"\d\d:\d\d:\d\d,\d{3}")


@dataclasses.dataclass
class Printed:
    """What mqadmin printed for one broker: its row's columns (a date-time kept whole) and the lines under
    the row up to the next broker's."""

    row: list[str]
    below: list[str] = dataclasses.field(default_factory=list)


def _per_broker(stdout: str, brokers: Collection[str]) -> dict[str, Printed]:
    """mqadmin's output by broker (name or address: what its rows start with)."""
    found: dict[str, Printed] = {}
    current: Printed | None = None
    for line in stdout.splitlines():
        columns: list[str] = []
        for token in line.split():
            if columns and _TIME.fullmatch(token) and _DATE.fullmatch(columns[-1]):
                columns[-1] += " " + token
            else:
                columns.append(token)
        if columns and columns[0] in brokers:
            current = found[columns[0]] = Printed(columns[1:])
        elif current is not None and line.strip():
            current.below.append(line.strip())
    return found


def _answered(answers: Sequence[BrokerAnswer[T]]) -> list[T]:
    assert all(a.error is None for a in answers), [a.error for a in answers]
    return [a.answer for a in answers if a.answer is not None]


def _check_frames(frames: Sequence[Frame]) -> int:
    """Byte-for-byte re-encoding, headers held to Java's, bodies re-encoded; how many lite requests Java
    sent."""
    commands = [(f, f.command()) for f in frames]
    differing = [cmd.code for f, cmd in commands if cmd.encode() != f.data]
    assert not differing, f"frames that re-encode differently: {differing}"
    requests = {(f.server, f.connection, c.opaque): c for f, c in commands if f.to_server}
    answers = {
        (f.server, f.connection, c.opaque): c for f, c in commands if not f.to_server and c.is_response
    }
    java = [(k, c) for k, c in requests.items() if c.code in LITE_CODES and c.language == LanguageCode.JAVA]
    ours = [c for c in requests.values() if c.code in LITE_CODES and c.language == LanguageCode.PYTHON]
    our_maps = {(c.code, tuple((c.ext_fields or {}).items())) for c in ours}
    problems: list[str] = []
    for key, cmd in java:
        assert cmd.serialize_type.name == "JSON"
        header_cls = header_for_request(cmd.code)
        if header_cls is not None:
            problems += header_mismatches(cmd, header_cls)
            mismatch = key_order_mismatch(cmd, header_cls)
            if mismatch is not None:
                problems.append(f"key order {mismatch}")
        if (cmd.code, tuple((cmd.ext_fields or {}).items())) not in our_maps:
            problems.append(
                f"no request of the project's like mqadmin's {cmd.code} {dict(cmd.ext_fields or {})}"
            )
        answer = answers.get(key)
        assert answer is not None, f"no answer to {cmd.code} was captured"
        if answer.code == ResponseCode.SUCCESS and answer.body:
            body = decode_response_body(cmd.code, answer.body)
            assert body is not None and body.to_json() == answer.body, (cmd.code, answer.body)
    assert not problems, problems
    return len(java)


@pytest.mark.parametrize("cluster", LITE_SETUPS, ids=[s.id for s in LITE_SETUPS], indirect=True)
async def test_mqadmins_lite_commands_and_the_projects_read_the_same(cluster: Cluster) -> None:
    release = _release(cluster)
    parent, group, lite = unique_name("LiteParent"), unique_name("LiteGroup"), SUBSCRIBED[0]

    def run(command: str, *args: str) -> mqadmin.AdminRun:
        return mqadmin.run(release, command, list(args), namesrv=cluster.namesrv).check()

    async with Admin(cluster.namesrv, timeout_ms=TIMEOUT_MS) as admin:
        before = {b.addr: await admin.broker_config(b.addr) for b in cluster.brokers}
        for broker in cluster.brokers:
            await admin.update_broker_config(broker.addr, dict.fromkeys(LMQ_SETTINGS, "true"))
        try:
            await admin.create_topic(
                parent, cluster=cluster.cluster_name, attributes={"message.type": "LITE"}, read_queue_nums=2
            )
            await eventually(
                lambda: admin.topic_route(parent),
                lambda route: {q.broker_name for q in route.queue_datas} == cluster.broker_names,
                timeout_s=40.0,
                what=f"route of {parent}",
                retry_on=(TopicNotFoundError,),
            )
            await asyncio.to_thread(
                run, "updateSubGroup", "-c", cluster.cluster_name, "-g", group, "--attributes",
                f"+lite.bind.topic={parent}",
            )  # fmt: skip
            async with Producer(unique_name("LiteProducer"), cluster.namesrv) as producer:
                for n in range(MESSAGES):
                    await producer.send(
                        Message(parent, f"lite {n}".encode(), properties={"__LITE_TOPIC": lite})
                    )
            # A client's lite subscription, as Apache's proxy registers one (on the admin's connection).
            ctl = {"action": "PARTIAL_ADD", "clientId": CLIENT, "group": group, "topic": parent}
            body = json.dumps({"subscriptionSet": [{**ctl, "liteTopicSet": list(SUBSCRIBED), "version": 0}]})
            for broker in cluster.brokers:
                request = RemotingCommand.request(RequestCode.LITE_SUBSCRIPTION_CTL, body=body.encode())
                answer = await admin.rpc.server(broker.addr, request)
                assert answer.code == ResponseCode.SUCCESS, answer.remark

            ports = {int(cluster.namesrv.rpartition(":")[2]): "namesrv"}
            ports |= {int(b.addr.rpartition(":")[2]): b.name for b in cluster.brokers}
            tap = WireTap(ports).start() if unavailable_reason() is None else None
            try:
                await _compare(run, admin, cluster, parent, group, lite)
            finally:
                frames = await asyncio.to_thread(tap.stop, 0.5) if tap is not None else []
        finally:
            for broker in cluster.brokers:
                await admin.update_broker_config(
                    broker.addr, {key: before[broker.addr].get(key, "false") for key in LMQ_SETTINGS}
                )
    if tap is not None:
        # mqadmin's lite requests: 9 commands, each asking every broker once
        checked = _check_frames(frames)
        print(
            f"\n{cluster.provider}: {checked} lite requests of mqadmin and their answers checked"
        )  # pytest -s
        assert checked == 9 * len(cluster.brokers)


async def _compare(run: Run, admin: Admin, cluster: Cluster, parent: str, group: str, lite: str) -> None:
    """Each mqadmin command, then the project's read of the same, compared broker by broker."""
    names = sorted(cluster.broker_names)

    # getBrokerLiteInfo -c -d: a row per master, then its topic and group meta as JSON
    printed = await asyncio.to_thread(run, "getBrokerLiteInfo", "-c", cluster.cluster_name, "-d")
    infos = await admin.cluster_lite_info(cluster.cluster_name)
    shown = _per_broker(printed.stdout, cluster.broker_addrs)
    assert sorted(shown) == sorted(a.addr for a in infos)
    for addr, info in zip([a.addr for a in infos], _answered(infos), strict=True):
        figures = [info.store_type, info.max_lmq_num, info.current_lmq_num, info.lite_subscription_count]
        figures += [info.order_info_count, info.cq_table_size, info.offset_table_size, info.event_map_size]
        assert shown[addr].row == [str(f) for f in figures], (shown[addr], info)
        topic_meta, group_meta = (line.partition(": ")[2] for line in shown[addr].below)
        assert (json.loads(topic_meta), json.loads(group_meta)) == (info.topic_meta, info.group_meta)
        assert info.topic_meta is not None and info.topic_meta[parent] == -1
        assert info.group_meta is not None and info.group_meta[parent] == [group]
        assert info.lite_subscription_count >= 1 and info.current_lmq_num >= 1

    # getParentTopicInfo: TTL, lite topic count, light queues, bound groups
    printed = await asyncio.to_thread(run, "getParentTopicInfo", "-p", parent)
    shown = _per_broker(printed.stdout, names)
    parents = _answered(await admin.parent_topic_info(parent))
    for name, info in zip(names, parents, strict=True):
        assert shown[name].row == [str(info.ttl), str(info.lite_topic_count), str(info.lmq_num), f"[{group}]"]
    assert sum(p.lite_topic_count for p in parents) >= 1

    # getLiteTopicInfo -s: the light queue's offsets, sharding, subscribers
    printed = await asyncio.to_thread(run, "getLiteTopicInfo", "-p", parent, "-l", lite, "-s")
    assert f"[{lite_queue_name(parent, lite)}]" in printed.stdout
    shown = _per_broker(printed.stdout, names)
    stored = 0
    for name, info in zip(names, _answered(await admin.lite_topic_info(parent, lite)), strict=True):
        offsets, members = info.topic_offset, info.subscriber
        assert offsets is not None and members is not None
        when = timestamp(offsets.last_update_timestamp) or "-"
        row = [str(offsets.min_offset), str(offsets.max_offset), when, str(info.sharding_to_broker).lower()]
        assert shown[name].row == [*row, str(len(members))]
        assert [(m.client_id, m.group) for m in members] == [(CLIENT, group)]
        assert shown[name].below == [f"[{CLIENT}@{group}]"]
        stored += offsets.max_offset
    assert stored == MESSAGES

    # getLiteGroupInfo -l: the group has no offset on the lite topic yet; then its top K
    printed = await asyncio.to_thread(run, "getLiteGroupInfo", "-p", parent, "-g", group, "-l", lite)
    lag = await admin.lite_group_info(parent, group, lite)
    assert all(a.answer is not None and a.answer.lite_topic_offset_wrapper is None for a in lag.brokers)
    assert [p.row for p in _per_broker(printed.stdout, names).values()] == [["-"] * 4 for _ in names]
    assert f"Total Lag Count: {lag.total_lag_count}\n" in printed.stdout
    printed = await asyncio.to_thread(run, "getLiteGroupInfo", "-p", parent, "-g", group)
    top = await admin.lite_group_info(parent, group)
    assert f"Total Lag Count: {top.total_lag_count}\n" in printed.stdout
    listed = re.findall(r"^\d+\s+(\S+)\s+(\d+)", printed.stdout, re.M)
    assert listed == [
        (x.lite_topic, str(x.lag_count)) for x in (*top.lag_count_top_k, *top.lag_timestamp_top_k)
    ]

    # getLiteClientInfo -s: the subscribed client's lite topics (light queue names, in the set's order)
    printed = await asyncio.to_thread(run, "getLiteClientInfo", "-p", parent, "-g", group, "-c", CLIENT, "-s")
    shown = _per_broker(printed.stdout, names)
    for name, info in zip(names, _answered(await admin.lite_client_info(parent, group, CLIENT)), strict=True):
        assert info.lite_topic_set is not None
        assert sorted(info.lite_topic_set) == sorted(lite_queue_name(parent, t) for t in SUBSCRIBED)
        assert info.lite_topic_count == len(SUBSCRIBED)
        assert shown[name].row[0] == str(info.lite_topic_count)
        assert shown[name].below == [f"Lite Topics: [{', '.join(info.lite_topic_set)}]"]
    # ... and of a client without any: a count of -1, printed N/A
    printed = await asyncio.to_thread(run, "getLiteClientInfo", "-p", parent, "-g", group, "-c", "nobody@it")
    nobody = _answered(await admin.lite_client_info(parent, group, "nobody@it"))
    assert [(i.lite_topic_count, i.lite_topic_set) for i in nobody] == [(-1, None)] * len(names)
    assert [p.row for p in _per_broker(printed.stdout, names).values()] == [["N/A"] * 3 for _ in names]

    # getParentTopicInfo of a topic that is not LITE: each broker refuses it
    printed = await asyncio.to_thread(run, "getParentTopicInfo", "-p", "TBW102")
    refused = await admin.parent_topic_info("TBW102")
    assert all(f"[{a.broker_name}] error." in printed.stdout for a in refused)
    assert all(a.error is not None and "INVALID_PARAMETER" in a.error for a in refused), refused

    # triggerLiteDispatch: every broker dispatched
    printed = await asyncio.to_thread(run, "triggerLiteDispatch", "-p", parent, "-g", group)
    assert re.findall(r"^(\S+)\s+dispatched", printed.stdout, re.M) == names
    assert [a.error for a in await admin.trigger_lite_dispatch(parent, group)] == [None] * len(names)


@pytest.mark.parametrize("cluster", OLDER_SETUPS, ids=[s.id for s in OLDER_SETUPS], indirect=True)
async def test_a_broker_before_5_5_is_refused_the_lite_reads(cluster: Cluster) -> None:
    async with Admin(cluster.namesrv, timeout_ms=TIMEOUT_MS) as admin:
        version = "V" + cluster.version.replace(".", "_")
        with pytest.raises(BrokerVersionError, match=rf"needs a V5_5_0 or later broker; .* is {version}"):
            await admin.broker_lite_info(cluster.broker_addr)
