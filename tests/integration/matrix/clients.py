"""One adapter per client of the matrix, each offering the same four operations.

Every adapter runs the real client the way its users do: the project's API in-process; ``rmq`` and
mqadmin as commands; the Java, C++ and Go clients as peer programs speaking one JSON-lines protocol
(:mod:`tests.integration.cpp_peer.runner`). What an operation returns is plain data the cell compares with
what the project's own reader, admin and the set-up say.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import logging
import re
import sys
from collections.abc import Sequence
from typing import Any, Protocol

from admin import Admin
from consumer import ConsumerConfig, PushConsumer
from consumer.testing import Received
from producer import Message, Producer, SendStatus
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.codes import SerializeType
from tests.integration.apache import mqadmin
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters.model import Cluster
from tests.integration.clusters.python_servers import REPO_ROOT, python_env
from tests.integration.cpp_peer.runner import PeerClient, PeerResult

log = logging.getLogger("tests.matrix.clients")

#: Seconds a consumer gets to receive every message of a cell.
CONSUME_TIMEOUT_S = 60.0
PEER_TIMEOUT_S = 60.0


@dataclasses.dataclass(frozen=True)
class Got:
    """A received message as a client reported it."""

    body: bytes
    tags: str | None
    keys: str | None
    properties: dict[str, str]


class MatrixClient(Protocol):
    name: str

    async def send(
        self, cluster: Cluster, messages: Sequence[Message], serialize: SerializeType
    ) -> list[str]:
        """Send each message (one topic); the message ids of those acknowledged SEND_OK."""
        ...

    async def consume(
        self, cluster: Cluster, topic: str, group: str, count: int, serialize: SerializeType
    ) -> list[Got]:
        """Consume ``topic`` from its first offset as ``group`` until ``count`` messages arrived."""
        ...

    async def route(self, cluster: Cluster, topic: str, serialize: SerializeType) -> set[tuple[str, int]]:
        """The (broker name, queue id) pairs the client would publish ``topic`` to."""
        ...

    async def clusters(self, cluster: Cluster, serialize: SerializeType) -> set[tuple[str, str, str]]:
        """(cluster, broker name, master address) of every broker the client is told about."""
        ...


# --------------------------------------------------------------------------------- the project's Python API


class ProjectClient:
    name = "project"

    async def send(
        self, cluster: Cluster, messages: Sequence[Message], serialize: SerializeType
    ) -> list[str]:
        async with Producer("MatrixProducer", cluster.namesrv, serialize_type=serialize) as producer:
            results = [await producer.send(message) for message in messages]
        return [r.msg_id for r in results if r.status is SendStatus.SEND_OK]

    async def consume(
        self, cluster: Cluster, topic: str, group: str, count: int, serialize: SerializeType
    ) -> list[Got]:
        received = Received()
        consumer = PushConsumer(
            group,
            cluster.namesrv,
            consume_from="FIRST_OFFSET",
            config=ConsumerConfig(serialize_type=serialize),
        )
        consumer.subscribe(topic, "*")
        consumer.register_listener(received.handler("project"))
        async with consumer:
            await received.wait_for(count, timeout=CONSUME_TIMEOUT_S)
            await asyncio.sleep(1.0)  # a duplicate would arrive now
        return [Got(m.body, m.tags, _keys(m.keys), dict(m.properties)) for m in received.messages]

    async def route(self, cluster: Cluster, topic: str, serialize: SerializeType) -> set[tuple[str, int]]:
        async with Admin(cluster.namesrv, serialize_type=serialize) as admin:
            route = await admin.topic_route(topic)
        return {(q.broker_name or "", i) for q in route.queue_datas for i in range(q.write_queue_nums)}

    async def clusters(self, cluster: Cluster, serialize: SerializeType) -> set[tuple[str, str, str]]:
        async with Admin(cluster.namesrv, serialize_type=serialize) as admin:
            info = await admin.cluster_info()
        return {
            (name, broker, info.broker_addr_table[broker].master_addr() or "")
            for name, brokers in info.cluster_addr_table.items()
            for broker in brokers
        }


def _keys(keys: Sequence[str] | str | None) -> str | None:
    if keys is None or isinstance(keys, str):
        return keys or None
    return " ".join(keys) or None


# ----------------------------------------------------------------------------------------------------- rmq


class RmqClient:
    """``rmq`` in its own process; ``ROCKETMQ_SERIALIZE_TYPE`` picks the headers, as for Apache's tools."""

    name = "rmq"

    async def _run(self, serialize: SerializeType, *args: str, timeout: float = 90.0) -> str:
        env = python_env()
        env["ROCKETMQ_SERIALIZE_TYPE"] = serialize.name
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cli.main",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=REPO_ROOT,
        )
        try:
            stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        if process.returncode != 0:
            raise AssertionError(f"rmq {' '.join(args)} exited {process.returncode}: {stderr.decode()}")
        return stdout.decode()

    async def send(
        self, cluster: Cluster, messages: Sequence[Message], serialize: SerializeType
    ) -> list[str]:
        ids = []
        for message in messages:
            args = ["send", message.topic, message.body.decode(), "-n", cluster.namesrv, "--json"]
            if message.tags:
                args += ["--tags", message.tags]
            for key in message.keys:
                args += ["-k", key]
            for name, value in message.properties.items():
                args += ["-p", f"{name}={value}"]
            result = json.loads(await self._run(serialize, *args))
            if result["status"] == "SEND_OK":
                ids.append(result["msg_id"])
        return ids

    async def consume(
        self, cluster: Cluster, topic: str, group: str, count: int, serialize: SerializeType
    ) -> list[Got]:
        out = await self._run(
            serialize,
            "consume", topic, "-g", group, "--from", "earliest", "--count", str(count), "--json",
            "-n", cluster.namesrv,
            timeout=CONSUME_TIMEOUT_S,
        )  # fmt: skip
        got = []
        for line in out.splitlines():
            record = json.loads(line)
            body = record["body"].encode() if record["body_encoding"] == "utf-8" else b""
            if record["body_encoding"] != "utf-8":
                body = base64.b64decode(record["body"])
            got.append(Got(body, record["tags"], _keys(record["keys"]), record["properties"]))
        return got

    async def route(self, cluster: Cluster, topic: str, serialize: SerializeType) -> set[tuple[str, int]]:
        route = json.loads(await self._run(serialize, "route", topic, "-n", cluster.namesrv, "--json"))
        return {(q["brokerName"], i) for q in route["queueDatas"] for i in range(q["writeQueueNums"])}

    async def clusters(self, cluster: Cluster, serialize: SerializeType) -> set[tuple[str, str, str]]:
        rows = json.loads(await self._run(serialize, "clusters", "-n", cluster.namesrv, "--json"))
        return {(r["cluster"], r["broker_name"], r["addr"]) for r in rows if r["broker_id"] == 0}


# ------------------------------------------------------------------------------ peers: Java, C++ and Go


def _spec(message: Message) -> dict[str, Any]:
    return PeerClient.message(
        message.body,
        topic=message.topic,
        tags=message.tags,
        keys=list(message.keys) or None,
        properties=dict(message.properties),
    )


def _got(result: PeerResult) -> list[Got]:
    return [Got(m.body, m.tags, m.keys, dict(m.properties)) for m in result.check().messages()]


class PeerMatrixClient:
    """A client driven through the peer protocol.

    ``peers`` gives the program per serialization (the Java peer's is a JVM property, so one program each);
    ``serialize_args`` what to add to every command for it (the Go peer's ``--serialize``);
    ``consume_args`` what makes a push consumer start from the first offset, in that peer's words.
    """

    def __init__(
        self,
        name: str,
        peers: dict[SerializeType, PeerClient],
        *,
        serialize_args: dict[SerializeType, list[str]] | None = None,
        consume_args: Sequence[str] = (),
    ) -> None:
        self.name = name
        self._peers = peers
        self._serialize_args = serialize_args or {}
        self._consume_args = list(consume_args)

    def peer(self, serialize: SerializeType) -> PeerClient:
        return self._peers[serialize]

    def peers(self) -> list[PeerClient]:
        return list({id(p): p for p in self._peers.values()}.values())

    def _args(self, serialize: SerializeType) -> list[str]:
        return self._serialize_args.get(serialize, [])

    async def send(
        self, cluster: Cluster, messages: Sequence[Message], serialize: SerializeType
    ) -> list[str]:
        [topic] = {m.topic for m in messages}
        specs = [_spec(m) for m in messages]
        result = await asyncio.to_thread(
            self.peer(serialize).send_sync,
            cluster.namesrv,
            topic,
            specs,
            extra=self._args(serialize),
            timeout=PEER_TIMEOUT_S,
        )
        return [o.msg_id for o in result.check().send_results() if o.status == "SEND_OK"]

    async def consume(
        self, cluster: Cluster, topic: str, group: str, count: int, serialize: SerializeType
    ) -> list[Got]:
        result = await asyncio.to_thread(
            self.peer(serialize).push_consume,
            cluster.namesrv,
            group,
            topic,
            count,
            properties=["origin"],  # the C++ API reads user properties by name only
            extra=["--linger", "1", *self._consume_args, *self._args(serialize)],
            timeout=CONSUME_TIMEOUT_S,
        )
        return _got(result)

    async def route(self, cluster: Cluster, topic: str, serialize: SerializeType) -> set[tuple[str, int]]:
        result = await asyncio.to_thread(
            self.peer(serialize).run,
            "route",
            ["--topic", topic, *self._args(serialize)],
            namesrv=cluster.namesrv,
            timeout=PEER_TIMEOUT_S,
        )
        [route] = result.check().of("route")
        return {(q["broker_name"], int(q["queue_id"])) for q in route["queues"]}

    async def clusters(self, cluster: Cluster, serialize: SerializeType) -> set[tuple[str, str, str]]:
        result = await asyncio.to_thread(
            self.peer(serialize).run,
            "clusters",
            self._args(serialize),
            namesrv=cluster.namesrv,
            timeout=PEER_TIMEOUT_S,
        )
        [info] = result.check().of("clusters")
        brokers = info["brokers"]
        return {
            (name, broker, str(brokers[broker]["addrs"].get("0", "")))
            for name, names in info["clusters"].items()
            for broker in names
        }


# ------------------------------------------------------------------------------------------------ mqadmin

_SEND_ROW = re.compile(r"^\s*(\S+)\s+(\d+)\s+(SEND_OK|\w+_TIMEOUT|SLAVE_NOT_AVAILABLE)\s+(\S+)", re.M)
_CLUSTER_ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\d+)\s+(\d+\.\d+\.\d+\.\d+:\d+)\s+V\d", re.M)
_ROUTE_JSON = re.compile(r"\{.*\}", re.S)
#: What Apache's producer raises when its send budget ran out before an attempt went out.
_CALL_TIMEOUT = "sendDefaultImpl call timeout"


class MqadminClient:
    """Apache's mqadmin of a release (one JVM per command), parsed from the text it prints."""

    name = "mqadmin"

    def __init__(self, release: ApacheRelease) -> None:
        self.release = release

    async def _run(self, serialize: SerializeType, command: str, args: list[str], namesrv: str) -> str:
        return (await self._call(serialize, command, args, namesrv)).stdout

    async def _call(
        self, serialize: SerializeType, command: str, args: list[str], namesrv: str
    ) -> mqadmin.AdminRun:
        run = await asyncio.to_thread(
            mqadmin.run, self.release, command, args, namesrv=namesrv, serialize=serialize.name
        )
        return run.check()

    async def send(
        self, cluster: Cluster, messages: Sequence[Message], serialize: SerializeType
    ) -> list[str]:
        ids = []
        for message in messages:
            args = ["-t", message.topic, "-p", message.body.decode()]
            if message.tags:
                args += ["-c", message.tags]
            if message.keys:
                args += ["-k", " ".join(message.keys)]
            run = await self._call(serialize, "sendMessage", args, cluster.namesrv)
            if _SEND_ROW.search(run.stdout) is None and _CALL_TIMEOUT in run.stderr:
                # A loaded machine can start sendMessage's producer so slowly that its 3 s budget runs out
                # before the first attempt goes out (seen in CI: the broker saw the producer connect, no
                # send). Had an attempt gone out, its copy would show up twice and the cell would fail.
                log.warning("mqadmin sendMessage timed out before sending; running it again")
                run = await self._call(serialize, "sendMessage", args, cluster.namesrv)
            found = _SEND_ROW.search(run.stdout)
            if found is None:
                raise AssertionError(
                    f"mqadmin sendMessage printed no result row:\n{run.stdout}\nstderr:\n{run.stderr[-3000:]}"
                )
            if found.group(3) == "SEND_OK":
                ids.append(found.group(4))
        return ids

    async def consume(
        self, cluster: Cluster, topic: str, group: str, count: int, serialize: SerializeType
    ) -> list[Got]:
        raise NotImplementedError  # not applicable: see cells.not_applicable

    async def route(self, cluster: Cluster, topic: str, serialize: SerializeType) -> set[tuple[str, int]]:
        out = await self._run(serialize, "topicRoute", ["-t", topic], cluster.namesrv)
        found = _ROUTE_JSON.search(out)
        if found is None:
            raise AssertionError(f"mqadmin topicRoute printed no route:\n{out}")
        # fastjson's pretty print, with integer map keys: the project's fastjson reader takes it as it is.
        route = TopicRouteData.from_json(found.group(0).encode())
        return {(q.broker_name or "", i) for q in route.queue_datas for i in range(q.write_queue_nums)}

    async def clusters(self, cluster: Cluster, serialize: SerializeType) -> set[tuple[str, str, str]]:
        out = await self._run(serialize, "clusterList", [], cluster.namesrv)
        return {(m.group(1), m.group(2), m.group(4)) for m in _CLUSTER_ROW.finditer(out) if m.group(3) == "0"}
