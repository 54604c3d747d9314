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
from tests.integration.java_peer.build import JavaClient, Step

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
        return _cluster_rows(info)


def _cluster_rows(info: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(cluster, broker name, master address) of a peer's ``clusters`` line."""
    brokers = info["brokers"]
    return {
        (name, broker, str(brokers[broker]["addrs"].get("0", "")))
        for name, names in info["clusters"].items()
        for broker in names
    }


#: The order of a serialization's steps in its JVM: a consumer last, so that nothing it may still print
#: after its own step falls into another's (it prints nothing once its step ended, but this costs nothing).
STEP_ORDER = ("send", "route", "clusters", "consume")


@dataclasses.dataclass
class _Batch:
    """The cells of one serialization: which operations are still to come, and those waiting for the run."""

    pending: set[str]
    submitted: dict[str, tuple[Step, asyncio.Future[PeerResult]]] = dataclasses.field(default_factory=dict)
    started: bool = False


class JavaStepsMatrixClient:
    """Apache's Java client, every cell of one serialization run as a step of one JVM (``rmqit.Peer steps``).

    A JVM start is about a second of CPU, most of what a cell's command spends; one JVM per command made the
    Java column of the matrix (8 cells per set-up) one of the largest users of CI's two cores. The cells are
    still separate: each asks for its own operation with its own topic and group, through a client of its
    own, and checks its own result; only the process is shared. The serializations stay apart (it is a JVM
    property), so a set-up starts two JVMs, which run at the same time.

    :meth:`expect` names the cells before they start; each operation then waits until every cell of its
    serialization has asked (or ended without asking: :meth:`cell_ended`), and the JVM runs them in
    :data:`STEP_ORDER`. The cells must therefore run concurrently, not a few at a time.
    """

    name = "java"

    def __init__(self, peers: dict[SerializeType, JavaClient], *, consume_args: Sequence[str] = ()) -> None:
        self._peers = peers
        self._consume_args = list(consume_args)
        self._batches: dict[SerializeType, _Batch] = {}

    def peers(self) -> list[PeerClient]:
        return list(self._peers.values())

    def expect(self, cells: Sequence[tuple[str, SerializeType]]) -> None:
        """The (operation, serialization) cells about to run, all at once."""
        self._batches = {}
        for operation, serialize in cells:
            self._batches.setdefault(serialize, _Batch(set())).pending.add(operation)

    def cell_ended(self, operation: str, serialize: SerializeType) -> None:
        """A cell is over; if it failed before asking for its operation, its serialization's JVM runs
        without it."""
        batch = self._batches[serialize]
        if operation in batch.pending:
            batch.pending.discard(operation)
            self._start_when_complete(serialize)

    async def _run_step(self, serialize: SerializeType, operation: str, step: Step) -> PeerResult:
        batch = self._batches[serialize]
        assert operation in batch.pending and not batch.started, (operation, serialize)
        answer: asyncio.Future[PeerResult] = asyncio.get_running_loop().create_future()
        batch.pending.discard(operation)
        batch.submitted[operation] = (step, answer)
        self._start_when_complete(serialize)
        return await answer

    def _start_when_complete(self, serialize: SerializeType) -> None:
        batch = self._batches[serialize]
        if batch.pending or batch.started or not batch.submitted:
            return
        batch.started = True
        ordered = sorted(batch.submitted.items(), key=lambda item: STEP_ORDER.index(item[0]))
        steps = [step for _, (step, _) in ordered]
        answers = [answer for _, (_, answer) in ordered]

        async def run() -> None:
            try:
                results = await asyncio.to_thread(
                    self._peers[serialize].steps, steps, timeout=sum(step.timeout for step in steps)
                )
            except BaseException as exc:
                for answer in answers:
                    if not answer.done():
                        answer.set_exception(exc)
                raise
            for answer, result in zip(answers, results, strict=True):
                if not answer.done():
                    answer.set_result(result)

        task = asyncio.ensure_future(run())
        task.add_done_callback(lambda done: done.cancelled() or done.exception())  # reported by the cells

    async def send(
        self, cluster: Cluster, messages: Sequence[Message], serialize: SerializeType
    ) -> list[str]:
        [topic] = {m.topic for m in messages}
        spec = json.dumps([_spec(m) for m in messages])
        step = Step("send-sync", ["--topic", topic, "--spec", spec], cluster.namesrv, PEER_TIMEOUT_S)
        result = await self._run_step(serialize, "send", step)
        return [o.msg_id for o in result.check().send_results() if o.status == "SEND_OK"]

    async def consume(
        self, cluster: Cluster, topic: str, group: str, count: int, serialize: SerializeType
    ) -> list[Got]:
        args = ["--group", group, "--topic", topic, "--expression", "*", "--property", "origin"]
        args += ["--count", str(count), "--linger", "1", *self._consume_args]
        step = Step("push-consume", args, cluster.namesrv, CONSUME_TIMEOUT_S)
        return _got(await self._run_step(serialize, "consume", step))

    async def route(self, cluster: Cluster, topic: str, serialize: SerializeType) -> set[tuple[str, int]]:
        step = Step("route", ["--topic", topic], cluster.namesrv, PEER_TIMEOUT_S)
        [route] = (await self._run_step(serialize, "route", step)).check().of("route")
        return {(q["broker_name"], int(q["queue_id"])) for q in route["queues"]}

    async def clusters(self, cluster: Cluster, serialize: SerializeType) -> set[tuple[str, str, str]]:
        step = Step("clusters", [], cluster.namesrv, PEER_TIMEOUT_S)
        [info] = (await self._run_step(serialize, "clusters", step)).check().of("clusters")
        return _cluster_rows(info)


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
